"""Secret masking: every pattern in realistic text, the text around it intact, and look-alikes left alone.

The fake secrets are assembled from pieces so that no secret scanner mistakes this file for a leak.
"""

from __future__ import annotations

import base64
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from azsd import redact
from azsd.events import (
    AssistantText,
    Compacted,
    Complete,
    Hook,
    ToolCall,
    ToolResult,
    UserMessage,
    decode_event,
    encode_event,
)
from azsd.ingest.file import parse_file
from azsd.redact import PATTERNS, mask, redact_event, redact_text
from tests.conftest import corpus_files, requires_corpus

_PEM_BODY = "\n".join(textwrap.wrap(base64.b64encode(bytes(range(7, 256)) * 2).decode(), 64))

#: One fake secret per pattern: exactly the part that is to be masked.
SECRETS: dict[str, str] = {
    "private-key": _PEM_BODY,
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "anthropic-api-key": "sk-" + "ant-" + "api03-" + "Zq8Xw2Lp5Tn3Vb7Rk1Mh9Gd4Jc6Fs0Ya-AbCdEfGh_ij",
    "openai-api-key": "sk-" + "proj-" + "Ab3dEf6hIj9kLmN0pQrS2tUvW4xYz7Bc1De5Fg8Hi_Jk-Lm",
    "github-token": "gh" + "p_" + "R4nd0mL00k1ngT0k3nW1thTh1rtySixCh4r5",
    "gitlab-token": "gl" + "pat-" + "xY9zAb3Cd5Ef7Gh1Ij2K",
    "slack-token": "xo" + "xb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "google-api-key": "AI" + "za" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "stripe-key": "sk_" + "live_" + "51H8xYzAbCdEfGhIjKlMnOpQr",
    "aws-access-key-id": "AK" + "IA" + "Z7Q3X9V2B5N8M1K4",
    "aws-secret-access-key": "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzQ9rT2uV5w",
    "authorization-header": "a1b2c3d4e5f6g7h8.i9j0k1l2m3",
    "url-password": "Tr0ub4dor-3x",
    "password-assignment": "hunter2!correct",
    "secret-assignment": "9f8e7d6c5b4a3210fedcba",
    "token-assignment": "s.Q2w3E4r5T6y7U8i9O0",
    "api-key-assignment": "c0ffee00deadbeef",
}

#: An env file, a shell history, a JSON config and a PEM key, with one secret of each kind.
SAMPLE = """\
# ~/.config/shop/.env (production)
APP_ENV=production
DB_HOST=db.internal
DB_USER=shop
DB_PASSWORD=<<password-assignment>>
OPENAI_API_KEY=<<openai-api-key>>
ANTHROPIC_API_KEY=<<anthropic-api-key>>
GITHUB_TOKEN=<<github-token>>
GITLAB_TOKEN=<<gitlab-token>>
STRIPE_SECRET_KEY=<<stripe-key>>
AWS_ACCESS_KEY_ID=<<aws-access-key-id>>
AWS_SECRET_ACCESS_KEY=<<aws-secret-access-key>>

$ history | tail -4
  501  git remote set-url origin https://alice:<<url-password>>@git.example.com/team/shop.git
  502  curl -sS -H "Authorization: Bearer <<authorization-header>>" https://api.example.com/v1/me
  503  vault login --token <<token-assignment>> -address=https://vault.internal:8200
  504  git log --oneline -1

$ cat config/services.json
{
  "slack": {"bot": "<<slack-token>>", "channel": "#deploys"},
  "maps": {"api_key": "<<api-key-assignment>>", "browser_key": "<<google-api-key>>"},
  "oauth": {"client_id": "shop-123", "client_secret": "<<secret-assignment>>", "id_token": "<<jwt>>"}
}

$ cat ~/.ssh/deploy_key
-----BEGIN RSA PRIVATE KEY-----
<<private-key>>
-----END RSA PRIVATE KEY-----
$ echo done
"""


def fill(template: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        template = template.replace(f"<<{name}>>", value)
    assert "<<" not in template, template
    return template


def test_every_pattern_masked_once_and_the_rest_byte_identical():
    assert set(SECRETS) == {p.name for p in PATTERNS}
    original = fill(SAMPLE, SECRETS)
    expected = fill(SAMPLE, {name: mask(name) for name in SECRETS})
    text, counts = redact_text(original)
    assert text == expected
    assert counts == Counter({name: 1 for name in SECRETS})
    for secret in SECRETS.values():
        assert secret not in text


@pytest.mark.parametrize("name", list(SECRETS))
def test_each_line_alone(name):
    """The sample's line that holds a secret (the PEM block for the key), redacted on its own."""
    template = next(line for line in SAMPLE.splitlines() if f"<<{name}>>" in line)
    if name == "private-key":
        template = f"-----BEGIN RSA PRIVATE KEY-----\n{template}\n-----END RSA PRIVATE KEY-----"
    names = [n for n in SECRETS if f"<<{n}>>" in template]
    text, counts = redact_text(fill(template, SECRETS))
    assert text == fill(template, {n: mask(n) for n in names})
    assert counts == Counter(names)


def test_redacting_twice_changes_nothing_more():
    once, _ = redact_text(fill(SAMPLE, SECRETS))
    assert redact_text(once) == (once, Counter())


LOOKALIKES = [
    "commit 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a (HEAD -> main)",
    "git show 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a:src/app.py",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "pip install scikit-learn  # sometimes spelled sk-learn",
    "see sk-learn-2024-release-notes-v1.2.md and sk-short",
    "The password must be at least 12 characters long.",
    "Enter password: then press enter. Forgot your password? Reset the password token.",
    "Use --password-file /run/secrets/db instead of --password on the command line.",
    "pass --token to override the token from the config",
    "max_tokens=4096 and input_tokens: 512",
    '{"input_tokens": 1234, "cache_read_input_tokens": 0, "token_type": "bearer"}',
    "/home/me/.ssh/id_rsa.pub src/tokens/token_store.py ~/.aws/credentials /etc/passwd",
    "SGVsbG8sIHdvcmxkIQ== dGhpcyBpcyBub3QgYSBKV1Q= eyJhbGciOiJIUzI1NiJ9",
    "connect(user=user, password=password)",
    "f(a, password=pw)",
    'password = os.environ["DB_PASSWORD"]',
    "token = get_token()",
    "    token = base64.b64encode(raw)",
    "api_key: str | None = None",
    "password: str",
    "token: Optional[str]",
    "self.secret = secret",
    'headers = {"Authorization": f"Bearer {token}"}',
    "Authorization: Bearer <token>",
    "PASSWORD=${DB_PASSWORD}",
    'export OPENAI_API_KEY="$OPENAI_API_KEY"',
    '"password": ""',
    '"password": "<your password>"',
    '{:ok, s} = ClaudeCode.start_link(api_key: "sk-ant-...")',
    'TOKEN="your-token-here"',
    "password=xxxxxxxx",
    'if password == "x":',
    "https://example.com:8080/path@foo and ssh://git@github.com:22/org/repo.git",
    "git@github.com:org/repo.git",
    "AKIAEXAMPLE is too short, ghp_short too, xoxo-gossip is prose",
    'if line.startswith("-----BEGIN RSA PRIVATE KEY-----"):',
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_are_left_alone(text):
    assert redact_text(text) == (text, Counter())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DB_PASSWORD=hunter2", "DB_PASSWORD=[REDACTED:password-assignment]"),
        ("export PGPASSWORD='s3cr3t pass'", "export PGPASSWORD='[REDACTED:password-assignment]'"),
        ('{"password":"hunter2","user":"ann"}', '{"password":"[REDACTED:password-assignment]","user":"ann"}'),
        ('{\\"password\\": \\"hunter2\\"}', '{\\"password\\": \\"[REDACTED:password-assignment]\\"}'),
        ("mysql -u root --password hunter2x", "mysql -u root --password [REDACTED:password-assignment]"),
        ('mysql --password "two words"', 'mysql --password "[REDACTED:password-assignment]"'),
        ("mysql --password=hunter2", "mysql --password=[REDACTED:password-assignment]"),
        ("password: hunter2", "password: [REDACTED:password-assignment]"),
        ("  db_passwd = Tr0ub4dor", "  db_passwd = [REDACTED:password-assignment]"),
        (
            "$opts = ['passphrase' => 'open sesame'];",
            "$opts = ['passphrase' => '[REDACTED:password-assignment]'];",
        ),
        (
            "GET /cb?state=1&access_token=abc123&x=1",
            "GET /cb?state=1&access_token=[REDACTED:token-assignment]&x=1",
        ),
        ('SECRET_KEY = "django-insecure-k3y"', 'SECRET_KEY = "[REDACTED:secret-assignment]"'),
        ("webhook_secret: 'whs3cr3t'", "webhook_secret: '[REDACTED:secret-assignment]'"),
        (
            'curl -H "X-Api-Key: abc123def" https://x',
            'curl -H "X-Api-Key: [REDACTED:api-key-assignment]" https://x',
        ),
        ("redis://:p@ss@cache:6379/0", "redis://:[REDACTED:url-password]@cache:6379/0"),
        ("aws_secret_access_key = " + "A" * 40, "aws_secret_access_key = [REDACTED:aws-secret-access-key]"),
        (
            "Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l",
            "Authorization: Basic [REDACTED:authorization-header]",
        ),
        (
            # cut off: masked to the end
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nAAAA",
            "-----BEGIN PRIVATE KEY-----\n[REDACTED:private-key]",
        ),
        (
            '"-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIB\\n-----END EC PRIVATE KEY-----\\n"',
            '"-----BEGIN EC PRIVATE KEY-----\\n[REDACTED:private-key]\\n-----END EC PRIVATE KEY-----\\n"',
        ),
    ],
)
def test_forms_keep_their_context(text, expected):
    out, counts = redact_text(text)
    assert out == expected
    assert sum(counts.values()) == 1


def test_a_specific_pattern_wins_over_an_assignment():
    text, counts = redact_text("token=" + SECRETS["github-token"])
    assert text == "token=[REDACTED:github-token]"
    assert counts == Counter({"github-token": 1})


def test_patterns_are_documented():
    names = [p.name for p in PATTERNS]
    assert len(names) == len(set(names))
    doc = redact.__doc__ or ""
    for p in PATTERNS:
        assert p.description
        assert f"\n{p.name} " in doc, f"{p.name} is missing from the module docstring's table"


# -- events ---------------------------------------------------------------------------------------


def test_redact_event_tool_call_nested_input():
    call = ToolCall(
        tool_use_id="toolu_1",
        tool_name="Bash",
        input={
            "command": f"curl -H 'Authorization: Bearer {SECRETS['authorization-header']}' https://api.x/v1",
            "description": "Call the API",
            "env": {"DB_PASSWORD": "plain words too", "PATH": "/usr/bin", "KEY": SECRETS["stripe-key"]},
            "headers": [{"Authorization": "Bearer abcdefgh12345678"}, {"Accept": "application/json"}],
            "args": ["--token", SECRETS["github-token"], 3, True, None],
            "timeout": 1000,
        },
    )
    out, counts = redact_event(call)
    assert isinstance(out, ToolCall)
    assert out.input == {
        "command": "curl -H 'Authorization: Bearer [REDACTED:authorization-header]' https://api.x/v1",
        "description": "Call the API",
        "env": {
            "DB_PASSWORD": "[REDACTED:password-assignment]",
            "PATH": "/usr/bin",
            "KEY": mask("stripe-key"),
        },
        "headers": [
            {"Authorization": "Bearer [REDACTED:authorization-header]"},
            {"Accept": "application/json"},
        ],
        "args": ["--token", "[REDACTED:github-token]", 3, True, None],
        "timeout": 1000,
    }
    assert counts == Counter(
        {"authorization-header": 2, "password-assignment": 1, "stripe-key": 1, "github-token": 1}
    )
    assert (out.tool_use_id, out.tool_name, out.file_path) == (call.tool_use_id, call.tool_name, None)
    assert decode_event(encode_event(out)) == out
    assert SECRETS["stripe-key"] in str(call.input)  # the original is untouched


def test_redact_event_keeps_unchanged_parts_of_the_input():
    untouched = {"deep": ["a", {"b": "c"}]}
    call = ToolCall(tool_use_id="t", tool_name="X", input={"keep": untouched, "url": "https://u:pw9@h"})
    out, _ = redact_event(call)
    assert isinstance(out, ToolCall)
    assert out.input["keep"] is untouched
    assert out.input["url"] == "https://u:[REDACTED:url-password]@h"


def test_redact_event_tool_result():
    result = ToolResult(
        tool_use_id="toolu_2",
        tool_name="Read",
        file_path="/srv/app/.env",
        content=f"     1→DB_PASSWORD={SECRETS['password-assignment']}\n     2→DEBUG=false\n",
        is_error=False,
    )
    out, counts = redact_event(result)
    assert out == ToolResult(
        tool_use_id="toolu_2",
        tool_name="Read",
        file_path="/srv/app/.env",
        content="     1→DB_PASSWORD=[REDACTED:password-assignment]\n     2→DEBUG=false\n",
        is_error=False,
    )
    assert counts == Counter({"password-assignment": 1})


@pytest.mark.parametrize(
    "event",
    [
        UserMessage(content="fix the password reset flow in src/auth/password.py"),
        AssistantText(text="Done: the token now expires after 3600 s."),
        ToolCall(
            tool_use_id="t", tool_name="Read", file_path="/a/token.py", input={"file_path": "/a/token.py"}
        ),
        ToolCall(tool_use_id="t", tool_name="X", input=None),
        ToolResult(tool_use_id="t", tool_name="Read", content="ok", is_error=False),
        Complete(success=True, duration_ms=10, cost_usd=0.5),
        Compacted(),
    ],
)
def test_events_without_secrets_are_the_same_object(event):
    out, counts = redact_event(event)
    assert out is event
    assert counts == Counter()


def test_redact_event_every_string_field():
    hook = Hook(name="SessionStart", output=f"export GITHUB_TOKEN={SECRETS['github-token']}")
    out, counts = redact_event(hook)
    assert out == Hook(name="SessionStart", output="export GITHUB_TOKEN=[REDACTED:github-token]")
    assert counts == Counter({"github-token": 1})
    msg, counts = redact_event(UserMessage(content=f"use {SECRETS['openai-api-key']} please"))
    assert msg == UserMessage(content="use [REDACTED:openai-api-key] please")


@requires_corpus
@pytest.mark.corpus
def test_corpus_has_nothing_to_mask():
    """The corpus holds no secrets, so anything masked in it is a false positive."""
    found: Counter[str] = Counter()
    where: list[str] = []
    for path in corpus_files():
        events, _ = parse_file(Path(path))
        for event in events:
            out, counts = redact_event(event)
            if counts:
                where.append(f"{path.name}: {dict(counts)}")
            found += counts
            assert (out is event) == (not counts)
    assert not found, where


@pytest.mark.parametrize("name", list(SECRETS))
def test_a_text_with_a_secret_always_has_a_hint(name):
    """`may_hold_secret` (the one look sync's push makes before masking an event) never misses what
    `redact_text` masks, in the text or in the event's JSON."""
    from azsd.events import encode_event
    from azsd.redact import may_hold_secret

    template = next(line for line in SAMPLE.splitlines() if f"<<{name}>>" in line)
    if name == "private-key":
        template = f"-----BEGIN RSA PRIVATE KEY-----\n{template}\n-----END RSA PRIVATE KEY-----"
    text = fill(template, SECRETS)
    assert redact_text(text)[1] and may_hold_secret(text)
    assert may_hold_secret(encode_event(UserMessage(content=text)))
    assert not may_hold_secret(encode_event(UserMessage(content="fix the lexer")))
