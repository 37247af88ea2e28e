"""Full-text search: what the index holds, that it stays in step with the events, ranking, snippets."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from azsd.events import (
    AssistantText,
    Complete,
    Init,
    Plan,
    ToolCall,
    ToolResult,
    UserMessage,
)
from azsd.ingest.file import ingest_file
from azsd.search import event_kinds, make_snippet, query_terms, search_text, words_query
from azsd.store import Store, store_path
from azsd.store.pacing import Pacer, Pacing

from .conftest import corpus_files, requires_corpus


def fts_integrity(store: Store) -> None:
    """SQLite's own check that the FTS index matches its content table."""
    with sqlite3.connect(store.path) as conn:
        conn.execute("INSERT INTO azsd_search (azsd_search, rank) VALUES ('integrity-check', 1)")


def index_contents(store: Store) -> tuple[int, list[tuple[str, int, int]]]:
    """What the contentless index really holds: its documents, and each term's doc and hit counts
    (a join with `events` would hide stale entries; this does not)."""
    with sqlite3.connect(store.path) as conn:
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, azsd_search, row)")
        docs = conn.execute("SELECT COUNT(*) FROM azsd_search_docsize").fetchone()[0]
        terms = conn.execute("SELECT term, doc, cnt FROM temp.vocab ORDER BY term").fetchall()
    return docs, terms


# -- what is indexed ---------------------------------------------------------------------------------


def test_search_text_of_each_kind() -> None:
    assert search_text(UserMessage(content="fix the parser")) == "fix the parser"
    wrapped = "<azureal-session-context>\nold turns\n</azureal-session-context>\n\nnew prompt"
    assert search_text(UserMessage(content=wrapped)) == "new prompt"
    call = ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "cargo test", "timeout": 5})
    assert search_text(call) == "Bash cargo test"
    result = ToolResult(tool_use_id="t", tool_name="Read", file_path="/a.rs", content="fn x", is_error=False)
    assert search_text(result) == "Read /a.rs fn x"
    assert search_text(Plan(name="p", content="step one")) == "p\nstep one"
    assert search_text(Init(cwd="/x", model="m")) is None
    assert search_text(Complete(success=True, duration_ms=1, cost_usd=0.0)) is None
    assert search_text(AssistantText(text="  ")) is None


def test_kind_aliases() -> None:
    assert event_kinds(["tool", "user"]) == ["ToolCall", "ToolResult", "UserMessage"]
    assert event_kinds(["assistanttext"]) == ["AssistantText"]
    with pytest.raises(ValueError, match="unknown event kind 'Init'"):
        event_kinds(["Init"])


def test_words_query_and_snippets() -> None:
    assert words_query('say "hi"  now') == '"say"* "hi"* "now"*'
    assert words_query("claude-clean -> main.go") == '"claude clean"* "main go"*'
    assert words_query("-> ()") == ""  # no letter or digit: nothing the index can look up
    assert query_terms('NEAR(Él crash, 2) OR "a ""b"""') == [
        ("el", False),
        ("crash", False),
        ("a", False),
        ("b", False),
    ]
    assert make_snippet("Line one\nsays élan", "elan") == ("Line one says élan", [(14, 18)])
    long = " ".join(f"w{i}" for i in range(100)) + " needle " + " ".join(f"v{i}" for i in range(100))
    snippet, hits = make_snippet(long, "needle", width=8)
    assert snippet == "…w98 w99 needle v0 v1 v2 v3 v4…"
    assert [snippet[a:b] for a, b in hits] == ["needle"]
    assert make_snippet("nothing here", "absent") == ("nothing here", [])


# -- the index follows the store ----------------------------------------------------------------------


def populate(store: Store) -> tuple[int, int]:
    a = store.create_session(worktree="main")
    b = store.create_session(worktree="feat")
    store.append_events(
        a.id, [UserMessage(content="Find the PANIC in parse"), AssistantText(text="no match")]
    )
    store.append_events(
        b.id,
        [
            UserMessage(content="why does it crash"),
            ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "grep panic src"}),
            ToolResult(tool_use_id="t", tool_name="Bash", content="src/x.rs: panic!()", is_error=False),
            AssistantText(text="The panic: a panic from unwrap on None, the panic is in feat."),
        ],
    )
    filler = store.create_session(worktree="main")  # text without the word, so that it means something
    store.append_events(filler.id, [AssistantText(text=f"step {n} of the build went fine") for n in range(8)])
    return a.id, b.id


def test_search_finds_ranks_and_filters(store: Store) -> None:
    a, b = populate(store)
    hits = store.search("panic")
    assert {(h.session_id, h.seq) for h in hits} == {(a, 1), (b, 2), (b, 3), (b, 4)}
    assert hits[0].session_id == b and hits[0].seq == 4  # two mentions in a short text rank first
    assert [h.rank for h in hits] == sorted(h.rank for h in hits)
    top = hits[0]
    assert top.kind == "AssistantText"
    assert (
        top.json
        == '{"AssistantText":{"text":"The panic: a panic from unwrap on None, the panic is in feat."}}'
    )
    assert [top.snippet[s:e] for s, e in top.highlights] == ["panic", "panic", "panic"]
    assert [(h.session_id, h.seq) for h in store.search("panic", worktrees=["main"])] == [(a, 1)]
    assert {h.seq for h in store.search("panic", sessions=[b], kinds=["ToolCall", "ToolResult"])} == {2, 3}
    assert len(store.search("panic", limit=2)) == 2
    assert store.search("PANIC AND parse")[0].session_id == a
    assert store.search('"unwrap on none"')[0].seq == 4
    assert store.search("pan*", kinds=["UserMessage"])[0].session_id == a
    assert store.search("nothinglikethis") == []
    fts_integrity(store)


@pytest.mark.parametrize("query", ['"unbalanced', "panic AND", "(", "unwrap()", "a:b", "disk:x", "locked:y"])
def test_a_query_fts_cannot_parse_is_a_clear_error(store: Store, query: str) -> None:
    populate(store)
    with pytest.raises(ValueError, match=re.escape(f"cannot search for {query!r}")):
        store.search(query)
    literal = words_query(query)
    assert not literal or store.search(literal, literal=query.split()) is not None  # always parses


def test_plain_text_is_every_word_as_written(store: Store) -> None:
    """Issue 25: `claude-clean`, `main.go` and `unwrap()` are what they say, in any case."""
    sid = store.create_session(worktree="main").id
    texts = [
        "run claude-clean first",  # 1
        "claude said: clean it",  # 2: the tokens, not the text
        "open Main.Go now",  # 3
        "main_go is another file",  # 4
        "it calls unwrap() on None",  # 5
        "unwrap it later",  # 6
        "the parser panics",  # 7
    ]
    store.append_events(sid, [AssistantText(text=t) for t in texts])

    def seqs(text: str) -> set[int]:
        return {h.seq for h in store.search(words_query(text), literal=text.split())}

    assert seqs("claude-clean") == {1}
    assert seqs("main.go") == {3}
    assert seqs("unwrap()") == {5}
    assert seqs("UNWRAP() none") == {5}  # every word, in any case
    assert seqs("pars") == {7}  # from the start of a word
    assert seqs("unwrap() nowhere") == set()
    [hit] = store.search(words_query("main.go"), literal=["main.go"])
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["Main.Go"]


def test_a_forks_copies_are_one_hit(store: Store) -> None:
    """Issue 25: a fork repeated every hit; the copies are one hit, with the other sessions named."""
    sid = store.create_session(worktree="main").id
    store.append_events(sid, [UserMessage(content="find the needle"), AssistantText(text="a needle")])
    first = store.fork_session(sid, 2).id
    second = store.fork_session(sid, 1).id
    store.append_events(first, [AssistantText(text="another needle")])
    hits = store.search("needle")
    assert sorted((h.session_id, h.seq, tuple(h.also_in)) for h in hits) == [
        (sid, 1, (first, second)),
        (sid, 2, (first,)),
        (first, 3, ()),
    ]


def test_deleting_a_session_takes_its_text_out_of_the_index(store: Store) -> None:
    a, b = populate(store)
    store.delete_session(b)
    assert [h.session_id for h in store.search("panic")] == [a]
    left = index_contents(store)
    assert ("crash", 1, 1) not in left[1] and left[0] == 10
    store.reindex_search()
    assert index_contents(store) == left  # exactly what an index built from the rest holds
    fts_integrity(store)


def test_a_delete_with_the_index_out_of_step_still_deletes_and_the_index_recovers(root: Path) -> None:
    with Store.open(root) as store:
        a, b = populate(store)
    with sqlite3.connect(store_path(root)) as conn:  # a restore that lost the index but kept its mark
        conn.execute("DROP TABLE azsd_search")
    with Store.open(root) as store:  # the table is made again, empty: its old mark must not count
        store.delete_session(b)
        assert [h.session_id for h in store.search("panic")] == [a]
        with sqlite3.connect(store_path(root)) as conn:  # now the mark stays, the entries go
            conn.execute("INSERT INTO azsd_search (azsd_search) VALUES ('delete-all')")
        store.delete_session(a)  # 'delete' of entries it does not hold: start afresh, do not fail
        assert not store.has_session(a)
        assert store.search("panic") == [] and len(store.search("step")) == 8


def test_entries_of_rows_another_program_deleted_are_found_and_removed_in_the_background(root: Path) -> None:
    """AZUREAL deletes a session: the contentless index kept its entries (BM25 counted them, and
    ranks drifted from a reindexed copy's). The background catch-up finds them and rebuilds the
    index without them, while searches go on; one rebuilt afresh holds exactly the same."""
    with Store.open(root) as store:
        a, b = populate(store)
        assert store.search("panic")  # all indexed
        before_delete = index_contents(store)
    with sqlite3.connect(store_path(root)) as conn:  # AZUREAL's delete_session, and a number reused
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM sessions WHERE id = ?", (b,))
        conn.execute("INSERT INTO sessions (id, worktree) VALUES (?, 'reused')", (b,))
    with Store.open(root) as store:
        store.pacer = Pacer(Pacing(chunk_s=0.0, gap_s=0.0, long_gap_s=0.0))  # a step a call
        assert store.stale_entries() == 4  # the deleted session's four entries with text
        assert index_contents(store) == before_delete
        steps = 0
        while store.catch_up_some():
            steps += 1
            assert [h.session_id for h in store.search("panic")] == [a]  # answers all along
        assert steps >= 2 and store.stale_entries() == 0
        left = index_contents(store)
        assert left != before_delete
        store.reindex_search()
        assert index_contents(store) == left
        fts_integrity(store)
        store.append_events(a, [UserMessage(content="panic again")])  # the new index is kept up
        assert len(store.search("panic")) == 2 and store.stale_entries() == 0
    with Store.open(root) as store:  # reopened unchanged: not swept again
        store.pacer = Pacer(Pacing(chunk_s=0.0, gap_s=0.0, long_gap_s=0.0))
        assert not store.catch_up_some()


def test_a_delete_while_the_index_is_rebuilt_takes_its_rows_out_of_both(root: Path) -> None:
    with Store.open(root) as store:
        a, b = populate(store)
        c = store.create_session(worktree="main").id
        store.append_events(c, [UserMessage(content="panic in c")])
        assert store.search("panic")
    with sqlite3.connect(store_path(root)) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM sessions WHERE id = ?", (b,))
    with Store.open(root) as store:
        store.pacer = Pacer(Pacing(chunk_s=0.0, gap_s=0.0, long_gap_s=0.0))  # a step a call
        while not store._query("SELECT 1 FROM sqlite_master WHERE name = 'azsd_search_next'"):
            assert store.catch_up_some()  # until the rebuild has begun
        assert store.catch_up_some()  # the new index holds c's rows: the delete takes them from both
        assert store._query("SELECT COUNT(*) FROM azsd_search_next_docsize")[0][0] == 11  # all but b's
        store.delete_session(c)
        while store.catch_up_some():
            pass
        assert [h.session_id for h in store.search("panic")] == [a] and store.stale_entries() == 0
        left = index_contents(store)
        store.reindex_search()
        assert index_contents(store) == left
        fts_integrity(store)


def test_rows_written_by_another_program_are_indexed_before_a_search(store: Store) -> None:
    """AZUREAL (or any writer without the index) appends rows: the next search indexes them first."""
    a, _ = populate(store)
    other = Store.open(store.root)
    other.append_events(a, [AssistantText(text="zebra")])  # through azsd, index current: indexed now
    with sqlite3.connect(store.path) as conn:  # a foreign writer: rows the index has not seen
        data, char_len = conn.execute(
            "SELECT data, char_len FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (a,)
        ).fetchone()
        conn.execute(
            "INSERT INTO events (session_id, seq, kind, data, char_len) "
            "VALUES (?, 99, 'AssistantText', ?, ?)",
            (a, data, char_len),
        )
    other.close()
    store.append_events(a, [AssistantText(text="okapi")])  # the index lags now: not indexed on append
    assert sorted(h.seq for h in store.search("zebra")) == [3, 99]
    assert [h.seq for h in store.search("okapi")] == [100]
    fts_integrity(store)


def test_reindex_rebuilds_the_same_index(store: Store) -> None:
    a, b = populate(store)
    before = [(h.session_id, h.seq, h.snippet) for h in store.search("panic OR crash")]
    assert store.reindex_search() == 14
    assert [(h.session_id, h.seq, h.snippet) for h in store.search("panic OR crash")] == before
    with sqlite3.connect(store.path) as conn:  # AZUREAL deletes a session: its entries go stale
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM sessions WHERE id = ?", (b,))
    assert [h.session_id for h in store.search("panic")] == [a]  # stale entries match no event
    assert store.reindex_search() == 10
    assert [h.session_id for h in store.search("panic")] == [a]
    fts_integrity(store)


def test_a_store_from_before_the_index_is_indexed_on_first_search(root: Path) -> None:
    with Store.open(root) as store:
        a, _ = populate(store)
    with sqlite3.connect(store_path(root)) as conn:  # as an older azsd (or AZUREAL) left it
        conn.execute("DROP TABLE azsd_search")
        conn.execute("DELETE FROM meta WHERE key LIKE 'azsd_search_hwm%'")
    with Store.open(root) as store:
        assert [h.session_id for h in store.search("PANIC AND parse")] == [a]
        assert len(store.search("panic")) == 4
        fts_integrity(store)


# -- corpus-derived sessions ------------------------------------------------------------------------


@requires_corpus
def test_ranking_and_snippets_on_corpus_sessions(store: Store) -> None:
    """A word that one corpus session uses far more than any other ranks that session first."""
    sessions: dict[int, Path] = {}
    for path in corpus_files():
        s = store.create_session(path.stem[:40])
        ingest_file(store, s.id, path)
        sessions[s.id] = path
    texts: dict[int, Counter[str]] = {}
    for sid in sessions:
        words: Counter[str] = Counter()
        for stored in store.load_events(sid).events:
            text = search_text(stored.event) or ""
            words.update(w.lower() for w in re.findall(r"[A-Za-z]{6,}", text))
        texts[sid] = words
    # a word with one clear owner: most uses in one session, at least 3x any other
    chosen = None
    for sid, words in texts.items():
        for word, n in words.most_common(200):
            others = max((texts[o][word] for o in texts if o != sid), default=0)
            if n >= 5 and n >= 3 * max(others, 1) and others > 0:
                chosen = (sid, word)
                break
        if chosen:
            break
    assert chosen is not None, "no distinctive word in the corpus"
    owner, word = chosen
    hits = store.search(word, limit=200)
    assert hits and hits[0].session_id == owner
    counts = Counter(h.session_id for h in hits)
    assert counts[owner] == max(counts.values())
    for hit in hits:
        assert hit.highlights, hit
        for start, end in hit.highlights:
            assert hit.snippet[start:end].lower().startswith(word[:4])
    fts_integrity(store)


def test_a_new_stores_first_catch_up_writes_nothing(root: Path) -> None:
    """A store azsd made holds no index entry of a row deleted before its index began: its first
    catch-up (the daemon's, when it opens a store another azsd process made) has nothing to sweep and
    writes nothing (a write would keep the daemon's readers from trusting their kept pages for a
    while); once AZUREAL deletes a session, it is swept."""
    with Store.open(root) as store:
        populate(store)
    before = store_path(root).read_bytes()
    with Store.open(root) as store:
        store.pacer = Pacer(Pacing(chunk_s=0.0, gap_s=0.0, long_gap_s=0.0))
        assert not store.catch_up_some()
    assert store_path(root).read_bytes() == before
    with sqlite3.connect(store_path(root)) as conn:  # AZUREAL's delete_session
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM sessions WHERE id = (SELECT MAX(id) FROM sessions)")
    with Store.open(root) as store:
        store.pacer = Pacer(Pacing(chunk_s=0.0, gap_s=0.0, long_gap_s=0.0))
        assert store.stale_entries() > 0 and store.catch_up_some()
