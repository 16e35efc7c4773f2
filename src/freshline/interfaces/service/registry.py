"""Every workspace this user used: the service watches them all again when it starts.

A JSON object `{"workspaces": ["/abs/root", …]}` in the user's state folder, written
whole by the service alone (it is the only writer: commands tell the service, which adds
the workspace). A workspace whose folder or freshline.toml is gone is dropped when the
service finds it so; `watch --stop` drops one by hand. An unreadable file counts as
empty: the workspaces come back as they are used.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from freshline.interfaces.service.places import registry_path, write_private


def parse(text: str) -> list[str]:
    """The absolute roots a registry's text lists, in order, each once ([] for anything
    that is not a registry)."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    roots = data.get("workspaces") if isinstance(data, dict) else None
    if not isinstance(roots, list):
        return []
    return list(dict.fromkeys(r for r in roots if isinstance(r, str) and os.path.isabs(r)))


def render(roots: list[str]) -> str:
    """A registry's text."""
    return json.dumps({"workspaces": roots}, indent=2) + "\n"


class Registry:
    """The list on disk, kept in step with what the service watches."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or registry_path()
        self._lock = threading.Lock()
        try:
            self._roots = parse(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            self._roots = []

    def roots(self) -> list[str]:
        """The workspaces listed."""
        with self._lock:
            return list(self._roots)

    def add(self, root: str) -> None:
        """List `root` (once)."""
        with self._lock:
            if root not in self._roots:
                self._roots.append(root)
                self._save()

    def drop(self, root: str) -> None:
        """Forget `root`."""
        with self._lock:
            if root in self._roots:
                self._roots.remove(root)
                self._save()

    def _save(self) -> None:
        try:  # best effort: a full disk costs the list, not the service
            write_private(self.path, render(self._roots))
        except OSError:
            pass
