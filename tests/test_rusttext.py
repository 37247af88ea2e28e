"""Rust `str::lines` and `char::is_whitespace` semantics (spec §3), as `azsd.rusttext` reproduces them.

Expected values come from the spec and from Rust's documented behaviour, never from running the code:
- `str::lines` splits on `\\n`, drops the `\\r` of a `\\r\\n` pair, keeps a lone `\\r`, and a trailing
  newline adds no empty line (`""` -> 0 lines, `"\\n"` -> 1 line);
- `trim`/`is_whitespace` use the Unicode White_Space property, which (unlike Python's `isspace`)
  does not include U+001C..U+001F.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from azsd.rusttext import (
    RUST_WHITESPACE,
    head_lines,
    is_blank,
    last_lines,
    line_count,
    rust_lines,
    trim,
    trim_end,
    trim_start,
)

# Unicode White_Space (PropList.txt), i.e. exactly what Rust's `char::is_whitespace` accepts.
WHITE_SPACE: frozenset[str] = frozenset(
    [chr(c) for c in range(0x09, 0x0E)]  # \t \n \v \f \r
    + [" ", "\x85", "\xa0", "\u1680"]
    + [chr(c) for c in range(0x2000, 0x200B)]  # EN QUAD .. HAIR SPACE
    + ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
)
WS_STRING = "".join(sorted(WHITE_SPACE))

# Python's isspace() says True for these, Rust's is_whitespace() says False.
PY_ONLY_SPACE = ["\x1c", "\x1d", "\x1e", "\x1f"]

# Characters that look space-like or line-breaking but are not White_Space.
NOT_WHITESPACE = [*PY_ONLY_SPACE, "\u200b", "\ufeff", "\u180e", "\u2060", "\x00", "\x7f", "a", "_"]


def ref_lines(s: str) -> list[str]:
    """Reference model of Rust `str::lines`.

    `split_inclusive('\\n')`, then strip the `\\n` and one `\\r` before it.
    """
    lines: list[str] = []
    start = 0
    for i, ch in enumerate(s):
        if ch == "\n":
            line = s[start:i]
            if line.endswith("\r"):
                line = line[:-1]
            lines.append(line)
            start = i + 1
    if start < len(s):
        lines.append(s[start:])  # an unterminated last line is kept verbatim, `\r` included
    return lines


# -- str::lines ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("\n", [""]),
        ("\n\n", ["", ""]),
        ("a", ["a"]),
        ("a\n", ["a"]),
        ("a\n\n", ["a", ""]),
        ("a\nb", ["a", "b"]),
        ("a\nb\n", ["a", "b"]),
        ("\na", ["", "a"]),
        (" \n", [" "]),
        ("a\r\nb", ["a", "b"]),
        ("a\r\nb\r\n", ["a", "b"]),
        ("\r\n", [""]),
        ("\r\n\r\n", ["", ""]),
        ("a\r", ["a\r"]),
        ("\r", ["\r"]),
        ("a\rb", ["a\rb"]),
        ("a\rb\nc", ["a\rb", "c"]),
        ("a\r\r\n", ["a\r"]),
        ("a\n\r", ["a", "\r"]),
        ("a\n\rb", ["a", "\rb"]),
        ("a\r\n\r", ["a", "\r"]),
        ("é\n中文\r\n😀", ["é", "中文", "😀"]),
    ],
)
def test_rust_lines_table(text: str, expected: list[str]) -> None:
    assert rust_lines(text) == expected


@pytest.mark.parametrize("sep", ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_rust_lines_does_not_split_on_python_line_boundaries(sep: str) -> None:
    # Python's str.splitlines() splits on all of these; Rust's lines() only on "\n".
    text = f"a{sep}b"
    assert len(text.splitlines()) == 2
    assert rust_lines(text) == [text]
    assert rust_lines(f"x\n{text}\n") == ["x", text]


def test_rust_lines_empty_vs_single_newline() -> None:
    assert len(rust_lines("")) == 0
    assert len(rust_lines("\n")) == 1


# -- whitespace -------------------------------------------------------------------------------


def test_rust_whitespace_constant_is_exactly_unicode_white_space() -> None:
    assert len(RUST_WHITESPACE) == len(set(RUST_WHITESPACE))
    assert frozenset(RUST_WHITESPACE) == WHITE_SPACE
    assert len(WHITE_SPACE) == 25


@pytest.mark.parametrize("ch", sorted(WHITE_SPACE))
def test_white_space_chars_are_trimmed_and_blank(ch: str) -> None:
    assert is_blank(ch)
    assert is_blank(ch * 3)
    assert trim(f"{ch}x{ch}") == "x"
    assert trim_end(f"{ch}x{ch}{ch}") == f"{ch}x"
    assert trim_start(f"{ch}{ch}x{ch}") == f"x{ch}"


@pytest.mark.parametrize("ch", NOT_WHITESPACE)
def test_non_white_space_chars_are_kept(ch: str) -> None:
    assert not is_blank(ch)
    assert trim(f" {ch} ") == ch
    assert trim_end(f"x{ch}") == f"x{ch}"
    assert trim_start(f"{ch}x") == f"{ch}x"


@pytest.mark.parametrize("ch", PY_ONLY_SPACE)
def test_info_separators_are_python_space_but_not_rust_space(ch: str) -> None:
    assert ch.isspace()  # Python's view
    assert not is_blank(ch)  # Rust's view
    assert not is_blank(f" \t{ch}\n")
    assert trim_end(f"a \x1c{ch} \n") == f"a \x1c{ch}"
    assert trim(f"\n{ch} a {ch}\u3000") == f"{ch} a {ch}"


@pytest.mark.parametrize("ch", ["\xa0", "\u3000", "\u2028", "\u2029", "\x85", "\u1680", "\u202f", "\u205f"])
def test_unicode_spaces_are_rust_whitespace(ch: str) -> None:
    assert is_blank(ch)
    assert trim_end(f"a{ch}\n{ch}") == "a"


def test_empty_string_is_blank_and_trims_to_empty() -> None:
    assert is_blank("")
    assert trim("") == ""
    assert trim_end("") == ""
    assert trim_start("") == ""


def test_trim_only_touches_the_ends() -> None:
    assert trim("  a \u3000 b  ") == "a \u3000 b"
    assert trim_end("  a b \t\n") == "  a b"
    assert trim_start(" \t\na b  ") == "a b  "


def test_whitespace_over_every_code_point() -> None:
    # Every scalar value: is_blank agrees with White_Space, and the only disagreement with
    # Python's isspace() is U+001C..U+001F.
    rust_blank = set()
    py_space = set()
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        if is_blank(ch):
            rust_blank.add(ch)
        if ch.isspace():
            py_space.add(ch)
    assert rust_blank == WHITE_SPACE
    assert py_space - rust_blank == set(PY_ONLY_SPACE)
    assert rust_blank - py_space == set()


# -- properties -------------------------------------------------------------------------------

_PIECES = st.sampled_from(["\n", "\r", "\r\n", "\n\r", "a", "é", " ", "\x1c", "\u2028", "\x0b", "\u3000", ""])
LINEY_TEXT = st.lists(_PIECES, max_size=40).map("".join)
SCALAR_TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]))


@given(st.one_of(LINEY_TEXT, SCALAR_TEXT))
def test_rust_lines_matches_reference_model(text: str) -> None:
    assert rust_lines(text) == ref_lines(text)


@given(st.one_of(LINEY_TEXT, SCALAR_TEXT))
def test_trim_matches_white_space_reference(text: str) -> None:
    assert trim(text) == text.strip(WS_STRING)
    assert trim_end(text) == text.rstrip(WS_STRING)
    assert trim_start(text) == text.lstrip(WS_STRING)
    assert is_blank(text) == all(ch in WHITE_SPACE for ch in text)


@given(st.lists(st.text(alphabet=st.characters(exclude_characters="\n\r", exclude_categories=["Cs"]))))
def test_rust_lines_inverts_terminated_join(lines: list[str]) -> None:
    # Lines without \n or \r, each followed by "\n" (or "\r\n"), come back exactly.
    assert rust_lines("".join(f"{line}\n" for line in lines)) == lines
    assert rust_lines("".join(f"{line}\r\n" for line in lines)) == lines


# -- reading only the lines a rule keeps ---------------------------------------------------------

LINES_ALPHABET = st.text(alphabet=st.sampled_from(["\n", "\r", " ", "\t", "a", "b", "\u3000"]), max_size=40)


@given(LINES_ALPHABET, st.integers(min_value=0, max_value=8))
def test_head_lines_are_the_first_lines(text: str, n: int) -> None:
    assert head_lines(text, n) == ref_lines(text)[:n]


@given(LINES_ALPHABET, st.integers(min_value=0, max_value=8))
def test_last_lines_are_the_last_lines_not_blank(text: str, n: int) -> None:
    kept = [line for line in ref_lines(text) if line.strip(WS_STRING)]
    assert last_lines(text, n) == (kept[-n:] if n else [])


@given(LINES_ALPHABET)
def test_line_count_counts_the_lines(text: str) -> None:
    assert line_count(text) == len(ref_lines(text))


def test_last_lines_reach_back_past_a_long_blank_tail() -> None:
    text = "first\r\nsecond\r\n" + "  \n" * 100 + "\t"
    assert last_lines(text, 2) == ["first", "second"]
    assert head_lines("a\r\nb\r\nc", 2) == ["a", "b"] and line_count("a\r\nb\r\nc") == 3
