"""Retries of 429 and 5xx answers: bounded waits with jitter, then the error as it came."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.agent.backends import RetryPolicy, backend_for
from freshline.agent.backends.retry import with_retries
from freshline.agent.errors import (
    BackendAuthError,
    BackendRateLimited,
    BackendServerError,
)
from freshline.agent.messages import AssistantReply
from freshline.config import ModelSettings
from freshline.errors import UsageError


@given(st.integers(0, 8), st.floats(0, 5), st.floats(0, 60), st.integers())
def test_each_wait_is_bounded_and_jittered(
    retries: int, wait: float, cap: float, seed: int
) -> None:
    policy = RetryPolicy(retries, wait, cap)
    delays = policy.delays(random.Random(seed))
    assert len(delays) == retries
    for n, delay in enumerate(delays):
        ceiling = min(cap, wait * 2**n)
        assert ceiling / 2 <= delay <= ceiling


def failing(*errors: Exception, then: str = "ok") -> tuple[list[int], object]:
    calls: list[int] = []

    def attempt(on_text: object) -> AssistantReply:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return AssistantReply(then)

    return calls, attempt


def test_429_and_5xx_are_retried_until_one_answers() -> None:
    slept: list[float] = []
    calls, attempt = failing(BackendRateLimited("429"), BackendServerError("503"))
    reply = with_retries(attempt, None, RetryPolicy(3, 1.0, 8.0), slept.append,  # type: ignore[arg-type]
                         random.Random(1))
    assert reply.text == "ok" and len(calls) == 3 and len(slept) == 2
    assert 0.5 <= slept[0] <= 1.0 and 1.0 <= slept[1] <= 2.0


def test_the_server_may_say_how_long_to_wait_within_the_bound() -> None:
    slept: list[float] = []
    _calls, attempt = failing(BackendRateLimited("429", retry_after=0.0),
                              BackendRateLimited("429", retry_after=999.0))
    with_retries(attempt, None, RetryPolicy(2, 1.0, 4.0), slept.append)  # type: ignore[arg-type]
    assert slept[0] == 0.0 and 1.0 <= slept[1] <= 2.0  # 999 s is past the bound: ignored


def test_after_the_last_retry_the_error_says_how_many() -> None:
    _calls, attempt = failing(*(BackendServerError("openai: server error (HTTP 500)"),) * 3)
    with pytest.raises(BackendServerError, match=r"HTTP 500\) \(after 2 retries\)$"):
        with_retries(attempt, None, RetryPolicy(2, 0.0, 0.0), lambda _s: None)  # type: ignore[arg-type]
    _calls, attempt = failing(BackendServerError("x"), BackendServerError("x"))
    with pytest.raises(BackendServerError, match=r"^x \(after 1 retry\)$"):
        with_retries(attempt, None, RetryPolicy(1, 0.0, 0.0), lambda _s: None)  # type: ignore[arg-type]


def test_other_errors_and_streamed_answers_are_not_retried() -> None:
    calls, attempt = failing(BackendAuthError("401"))
    with pytest.raises(BackendAuthError):
        with_retries(attempt, None, RetryPolicy(3, 0.0, 0.0), lambda _s: None)  # type: ignore[arg-type]
    assert len(calls) == 1
    tries: list[int] = []

    def streams_then_fails(on_text: object) -> AssistantReply:
        tries.append(1)
        assert callable(on_text)
        on_text("half an answer")
        raise BackendServerError("broke off")

    chunks: list[str] = []
    with pytest.raises(BackendServerError, match="^broke off$"):
        with_retries(streams_then_fails, chunks.append, RetryPolicy(3, 0.0, 0.0), lambda _s: None)
    assert tries == [1] and chunks == ["half an answer"]


def test_backend_for_uses_the_model_settings() -> None:
    settings = ModelSettings(default="openai:local", base_url="http://127.0.0.1:9/v1",
                             retries=1, retry_wait_s=0.5, retry_max_wait_s=2.0)
    backend = backend_for(settings)
    assert backend.name == "openai:local"
    assert backend.base_url == "http://127.0.0.1:9/v1"  # type: ignore[attr-defined]
    assert backend.retry == RetryPolicy(1, 0.5, 2.0)  # type: ignore[attr-defined]
    assert backend_for(settings, "echo").name == "echo"  # the URL is the default's backend's
    other = backend_for(settings, "anthropic:m", "http://127.0.0.1:9")
    assert other.name == "anthropic:m"
    with pytest.raises(UsageError, match="takes no option base_url"):
        backend_for(ModelSettings(), "echo", "http://127.0.0.1:9")
