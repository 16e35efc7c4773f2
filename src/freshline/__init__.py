"""freshline: keep long-lived AI agent conversations fresh about the files they work on.

The public API, loaded on first use so that `import freshline` stays cheap (the hook runs
on every prompt of another agent and must not pay for the model SDKs):

    from freshline import SessionManager, get_backend, load_config, send

    manager = SessionManager(load_config("."))
    session = manager.new("notes")
    print(send(manager, session.id, "what changed?", get_backend("echo")).response)
    manager.close()
"""

from __future__ import annotations

from freshline.lazy import exports

# typing.TYPE_CHECKING, without importing typing: every command starts by importing this
# package, and typing costs about as much as the interpreter's own start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:  # what the lazy exports below resolve to, for type checkers
    from freshline.agent.backends import get_backend
    from freshline.agent.runtime import send
    from freshline.config import Config, find_workspace, load_config
    from freshline.conversation import Conversations
    from freshline.errors import ConflictStop, FreshlineError, SyncRequired, UsageError
    from freshline.materialize import DocStatus, Materializer
    from freshline.session import SessionManager
    from freshline.store.records import Change, ChangeKind
    from freshline.tracker import Tracker

__version__ = "0.1.0"

_EXPORTS = {
    "Change": "freshline.store.records",
    "ChangeKind": "freshline.store.records",
    "Config": "freshline.config",
    "ConflictStop": "freshline.errors",
    "Conversations": "freshline.conversation",
    "DocStatus": "freshline.materialize",
    "FreshlineError": "freshline.errors",
    "Materializer": "freshline.materialize",
    "SessionManager": "freshline.session",
    "SyncRequired": "freshline.errors",
    "Tracker": "freshline.tracker",
    "UsageError": "freshline.errors",
    "find_workspace": "freshline.config",
    "get_backend": "freshline.agent.backends",
    "load_config": "freshline.config",
    "send": "freshline.agent.runtime",
}

__all__ = [
    "Change",
    "ChangeKind",
    "Config",
    "ConflictStop",
    "Conversations",
    "DocStatus",
    "FreshlineError",
    "Materializer",
    "SessionManager",
    "SyncRequired",
    "Tracker",
    "UsageError",
    "find_workspace",
    "get_backend",
    "load_config",
    "send",
]


__getattr__ = exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return [*__all__, "__version__"]
