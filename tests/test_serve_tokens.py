"""Access tokens as `freshline serve` judges them (issue 47), against a stand-in issuer on
127.0.0.1 that signs what a test asks (`tests/oauth_server.LocalIssuer`): any malformed
token is a guess, never an error; `typ` must be an access token's; the keys are fetched
again for a rotation however many made-up key ids came before, and a retired key is
dropped once they are old; an issuer down costs no request a wait.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshline.interfaces.server.issuer import Unreachable, discover, fetch_json
from freshline.interfaces.server.jwks import LIFESPAN_S, Due, IssuerKeys, Rejected, due
from freshline.interfaces.server.oauth import AccessTokens, media_type, token_header
from tests.oauth_server import LocalIssuer, signing_keys
from tests.serving import free_port

AUDIENCE = "http://127.0.0.1:9/mcp"
AT_JWT = frozenset({"application/at+jwt"})


@pytest.fixture(scope="module")
def issuer() -> Iterator[LocalIssuer]:
    """An issuer whose keys a test may rotate (it sets them first)."""
    local = LocalIssuer()
    try:
        yield local
    finally:
        local.close()


@pytest.fixture(scope="module")
def fixed() -> Iterator[tuple[LocalIssuer, AccessTokens]]:
    """An issuer whose keys never change, and a checker of its tokens."""
    local = LocalIssuer()
    try:
        yield local, checker(local)
    finally:
        local.close()


def checker(issuer: LocalIssuer, refetch_s: float = 0.0, clock: Any = time.monotonic,
            types: frozenset[str] = AT_JWT) -> AccessTokens:
    keys = IssuerKeys(lambda: discover(issuer.url), refetch_s, fetch_json, clock)
    keys.load()
    assert not keys.error
    return AccessTokens(AUDIENCE, keys, types)


def segment(value: Any) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def rejected(tokens: AccessTokens, token: str) -> Rejected:
    with pytest.raises(Rejected) as caught:
        tokens.subject(token)
    return caught.value


# --- malformed tokens -------------------------------------------------------------------------


def malformed(issuer: LocalIssuer) -> dict[str, str]:
    """Tokens no resource server may take, each with what is wrong with it."""
    good = issuer.sign(issuer.claims(AUDIENCE))
    head, body, sig = good.split(".")
    header = json.loads(base64.urlsafe_b64decode(head + "=="))

    def headed(**changes: Any) -> str:
        return ".".join([segment({**header, **changes}), body, sig])

    rsa_kid, ec_kid = issuer.keys[0]["kid"], issuer.keys[1]["kid"]
    return {
        "crit b64": issuer.sign(issuer.claims(AUDIENCE), crit=["b64"], b64=False),
        "crit unknown": headed(crit=["exp"]),
        "crit not a list": headed(crit="exp"),
        "kid a number": headed(kid=7),
        "kid a list": headed(kid=[rsa_kid]),
        "kid an object": headed(kid={"k": 1}),
        "kid null": headed(kid=None),
        "kid empty": headed(kid=""),
        "kid huge": headed(kid="k" * 5000),
        "typ JWT": issuer.sign(issuer.claims(AUDIENCE), typ="JWT"),
        "typ missing": headed(typ=None),
        "typ a number": headed(typ=1),
        "alg none": headed(alg="none"),
        "alg HS256": headed(alg="HS256"),
        "alg a list": headed(alg=["RS256"]),
        "alg of another key": headed(kid=ec_kid),
        "header an array": ".".join([segment([1, 2]), body, sig]),
        "header not JSON": ".".join([segment(b"{not json"), body, sig]),
        "header not base64": ".".join(["!!!!", body, sig]),
        "payload not JSON": issuer_signed_bytes(issuer, b"\xff\xfe"),
        "payload an array": issuer_signed_bytes(issuer, b"[1]"),
        "exp a string": issuer.sign(issuer.claims(AUDIENCE, exp="tomorrow")),
        "signature garbage": ".".join([head, body, "%%%"]),
        "signature empty": ".".join([head, body, ""]),
        "two parts": f"{head}.{body}",
        "four parts": f"{good}.x",
        "not ASCII": good[:20] + "é" + good[21:],
        "nul bytes": "\x00" * 40,
        "a dot": ".",
    }


def issuer_signed_bytes(issuer: LocalIssuer, payload: bytes) -> str:
    """A token whose payload is `payload` as it is, signed by the issuer's RSA key."""
    import jwt
    from jwt.algorithms import RSAAlgorithm

    jwk = issuer.keys[0]
    head = segment({"alg": "RS256", "typ": "at+jwt", "kid": jwk["kid"]})
    signing_input = f"{head}.{segment(payload)}".encode()
    key = RSAAlgorithm.from_jwk(jwk)
    signature = jwt.get_algorithm_by_name("RS256").sign(signing_input, key)  # type: ignore[arg-type]
    return f"{signing_input.decode()}.{segment(signature)}"


def test_a_malformed_token_is_a_guess_never_an_error(
    fixed: tuple[LocalIssuer, AccessTokens],
) -> None:
    """Seen (issue 47): a JWT with a `crit` header or a non-string `kid` made a 500 with a
    traceback, never counted by the limiter."""
    issuer, tokens = fixed
    assert tokens.subject(issuer.sign(issuer.claims(AUDIENCE))) == "alice"
    for why, token in malformed(issuer).items():
        assert rejected(tokens, token).guess, why


@settings(max_examples=60, deadline=None)
@given(header=st.dictionaries(
           st.sampled_from(["alg", "kid", "typ", "crit", "b64", "jku", "x5u", "cty", "zip"]),
           st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                        lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                        max_leaves=6)),
       payload=st.binary(max_size=40) | st.dictionaries(st.text(max_size=4), st.integers()),
       signature=st.binary(max_size=80))
def test_no_header_payload_or_signature_raises_anything_but_a_rejection(
    fixed: tuple[LocalIssuer, AccessTokens], header: dict[str, Any], payload: Any,
    signature: bytes,
) -> None:
    tokens = fixed[1]
    token = ".".join([segment(header), segment(payload), segment(signature)])
    for candidate in (token, token.replace("-", "+"), token[:-3]):
        with pytest.raises((Rejected, Unreachable)):
            tokens.subject(candidate)


@given(st.text(max_size=200))
def test_no_text_raises_anything_but_a_rejection(text: str) -> None:
    with pytest.raises(Rejected):
        token_header(text, AT_JWT)


# --- typ ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typ", "types", "accepted"),
    [
        ("at+jwt", AT_JWT, True),
        ("AT+JWT", AT_JWT, True),  # media types compare case-insensitively
        ("application/at+jwt", AT_JWT, True),
        ("JWT", AT_JWT, False),  # an ID token's, or an issuer's that types none
        ("jwt", AT_JWT | {media_type("JWT")}, True),  # `oauth_token_types = ["at+jwt", "JWT"]`
        ("at+jwt; x=1", AT_JWT, False),
        ("application/jwt", AT_JWT, False),
    ],
)
def test_a_token_must_be_typed_an_access_token(
    issuer: LocalIssuer, typ: str, types: frozenset[str], accepted: bool
) -> None:
    """Seen (issue 47): `typ` was not checked (RFC 9068 wants `at+jwt`)."""
    tokens = checker(issuer, types=types)
    token = issuer.sign(issuer.claims(AUDIENCE), typ=typ)
    if accepted:
        assert tokens.subject(token) == "alice"
    else:
        assert rejected(tokens, token).guess


# --- when the keys are fetched ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kid", "held", "now", "failing", "need"),
    [
        ("a", frozenset({"a"}), 10.0, False, Due.NOTHING),
        ("a", frozenset({"a"}), LIFESPAN_S, False, Due.WAIT),  # old: fetched before use
        ("b", frozenset({"a"}), 10.0, False, Due.WAIT),  # a rotation, or a made-up kid
        ("a", None, 10.0, False, Due.WAIT),  # none held yet
        ("b", frozenset({"a"}), 10.0, True, Due.BEHIND),  # the issuer is failing: no wait
        ("a", None, 10.0, True, Due.BEHIND),
        ("a", frozenset({"a"}), LIFESPAN_S, True, Due.BEHIND),
        ("a", frozenset({"a"}), 10.0, True, Due.NOTHING),
    ],
)
def test_when_a_token_waits_for_the_keys(
    kid: str, held: frozenset[str] | None, now: float, failing: bool, need: Due
) -> None:
    assert due(kid, held, now, 0.0, failing) is need


@given(st.text(max_size=3), st.frozensets(st.text(max_size=3)) | st.none(),
       st.floats(0, 1e6), st.booleans())
def test_only_a_token_the_fresh_keys_hold_goes_without_a_fetch(
    kid: str, held: frozenset[str] | None, age: float, failing: bool
) -> None:
    need = due(kid, held, age, 0.0, failing)
    fresh = held is not None and kid in held and age < LIFESPAN_S
    assert (need is Due.NOTHING) is fresh
    if not fresh:
        assert need is (Due.BEHIND if failing else Due.WAIT)


async def test_a_made_up_key_id_does_not_hold_up_a_rotation(issuer: LocalIssuer) -> None:
    """Seen (issue 47): one made-up `kid` started the refetch cooldown, and the users of
    a key rotated in just after got 401, then 429, for 60 s."""
    issuer.keys = signing_keys(1)
    tokens = checker(issuer, refetch_s=0.5)
    made_up = issuer.sign(issuer.claims(AUDIENCE), kid="made-up")
    await tokens.ready(made_up)
    assert rejected(tokens, made_up).guess
    issuer.keys = [*signing_keys(2), *issuer.keys]  # rotated: the new keys sign
    rotated = issuer.sign(issuer.claims(AUDIENCE))
    started = time.monotonic()
    await tokens.ready(rotated)
    assert tokens.subject(rotated) == "alice"
    assert time.monotonic() - started < 5  # it waited for the next fetch, no longer


async def test_made_up_key_ids_cost_the_issuer_one_fetch_per_interval(
    issuer: LocalIssuer,
) -> None:
    issuer.keys = signing_keys(1)
    tokens = checker(issuer, refetch_s=0.25)
    before, started = issuer.fetches, time.monotonic()
    head, body, sig = issuer.sign(issuer.claims(AUDIENCE)).split(".")
    flood = [".".join([segment({"alg": "RS256", "typ": "at+jwt", "kid": f"made-up-{n}"}),
                       body, sig]) for n in range(200)]
    for wave in range(4):
        await asyncio.gather(*(tokens.ready(t) for t in flood[wave * 50:(wave + 1) * 50]))
    elapsed = time.monotonic() - started
    assert issuer.fetches - before <= math.ceil(elapsed / 0.25) + 1


async def test_a_retired_key_is_dropped_within_five_minutes(issuer: LocalIssuer) -> None:
    """Seen (issue 47): a key removed from the issuer's JWKS stayed trusted up to an
    hour. The keys are fetched again before a token is judged with keys 5 minutes old."""
    issuer.keys = signing_keys(1)
    now = [1000.0]
    tokens = checker(issuer, clock=lambda: now[0])
    old = issuer.sign(issuer.claims(AUDIENCE))
    issuer.keys = signing_keys(2)  # the old keys retired
    now[0] += 299
    await tokens.ready(old)
    assert tokens.subject(old) == "alice"  # the keys held are fresh still
    now[0] += 1
    await tokens.ready(old)
    assert rejected(tokens, old).guess
    fresh = issuer.sign(issuer.claims(AUDIENCE))
    await tokens.ready(fresh)
    assert tokens.subject(fresh) == "alice"


async def test_an_issuer_down_costs_no_request_a_wait(issuer: LocalIssuer) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    keys = IssuerKeys(lambda: discover(dead), 0.0, fetch_json)
    keys.load()
    assert keys.error.startswith("cannot read the authorization server's metadata")
    tokens = AccessTokens(AUDIENCE, keys, AT_JWT)
    token = issuer.sign(issuer.claims(AUDIENCE))
    for _ in range(3):
        await tokens.ready(token)  # starts a fetch behind, returns at once
        with pytest.raises(Unreachable):
            tokens.subject(token)
    keys.locate = lambda: discover(issuer.url)  # the issuer is back
    deadline = time.monotonic() + 30
    while keys.error:  # each request starts a fetch behind it while none runs
        assert time.monotonic() < deadline, keys.error
        await tokens.ready(token)
        await asyncio.sleep(0.01)
    await tokens.ready(token)
    assert tokens.subject(token) == "alice"
