"""A Hypothesis strategy for any of the 14 event variants (spec §2.1), with the strategies of its
fields chosen by the test: the round trips of tests/test_events_properties.py and the compaction
properties of tests/test_compact_properties.py draw from it."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from azsd import events as ev


def any_event(
    text: st.SearchStrategy[str],
    content: st.SearchStrategy[str],
    tool_name: st.SearchStrategy[str],
    tool_input: st.SearchStrategy[Any],
    cost: st.SearchStrategy[float],
) -> st.SearchStrategy[ev.Event]:
    """Every variant, in declaration order: names, ids and paths from `text`, free text from
    `content`, tool names from `tool_name`, a call's input from `tool_input`, a completion's cost
    from `cost`."""
    return st.one_of(
        st.builds(ev.Init, cwd=text, model=text),
        st.builds(ev.Hook, name=text, output=content),
        st.builds(ev.UserMessage, content=content),
        st.builds(ev.Command, name=text),
        st.builds(ev.Compacting),
        st.builds(ev.Compacted),
        st.builds(ev.MayBeCompacting),
        st.builds(ev.Plan, name=text, content=content),
        st.builds(ev.AssistantText, text=content),
        st.builds(
            ev.ToolCall,
            tool_use_id=text,
            tool_name=tool_name,
            file_path=st.one_of(st.none(), text),
            input=tool_input,
        ),
        st.builds(
            ev.ToolResult,
            tool_use_id=text,
            tool_name=tool_name,
            file_path=st.one_of(st.none(), text),
            content=content,
            is_error=st.booleans(),
        ),
        st.builds(ev.Complete, success=st.booleans(), duration_ms=st.integers(0, 2**64 - 1), cost_usd=cost),
        st.builds(ev.ModelSwitch, model=text),
        st.builds(ev.Filtered),
    )
