"""`freshline serve` as an OAuth 2.1 resource server (issue 30), against a real
authorization server on 127.0.0.1 (npm `oidc-provider`, tests/oauth_server.py) and the
MCP Python SDK's own OAuth clients: client credentials with a resource indicator, and the
authorization-code + PKCE flow with its consent automated. Then what must not sign in:
an expired token, one not yet valid, another audience, another issuer, a tampered
signature, `alg=none`, a valid token of nobody; and a rotated signing key, picked up at
once.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import mcp_types
import pytest
from typer.testing import CliRunner

from freshline.interfaces.cli.root import app
from freshline.interfaces.server.auth import BearerAuth
from freshline.interfaces.server.credentials import SignIn, Verdict
from freshline.interfaces.server.issuer import (
    Issuer,
    Unreachable,
    discover,
    metadata_urls,
    same_issuer,
)
from freshline.interfaces.server.limiter import FailureLimiter
from freshline.interfaces.server.resource import ProtectedResource
from freshline.session.users import Viewer
from freshline.store import Store
from tests.conftest import Workspace
from tests.oauth_server import AuthServer, Memory, client_credentials, code_flow, oauth_client
from tests.serving import free_port, start_server, stop_server

runner = CliRunner()
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@dataclass
class Served:
    """A workspace served with `--oauth-issuer`, and its authorization server (a second
    issuer on it signs with the same keys)."""

    root: Path
    url: str  # the /mcp URL
    auth: AuthServer


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("oauth")
    ws = Workspace(base / "ws")
    ws.root.mkdir()
    ws.write("notes/a.md", "# A\n")
    ws.write("other/x.md", "# X\n")
    ws.configure({"p": {"include": ["notes"]}, "q": {"include": ["other"]}})
    with (ws.root / "freshline.toml").open("a") as config:
        config.write("[server]\njwks_refetch_s = 3\n")
    for args in (["alice", "--subject", "alice-sub", "--project", "p"],
                 ["ci-es", "--project", "q"]):  # ci-es: its name is its subject
        assert runner.invoke(app, ["-w", str(ws.root), "user", "add", *args]).exit_code == 0
    auth = AuthServer(base, [free_port(), free_port()], "alice-sub").start()
    port = free_port()
    try:
        proc = start_server(ws.root, port, "--oauth-issuer", auth.issuer())
        try:
            yield Served(ws.root, f"http://127.0.0.1:{port}/mcp", auth)
        finally:
            stop_server(proc)
    finally:
        auth.stop()


async def status(url: str, token: str | None, source: str = "127.0.0.1") -> httpx2.Response:
    """One request to `url` with `token`, sent from the loopback address `source` (each
    test that guesses has its own, so the limiter's counts do not mix)."""
    headers = dict(ACCEPT) | ({"Authorization": f"Bearer {token}"} if token else {})
    transport = httpx2.AsyncHTTPTransport(local_address=source)
    async with httpx2.AsyncClient(transport=transport, timeout=30) as http:
        return await http.post(url, json=LIST, headers=headers)


def names(result: mcp_types.CallToolResult) -> list[str]:
    assert not result.is_error, result.content
    found = result.structured_content
    assert found is not None
    return [p["name"] for p in found["result"]]


async def test_the_metadata_and_the_401_challenge_lead_clients_to_the_issuer(
    served: Served,
) -> None:
    origin = served.url.removesuffix("/mcp")
    metadata_url = f"{origin}/.well-known/oauth-protected-resource/mcp"
    async with httpx2.AsyncClient(timeout=30) as http:
        for url in (metadata_url, f"{origin}/.well-known/oauth-protected-resource"):
            answer = await http.get(url)
            assert answer.status_code == 200
            assert answer.json()["resource"] == served.url
            assert answer.json()["authorization_servers"] == [served.auth.issuer()]
            assert answer.json()["scopes_supported"] == ["openid"]  # issue 47: none before
    refused = await status(served.url, None)
    assert refused.status_code == 401 and refused.content == b""
    assert refused.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url}"'


async def test_client_credentials_with_a_resource_indicator_sign_a_script_in(
    served: Served,
) -> None:
    storage = Memory()
    flow = client_credentials(served.url, storage, "ci-es", served.auth.issuer())
    async with oauth_client(served.url, flow) as c:
        assert names(await c.call_tool("list_projects", {})) == ["q"]
    assert storage.tokens is not None
    token = storage.tokens.access_token
    assert jwt.get_unverified_header(token)["alg"] == "ES256"
    assert jwt.decode(token, options={"verify_signature": False})["aud"] == served.url


async def test_the_sdk_signs_a_person_in_with_authorization_code_and_pkce(
    served: Served,
) -> None:
    storage = Memory()
    async with oauth_client(served.url, code_flow(served.url, storage)) as client:
        assert names(await client.call_tool("list_projects", {})) == ["p"]
        opened = await client.call_tool("open_session", {"project": "p"})
        assert not opened.is_error
    assert storage.tokens is not None and storage.client is not None  # registered itself
    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert claims["sub"] == "alice-sub" and claims["aud"] == served.url
    assert jwt.get_unverified_header(storage.tokens.access_token)["alg"] == "RS256"


async def test_a_valid_token_of_nobody_known_is_403_without_a_hint(served: Served) -> None:
    answer = await status(served.url, served.auth.token(served.url, "ci-rs"))
    assert answer.status_code == 403 and answer.content == b""
    assert "www-authenticate" not in answer.headers


def forged(token: str, header: dict[str, Any] | None = None, signature: str | None = None) -> str:
    """`token` with another header or signature."""
    head, payload, sig = token.split(".")
    if header is not None:
        head = base64.urlsafe_b64encode(json.dumps(header).encode()).decode().rstrip("=")
    return ".".join([head, payload, sig if signature is None else signature])


async def test_tokens_that_do_not_hold_are_401(served: Served) -> None:
    auth, url = served.auth, served.url
    good = auth.token(url, "ci-es")
    assert (await status(url, good)).status_code == 200
    tampered = good.split(".")[2]
    tampered = tampered[:10] + ("A" if tampered[10] != "A" else "B") + tampered[11:]
    refused = {
        "another audience": auth.token(url + "/other", "ci-es"),
        "another issuer": auth.token(url, "ci-es", index=1),  # signed with the same keys
        "a tampered signature": forged(good, signature=tampered),
        "alg none": forged(good, {"alg": "none", "typ": "at+jwt", "kid": "ec-1"}, ""),
        "alg HS256": forged(good, {"alg": "HS256", "typ": "at+jwt", "kid": "ec-1"}),
        "an unknown key": forged(good, {"alg": "ES256", "typ": "at+jwt", "kid": "nope"}),
        "not a JWT": "garbage",
    }
    try:
        auth.clock(-3600)  # issued an hour ago: expired 55 minutes ago
        refused["expired"] = auth.token(url, "ci-es")
        auth.clock(3600)  # issued an hour from now
        refused["not yet valid"] = auth.token(url, "ci-es")
        auth.clock(-330)  # expired 30 s ago: within the 60 s leeway
        lenient = auth.token(url, "ci-es")
    finally:
        auth.clock(0)
    for why, token in refused.items():
        answer = await status(url, token, "127.0.0.41")
        assert answer.status_code == 401, why
        assert 'error="invalid_token"' in answer.headers["www-authenticate"], why
    assert (await status(url, lenient)).status_code == 200


async def test_malformed_tokens_are_401_and_counted(served: Served) -> None:
    """Seen (issue 47): a JWT with a `crit` header or a non-string `kid` got a 500 with a
    traceback and was never counted: 407 requests/s from one address."""
    good = served.auth.token(served.url, "ci-es")
    kid = jwt.get_unverified_header(good)["kid"]
    shapes: list[dict[str, Any]] = [
        {"alg": "ES256", "typ": "at+jwt", "kid": kid, "crit": ["exp"]},
        {"alg": "ES256", "typ": "at+jwt", "kid": 7},
        {"alg": "ES256", "typ": "at+jwt", "kid": [kid]},
        {"alg": "ES256", "typ": "at+jwt", "kid": kid, "crit": ["b64"], "b64": False},
        {"alg": "ES256", "typ": "JWT", "kid": kid},
    ]
    source = "127.0.0.42"
    answers = [await status(served.url, forged(good, shapes[n % len(shapes)]), source)
               for n in range(10)]
    assert [a.status_code for a in answers] == [401] * 10
    assert all('error="invalid_token"' in a.headers["www-authenticate"] for a in answers)
    assert (await status(served.url, forged(good, shapes[0]), source)).status_code == 429
    assert (await status(served.url, good, source)).status_code == 200  # never refused


async def test_a_rotated_key_is_fetched_at_once_whatever_key_ids_were_made_up(
    served: Served,
) -> None:
    """Seen (issue 47): one made-up `kid`, sent by anyone, started the refetch cooldown,
    and users of a key rotated in just after got 401, then 429, for 60 s."""
    auth, url = served.auth, served.url
    before = auth.token(url, "ci-es")
    assert (await status(url, before)).status_code == 200
    made_up = forged(before, {"alg": "ES256", "typ": "at+jwt", "kid": "made-up"})
    assert (await status(url, made_up, "127.0.0.43")).status_code == 401  # keys refetched
    auth.rotate()  # the new keys sign; the old ones are still published
    after = auth.token(url, "ci-es")
    assert jwt.get_unverified_header(after)["kid"] == f"ec-{auth.generation}"
    answers = [(await status(url, after, "127.0.0.44")).status_code for _ in range(3)]
    assert answers == [200, 200, 200]
    assert (await status(url, before)).status_code == 200


def test_static_tokens_are_served_while_the_issuer_is_down(
    two_projects: Workspace, tmp_path: Path
) -> None:
    """Seen (issue 47): an issuer down when serve started stopped it, and with it every
    user of a freshline token. Now it warns, serves them, answers the issuer's tokens 503
    until it can be read, and then signs them in."""
    root = two_projects.root
    added = runner.invoke(app, ["-w", str(root), "user", "add", "bob", "--project", "p"])
    static = added.stdout.strip().split()[-1]
    with (root / "freshline.toml").open("a") as config:
        config.write("[server]\njwks_refetch_s = 1\n")
    assert runner.invoke(app, ["-w", str(root), "user", "add", "ci-es", "--project",
                               "p"]).exit_code == 0
    issuer_port, port = free_port(), free_port()
    proc = start_server(root, port, "--oauth-issuer", f"http://127.0.0.1:{issuer_port}")
    url = f"http://127.0.0.1:{port}/mcp"
    auth = AuthServer(tmp_path, [issuer_port], "alice-sub")
    try:
        log = (root.parent / f"serve-{port}.log").read_text()
        assert "warning: cannot read the authorization server's metadata" in log
        assert anyio.run(status, url, static).status_code == 200
        shaped = forged(static_jwt(), {"alg": "RS256", "typ": "at+jwt", "kid": "k"})
        assert anyio.run(status, url, shaped).status_code == 503
        auth.start()
        token = auth.token(url, "ci-es")
        deadline = time.monotonic() + 30
        while (answer := anyio.run(status, url, token).status_code) != 200:
            assert answer == 503 and time.monotonic() < deadline, answer
            time.sleep(0.2)
        assert anyio.run(status, url, static).status_code == 200
    finally:
        stop_server(proc)
        auth.stop()


def static_jwt() -> str:
    """Any three-part token, for a header to be forged on."""
    return "e30.e30.c2ln"


def test_bad_oauth_options_are_usage_errors(two_projects: Workspace) -> None:
    for args, words in [
        (["--oauth-issuer", "auth.example"], "--oauth-issuer: not an http:// or https:// URL"),
        (["--public-url", "ftp://x"], "--public-url: not an http:// or https:// URL"),
        (["--trusted-proxy", "10.0.0.0/40"], "--trusted-proxy: not an IP address or network"),
        (["--host", "0.0.0.0", "--insecure-http", "--oauth-issuer", "http://127.0.0.1:9"],
         "0.0.0.0 names no host clients reach: give --public-url"),
    ]:
        result = runner.invoke(app, ["-w", str(two_projects.root), "serve", *args])
        assert result.exit_code == 2 and words in result.stderr, (args, result.stderr)


@pytest.mark.parametrize(
    ("issuer", "urls"),
    [
        ("https://auth.example", ["https://auth.example/.well-known/oauth-authorization-server",
                                  "https://auth.example/.well-known/openid-configuration"]),
        ("https://kc.example/realms/team/", [
            "https://kc.example/.well-known/oauth-authorization-server/realms/team",
            "https://kc.example/.well-known/openid-configuration/realms/team",
            "https://kc.example/realms/team/.well-known/openid-configuration"]),
    ],
)
def test_the_issuer_metadata_is_looked_for_where_mcp_clients_look(
    issuer: str, urls: list[str]
) -> None:
    assert metadata_urls(issuer) == urls


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("https://auth.example", "https://auth.example", True),
        ("https://auth.example", "https://auth.example/", True),  # a root issuer's slash
        ("https://kc.example/realms/t", "https://kc.example/realms/t/", False),
        ("https://auth.example", "https://other.example", False),
    ],
)
def test_issuers_compare_as_strings_but_for_a_roots_slash(a: str, b: str, same: bool) -> None:
    assert same_issuer(a, b) is same and same_issuer(b, a) is same


def test_the_issuer_named_by_its_metadata_is_the_one_tokens_must_carry() -> None:
    documents = {"https://auth.example/.well-known/oauth-authorization-server": {
        "issuer": "https://auth.example/", "jwks_uri": "https://auth.example/jwks"}}

    def fetch(url: str) -> object:
        if url not in documents:
            raise Unreachable(f"{url}: 404")
        return documents[url]

    assert discover("https://auth.example", fetch) == Issuer("https://auth.example/",
                                                             "https://auth.example/jwks")
    with pytest.raises(Unreachable, match="not the metadata of https://other.example"):
        discover("https://other.example", lambda url: documents[
            "https://auth.example/.well-known/oauth-authorization-server"])


@pytest.mark.parametrize(
    ("verdict", "status", "challenge"),
    [
        (Verdict.ACCEPTED, 200, None),
        (Verdict.NO_USER, 403, None),
        (Verdict.ABSENT, 401, 'Bearer resource_metadata="https://fl.example/.well-known/'
                              'oauth-protected-resource/mcp"'),
        (Verdict.LAPSED, 401, 'Bearer resource_metadata="https://fl.example/.well-known/'
                              'oauth-protected-resource/mcp", error="invalid_token"'),
        (Verdict.GUESS, 401, 'Bearer resource_metadata="https://fl.example/.well-known/'
                             'oauth-protected-resource/mcp", error="invalid_token"'),
        (Verdict.UNAVAILABLE, 503, None),
    ],
)
async def test_each_verdict_has_its_answer(
    tmp_path: Path, verdict: Verdict, status: int, challenge: str | None
) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    viewer = Viewer("u") if verdict is Verdict.ACCEPTED else None
    store = Store(tmp_path)
    auth = BearerAuth(app, lambda _token: SignIn(verdict, viewer), FailureLimiter(store),
                      ProtectedResource("https://fl.example/mcp", "https://auth.example"))
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "path": "/mcp", "client": ("192.0.2.1", 1),
             "headers": [(b"authorization", b"Bearer x")]}
    await auth(scope, lambda: None, send)  # type: ignore[arg-type]
    headers = dict(sent[0]["headers"])
    assert sent[0]["status"] == status
    assert headers.get(b"www-authenticate", b"").decode() == (challenge or "")
    assert sent[1]["body"] == b""
    store.close()
