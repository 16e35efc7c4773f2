"""The content scan (freshline.secretscan, pure): each kind it finds, what it must not
find (hex ids, UUIDs, git object ids, code), the allow marker, and withholding's
properties."""

from __future__ import annotations

import random
import string
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.secretscan import (
    ALLOW_MARKER,
    SecretKind,
    count_note,
    entropy,
    find_secrets,
    scan,
    withhold,
)

OPENAI = "sk-proj-" + "Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7fGh9jKl1nOp3rSt5vWx7zA1bC3dE5fG7hI9"
OPENAI_LEGACY = "sk-" + "a1B2c3D4e5F6g7H8i9J0" + "T3BlbkFJ" + "k1L2m3N4o5P6q7R8s9T0"
ANTHROPIC = ("sk-ant-api03-" + "Zq8_x-Yw7Vu6Ts5Rq4Po3Nm2Lk1Ji0Hg9Fe8Dc7Ba6Zy5Xw4Vu3Ts2"
             + "Rq1Po0Nm9Lk8Ji7AA")
AWS_ID = "AKIAQ3EGRT5NXMPLW7ZD"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_" + "1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0" + "a" * 20 + "_" + "B1c2" * 12 + "Zz9"
GITLAB = "glpat-" + "xY3_zW9-vU7tS5rQ1pO2"
SLACK = "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_HOOK = "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
GOOGLE = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
HF = "hf_" + "QmXvTrPzLkWnBcJdHfGsYaEuRiOtMqZxNp"
NPM = "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PYPI = "pypi-AgEIcHlwaS5vcmc" + "CJDk3ZTE3NjU5LWU0NjctNGUxOC1hMjg1LWUyNjM3MjE1ZGQzNQ"
SENDGRID = "SG." + "a1B2c3D4e5F6g7H8i9J0k1" + "." + "L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6a7B8c9D0e1F2g"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
KEY_BLOCK = ("-----BEGIN OPENSSH PRIVATE KEY-----\n"
             "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
             "QyNTUxOQAAACDx0l1Ul1Ryl9U0Zq3jQ1vHIl3z0q2Yk1mPjQXcV0m4rQAAAJgAAAAAAAAAA\n"
             "-----END OPENSSH PRIVATE KEY-----")


@pytest.mark.parametrize(
    ("text", "kind", "secret"),
    [
        (f'OPENAI_API_KEY = "{OPENAI}"', SecretKind.OPENAI_KEY, OPENAI),
        (f"key: {OPENAI_LEGACY}\n", SecretKind.OPENAI_KEY, OPENAI_LEGACY),
        (f"export ANTHROPIC_API_KEY={ANTHROPIC}", SecretKind.ANTHROPIC_KEY, ANTHROPIC),
        (f"[default]\naws_access_key_id = {AWS_ID}\n", SecretKind.AWS_ACCESS_KEY, AWS_ID),
        (f"aws_secret_access_key = {AWS_SECRET}\n", SecretKind.AWS_SECRET_KEY, AWS_SECRET),
        (f'AWS_SECRET = "{AWS_SECRET}"', SecretKind.AWS_SECRET_KEY, AWS_SECRET),
        (f"token {GITHUB} here", SecretKind.GITHUB_TOKEN, GITHUB),
        (f"GH={GITHUB_PAT}", SecretKind.GITHUB_TOKEN, GITHUB_PAT),
        (f"gitlab: {GITLAB}", SecretKind.GITLAB_TOKEN, GITLAB),
        (f"slack {SLACK}", SecretKind.SLACK_TOKEN, SLACK),
        (f"hook = {SLACK_HOOK}", SecretKind.SLACK_WEBHOOK, SLACK_HOOK),
        (f"stripe.api_key = '{STRIPE}'", SecretKind.STRIPE_KEY, STRIPE),
        (f"maps key {GOOGLE}", SecretKind.GOOGLE_API_KEY, GOOGLE),
        (f"HF_TOKEN={HF}", SecretKind.HUGGINGFACE_TOKEN, HF),
        (f"//registry.npmjs.org/:_authToken={NPM}", SecretKind.NPM_TOKEN, NPM),
        (f"password = {PYPI}", SecretKind.PYPI_TOKEN, PYPI),
        (f"SENDGRID={SENDGRID}", SecretKind.SENDGRID_KEY, SENDGRID),
        (f"Authorization: Bearer {JWT}", SecretKind.JWT, JWT),
        (f"notes\n{KEY_BLOCK}\nafter", SecretKind.PRIVATE_KEY, KEY_BLOCK),
        ('"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n'
         '-----END PRIVATE KEY-----\\n"', SecretKind.PRIVATE_KEY,
         "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n"
         "-----END PRIVATE KEY-----"),
        ("db = postgresql://app:s3cr3t-Pa55@db.internal:5432/app", SecretKind.BASIC_AUTH,
         "s3cr3t-Pa55"),
        ('DB_PASSWORD = "Zx81kQ02mPa9LvT7rW3e"', SecretKind.ASSIGNED_SECRET,
         "Zx81kQ02mPa9LvT7rW3e"),
        ("client_secret: 9daeafb9864cf43055ae93beb0afd6c7d144bfa4", SecretKind.ASSIGNED_SECRET,
         "9daeafb9864cf43055ae93beb0afd6c7d144bfa4"),
        ('{"apiKey": "q8Fz2LmN0pRt5VwX7yA9"}', SecretKind.ASSIGNED_SECRET, "q8Fz2LmN0pRt5VwX7yA9"),
        ("api_token: str = 'q8Fz2LmN0pRt5VwX7yA9'", SecretKind.ASSIGNED_SECRET,
         "q8Fz2LmN0pRt5VwX7yA9"),
        ("$secretKey = 'q8Fz2LmN0pRt5VwX7yA9';", SecretKind.ASSIGNED_SECRET,
         "q8Fz2LmN0pRt5VwX7yA9"),
    ],
)
def test_each_kind_is_found_and_withheld(text: str, kind: SecretKind, secret: str) -> None:
    findings = find_secrets(text)
    assert [(f.kind, text[f.start:f.end]) for f in findings] == [(kind, secret)]
    withheld = scan(text)
    assert secret not in withheld.text
    assert f"[secret withheld: {kind.value}]" in withheld.text
    assert withheld.kinds == (kind,)


@pytest.mark.parametrize(
    "text",
    [
        "commit 9daeafb9864cf43055ae93beb0afd6c7d144bfa4\nAuthor: A <a@b.c>",
        "blob 9daeafb9864cf43055ae93beb0afd6c7d144bfa4\n"
        "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        'sha = "9daeafb9864cf43055ae93beb0afd6c7d144bfa4"',
        "index 83db48f..bf269f4 100644",
        'id = "550e8400-e29b-41d4-a716-446655440000"',
        'token_id = "550e8400-e29b-41d4-a716-446655440000"',
        'api_key_id = "9daeafb9864cf43055ae93beb0afd6c7d144bfa4"',
        'secret_hash = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"',
        '"integrity": "sha512-Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy"',
        "token = os.environ.get('OPENAI_API_KEY')",
        "password = getpass.getpass()",
        "self.token = token_value",
        'api_key: str = ""',
        'password = "hunter2"',
        'PASSWORD = "your-password-here"',
        'API_KEY = "${OPENAI_API_KEY}"',
        "api_key = <your key>",
        'secret_key = "xxxxxxxxxxxxxxxxxxxx"',
        'token = "0123456789abcdef"',
        "SECRET_PATTERNS: tuple[str, ...] = (",
        'AWS_SECRET_KEY = "aws-secret-key"  # a kind',
        'author_email = "jane.doe@example.com"',
        'token_url = "https://auth.example.com/oauth/token"',
        "password_file = /etc/app/password.txt",
        "Visit https://example.com/path?x=1 or mailto:user@example.com",
        "git clone https://github.com/owner/repo.git",
        "postgresql://app:${DB_PASSWORD}@db:5432/app",
        "https://user:password@example.com",
        "The BEGIN line of a PEM file reads `-----BEGIN RSA PRIVATE KEY-----` in docs.",
        "eyJhbGciOi is the start of many tokens; eyJxx.eyJyy.zz is not one",
        "sk-learn and sk-image are packages; task-key is a word",
        "AKIA is a prefix; AKIAIOSFODNN7EXAMPLEANDMORE is too long",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert find_secrets(text) == [], text
    assert scan(text).text == text


def test_the_private_key_header_alone_withholds_only_the_key_lines() -> None:
    text = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234567890abcdef\n\nprose after\n"
    withheld = scan(text)
    assert "MIIEowIBAAKCAQEA" not in withheld.text and "prose after" in withheld.text


def test_line_numbers_survive_withholding() -> None:
    text = f"a\n{KEY_BLOCK}\nb = 1\nc\n"
    withheld = scan(text).text
    assert withheld.count("\n") == text.count("\n")
    assert withheld.splitlines()[5] == "b = 1"


@pytest.mark.parametrize(
    "text",
    [
        f'API_KEY = "{OPENAI}"  # {ALLOW_MARKER}',
        f"// {ALLOW_MARKER}\nconst key = '{GITHUB}';",
        f"<!-- {ALLOW_MARKER} -->\n{KEY_BLOCK}",
    ],
)
def test_the_marker_allows_its_line_or_the_next(text: str) -> None:
    assert find_secrets(text) == []


def test_the_marker_allows_nothing_further() -> None:
    text = f"# {ALLOW_MARKER}\nok = 1\nleak = '{GITHUB}'\nx = '{AWS_ID}'  # {ALLOW_MARKER} and more"
    assert [f.kind for f in find_secrets(text)] == [SecretKind.GITHUB_TOKEN]


def test_overlaps_go_to_the_more_specific_rule() -> None:
    assert [f.kind for f in find_secrets(f'OPENAI_API_KEY="{OPENAI}"')] == [SecretKind.OPENAI_KEY]


def test_the_count_note() -> None:
    kinds = (SecretKind.OPENAI_KEY, SecretKind.JWT, SecretKind.OPENAI_KEY)
    assert count_note(kinds) == "[3 secrets withheld: openai-key, jwt]"
    assert count_note((SecretKind.JWT,)) == "[1 secret withheld: jwt]"


def test_entropy() -> None:
    assert entropy("") == 0.0 and entropy("aaaa") == 0.0
    assert entropy("abcd") == 2.0


# -- properties ------------------------------------------------------------------------------

_HEX = st.text("0123456789abcdef", min_size=40, max_size=40)
_PROSE = st.text(string.ascii_letters + string.digits + " .,;:()\n-", max_size=200)


def _id_line(kind: int, value: str, u: uuid.UUID) -> str:
    return [f"commit {value}", f"blob {value}", f'"sha": "{value}"', f"id = '{u}'",
            f"Merge: {value[:7]} {value[7:14]}", f"index {value[:7]}..{value[7:14]} 100644",
            f"request_id: {u}", f"{value}  refs/heads/main"][kind]


@given(st.lists(st.tuples(st.integers(0, 7), _HEX, st.uuids(), _PROSE), max_size=20))
def test_ids_and_prose_are_never_secrets(lines: list[tuple[int, str, uuid.UUID, str]]) -> None:
    text = "\n".join(f"{_id_line(k, v, u)}\n{prose}" for k, v, u, prose in lines)
    assert find_secrets(text) == []


def _token(seed: int, length: int) -> str:
    rng = random.Random(seed)
    chars = [rng.choice(string.ascii_letters + string.digits) for _ in range(length - 3)]
    chars += [rng.choice(string.ascii_lowercase), rng.choice(string.ascii_uppercase),
              rng.choice(string.digits)]
    rng.shuffle(chars)
    return "".join(chars)


@given(st.integers(0, 2**32), st.integers(20, 64),
       st.sampled_from(["API_KEY", "db_password", "clientSecret", "AUTH_TOKEN", "secret"]),
       st.sampled_from(['{n} = "{v}"', "{n}={v}", "{n}: {v}", '"{n}": "{v}",', "{n} := '{v}'"]),
       _PROSE)
def test_a_random_token_assigned_to_a_secret_name_is_withheld(
    seed: int, length: int, name: str, shape: str, prose: str
) -> None:
    value = _token(seed, length)
    text = f"{prose}\n{shape.format(n=name, v=value)}\n{prose}"
    withheld = scan(text)
    assert value not in withheld.text
    assert withheld.count >= 1


_PIECES = st.sampled_from([OPENAI, ANTHROPIC, AWS_ID, GITHUB, SLACK, STRIPE, JWT, KEY_BLOCK,
                           GOOGLE, "plain words", "\n", " = ", "x", "commit 9daeafb9"])


_SEPARATORS = st.sampled_from([" ", "\n", "\t", " = ", ": ", ", ", '"', "'", "\n\n"])


@given(st.lists(st.tuples(_PIECES, _SEPARATORS).map("".join), max_size=12).map("".join))
def test_withholding_leaves_no_finding_and_keeps_lines(text: str) -> None:
    findings = find_secrets(text)
    withheld = withhold(text, findings)
    assert find_secrets(scan(text).text) == []
    assert scan(text).count >= len(findings)
    assert withheld.count("\n") == text.count("\n")
    for f in findings:
        assert text[f.start:f.end] not in withheld
    assert all(a.end <= b.start for a, b in zip(findings, findings[1:], strict=False))
    assert (withheld == text) == (not findings)
