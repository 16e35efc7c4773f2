"""Errors a model backend raises; each one means the turn was not accepted.

    FreshlineError
    └── BackendError               exit 5, the backend did not accept the request
        ├── BackendAuthError       no key, or the server refused it (401, 403)
        ├── BackendRateLimited     the server asked us to slow down (429), retried first
        ├── BackendServerError     the server failed (5xx), retried first
        ├── BackendUnreachable     connection refused, DNS failure, timeout
        ├── BackendConfigError     a malformed base URL
        └── BackendMalformed       the answer could not be understood

Tool failures are not exceptions: they go back to the model as tool results.
"""

from __future__ import annotations

from freshline.errors import FreshlineError


class BackendError(FreshlineError):
    """The model backend failed; the message is one line naming the backend and the cause."""

    exit_code = 5


class BackendAuthError(BackendError):
    """The API key is missing or was refused."""


class BackendRateLimited(BackendError):
    """The server rate-limited the request."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after  # seconds, when the server said (Retry-After)


class BackendServerError(BackendError):
    """The server failed to answer (HTTP 5xx)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BackendConfigError(BackendError):
    """The backend's settings cannot work (a base URL that is not an http(s) URL)."""


class BackendUnreachable(BackendError):
    """The server could not be reached or did not answer in time."""


class BackendMalformed(BackendError):
    """The server answered something that is not a valid reply."""
