"""Lazy package exports: a package's public names, imported from their modules on first use.

Used where importing everything up front would cost a hot caller: the hook (runs on every
prompt of another agent) and conversion workers must not load the model SDKs or the store.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` resolving each name in `homes` (name → module) on first use."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        return getattr(importlib.import_module(home), name)

    return __getattr__
