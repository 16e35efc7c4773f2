"""Confinement of tool paths to one root directory, on top of `freshline.paths.confine`.

A path is checked lexically (after `..` is folded) and again after symlinks are resolved,
so neither `../x`, an absolute path elsewhere, nor a symlink that leads out gets through.
Internal paths (`.freshline/`, `.git/`, `freshline.toml`) are refused on either side.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from freshline.errors import FreshlineError, WorkspaceError
from freshline.paths import confine, is_internal, to_abs


class ToolError(FreshlineError):
    """A tool refused or failed; the message goes back to the model as the tool result."""


@dataclass(frozen=True)
class Confined:
    """A path that passed confinement."""

    path: Path  # the real path to operate on (symlinks resolved)
    rel: str  # root-relative POSIX path of `path` ("" for the root itself)
    shown: str  # the absolute path as shown to the model
    given: Path | None = None  # the path as named, before symlinks were resolved


class Confinement:
    """Resolves paths given by a model against `root`, refusing any that leave it."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.abspath(root))
        self.real_root = self.root.resolve()

    def shown(self, rel: str) -> str:
        """The absolute path a root-relative path is shown as."""
        return str(to_abs(self.root, rel))

    def resolve(self, raw: object) -> Confined:
        """Confine one path (absolute, or relative to the root); raise ToolError if refused."""
        if not isinstance(raw, str) or not raw.strip():
            raise ToolError("a path is required (absolute, or relative to the workspace)")
        try:
            rel = confine(self.root, raw)
        except WorkspaceError as exc:
            raise ToolError(f"{exc}; refused") from None
        real = to_abs(self.root, rel).resolve()
        real_rel = "" if real == self.real_root else real.relative_to(self.real_root).as_posix()
        if is_internal(rel) or is_internal(real_rel):
            raise ToolError(f"{raw}: an internal path of freshline or git; refused")
        return Confined(real, real_rel, self.shown(real_rel), to_abs(self.root, rel))
