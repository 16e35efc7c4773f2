"""The content scan (freshline.secretscan, pure): each kind it finds, each form and vendor
family issue 47 saw missed, what it must not find (hex ids, UUIDs, git object ids, code:
Django's own names), the allow marker, withholding's properties, and gitleaks' rule set
as vendored (the data, and Go's regexes read as Python's)."""

from __future__ import annotations

import base64
import json
import random
import re
import string
import sys
import tomllib
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline import gitleaks
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


# -- the forms and families issue 47 saw missed ------------------------------------------------

_PW = "Xk9$!(pQ2zLm7w"
_TOKEN = "q8Fz2LmN0pRt5VwX7yA9kB3c"
_BASIC = base64.b64encode(b"deploy:Xk9pQ2zLm7wR").decode()
_PEM64 = base64.b64encode(
    b"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLez\n"
    b"-----END RSA PRIVATE KEY-----\n").decode()
_AZURE = base64.b64encode(bytes(range(7, 71))).decode()
_HEX32 = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
_A40 = "q8Fz2LmN0pRt5VwX7yA9kB3cD4eF5gH6iJ7kL8mN"
_DISCORD = "MTEyMzQ1Njc4OTAxMjM0NTY3OA.GhIjKl.q8Fz2LmN0pRt5VwX7yA9kB3cD4eF5gH6iJ"


@pytest.mark.parametrize(
    ("text", "kind", "secret"),
    [
        # forms of the README's own classes
        (f"DB_USER=app\nDB_PASSWORD={_PW}\n", "assigned-secret", _PW),
        (f"db:\n  password: >-\n    {_PW}\n  user: app\n", "assigned-secret", _PW),
        (f"db:\n  password: |\n    {_PW}\n", "assigned-secret", _PW),
        (f"curl -F token={_TOKEN} -F ref=main https://ci.example.org/trigger", "assigned-secret",
         _TOKEN),
        ("jdbc:postgresql://db/app?user=app&password=Xk9pQ2zLm7wR&ssl=true", "assigned-secret",
         "Xk9pQ2zLm7wR"),
        (f'curl -H "X-Api-Key: {_TOKEN}" https://api.example.org/items', "curl-auth-header",
         _TOKEN),
        (f'headers = {{"X-Api-Key: {_TOKEN}"}}', "assigned-secret", _TOKEN),
        ('api_token = "3f1c2a9e-7b4d-4e8a-9c21-5d6e7f8a9b0c"', "assigned-secret",
         "3f1c2a9e-7b4d-4e8a-9c21-5d6e7f8a9b0c"),
        ("REDIS_URL=redis://:Xk9pQ2zLm7wR@cache:6379/0", "basic-auth", "Xk9pQ2zLm7wR"),
        (f"Authorization: Basic {_BASIC}", "http-auth", _BASIC),
        (f"GET / HTTP/1.1\nAuthorization: Bearer {_TOKEN}\n", "http-auth", _TOKEN),
        ("curl -u deploy:Xk9$!pQ2zLm https://registry.example.org/v2/", "basic-auth",
         "Xk9$!pQ2zLm"),
        # vendor families
        (f"DefaultEndpointsProtocol=https;AccountName=a;AccountKey={_AZURE};EndpointSuffix=x",
         "azure-storage-key", _AZURE),
        (f"DISCORD_BOT_TOKEN={_DISCORD}", "discord-bot-token", _DISCORD),
        ("bot = Bot('1234567890:AAq8Fz2LmN0pRt5VwX7yA9kB3cD4eF5gH6i')", "telegram-bot-token",
         "1234567890:AAq8Fz2LmN0pRt5VwX7yA9kB3cD4eF5gH6i"),
        (f"SLACK_APP_TOKEN=xapp-1-A0123456789-1234567890123-{_HEX32 * 2}", "slack-token",
         f"xapp-1-A0123456789-1234567890123-{_HEX32 * 2}"),
        ("runner: glrt-q8Fz2LmN0pRt5VwX7yA9", "gitlab-runner-authentication-token",
         "glrt-q8Fz2LmN0pRt5VwX7yA9"),
        (f"trigger = glptt-{_HEX32}0a1b2c3d", "gitlab-ptt", f"glptt-{_HEX32}0a1b2c3d"),
        (f"VAULT_TOKEN=hvs.{_A40 * 3}", "vault-service-token", f"hvs.{_A40 * 3}"[:124]),
        (f"DO_TOKEN=dop_v1_{_HEX32 * 2}", "digitalocean-pat", f"dop_v1_{_HEX32 * 2}"),
        (f"atlassian_token: ATATT3xFfGF0{_A40 * 4}z1=0A1B2C3D{_HEX32[:9]}", "atlassian-api-token",
         f"ATATT3xFfGF0{_A40 * 4}z1=0A1B2C3D{_HEX32[:9]}"),
        ("GRAFANA_TOKEN=glsa_q8Fz2LmN0pRt5VwX7yA9kB3cD4eF5gH6_0a1b2c3d",
         "grafana-service-account-token", "glsa_q8Fz2LmN0pRt5VwX7yA9kB3cD4eF5gH6_0a1b2c3d"),
        (f"LINEAR_API_KEY=lin_api_{_A40}", "linear-api-key", f"lin_api_{_A40}"),
        (f"DOPPLER_TOKEN=dp.pt.{_A40}abc", "doppler-api-token", f"dp.pt.{_A40}abc"),
        (f"OKTA_API_TOKEN=00{_A40}", "okta-access-token", f"00{_A40}"),
        ("NEW_RELIC_API_KEY=NRAK-Q8FZ2LMN0PRT5VWX7YA9KB3CD4E", "new-relic-user-api-key",
         "NRAK-Q8FZ2LMN0PRT5VWX7YA9KB3CD4E"),
        (f"MAILGUN_API_KEY=key-{_HEX32}", "mailgun-private-api-token", f"key-{_HEX32}"),
        ("AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2, "age-secret-key",
         "AGE-SECRET-KEY-1" + ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:58]),
        (f"kind: Secret\ndata:\n  tls.key: {_PEM64}\n", "private-key", _PEM64),
        (f'{{"auths": {{"r.example.org": {{"auth": "{_BASIC}"}}}}}}', "docker-auth", _BASIC),
        ("machine api.example.org\n  login deploy\n  password Xk9pQ2zLm7wR\n", "netrc-password",
         "Xk9pQ2zLm7wR"),
    ],
)
def test_each_form_and_family_is_withheld(text: str, kind: str, secret: str) -> None:
    assert [(f.kind, text[f.start:f.end]) for f in find_secrets(text)] == [(kind, secret)]
    withheld = scan(text)
    assert secret not in withheld.text and withheld.kinds == (kind,)
    assert withheld.text.count("\n") == text.count("\n")


@pytest.mark.parametrize(
    "text",
    [
        # Django's own source: a class, a string naming a key, code
        "    change_password_form = AdminPasswordChangeForm",
        'INTERNAL_RESET_SESSION_TOKEN = "_password_reset_token"',
        "        self.token_generator = default_token_generator",
        "    password = ReadOnlyPasswordHashField(",
        'API_KEY_HEADER = "X-Api-Key"',
        "            token = self.__class__.process_tokendef(level)",
        "def strip_tags(s: str, tokens: ParseResults):",
        "        self.passwords = {x.strip() for x in f}",
        "AccessToken(token='{masked}', expires_at=1)",
        # one-character and short example passwords
        'password = "x"',
        "login(username='a', password='b')",
        "curl -u user:password https://example.org",
        # the Bearer and Basic words in prose, and placeholders
        "Authorization: Bearer <token>",
        "Authorization: Bearer $TOKEN",
        "Basic authentication is supported; Bearer tokens too.",
        "machine example.org login me password $PASSWORD",
        "REDIS_URL=redis://:${REDIS_PASSWORD}@cache:6379",
        # UUIDs not assigned to a token's name, git SHAs, lock-file hashes
        "request_id = '3f1c2a9e-7b4d-4e8a-9c21-5d6e7f8a9b0c'",
        "token_id = 3f1c2a9e-7b4d-4e8a-9c21-5d6e7f8a9b0c",
        '"resolved": "https://registry.npmjs.org/x/-/x-1.0.0.tgz", "integrity": '
        '"sha512-Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy"',
        'version = "1.0.0"\nhash = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a"',
        # a certificate is public, and docker's "auth" holds nothing that decodes
        "  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJJakFOQmdrcWhraUc5dzBCQVFFRkFBT0M=",
        '"auth": "not-base64!"',
    ],
)
def test_code_ids_and_examples_are_shown_as_they_are(text: str) -> None:
    assert find_secrets(text) == [], text


_FAMILY = st.sampled_from([
    f"DB_PASSWORD={_PW}", f"DO_TOKEN=dop_v1_{_HEX32 * 2}", f"Authorization: Bearer {_TOKEN}",
    f"LINEAR_API_KEY=lin_api_{_A40}", "REDIS_URL=redis://:Xk9pQ2zLm7wR@cache:6379/0",
    f"  tls.key: {_PEM64}", KEY_BLOCK, "change_password_form = AdminPasswordChangeForm",
    "request_id = '3f1c2a9e-7b4d-4e8a-9c21-5d6e7f8a9b0c'"])


@given(st.lists(st.tuples(_FAMILY, _PROSE), max_size=10))
def test_withholding_keeps_line_numbers_and_never_adds_a_secret(
    parts: list[tuple[str, str]]
) -> None:
    text = "\n".join(f"{line}\n{prose}" for line, prose in parts)
    withheld = scan(text)
    assert withheld.text.count("\n") == text.count("\n")
    assert scan(withheld.text).text == withheld.text  # nothing left to find, nothing new
    assert withheld.count == len(find_secrets(text)) or withheld.count > len(find_secrets(text))
    for secret in (_PW, _TOKEN, _A40, _PEM64, "Xk9pQ2zLm7wR"):
        assert secret not in withheld.text
    assert "AdminPasswordChangeForm" in withheld.text or "AdminPasswordChangeForm" not in text


# -- gitleaks' rule set, as vendored -----------------------------------------------------------

_DATA = Path(gitleaks.DATA).parent


def test_the_vendored_json_is_the_toml_as_tomllib_reads_it() -> None:
    toml = (_DATA / "gitleaks.toml").read_bytes()
    vendored = json.loads((_DATA / "gitleaks.json").read_text(encoding="utf-8"))
    assert vendored["config"] == tomllib.loads(toml.decode())
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from gitleaks_rules import vendored_json

    assert (_DATA / "gitleaks.json").read_text(encoding="utf-8") == vendored_json(
        toml, vendored["source"]["version"])
    assert "MIT License" in (_DATA / "gitleaks-LICENSE").read_text(encoding="utf-8")


def test_the_refresh_script_refuses_a_bad_file_and_writes_nothing(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]
                                                                  ) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from gitleaks_rules import main

    before = {p.name: p.read_bytes() for p in _DATA.iterdir()}
    bad = tmp_path / "bad.toml"
    bad.write_text("[[rules]\nid = ")
    assert main([str(bad), "v0"]) == 2
    assert main([str(tmp_path / "missing.toml"), "v0"]) == 2
    assert main([]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 3 and errors[0].startswith(f"error: {bad}: ")
    assert {p.name: p.read_bytes() for p in _DATA.iterdir()} == before


def test_every_vendored_rule_compiles_and_keeps_its_keywords() -> None:
    rules = gitleaks.rules()
    config = json.loads((_DATA / "gitleaks.json").read_text(encoding="utf-8"))["config"]
    usable = [r for r in config["rules"] if "regex" in r and "path" not in r
              and r["id"] not in gitleaks.REPLACED]
    assert len(rules) == len(usable) > 200
    for rule in rules:
        assert rule.regex.pattern and rule.keywords == tuple(k.lower() for k in rule.keywords)


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"\b(p8e-(?i)[a-z0-9]{32})", r"\b(p8e-(?i:[a-z0-9]{32}))"),
        (r"(?:a(?i)b|c)d", r"(?:a(?i:b)|(?i:c))d"),
        (r"(?i)abc", r"(?i)abc"),
        (r"\b(pat[[:alnum:]]{14})", r"\b(pat[a-zA-Z0-9]{14})"),
        (r"[^]]+x[\]]", r"[^]]+x[\]]"),
        (r"x(?:\s|\z)", r"x(?:\s|\Z)"),
        (r"\\z", r"\\z"),
        (r"(a)(?:[\x60'" + '"' + r"\s;]|\\[nr]|$)", r"(a)(?![A-Za-z0-9_+/=-])"),
    ],
)
def test_go_regexes_read_as_python(go: str, python: str) -> None:
    assert gitleaks.python_regex(go) == python
    re.compile(python, re.ASCII)


@given(st.text("ab|()?i*", max_size=30))
def test_a_translated_regex_means_what_go_meant_without_mid_flags(go: str) -> None:
    try:
        re.compile(go)
    except (re.error, FutureWarning, DeprecationWarning):
        return
    assert gitleaks.python_regex(go) == go  # nothing to translate: kept as it is
