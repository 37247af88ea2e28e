"""Golden tests of the Codex line-mapping rules (spec/store-format.md §4.3-§4.4, agent-formats.md §3-§5):
the tool calls and tool outputs of rollout files, each rule pinned by hand-written lines.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from azsd.events import ToolCall
from tests.codex_helpers import event, fn_call, fn_output, item, only_call, result, rollout

# -- rollout tool calls -------------------------------------------------------------------------------


def test_shell_command_is_bash_with_workdir_and_parsed_args() -> None:
    call = only_call(rollout(fn_call("shell_command", "call_abc", {"command": "ls", "workdir": "/tmp"})))
    assert call == ToolCall(
        tool_use_id="call_abc", tool_name="Bash", file_path="/tmp", input={"command": "ls", "workdir": "/tmp"}
    )


def test_function_call_without_a_name_is_a_shell_command() -> None:
    call = only_call(rollout(item(type="function_call", call_id="c", arguments='{"command":"pwd"}')))
    assert (call.tool_name, call.input) == ("Bash", {"command": "pwd"})


def test_shell_argv_is_joined_into_one_command() -> None:
    args = {"command": ["bash", "-lc", "sed -n '1,5p' a.ts"], "workdir": ".", "timeout_ms": 120000}
    call = only_call(rollout(fn_call("shell", "call_1", args)))
    assert call == ToolCall(
        tool_use_id="call_1",
        tool_name="Bash",
        file_path=".",
        input={"command": "bash -lc 'sed -n '\"'\"'1,5p'\"'\"' a.ts'", "workdir": ".", "timeout_ms": 120000},
    )
    assert only_call(rollout(fn_call("shell", "c2", {"command": ["ls"]}))).input == {"command": "ls"}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"cmd": "pwd", "workdir": "/tmp"}, {"cmd": "pwd", "workdir": "/tmp", "command": "pwd"}),
        ({"command": "ls -a", "yield_time_ms": 10}, {"command": "ls -a", "yield_time_ms": 10}),
        ({"command": ["ls"], "cmd": "pwd"}, {"command": "", "cmd": "pwd"}),
        ({}, {"command": ""}),
        ([1, 2], {"command": ""}),
        ("not json", {"command": ""}),
    ],
)
def test_exec_command_is_bash_with_a_command_field(args: Any, expected: dict[str, Any]) -> None:
    arguments = "not json" if args == "not json" else json.dumps(args)
    call = only_call(
        rollout(item(type="function_call", name="exec_command", call_id="c", arguments=arguments))
    )
    assert (call.tool_name, call.file_path, call.input) == ("Bash", None, expected)


@pytest.mark.parametrize(
    ("args", "command"),
    [
        ({"session_id": 98333, "chars": "", "yield_time_ms": 1000}, "poll session 98333"),
        ({"session_id": "s-1"}, "poll session s-1"),
        ({}, "poll session"),
        ({"session_id": True, "chars": ""}, "poll session"),
        ({"session_id": 7, "chars": "\u0003"}, "send Ctrl-C to session 7"),
        ({"session_id": 7, "chars": "ls -la\n"}, 'send "ls -la\\n" to session 7'),
        ({"session_id": 7, "chars": "say \"hi\"\t'x'\\"}, 'send "say \\"hi\\"\\t\\\'x\\\'\\\\" to session 7'),
        ({"session_id": 7, "chars": "é\r\x1b"}, 'send "\\u{e9}\\r\\u{1b}" to session 7'),
        ({"session_id": 7, "chars": "a" * 32}, f'send "{"a" * 32}" to session 7'),
        ({"session_id": 7, "chars": "a" * 33}, f'send "{"a" * 29}..." to session 7'),
        ({"session_id": 7, "chars": "\n" * 17}, 'send "' + "\\n" * 14 + '\\..." to session 7'),
    ],
)
def test_write_stdin_is_bash_described_as_an_action(args: dict[str, Any], command: str) -> None:
    call = only_call(rollout(fn_call("write_stdin", "c", args)))
    assert (call.tool_name, call.file_path) == ("Bash", None)
    assert call.input == {**args, "command": command}


PATCH = (
    "*** Begin Patch\n*** Update File:  /src/main.rs \n@@\n-old\n+new\n"
    "*** Add File: /src/new.rs\n*** End Patch"
)


@pytest.mark.parametrize(
    ("patch", "path"),
    [
        (PATCH, "/src/main.rs"),
        ("*** Begin Patch\r\n*** Add File: /src/new.rs\r\n+x\r\n*** End Patch", "/src/new.rs"),
        ("*** Begin Patch\n*** Delete File: /src/gone.rs\n*** End Patch", None),
        ("", None),
    ],
)
def test_apply_patch_is_an_edit_of_the_first_updated_or_added_file(patch: str, path: str | None) -> None:
    custom = item(type="custom_tool_call", name="apply_patch", call_id="p", input=patch, status="completed")
    assert only_call(rollout(custom)) == ToolCall(
        tool_use_id="p", tool_name="Edit", file_path=path, input={"patch": patch}
    )


def test_apply_patch_as_a_function_call_reads_its_patch() -> None:
    as_text = only_call(rollout(fn_call("apply_patch", "p1", PATCH)))
    assert (as_text.file_path, as_text.input) == ("/src/main.rs", {"patch": PATCH})
    as_json = only_call(rollout(fn_call("apply_patch", "p2", {"input": PATCH})))
    assert (as_json.file_path, as_json.input) == ("/src/main.rs", {"patch": PATCH})


def test_other_tools_keep_their_name_and_parsed_arguments() -> None:
    plan = {"plan": [{"step": "a", "status": "pending"}]}
    assert only_call(rollout(fn_call("update_plan", "u", plan))) == ToolCall(
        tool_use_id="u", tool_name="update_plan", file_path=None, input=plan
    )
    mcp = only_call(rollout(fn_call("mcp__github__search", "m", {"q": "x"})))
    assert (mcp.tool_name, mcp.input) == ("mcp__github__search", {"q": "x"})
    broken = only_call(rollout(fn_call("update_plan", "b", "{not json")))
    assert broken.input == {}
    freeform = only_call(
        rollout(item(type="custom_tool_call", name="my_tool", call_id="f", input="free text"))
    )
    assert (freeform.tool_name, freeform.input) == ("my_tool", {})
    unnamed = only_call(rollout(item(type="custom_tool_call", call_id="n", input="{}")))
    assert unnamed.tool_name == "custom_tool"


def test_local_shell_call_is_bash() -> None:
    action = {"type": "exec", "command": ["bash", "-lc", "ls src"], "working_directory": "/w"}
    call = only_call(rollout(item(type="local_shell_call", call_id="l", status="completed", action=action)))
    assert call == ToolCall(
        tool_use_id="l", tool_name="Bash", file_path="/w", input={"command": "bash -lc 'ls src'"}
    )


# -- rollout tool outputs -----------------------------------------------------------------------------

BASH_CALL = fn_call("shell_command", "c", {"command": "ls", "workdir": "/w"})


@pytest.mark.parametrize(
    ("output", "content", "is_error"),
    [
        ('{"output":"hi\\n","metadata":{"exit_code":0,"duration_seconds":0.1}}', "hi\n", False),
        ('{"output":"boom\\n","metadata":{"exit_code":1}}', "boom\n", False),
        ('{"output":"","metadata":{"exit_code":0}}', "", False),
        ('{"output":" \\n","metadata":{"exit_code":3}}', "Exit code: 3", True),
        ('{"output":""}', '{"output":""}', False),
        ('{"output":5,"metadata":{"exit_code":0}}', '{"output":5,"metadata":{"exit_code":0}}', False),
        (
            "Chunk ID: 6bf9d8\nWall time: 0.0000 seconds\nProcess exited with code 0\n"
            "Original token count: 7\nOutput:\n/Users/me/AZUREAL\n\n",
            "/Users/me/AZUREAL",
            False,
        ),
        ("Chunk ID: a\nProcess exited with code 0\nOutput:\n\n", "", False),
        ("Chunk ID: a\nProcess exited with code 2 \nOutput:\n", "Exit code: 2", True),
        (
            "Chunk ID: a\nProcess running with session ID 77 \nOutput:\n",
            "Process running with session ID 77",
            False,
        ),
        ("Chunk ID: a\nno markers", "Chunk ID: a\nno markers", False),
        ("Exit code: 0\nhi\n", "Exit code: 0\nhi\n", False),
        ("Exit code: 1\ncommand failed", "Exit code: 1\ncommand failed", True),
        ("Error: permission denied", "Error: permission denied", True),
        ("write_stdin failed: session closed", "write_stdin failed: session closed", True),
        ("exec_command failed: spawn", "exec_command failed: spawn", True),
        ("exit code: 1", "exit code: 1", False),
        ([{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "x"}], "a", False),
        (None, "", False),
    ],
)
def test_bash_outputs_are_normalized(output: Any, content: str, is_error: bool) -> None:
    events = rollout(BASH_CALL, fn_output("c", output))
    assert events[1] == result("c", "Bash", content, is_error, "/w")


def test_chunk_reports_are_only_unwrapped_for_bash() -> None:
    chunk = "Chunk ID: a\nProcess exited with code 0\nOutput:\nx\n"
    events = rollout(fn_call("update_plan", "u", {}), fn_output("u", chunk))
    assert events[1] == result("u", "update_plan", chunk)


@pytest.mark.parametrize(
    ("output", "content", "is_error"),
    [
        (
            '{"output":"Success. Updated the following files:\\nM /tmp/demo.txt\\n",'
            '"metadata":{"exit_code":0}}',
            "Success. Updated the following files:\nM /tmp/demo.txt\n",
            False,
        ),
        ("Error: patch rejected", "Error: patch rejected", True),
        ("Exit code: 1", "Exit code: 1", False),
        ("write_stdin failed: x", "write_stdin failed: x", False),
    ],
)
def test_custom_tool_outputs_are_errors_only_on_the_error_prefix(
    output: str, content: str, is_error: bool
) -> None:
    patch = "*** Begin Patch\n*** Update File: /tmp/demo.txt\n*** End Patch"
    events = rollout(
        item(type="custom_tool_call", name="apply_patch", call_id="p", input=patch),
        item(type="custom_tool_call_output", call_id="p", output=output),
    )
    assert events[1] == result("p", "Edit", content, is_error, "/tmp/demo.txt")


def test_outputs_of_unknown_calls_are_named_by_their_kind() -> None:
    events = rollout(
        fn_output("ghost", "Exit code: 2"), item(type="custom_tool_call_output", call_id="g2", output="ok")
    )
    assert events == [result("ghost", "unknown", "Exit code: 2", True), result("g2", "custom_tool", "ok")]


def test_event_msg_function_call_output_is_a_shell_command_result() -> None:
    events = rollout(
        event(type="function_call_output", call_id="e1", output="Exit code: 127\nnot found"),
        event(type="function_call_output", call_id="", output="orphan"),
    )
    assert events == [result("e1", "shell_command", "Exit code: 127\nnot found", True)]
