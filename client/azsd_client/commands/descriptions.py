"""The longer help of some `azs` commands (`azs CMD --help`), kept apart from the command table."""

from __future__ import annotations

from typing import Final

__all__ = [
    "BRIDGE_DESCRIPTION",
    "COMPACT_DESCRIPTION",
    "COMPLETION_DESCRIPTION",
    "EXPORT_DESCRIPTION",
    "FULL_HELP",
    "IMPORT_DESCRIPTION",
    "LS_DESCRIPTION",
    "RUN_DESCRIPTION",
    "SEARCH_DESCRIPTION",
    "SHOW_DESCRIPTION",
    "WEB_DESCRIPTION",
]

LS_DESCRIPTION: Final = (
    "Sessions of this worktree's store, latest activity first. By default: those labelled with the "
    "current branch, and the unlabelled ones (made outside git or by a tool that named no branch); how many "
    "other branches hold is said on stderr (--all-branches lists them)."
)
RUN_DESCRIPTION: Final = (
    "Run one agent turn: build the session's context into the prompt, store the clean prompt, start the "
    "agent (claude-command / codex-command in the config), and store and show its output live. Without "
    "-s, a new session named after the prompt. Exit status: 0 the turn succeeded, 1 it failed, 130 "
    "interrupted (the agent is stopped; what it wrote stays stored, marked failed)."
)
COMPACT_DESCRIPTION: Final = (
    "Compact a session as AZUREAL does: the agent (claude-command / codex-command) summarises the turns "
    "since the latest compaction but the newest three prompts (two, or one, when there are fewer), and "
    "the next turn's context is that summary and what follows it. When the agent cannot be started the "
    "other backend is tried; a summary that comes back empty is asked for once more. Until the summary "
    "is stored nothing changes: a compaction that fails or is interrupted leaves the session as it was. "
    "`azs run` does this by itself before a turn once the context reaches compaction-threshold."
)
EXPORT_DESCRIPTION: Final = (
    "Write a session as Markdown, JSONL (one event a line) or a self-contained HTML page: to stdout, or "
    "with -o to FILE (written to a temporary file and renamed, so FILE is whole or untouched). --redact "
    "masks secrets and reports on stderr how many. --json changes nothing without -o (the document is "
    'the output); with -o it prints {"session", "format", "bytes", "masked", "path"}.'
)
SEARCH_DESCRIPTION: Final = (
    "Full-text search of prompts, answers, tool calls and results and plans, best match first. QUERY is "
    "text as you would give it to `rg -F -i`, word by word: every word must appear as written, "
    "punctuation included, in any case, from the start of a word (claude-clean, main.go, unwrap(); pars "
    'finds parser). --fts (-e) takes SQLite FTS5 syntax instead (panic OR unwrap, "exact phrase", pars*, '
    "NOT x). By default it searches the sessions `azs ls` shows: the current branch's and the unlabelled "
    "ones, and says how many hits other branches hold. The same event copied by forks is one hit "
    '("also in S13"). -C N shows N events before and after each hit.'
)
IMPORT_DESCRIPTION: Final = (
    "Import the histories an agent keeps of this project ($CLAUDE_CONFIG_DIR or ~/.claude, $CODEX_HOME "
    "or ~/.codex), one session per file, labelled with the current branch. Running it again imports only "
    "what the files gained; the files are only read. --json: one importreply per file, then a summary."
)
BRIDGE_DESCRIPTION: Final = (
    "Serve editors that cannot load ZeroMQ over stdin and stdout: each line a JSON request with an id and "
    "a protocol message's op and fields, each answer a line {id, result} or {id, error}, and "
    '{"notify": ...} lines for the stores and sessions subscribed to. It runs until stdin ends. See '
    "docs/bridge.md."
)
WEB_DESCRIPTION: Final = (
    "Serve a read-only web view of the sessions of every store the daemon knows (this worktree's and "
    "the repository's other worktrees', the ones it has open or follows, and each --store), on "
    "127.0.0.1 only, behind a random token in the "
    "URL it prints. Transcripts update live; the daemon stays the only writer. See docs/web.md."
)
SHOW_DESCRIPTION: Final = (
    "A session's header, then its events beside their seqs, streamed as they are read. On a terminal "
    "through a pager as git's: $AZS_PAGER, else $PAGER, else less (LESS=FRX unless set); --no-pager, or "
    "a pager of cat, writes straight to the terminal. --last N, --from SEQ and --to SEQ choose the "
    "events (--last counts back from --to, or from the end)."
)

#: `azs show --full`'s help.
FULL_HELP: Final = "what the agent wrote, whole: written files, edits as diffs, outputs, thinking"

COMPLETION_DESCRIPTION: Final = (
    "Print a script that completes azs's commands and options in `shell`, made from azs's own "
    "argument parser. Install it with: azs completion bash > "
    "~/.local/share/bash-completion/completions/azs; azs completion zsh > ~/.zfunc/_azs (with "
    "~/.zfunc in fpath); azs completion fish > ~/.config/fish/completions/azs.fish."
)
