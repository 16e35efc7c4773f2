"""Realistic fake credentials in many formats, each in the kind of text it is found in.

Each format makes a value the way its issuer shapes it (prefixes, lengths, alphabets,
check-free random parts), and each sample sets it in one of several contexts: an `.env`
line, YAML, JSON, Python, a shell command, prose. Two splits: `tune` (seed 1, the even
contexts) is the one to look at while changing rules; `held_out` (seed 2, the odd
contexts) is the one to report. No rule was written from a held-out sample.

Usage: python bench/secret_samples.py [tune|held_out]   (prints the samples)
"""

from __future__ import annotations

import base64
import random
import string
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


@dataclass(frozen=True)
class Sample:
    """One text holding one secret (`secret`: the part that must not survive)."""

    format: str
    text: str
    secret: str
    suffix: str = ".txt"  # the file name's suffix it would have (for detect-secrets)


def _r(rng: random.Random, chars: str, n: int) -> str:
    return "".join(rng.choice(chars) for _ in range(n))


def _password(rng: random.Random) -> str:
    """A password a person or a generator picks: letters, digits, and a few symbols."""
    parts = [_r(rng, string.ascii_letters, 6), _r(rng, string.digits, 3),
             _r(rng, "!$%(*#@^", 2), _r(rng, ALNUM, 5)]
    rng.shuffle(parts)
    return "".join(parts)


def _pem(rng: random.Random, label: str) -> str:
    body = base64.b64encode(rng.randbytes(600)).decode()
    lines = "\n".join(body[i:i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN {label}PRIVATE KEY-----\n{lines}\n-----END {label}PRIVATE KEY-----"


def _jwt(rng: random.Random) -> str:
    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")
    head = part(b'{"alg":"HS256","typ":"JWT"}')
    claims = (rng.randrange(10**9), rng.randrange(10**9))
    body = part(b'{"sub":"%d","name":"svc","iat":%d}' % claims)
    return f"{head}.{body}.{part(rng.randbytes(32))}"


# Plain tokens: (format, variable names it is kept under, how its value is made).
TOKENS: list[tuple[str, tuple[str, ...], Callable[[random.Random], str]]] = [
    ("aws-access-key", ("AWS_ACCESS_KEY_ID", "aws_access_key_id"),
     lambda r: "AKIA" + _r(r, B32, 16)),
    ("github-classic", ("GITHUB_TOKEN", "GH_TOKEN"), lambda r: "ghp_" + _r(r, ALNUM, 36)),
    ("github-oauth", ("GITHUB_OAUTH_TOKEN", "oauth_token"), lambda r: "gho_" + _r(r, ALNUM, 36)),
    ("github-fine-grained", ("GITHUB_PAT", "token"),
     lambda r: "github_pat_11" + _r(r, ALNUM, 20) + "_" + _r(r, ALNUM, 59)),
    ("gitlab-pat", ("GITLAB_TOKEN", "CI_TOKEN"), lambda r: "glpat-" + _r(r, URLSAFE, 20)),
    ("gitlab-runner", ("RUNNER_TOKEN", "runner_token"), lambda r: "glrt-" + _r(r, URLSAFE, 20)),
    ("gitlab-trigger", ("TRIGGER_TOKEN", "trigger"), lambda r: "glptt-" + _r(r, HEX, 40)),
    ("slack-bot", ("SLACK_BOT_TOKEN", "slack_token"),
     lambda r: f"xoxb-{_r(r, string.digits, 12)}-{_r(r, string.digits, 13)}-{_r(r, ALNUM, 24)}"),
    ("slack-user", ("SLACK_USER_TOKEN", "slack"),
     lambda r: f"xoxp-{_r(r, string.digits, 12)}-{_r(r, string.digits, 12)}-"
               f"{_r(r, string.digits, 13)}-{_r(r, HEX, 32)}"),
    ("slack-app", ("SLACK_APP_TOKEN", "app_token"),
     lambda r: f"xapp-1-A{_r(r, B32[:26], 10)}-{_r(r, string.digits, 13)}-{_r(r, HEX, 64)}"),
    ("slack-webhook", ("SLACK_WEBHOOK_URL", "webhook"),
     lambda r: f"https://hooks.slack.com/services/T{_r(r, B32[:26], 8)}/B{_r(r, B32[:26], 8)}/"
               f"{_r(r, ALNUM, 24)}"),
    ("stripe-secret", ("STRIPE_SECRET_KEY", "stripe_key"), lambda r: "sk_live_" + _r(r, ALNUM, 24)),
    ("stripe-restricted", ("STRIPE_RESTRICTED_KEY", "stripe"),
     lambda r: "rk_live_" + _r(r, ALNUM, 99)),
    ("google-api-key", ("GOOGLE_API_KEY", "MAPS_KEY"), lambda r: "AIza" + _r(r, URLSAFE, 35)),
    ("openai-project", ("OPENAI_API_KEY", "openai_key"),
     lambda r: "sk-proj-" + _r(r, URLSAFE, 74) + "T3BlbkFJ" + _r(r, URLSAFE, 74)),
    ("anthropic", ("ANTHROPIC_API_KEY", "claude_key"),
     lambda r: "sk-ant-api03-" + _r(r, URLSAFE, 93) + "AA"),
    ("huggingface", ("HF_TOKEN", "hf_token"), lambda r: "hf_" + _r(r, string.ascii_letters, 34)),
    ("npm", ("NPM_TOKEN", "npm_auth"), lambda r: "npm_" + _r(r, ALNUM, 36)),
    ("pypi", ("PYPI_TOKEN", "TWINE_PASSWORD"),
     lambda r: "pypi-AgEIcHlwaS5vcmc" + _r(r, URLSAFE, 140)),
    ("sendgrid", ("SENDGRID_API_KEY", "sg_key"),
     lambda r: "SG." + _r(r, URLSAFE, 22) + "." + _r(r, URLSAFE, 43)),
    ("vault", ("VAULT_TOKEN", "vault_token"), lambda r: "hvs." + _r(r, URLSAFE, 91)),
    ("digitalocean", ("DIGITALOCEAN_TOKEN", "DO_TOKEN"), lambda r: "dop_v1_" + _r(r, HEX, 64)),
    ("atlassian", ("JIRA_API_TOKEN", "ATLASSIAN_TOKEN"),
     lambda r: "ATATT3xFfGF0" + _r(r, URLSAFE, 171) + "=" + _r(r, HEX.upper(), 8)),
    ("grafana-sa", ("GRAFANA_TOKEN", "grafana_sa_token"),
     lambda r: "glsa_" + _r(r, ALNUM, 32) + "_" + _r(r, HEX, 8)),
    ("grafana-cloud", ("GRAFANA_CLOUD_TOKEN", "gc_token"), lambda r: "glc_" + _r(r, B64, 120)),
    ("linear", ("LINEAR_API_KEY", "linear"), lambda r: "lin_api_" + _r(r, ALNUM, 40)),
    ("doppler", ("DOPPLER_TOKEN", "doppler"), lambda r: "dp.pt." + _r(r, ALNUM, 43)),
    ("new-relic", ("NEW_RELIC_API_KEY", "newrelic_key"), lambda r: "NRAK-" + _r(r, B32, 27)),
    ("age", ("AGE_KEY", "age_identity"),
     lambda r: "AGE-SECRET-KEY-1" + _r(r, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
    ("twilio", ("TWILIO_API_KEY", "twilio_sid"), lambda r: "SK" + _r(r, HEX, 32)),
    ("shopify", ("SHOPIFY_ACCESS_TOKEN", "shop_token"), lambda r: "shpat_" + _r(r, HEX, 32)),
    ("postman", ("POSTMAN_API_KEY", "pm_key"),
     lambda r: "PMAK-" + _r(r, HEX, 24) + "-" + _r(r, HEX, 34)),
    ("databricks", ("DATABRICKS_TOKEN", "dbx_token"), lambda r: "dapi" + _r(r, HEX, 32)),
    ("pulumi", ("PULUMI_ACCESS_TOKEN", "pulumi"), lambda r: "pul-" + _r(r, HEX, 40)),
    ("heroku", ("HEROKU_API_KEY", "heroku_key"), lambda r: "HRKU-AA" + _r(r, URLSAFE, 58)),
    ("discord-bot", ("DISCORD_BOT_TOKEN", "bot_token"),
     lambda r: base64.b64encode(str(r.randrange(10**17, 10**18)).encode()).decode().rstrip("=")
     + "." + _r(r, URLSAFE, 6) + "." + _r(r, URLSAFE, 38)),
    ("telegram-bot", ("TELEGRAM_BOT_TOKEN", "tg_token"),
     lambda r: f"{r.randrange(10**8, 10**10)}:AA{_r(r, URLSAFE, 33)}"),
    ("jwt", ("SESSION_TOKEN", "id_token"), _jwt),
    ("uuid-token", ("API_TOKEN", "auth_token"), lambda r: str(uuid.UUID(int=r.getrandbits(128)))),
    ("password", ("DB_PASSWORD", "password"), _password),
    ("hex-secret", ("CLIENT_SECRET", "client_secret"), lambda r: _r(r, HEX, 40)),
    ("base64-secret", ("JWT_SECRET", "signing_secret"), lambda r: _r(r, B64, 43) + "="),
]

# Where a token stands: {n} its variable name, {v} its value; and the file's suffix.
TOKEN_CONTEXTS = [
    ("{n}={v}\n", ".env"),
    ("export {n}='{v}'\n", ".sh"),
    ("{n}: {v}\n", ".yaml"),
    ('  "{n}": "{v}",\n', ".json"),
    ("{n} = \"{v}\"\n", ".py"),
    ("settings:\n  {n}: \"{v}\"\n  debug: false\n", ".yaml"),
    ("const {n} = '{v}';\n", ".js"),
    ("[default]\n{n} = {v}\n", ".ini"),
]


def _shaped(rng: random.Random) -> list[tuple[str, str, str]]:
    """Forms that are a whole line (format, text, secret)."""
    pw, tok, user = _password(rng), _r(rng, ALNUM, 32), rng.choice(["deploy", "admin", "svc"])
    basic = base64.b64encode(f"{user}:{pw}".encode()).decode()
    azure = base64.b64encode(rng.randbytes(64)).decode()
    pem = _pem(rng, "RSA ")
    pem64 = base64.b64encode(pem.encode()).decode()
    auth64 = base64.b64encode(f"{user}:{tok}".encode()).decode()
    okta = "00" + _r(rng, URLSAFE, 40)
    mailgun = "key-" + _r(rng, HEX, 32)
    return [
        ("private-key-rsa", f"# deploy key\n{pem}\n", pem.splitlines()[5]),
        ("private-key-openssh", _pem(rng, "OPENSSH ") + "\n", ""),
        ("env-unquoted-symbols", f"DB_USER=app\nDB_PASSWORD={pw}\nDB_HOST=db\n", pw),
        ("yaml-folded", f"database:\n  password: >-\n    {pw}\n  user: app\n", pw),
        ("curl-form", f"curl -X POST -F token={tok} -F ref=main https://ci.example.org/trigger\n",
         tok),
        ("url-query", f"jdbc:postgresql://db:5432/app?user=app&password={pw}&ssl=true\n", pw),
        ("curl-api-key-header", f'curl -H "X-Api-Key: {tok}" https://api.example.org/v1/items\n',
         tok),
        ("redis-url", f"REDIS_URL=redis://:{pw}@cache.internal:6379/0\n", pw),
        ("postgres-url", f"DATABASE_URL=postgres://{user}:{pw}@db.internal/app\n", pw),
        ("authorization-basic", f"Authorization: Basic {basic}\n", basic),
        ("authorization-bearer", f"GET /v1/me HTTP/1.1\nAuthorization: Bearer {tok}\n", tok),
        ("curl-user", f"curl -u {user}:{pw} https://registry.example.org/v2/\n", pw),
        ("azure-storage", "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;"
                          f"AccountName=acct;AccountKey={azure};EndpointSuffix=core.windows.net\n",
         azure),
        ("k8s-base64-pem", "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\ndata:\n"
                           f"  tls.crt: LS0tLS1CRUdJTiBDRVJU\n  tls.key: {pem64}\n", pem64),
        ("docker-auths", '{\n  "auths": {\n    "registry.example.org": {\n'
                         f'      "auth": "{auth64}"\n    }}\n  }}\n}}\n', auth64),
        ("netrc-other-name", f"machine api.example.org\n  login {user}\n  password {pw}\n", pw),
        ("okta", f"OKTA_API_TOKEN={okta}\n", okta),
        ("mailgun", f"MAILGUN_API_KEY={mailgun}\n", mailgun),
        ("json-password", f'{{"username": "{user}", "password": "{pw}"}}\n', pw),
        ("python-password", f'DATABASES = {{"default": {{"PASSWORD": "{pw}"}}}}\n', pw),
    ]


def samples(split: str) -> list[Sample]:
    """The samples of one split: `tune` or `held_out`."""
    rng = random.Random(1 if split == "tune" else 2)
    parity = 0 if split == "tune" else 1
    contexts = TOKEN_CONTEXTS[parity::2]
    out = []
    for name, names, make in TOKENS:
        for i, (context, suffix) in enumerate(contexts):
            value = make(rng)
            text = context.format(n=names[i % len(names)], v=value)
            out.append(Sample(name, text, value, suffix))
    for _ in range(2):
        out += [Sample(f, t, s or t.splitlines()[3]) for f, t, s in _shaped(rng)]
    return out


if __name__ == "__main__":
    for sample in samples(sys.argv[1] if len(sys.argv) > 1 else "tune"):
        print(f"--- {sample.format}\n{sample.text}")
