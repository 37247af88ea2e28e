"""azsd_client.render.full: a tool call of the full record as rows, for the terminal and the web view."""

from __future__ import annotations

from azsd.events import ToolCall
from azsd_client.render.full import body, changed_within, result_rows


def call(name: str, **tool_input: object) -> ToolCall:
    return ToolCall(tool_use_id="t", tool_name=name, input=dict(tool_input))


def test_a_write_is_a_new_file() -> None:
    assert body(call("Write", file_path="a.ts", content="one\ntwo\n")) == [("+", "one"), ("+", "two")]


def test_an_edit_is_a_line_diff_with_the_lines_it_kept() -> None:
    old, new = "a\nb\nc\nd", "a\nB\nc\nd\ne"
    assert body(call("Edit", old_string=old, new_string=new)) == [
        (" ", "a"), ("-", "b"), ("+", "B"), (" ", "c"), (" ", "d"), ("+", "e"),
    ]  # fmt: skip


def test_a_multiedit_is_each_edit_under_its_heading() -> None:
    edits = [{"old_string": "x", "new_string": "y"}, {"old_string": "p\nq", "new_string": "p"}]
    assert body(call("MultiEdit", file_path="f", edits=edits)) == [
        ("@", "edit 1"), ("-", "x"), ("+", "y"), ("@", "edit 2"), (" ", "p"), ("-", "q"),
    ]  # fmt: skip


def test_an_edit_too_big_to_diff_is_its_old_lines_then_its_new() -> None:
    old = "\n".join(f"o{i}" for i in range(3000))
    new = "\n".join(f"n{i}" for i in range(3000))
    rows = body(call("Edit", old_string=old, new_string=new))
    assert rows[:1] == [("-", "o0")] and rows[2999:3001] == [("-", "o2999"), ("+", "n0")]


def test_codex_apply_patch_in_each_of_its_shapes() -> None:
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n keep\n*** End Patch"
    expected = [
        ("@", "*** Begin Patch"), ("@", "*** Update File: a.py"), ("@", "@@"),
        ("-", "x = 1"), ("+", "x = 2"), (" ", "keep"), ("@", "*** End Patch"),
    ]  # fmt: skip
    assert body(call("apply_patch", input=patch)) == expected
    assert body(call("shell", command=["apply_patch", patch])) == expected


def test_a_todo_list_is_a_list() -> None:
    todos = [
        {"content": "write it", "status": "completed"},
        {"content": "test it", "status": "in_progress", "activeForm": "Testing it"},
        {"content": "ship it", "status": "pending"},
    ]
    assert body(call("TodoWrite", todos=todos)) == [
        ("☑", "write it"), ("☐", "test it (in progress)"), ("☐", "ship it"),
    ]  # fmt: skip


def test_a_command_is_shown_as_typed_and_other_input_as_json() -> None:
    assert body(call("Bash", command="ls")) == []  # (the header says it all)
    assert body(call("Bash", command="cat <<EOF\nhi\nEOF")) == [("=", "cat <<EOF"), ("=", "hi"), ("=", "EOF")]
    rows = body(call("Grep", pattern="TODO", glob="*.py", output_mode="content"))
    assert ("=", '  "glob": "*.py",') in rows and not any("pattern" in text for _, text in rows)


def test_a_result_is_every_line() -> None:
    assert result_rows("a\r\nb\n") == ["a", "b"] and result_rows("") == ["(no output)"]


def test_within_a_changed_line_what_changed_is_marked() -> None:
    rows = body(call("Edit", old_string="keep\nx = compute(1)\ny", new_string="keep\nx = compute(2)\nz"))
    assert rows == [(" ", "keep"), ("-", "x = compute(1)"), ("-", "y"), ("+", "x = compute(2)"), ("+", "z")]
    within = changed_within(rows)
    assert within[1] == [(12, 13)] and within[3] == [(12, 13)]
    assert 2 not in within and 4 not in within  # "y" → "z": rewritten whole, nothing to point at
