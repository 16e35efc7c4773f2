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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import jwt
import mcp_types
import pytest
from typer.testing import CliRunner

from freshline.interfaces.cli.root import app
from freshline.interfaces.server.auth import BearerAuth
from freshline.interfaces.server.credentials import SignIn, Verdict
from freshline.interfaces.server.limiter import FailureLimiter
from freshline.interfaces.server.oauth import (
    Issuer,
    IssuerKeys,
    Rejected,
    Unreachable,
    discover,
    fetch_json,
    metadata_urls,
    same_issuer,
)
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
        config.write("[server]\njwks_refetch_s = 1\n")
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


async def status(url: str, token: str | None) -> httpx2.Response:
    headers = dict(ACCEPT) | ({"Authorization": f"Bearer {token}"} if token else {})
    async with httpx2.AsyncClient(timeout=30) as http:
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


def forged(token: str, header: dict[str, str] | None = None, signature: str | None = None) -> str:
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
        answer = await status(url, token)
        assert answer.status_code == 401, why
        assert 'error="invalid_token"' in answer.headers["www-authenticate"], why
    assert (await status(url, lenient)).status_code == 200


async def test_a_rotated_signing_key_is_fetched_at_once(served: Served) -> None:
    auth, url = served.auth, served.url
    before = auth.token(url, "ci-es")
    assert (await status(url, before)).status_code == 200
    auth.rotate()  # the new keys sign; the old ones are still published
    after = auth.token(url, "ci-es")
    assert jwt.get_unverified_header(after)["kid"] == f"ec-{auth.generation}"
    assert (await status(url, after)).status_code == 200
    assert (await status(url, before)).status_code == 200


def test_unknown_key_ids_refetch_the_keys_at_most_once_per_interval(served: Served) -> None:
    fetched: list[str] = []

    def counted(url: str) -> object:
        fetched.append(url)
        return fetch_json(url)

    now = [1000.0]
    keys = IssuerKeys(discover(served.auth.issuer()).jwks_uri, 60, counted, lambda: now[0])
    assert keys.key(f"ec-{served.auth.generation}").algorithm_name == "ES256"
    assert len(fetched) == 1
    for kid in ("made-up-1", "made-up-2", "made-up-3"):
        with pytest.raises(Rejected):
            keys.key(kid)
        now[0] += 10
    assert len(fetched) == 2  # the first unknown kid refetched; the next ones waited
    now[0] += 60
    with pytest.raises(Rejected):
        keys.key("made-up-4")
    assert len(fetched) == 3


def test_an_unreachable_issuer_stops_serve_in_one_line(two_projects: Workspace) -> None:
    port = free_port()  # nothing listens there
    result = runner.invoke(app, ["-w", str(two_projects.root), "serve", "--port",
                                 str(free_port()), "--oauth-issuer", f"http://127.0.0.1:{port}"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: cannot read the authorization server's metadata")
    assert len(result.stderr.strip().splitlines()) == 1


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


def test_keys_that_cannot_be_read_are_tried_again_only_after_the_interval() -> None:
    fetched: list[str] = []

    def counted(url: str) -> object:
        fetched.append(url)
        return fetch_json(url)

    now = [0.0]
    dead = f"http://127.0.0.1:{free_port()}/jwks"  # nothing listens there
    keys = IssuerKeys(dead, 60, counted, lambda: now[0])
    for _ in range(3):
        with pytest.raises(Unreachable, match="cannot read the signing keys"):
            keys.key("k")
    assert len(fetched) == 1  # an issuer down costs the later requests no wait
    now[0] = 61.0
    with pytest.raises(Unreachable):
        keys.key("k")
    assert len(fetched) == 2


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
