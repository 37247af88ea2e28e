"""Masking secrets in text and in events before they leave the store.

Each secret found is replaced by ``[REDACTED:<name>]``. Only the secret itself goes: the key, flag,
header or URL around it stays, so the text still reads (``password=[REDACTED:password-assignment]``,
``https://user:[REDACTED:url-password]@host``, a PEM block keeps its BEGIN and END lines). The
patterns run in this order, each on the output of the one before:

======================== ================================================================
name                     what it masks
======================== ================================================================
private-key              the body of a PEM private key block (``-----BEGIN … PRIVATE KEY-----``
                         to ``-----END … PRIVATE KEY-----``, or to the end of a cut-off text)
jwt                      a JSON Web Token: three base64url segments, the first two ``eyJ…``
anthropic-api-key        Anthropic keys, ``sk-ant-`` and 20 or more key characters
openai-api-key           OpenAI-style keys: ``sk-``, ``sk-proj-``, ``sk-svcacct-``, ``sk-admin-``
                         and 20 or more characters with a digit and a capital letter, or
                         ``sk-`` and 32 or more lower-case hex digits
github-token             GitHub tokens: ``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_`` and 36 or more
                         letters and digits, or ``github_pat_`` and 22 or more
gitlab-token             GitLab personal access tokens, ``glpat-`` and 20 or more characters
slack-token              Slack tokens, ``xoxb-``, ``xoxa-``, ``xoxp-``, ``xoxr-``, ``xoxs-`` and 10 or more
google-api-key           Google API keys, ``AIza`` and exactly 35 characters
stripe-key               Stripe secret and restricted keys, ``sk_live_``, ``rk_live_`` (and ``_test_``)
aws-access-key-id        AWS access key ids, ``AKIA`` or ``ASIA`` and 16 capitals or digits
aws-secret-access-key    the 40-character value of ``aws_secret_access_key`` (``AWS_SECRET_ACCESS_KEY``,
                         ``"SecretAccessKey"``) when it is assigned with ``=`` or ``:``
authorization-header     the credentials of an ``Authorization: Bearer|Basic|Token <credentials>``
                         header (8 or more characters)
url-password             the password of a URL, ``scheme://user:PASSWORD@host``
password-assignment      the value assigned to a key ending in ``password``, ``passwd`` or ``passphrase``
secret-assignment        the value assigned to a key ending in ``secret`` or ``secret_key``
token-assignment         the value assigned to a key ending in ``token``
api-key-assignment       the value assigned to a key ending in ``api_key``, ``api-key`` or ``apikey``
======================== ================================================================

The four ``*-assignment`` patterns recognise the value of a key (any case, with any prefix:
``DB_PASSWORD``, ``client_secret``, ``x-api-key``) in these forms:

- quoted, after ``=``, ``:``, ``:=`` or ``=>``: ``"password": "…"``, ``token = '…'``, ``SECRET="…"``
  (also inside JSON that is itself in a string, ``{\\"password\\": \\"…\\"}``);
- an env file or shell line, ``=`` and no spaces: ``DB_PASSWORD=…``, ``--password=…``;
- a URL query parameter: ``?access_token=…&``;
- a command-line flag and its argument: ``--password …``, ``--token "…"``;
- alone on its line (YAML, INI; also after a Read tool's line number ``12→``) or in a quoted
  header, when the value holds a digit or a symbol: ``password: …``, ``token = …``, ``"X-Api-Key: …"``.

So that prose and code stay as they are, a value is left alone when it is empty, a placeholder or
reference (it starts with ``$``, ``<``, ``{``, ``*`` or ``%(``, ends in ``...``, is all ``x``, or
starts with ``your-``: ``sk-ant-...``, ``your-api-key``), already masked, or code (an
identifier followed by ``(``, ``[``, ``,`` or ``)``, as in ``f(password=password)``); an unquoted
value on a line of its own or after a flag must also hold a digit or a symbol, so ``password: str``
and ``--token to`` are prose. Git SHAs, UUIDs, paths, ``sk-learn`` and a single base64 segment
match nothing.

>>> redact_text("db: postgres://app:hunter2@db.internal:5432/app")
('db: postgres://app:[REDACTED:url-password]@db.internal:5432/app', Counter({'url-password': 1}))
>>> redact_text("export GITHUB_TOKEN=ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2)[0]
'export GITHUB_TOKEN=[REDACTED:github-token]'
>>> redact_text("The password must be at least 12 characters.")
('The password must be at least 12 characters.', Counter())
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any, Final, NamedTuple

import msgspec

from azsd.events import Event, ToolCall

__all__ = ["PATTERNS", "Pattern", "mask", "may_hold_secret", "redact_event", "redact_text"]


class Pattern(NamedTuple):
    """One kind of secret: its name (in the mask and the counts), its regex and what it matches.

    When the regex has groups named ``secret…``, only the first of them that took part in the match
    is masked; otherwise the whole match is.
    """

    name: str
    regex: re.Pattern[str]
    description: str


def mask(name: str) -> str:
    """The text a secret found by the pattern `name` is replaced with.

    >>> mask("jwt")
    '[REDACTED:jwt]'
    """
    return f"[REDACTED:{name}]"


# -- the patterns ---------------------------------------------------------------------------------

#: Not a value to mask: a placeholder or reference, or a secret that is already masked.
_NOT_PLACEHOLDER: Final = r"(?![$<{*…]|%\(|\.\.\.|\[REDACTED:)"
#: A whole value that only stands for a secret: `sk-ant-...`, `xxxx`, `your-api-key`.
_PLACEHOLDER_TEXT: Final = re.compile(
    r"(?:.*(?:\.\.\.|…)|[xX*•.]+|(?:your|my)[-_ ].*)", re.IGNORECASE | re.DOTALL
)
#: Not code: an identifier that is called, indexed or passed on (`f(password=password)`).
_NOT_CODE: Final = r"(?![A-Za-z_][\w.]*[(),\[\]])"
#: An unquoted value standing alone must look like a secret: a digit or a symbol in it.
_LOOKS_SECRET: Final = r"(?=[^\s'\"`]*[0-9!@#%^&*+/=~-])"
#: A key ending in the keyword: `DB_PASSWORD`, `client_secret`, `--api-key`.
_KEY: Final = r"[\w.-]*?(?:{kw})"


def _assignment(keyword: str) -> re.Pattern[str]:
    """The regex of a `*-assignment` pattern whose keys end in `keyword` (a regex)."""
    key = _KEY.format(kw=keyword)
    quoted = (
        rf"(?<![\w.-]){key}\\?[\"']?[ \t]*(?:=>|:=|[:=])[ \t]*(?P<q>\\?[\"']){_NOT_PLACEHOLDER}"
        rf"(?P<secret>(?:(?!(?P=q))(?:\\.|[^\\\n]))+)(?P=q)"
    )
    env = rf"(?<![^\s;|'\"`→]){key}={_NOT_PLACEHOLDER}{_NOT_CODE}(?P<secret2>[^\s'\"`]+)"
    query = rf"(?<=[?&]){key}={_NOT_PLACEHOLDER}(?P<secret3>[^&#\s'\"<>]+)"
    flag = (
        rf"(?<![^\s'\"])--?{key}[ \t]+(?:(?P<q2>[\"']){_NOT_PLACEHOLDER}(?P<secret4>[^\n]+?)(?P=q2)"
        rf"|{_NOT_PLACEHOLDER}{_LOOKS_SECRET}(?P<secret5>[^\s'\"`-][^\s'\"`]*))"
    )
    line = (
        rf"(?:^[ \t]*(?:\d+→)?[ \t]*(?:-[ \t]+)?|(?<=[\"'])){key}[ \t]*[:=][ \t]*"
        rf"{_NOT_PLACEHOLDER}{_NOT_CODE}{_LOOKS_SECRET}(?P<secret6>[^\s'\"`]+)(?=[ \t]*\r?$|[\"'])"
    )
    return re.compile("|".join((quoted, env, query, flag, line)), re.IGNORECASE | re.MULTILINE)


_PEM_END: Final = r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"

PATTERNS: Final[tuple[Pattern, ...]] = (
    Pattern(
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:\\[nr]|\s)*"
            # the body never runs into another "-----" line, so a text of many BEGIN lines with no END
            # costs linear time, not quadratic
            r"(?P<secret>[A-Za-z0-9+/=:,\\-](?:(?:(?!-----)[A-Za-z0-9+/=:,\s\\-])*?[A-Za-z0-9+/=])?)"
            rf"(?=(?:\\[nr]|\s)*(?:{_PEM_END}|\Z))"
        ),
        "the body of a PEM private key block (BEGIN/END lines kept), or up to the end of a cut-off text",
    ),
    Pattern(
        "jwt",
        re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}"),
        "a JSON Web Token: three base64url segments, the first two starting eyJ",
    ),
    Pattern(
        "anthropic-api-key",
        re.compile(r"(?<![\w./-])sk-ant-[A-Za-z0-9_-]{20,}"),
        "an Anthropic key, sk-ant- and 20 or more key characters",
    ),
    Pattern(
        "openai-api-key",
        re.compile(
            r"(?<![\w./-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?"
            r"(?:(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Z])[A-Za-z0-9_-]{20,}"
            r"|[0-9a-f]{32,}(?![A-Za-z0-9_-]))"
        ),
        "an OpenAI-style key: sk-, sk-proj-, sk-svcacct- or sk-admin- and 20 or more characters with a "
        "digit and a capital, or sk- and 32 or more lower-case hex digits",
    ),
    Pattern(
        "github-token",
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
        "a GitHub token: ghp_, gho_, ghu_, ghs_, ghr_ and 36 or more letters and digits, or github_pat_",
    ),
    Pattern(
        "gitlab-token",
        re.compile(r"(?<![\w-])glpat-[A-Za-z0-9_-]{20,}"),
        "a GitLab personal access token, glpat- and 20 or more characters",
    ),
    Pattern(
        "slack-token",
        re.compile(r"(?<![\w-])xox[baprs]-[A-Za-z0-9-]{10,}"),
        "a Slack token, xoxb-, xoxa-, xoxp-, xoxr- or xoxs- and 10 or more characters",
    ),
    Pattern(
        "google-api-key",
        re.compile(r"(?<![\w-])AIza[0-9A-Za-z_-]{35}(?![\w-])"),
        "a Google API key, AIza and exactly 35 characters",
    ),
    Pattern(
        "stripe-key",
        re.compile(r"(?<![A-Za-z0-9_])[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),
        "a Stripe secret or restricted key, sk_live_ or rk_live_ (or _test_) and 16 or more characters",
    ),
    Pattern(
        "aws-access-key-id",
        re.compile(r"(?<![A-Za-z0-9])A(?:KI|SI)A[A-Z0-9]{16}(?![A-Za-z0-9])"),
        "an AWS access key id, AKIA or ASIA and 16 capitals or digits",
    ),
    Pattern(
        "aws-secret-access-key",
        re.compile(
            r"(?<![\w-])(?:aws_?)?secret_?access_?key[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
            re.IGNORECASE,
        ),
        "the 40-character value assigned to aws_secret_access_key (any case, = or :)",
    ),
    Pattern(
        "authorization-header",
        re.compile(
            r"(?<![\w-])(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:bearer|basic|token)[ \t]+"
            r"(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
            re.IGNORECASE,
        ),
        "the credentials of an Authorization: Bearer|Basic|Token header (8 or more characters)",
    ),
    Pattern(
        "url-password",
        re.compile(
            rf"(?<![\w+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@'\"]*:{_NOT_PLACEHOLDER}"
            r"(?P<secret>[^\s/?#'\"]+)@"
        ),
        "the password of a URL, scheme://user:PASSWORD@host",
    ),
    Pattern(
        "password-assignment",
        _assignment("pass(?:word|wd|phrase)"),
        "the value assigned to a key ending in password, passwd or passphrase",
    ),
    Pattern(
        "secret-assignment",
        _assignment(r"secret(?:[_-]?key)?"),
        "the value assigned to a key ending in secret or secret_key",
    ),
    Pattern(
        "token-assignment",
        _assignment("token"),
        "the value assigned to a key ending in token",
    ),
    Pattern(
        "api-key-assignment",
        _assignment(r"api[_-]?key"),
        "the value assigned to a key ending in api_key, api-key or apikey",
    ),
)

#: Lower-case strings one of which a text must hold for a pattern to be tried at all (a fast path).
_HINTS: Final[dict[str, tuple[str, ...]]] = {
    "private-key": ("private key",),
    "jwt": ("eyj",),
    "anthropic-api-key": ("sk-ant-",),
    "openai-api-key": ("sk-",),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab-token": ("glpat-",),
    "slack-token": ("xox",),
    "google-api-key": ("aiza",),
    "stripe-key": ("k_live_", "k_test_"),
    "aws-access-key-id": ("akia", "asia"),
    "aws-secret-access-key": ("access",),
    "authorization-header": ("authorization",),
    "url-password": ("://",),
    "password-assignment": ("pass",),
    "secret-assignment": ("secret",),
    "token-assignment": ("token",),
    "api-key-assignment": ("api",),
}


_ALL_HINTS: Final = tuple(sorted({h for hs in _HINTS.values() for h in hs}))
#: (In JSON, a writer may escape the slashes of a URL.)
_ALL_HINTS_BYTES: Final = (*(h.encode() for h in _ALL_HINTS), b":\\/\\/")


def may_hold_secret(text: str | bytes) -> bool:
    """Whether `text` (or an event's JSON) holds any pattern's hint: without one, :func:`redact_text`
    and :func:`redact_event` mask nothing (a key's hint is a pattern's hint too), so one look can
    spare them.

    >>> may_hold_secret(b'{"UserMessage":{"content":"fix the lexer"}}'), may_hold_secret("a PASSWORD")
    (False, True)
    """
    if isinstance(text, bytes):
        lower_bytes = text.lower()
        return any(h in lower_bytes for h in _ALL_HINTS_BYTES)
    lower = text.lower()
    return any(h in lower for h in _ALL_HINTS)


def _masker(pattern: Pattern, counts: Counter[str]) -> Callable[[re.Match[str]], str]:
    groups = [g for g in pattern.regex.groupindex if g.startswith("secret")]
    replacement = mask(pattern.name)

    def replace(m: re.Match[str]) -> str:
        whole = m.group(0)
        start, end = m.span()
        for group in groups:
            if m.start(group) >= 0:
                start, end = m.span(group)
                break
        if start == end or _PLACEHOLDER_TEXT.fullmatch(m.string, start, end):
            return whole
        counts[pattern.name] += 1
        at = m.start()
        return whole[: start - at] + replacement + whole[end - at :]

    return replace


def redact_text(text: str) -> tuple[str, Counter[str]]:
    """`text` with every secret masked, and how many were masked per pattern name.

    >>> redact_text('{"password": "hunter2", "user": "ann"}')
    ('{"password": "[REDACTED:password-assignment]", "user": "ann"}', Counter({'password-assignment': 1}))
    """
    counts: Counter[str] = Counter()
    lower = text.lower()
    for pattern in PATTERNS:
        if any(hint in lower for hint in _HINTS[pattern.name]):
            text = pattern.regex.sub(_masker(pattern, counts), text)
    return text, counts


# -- events ---------------------------------------------------------------------------------------

#: Keys of a JSON object (in a tool call's input) whose whole string value is a secret.
_SECRET_KEYS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("aws-secret-access-key", re.compile(r"(?:aws_?)?secret_?access_?key", re.IGNORECASE)),
    ("password-assignment", re.compile(_KEY.format(kw="pass(?:word|wd|phrase)"), re.IGNORECASE)),
    ("secret-assignment", re.compile(_KEY.format(kw=r"secret(?:[_-]?key)?"), re.IGNORECASE)),
    ("token-assignment", re.compile(_KEY.format(kw="token"), re.IGNORECASE)),
    ("api-key-assignment", re.compile(_KEY.format(kw=r"api[_-]?key"), re.IGNORECASE)),
)
_AUTH_KEY: Final = re.compile(r"(?:proxy-)?authorization", re.IGNORECASE)
_AUTH_VALUE: Final = re.compile(r"(?:bearer|basic|token)[ \t]+(?P<secret>[^\s\[$<{][^\s]{7,})", re.I)
_PLACEHOLDER_VALUE: Final = re.compile(_NOT_PLACEHOLDER.replace("(?!", "(?:", 1))


def _keyed_value(key: str, value: str, counts: Counter[str]) -> str | None:
    """A value masked because of the key it is under (None: the key says nothing)."""
    if _AUTH_KEY.fullmatch(key):
        m = _AUTH_VALUE.match(value)
        if m is None:
            return None
        counts["authorization-header"] += 1
        return value[: m.start("secret")] + mask("authorization-header") + value[m.end("secret") :]
    for name, key_regex in _SECRET_KEYS:
        if key_regex.fullmatch(key):
            if not value or _PLACEHOLDER_VALUE.match(value) or _PLACEHOLDER_TEXT.fullmatch(value):
                return None
            counts[name] += 1
            return mask(name)
    return None


def _redact_item(key: str, item: str, counts: Counter[str]) -> str:
    """A string under `key` in a JSON object: its secrets masked, or all of it under a secret key."""
    text, found = redact_text(item)
    if not (len(found) == 1 and text == mask(next(iter(found)))):
        keyed = _keyed_value(key, item, counts)
        if keyed is not None:
            return keyed
    if not found:
        return item
    counts.update(found)
    return text


def _redact_json(value: Any, counts: Counter[str]) -> Any:
    """`value` (decoded JSON) with its strings masked; the same object when nothing changed."""
    if isinstance(value, str):
        text, found = redact_text(value)
        if not found:
            return value
        counts.update(found)
        return text
    if isinstance(value, list):
        items = [_redact_json(item, counts) for item in value]
        return items if any(new is not old for new, old in zip(items, value, strict=True)) else value
    if isinstance(value, dict):
        out = {
            key: _redact_item(key, item, counts)
            if isinstance(key, str) and isinstance(item, str)
            else _redact_json(item, counts)
            for key, item in value.items()
        }
        return out if any(out[key] is not item for key, item in value.items()) else value
    return value


def redact_event(event: Event) -> tuple[Event, Counter[str]]:
    """`event` with every string in it masked, and the counts per pattern name.

    Strings nested anywhere in a tool call's input are masked too, and there a string under a
    secret-looking key (``{"DB_PASSWORD": "…"}``, ``{"Authorization": "Bearer …"}``) is masked whole
    under the matching ``*-assignment`` (or ``authorization-header``) name. An event with nothing to
    mask is returned as the same object.

    >>> from azsd.events import ToolCall
    >>> call = ToolCall(tool_use_id="t1", tool_name="Bash", input={"env": {"API_TOKEN": "abc123"}})
    >>> redact_event(call)[0].input
    {'env': {'API_TOKEN': '[REDACTED:token-assignment]'}}
    """
    counts: Counter[str] = Counter()
    changes: dict[str, Any] = {}
    for field in event.__struct_fields__:
        value = getattr(event, field)
        if isinstance(event, ToolCall) and field == "input":
            new = _redact_json(value, counts)
            if new is not value:
                changes[field] = new
        elif isinstance(value, str):
            text, found = redact_text(value)
            if found:
                counts.update(found)
                changes[field] = text
    if not changes:
        return event, counts
    return msgspec.structs.replace(event, **changes), counts
