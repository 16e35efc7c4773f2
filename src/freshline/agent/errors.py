"""Errors a model backend raises; each one means the turn was not accepted.

    FreshlineError
    └── BackendError               the backend did not accept the request
        ├── BackendAuthError       no key, or the server refused it (401, 403)
        ├── BackendRateLimited     the server asked us to slow down (429)
        ├── BackendUnreachable     connection refused, DNS failure, timeout
        └── BackendMalformed       the answer could not be understood

Tool failures are not exceptions: they go back to the model as tool results.
"""

from __future__ import annotations

from freshline.errors import FreshlineError


class BackendError(FreshlineError):
    """The model backend failed; the message is one line naming the backend and the cause."""


class BackendAuthError(BackendError):
    """The API key is missing or was refused."""


class BackendRateLimited(BackendError):
    """The server rate-limited the request."""


class BackendUnreachable(BackendError):
    """The server could not be reached or did not answer in time."""


class BackendMalformed(BackendError):
    """The server answered something that is not a valid reply."""
