"""A Hypothesis strategy for any of the 14 event variants (spec §2.1), with the strategies of its
fields chosen by the test: the round trips of tests/test_events_properties.py and the compaction
properties of tests/test_compact_properties.py draw from it."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from azsd.events import (
    AssistantText,
    Command,
    Compacted,
    Compacting,
    Complete,
    Event,
    Filtered,
    Hook,
    Init,
    MayBeCompacting,
    ModelSwitch,
    Plan,
    ToolCall,
    ToolResult,
    UserMessage,
)


def any_event(
    text: st.SearchStrategy[str],
    content: st.SearchStrategy[str],
    tool_name: st.SearchStrategy[str],
    tool_input: st.SearchStrategy[Any],
    cost: st.SearchStrategy[float],
) -> st.SearchStrategy[Event]:
    """Every variant, in declaration order: names, ids and paths from `text`, free text from
    `content`, tool names from `tool_name`, a call's input from `tool_input`, a completion's cost
    from `cost`."""
    return st.one_of(
        st.builds(Init, cwd=text, model=text),
        st.builds(Hook, name=text, output=content),
        st.builds(UserMessage, content=content),
        st.builds(Command, name=text),
        st.builds(Compacting),
        st.builds(Compacted),
        st.builds(MayBeCompacting),
        st.builds(Plan, name=text, content=content),
        st.builds(AssistantText, text=content),
        st.builds(
            ToolCall,
            tool_use_id=text,
            tool_name=tool_name,
            file_path=st.one_of(st.none(), text),
            input=tool_input,
        ),
        st.builds(
            ToolResult,
            tool_use_id=text,
            tool_name=tool_name,
            file_path=st.one_of(st.none(), text),
            content=content,
            is_error=st.booleans(),
        ),
        st.builds(Complete, success=st.booleans(), duration_ms=st.integers(0, 2**64 - 1), cost_usd=cost),
        st.builds(ModelSwitch, model=text),
        st.builds(Filtered),
    )
