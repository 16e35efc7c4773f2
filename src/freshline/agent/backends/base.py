"""The backend interface, and the helpers the HTTP backends share: option resolution and the
translation of SDK exceptions into freshline's one-line backend errors."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from freshline.agent.backends.retry import RetryPolicy, with_retries
from freshline.agent.errors import (
    BackendAuthError,
    BackendConfigError,
    BackendError,
    BackendMalformed,
    BackendRateLimited,
    BackendServerError,
    BackendUnreachable,
)
from freshline.agent.messages import AssistantReply, Message, TextCallback, ToolSpec

_LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
_PLACEHOLDER_KEY = "freshline-local"  # local servers (Ollama, llama.cpp) ignore the key


class Backend(ABC):
    """A model: given the history and the tools, it answers once.

    Subclasses override `complete`. Failures raise a `BackendError` subclass; a backend
    never returns a partial reply (text already streamed to `on_text` is then void).
    """

    name: str = "backend"

    @abstractmethod
    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_text: TextCallback | None = None,
    ) -> AssistantReply:
        """Answer the conversation so far; stream text chunks to `on_text` as they arrive."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release connections; the default holds none."""


class RetryingBackend(Backend):
    """A backend over an HTTP API: `complete` makes an `attempt`, retried per `retry` when
    the server answers 429 or 5xx (see `retry.py`)."""

    retry: RetryPolicy

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_text: TextCallback | None = None,
    ) -> AssistantReply:
        """Answer, retrying a rate-limited or failed request before any text streamed."""
        return with_retries(lambda relay: self.attempt(messages, tools, relay), on_text,
                            self.retry)

    @abstractmethod
    def attempt(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], on_text: TextCallback | None
    ) -> AssistantReply:
        """One request to the server."""


def setting(explicit: str | None, env_var: str) -> str | None:
    """An explicit value, else the environment variable, else None (empty counts as unset)."""
    return explicit or os.environ.get(env_var) or None


def check_base_url(label: str, base_url: str | None) -> str | None:
    """`base_url` if it is an http(s) URL with a host; BackendConfigError otherwise."""
    if base_url is None:
        return None
    try:
        parts = urlsplit(base_url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        ok = False
    if not ok:
        raise BackendConfigError(
            f"{label}: bad base URL {base_url!r} (expected http://HOST[:PORT]/PATH, "
            "e.g. http://127.0.0.1:11434/v1)")
    return base_url


def is_loopback(base_url: str | None) -> bool:
    """Whether a base URL points at this machine (a local server that needs no key)."""
    return bool(base_url) and urlsplit(base_url).hostname in _LOOPBACK_HOSTS


def api_key_for(label: str, key: str | None, env_var: str, base_url: str | None) -> str:
    """The key to send: the given one, a placeholder for a local server, or a clear error."""
    if key:
        return key
    if is_loopback(base_url):
        return _PLACEHOLDER_KEY
    raise BackendAuthError(
        f"{label}: no API key: set {env_var} (or point --base-url at a local server)"
    )


def one_line(text: str, limit: int = 200) -> str:
    """Collapse whitespace and cut a message to one short line."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _detail(exc: Any) -> str:
    """The server's own error message (both APIs nest it as error.message), else the SDK's."""
    body = exc.body
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return one_line(message or exc.message)


def _retry_after(exc: Any) -> float | None:
    """The server's Retry-After, in seconds, when it gave one as a number."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def translate_sdk_error(
    exc: Exception, sdk: ModuleType, label: str, where: str, key_env: str = ""
) -> BackendError:
    """Map an exception of the openai or anthropic SDK (same class names) to a BackendError."""
    if isinstance(exc, sdk.AuthenticationError | sdk.PermissionDeniedError):
        status = exc.status_code
        check = f"; check {key_env}" if key_env else ""
        return BackendAuthError(
            f"{label}: authentication failed (HTTP {status}) at {where}: the server refused "
            f"the API key{check}")
    if isinstance(exc, sdk.RateLimitError):
        return BackendRateLimited(f"{label}: rate limited (HTTP 429) at {where}; try again later",
                                  _retry_after(exc))
    if isinstance(exc, sdk.APITimeoutError):
        return BackendUnreachable(f"{label}: no answer from {where} before the timeout")
    if isinstance(exc, sdk.APIConnectionError):
        cause = one_line(exc.__cause__ or exc.message, 120)
        return BackendUnreachable(f"{label}: cannot reach {where}: {cause}")
    if isinstance(exc, sdk.APIResponseValidationError):
        return BackendMalformed(f"{label}: malformed answer from {where}: {one_line(exc.message)}")
    if isinstance(exc, sdk.NotFoundError):
        return BackendError(f"{label}: {where} answered HTTP 404 ({_detail(exc)}): is the base "
                            "URL or the model name right?")
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        if status >= 500:
            return BackendServerError(
                f"{label}: server error (HTTP {status}) at {where}: {_detail(exc)}",
                _retry_after(exc))
        return BackendError(f"{label}: request failed (HTTP {status}): {_detail(exc)}")
    if isinstance(exc, ValueError):  # JSON and schema errors while parsing the answer
        return BackendMalformed(f"{label}: malformed answer from {where}: {one_line(str(exc))}")
    return BackendError(f"{label}: {one_line(str(exc))}")
