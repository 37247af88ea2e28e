"""A corpus-shaped `~/.claude/projects` tree: the corpus's Claude session files replicated.

Each replica of each `../shared/corpus/claude-session` file is a session file of its own under
``<config>/projects/<slug of the project>/<new session id>.jsonl``: the same lines, with every id
(`sessionId`, `uuid`, `parentUuid`, `leafUuid`, message `id`, `requestId`) made unique to the replica,
so that nothing is taken for a duplicate (ccusage dedups by message id and request id), and the words
of its prompts, replies and tool output replaced by words drawn at random from a vocabulary, so that
replicas do not match the same queries alike. The shape (line kinds, nesting, usage) stays the corpus's.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msgspec

from azsd.ingest.importer import claude_slug

CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpus" / "claude-session"
#: Words the replicas are written with; the search queries of `bench.peers` are drawn from them.
WORDS = (
    "parser store event index session agent file line test commit daemon socket sqlite busy timeout "
    "refactor module function error warning release build deploy cache memory thread lock queue "
    "client server request reply schema migration branch merge review config path token cost usage "
    "frontend backend database query page list context prompt summary compact follow import export"
).split()
_IDS = ("sessionId", "uuid", "parentUuid", "leafUuid", "requestId", "messageId")
#: A message's id (`message.id`: ccusage and azsd count a message once): the corpus's, and one redacted.
_MESSAGE_IDS = ("msg_", "[REDACTED_MESSAGE_ID]")
_DECODER = msgspec.json.Decoder()
_ENCODER = msgspec.json.Encoder()


def corpus_files() -> list[Path]:
    """The corpus's Claude session files (empty when `../shared/corpus` is absent)."""
    return sorted(CORPUS.glob("*.jsonl")) if CORPUS.is_dir() else []


#: The long tail: most words of real text are rarer than the handful a query looks for.
_ENDS = ("lt", "rn", "x", "sk", "mp", "nd", "rk", "st", "ng", "th", "ck", "ll", "rd", "ft", "ps")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
_TAIL = [f"{a}{b}{c}" for a in "bcdfgklmnprstvz" for b in _VOWELS for c in _ENDS]


def _words(rng: random.Random, like: str) -> str:
    """As many words as `like` has, drawn at random (lines kept where `like` has them): one in
    five from :data:`WORDS`, the rest from a long tail of made-up words."""
    lines = like.split("\n")
    pick = rng.random
    return "\n".join(
        " ".join(rng.choice(WORDS) if pick() < 0.2 else rng.choice(_TAIL) for _ in line.split())
        for line in lines
    )


def _vary(value: Any, rng: random.Random, tag: str, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _vary(v, rng, tag, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_vary(v, rng, tag, key) for v in value]
    if isinstance(value, str):
        if key in _IDS or (key == "id" and value.startswith(_MESSAGE_IDS)):
            return f"{value}-{tag}"
        if key in ("text", "content", "thinking", "stdout"):
            return _words(rng, value)
    return value


def write_projects(
    config_dir: Path, project: Path, target_bytes: int, *, seed: int = 11, file_bytes: int = 0
) -> tuple[int, int]:
    """Fill `config_dir/projects/<slug(project)>` with replicas up to about `target_bytes`;
    returns (files, bytes). With `file_bytes`, each file is replicas written one after the other
    (one session id) up to about that size, as a long session is; else each replica is a file.
    Nothing is written when the corpus is absent."""
    sources = [path.read_bytes().splitlines() for path in corpus_files()]
    if not sources:
        return 0, 0
    out_dir = config_dir / "projects" / claude_slug(project)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    files = written = replica = 0
    while written < target_bytes:
        session = f"{rng.getrandbits(128):032x}"
        session = f"{session[:8]}-{session[8:12]}-{session[12:16]}-{session[16:20]}-{session[20:]}"
        data = b""
        while not data or len(data) < file_bytes:
            tag = f"r{replica // len(sources)}"  # (the corpus's files have ids of their own)
            data += _replica(sources[replica % len(sources)], rng, tag, session)
            replica += 1
        (out_dir / f"{session}.jsonl").write_bytes(data)
        files += 1
        written += len(data)
    return files, written


def _replica(lines: list[bytes], rng: random.Random, tag: str, session: str) -> bytes:
    """The corpus file of `lines` with its ids made unique by `tag`, its words drawn anew, in the
    session `session`."""
    body = []
    for line in lines:
        try:
            obj = _DECODER.decode(line)
        except msgspec.DecodeError:
            continue
        obj = _vary(obj, rng, tag)
        if isinstance(obj, dict) and "sessionId" in obj:
            obj["sessionId"] = session
        body.append(_ENCODER.encode(obj))
    return b"\n".join(body) + b"\n"
