"""A real OAuth 2.1 / OpenID Connect authorization server on 127.0.0.1 for the tests:
npm `oidc-provider` (installed by tests/integration/clients.py) run by
tests/oidc_provider.mjs; and the MCP Python SDK's OAuth clients of `freshline serve`.

The server's signing keys are made here (an RSA and a P-256 key, with `cryptography`), so
a test can rotate them (restart with new keys first) or start a second issuer that signs
with the same keys.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from tests.integration.clients import OIDC_PROVIDER, install

SCRIPT = Path(__file__).with_name("oidc_provider.mjs")
SECRET = "secret"  # the static clients' secret (ci-rs signs RS256, ci-es ES256)
REDIRECT_URI = "http://127.0.0.1:9/callback"  # never reached: the browser stand-in stops


def signing_keys(generation: int) -> list[dict[str, Any]]:
    """A new RSA and P-256 private key as JWKs, their `kid`s naming `generation`."""
    rsa_key = json.loads(RSAAlgorithm.to_jwk(rsa.generate_private_key(65537, 2048)))
    ec_key = json.loads(ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1())))
    rsa_key.update(kid=f"rsa-{generation}", use="sig", alg="RS256")
    ec_key.update(kid=f"ec-{generation}", use="sig", alg="ES256")
    return [rsa_key, ec_key]


@dataclass
class AuthServer:
    """oidc-provider on `ports` (an issuer on each, one set of keys), signing the user in
    as `account` when a client runs the authorization-code flow."""

    where: Path
    ports: list[int]
    account: str
    keys: list[dict[str, Any]] = field(default_factory=lambda: signing_keys(1))
    generation: int = 1
    proc: subprocess.Popen[str] | None = None

    def issuer(self, index: int = 0) -> str:
        """The issuer on the `index`th port."""
        return f"http://127.0.0.1:{self.ports[index]}"

    def start(self) -> AuthServer:
        """Start it and wait until every issuer listens."""
        package = install(OIDC_PROVIDER)
        keys = self.where / "keys.json"
        keys.write_text(json.dumps({"keys": self.keys}), encoding="utf-8")
        env = {**os.environ, "OIDC_PROVIDER": str(package), "OIDC_KEYS": str(keys),
               "OIDC_PORTS": ",".join(map(str, self.ports)), "OIDC_ACCOUNT": self.account}
        log = (self.where / "provider.log").open("a")
        self.proc = subprocess.Popen(["node", str(SCRIPT)], env=env, stdout=subprocess.PIPE,
                                     stderr=log, text=True)
        log.close()
        assert self.proc.stdout is not None
        if self.proc.stdout.readline() != "ready\n":
            self.stop()
            raise AssertionError(f"oidc-provider did not start: {self.log()}")
        return self

    def stop(self) -> None:
        """Stop it (its registered clients and sessions are gone)."""
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(30)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.proc = None

    def rotate(self) -> None:
        """New signing keys first (they sign from now on), the old ones still published."""
        self.generation += 1
        self.keys = [*signing_keys(self.generation), *self.keys]
        self.stop()
        self.start()

    def log(self) -> str:
        return (self.where / "provider.log").read_text(encoding="utf-8", errors="replace")

    def token(self, resource: str, client: str = "ci-rs", index: int = 0) -> str:
        """An access token for `resource` by the client-credentials grant."""
        answer = httpx2.post(f"{self.issuer(index)}/token", data={
            "grant_type": "client_credentials", "client_id": client, "client_secret": SECRET,
            "resource": resource}, timeout=30)
        assert answer.status_code == 200, answer.text
        return str(answer.json()["access_token"])

    def clock(self, offset_s: int) -> None:
        """Move the server's clock `offset_s` seconds from the real one."""
        for index in range(len(self.ports)):
            answer = httpx2.post(f"{self.issuer(index)}/test/clock?offset={offset_s}", timeout=30)
            assert answer.status_code == 204


@dataclass
class Memory:
    """The SDK's token storage, in memory."""

    tokens: OAuthToken | None = None
    client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """What a person's browser does in the authorization-code flow, headless: follow the
    authorization server's redirects (its login and consent are automated) with its
    cookies, and stop at the client's redirect URI."""

    def __init__(self) -> None:
        self.result: AuthorizationCodeResult | None = None

    async def open(self, url: str) -> None:
        async with httpx2.AsyncClient(timeout=30) as browser:
            while not url.startswith(REDIRECT_URI):
                answer = await browser.get(url)
                assert answer.status_code in (302, 303), (url, answer.status_code, answer.text)
                url = urljoin(url, answer.headers["location"])
        query = parse_qs(urlsplit(url).query)
        assert "code" in query, query
        self.result = AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0],
            iss=query.get("iss", [None])[0])

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


@asynccontextmanager
async def oauth_client(url: str, auth: httpx2.Auth) -> AsyncIterator[Client]:
    """The SDK's streamable-HTTP client of `url`, signing in through `auth`."""
    async with httpx2.AsyncClient(auth=auth, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http),  # type: ignore[arg-type]
                          cache=None) as client:
            yield client


def code_flow(url: str, storage: Memory) -> OAuthClientProvider:
    """The SDK's authorization-code + PKCE client, registering itself dynamically."""
    browser = Browser()
    metadata = OAuthClientMetadata(
        redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"], response_types=["code"],
        token_endpoint_auth_method="none", client_name="freshline tests")
    return OAuthClientProvider(url, metadata, storage, browser.open, browser.callback)


def client_credentials(
    url: str, storage: Memory, client: str, issuer: str
) -> ClientCredentialsOAuthProvider:
    """The SDK's client-credentials client of a static client of `issuer`."""
    return ClientCredentialsOAuthProvider(url, storage, client, SECRET,
                                          token_endpoint_auth_method="client_secret_post",
                                          issuer=issuer)


class LocalIssuer:
    """A stand-in issuer on 127.0.0.1 for tests that sign tokens themselves (malformed
    ones included): its metadata and its JWKS (the public half of `keys`, which a test may
    change at any time), served by the standard library in a thread; counts its JWKS
    fetches."""

    def __init__(self) -> None:
        self.keys = signing_keys(1)
        self.fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the standard library's name
                if self.path == "/.well-known/oauth-authorization-server":
                    body = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks"}
                elif self.path == "/jwks":
                    issuer.fetches += 1
                    body = {"keys": [public(k) for k in issuer.keys]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)

    def sign(self, claims: dict[str, Any], key: int = 0, **header: Any) -> str:
        """A token of `claims` signed with the `key`th key, `header` over its own."""
        jwk = self.keys[key]
        fields = {"typ": "at+jwt", "kid": jwk["kid"], **header}
        return jwt.encode(claims, private_key(json.dumps(jwk)), algorithm=jwk["alg"],
                          headers=fields)

    def claims(self, audience: str, subject: str = "alice", **more: Any) -> dict[str, Any]:
        """Valid claims for `audience` from this issuer, with `more`."""
        now = int(time.time())
        return {"iss": self.url, "aud": audience, "sub": subject, "iat": now,
                "exp": now + 300, **more}


@functools.cache
def private_key(jwk: str) -> Any:
    """The key object of a private JWK (JSON; made once: RSA's checks are slow)."""
    parsed = json.loads(jwk)
    signer = RSAAlgorithm if parsed["kty"] == "RSA" else ECAlgorithm
    return signer.from_jwk(parsed)


def public(jwk: dict[str, Any]) -> dict[str, Any]:
    """The public half of a private JWK."""
    return {k: v for k, v in jwk.items() if k not in ("d", "p", "q", "dp", "dq", "qi")}
