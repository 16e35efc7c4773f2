"""Confinement of tool paths to one root directory.

A path is checked twice: lexically (after `..` is folded) and again after symlinks are
resolved, so neither `../x`, an absolute path elsewhere, nor a symlink that leads out gets
through. Internal directories (`.freshline/`, `.git/`) are refused at any depth.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePath

from freshline.errors import FreshlineError

INTERNAL_NAMES = frozenset({".freshline", ".git"})


class ToolError(FreshlineError):
    """A tool refused or failed; the message goes back to the model as the tool result."""


@dataclass(frozen=True)
class Confined:
    """A path that passed confinement."""

    path: Path  # the real path to operate on (symlinks resolved)
    rel: str  # root-relative POSIX path ("." for the root itself)
    shown: str  # the absolute path as shown to the model


def is_internal(rel: PurePath) -> bool:
    """Whether a root-relative path is, or lies inside, an internal directory."""
    return any(part in INTERNAL_NAMES for part in rel.parts)


class Confinement:
    """Resolves paths given by a model against `root`, refusing any that leave it."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.abspath(root))
        self.real_root = self.root.resolve()

    def _relative(self, path: Path) -> Path | None:
        for base in (self.root, self.real_root):
            if path == base or path.is_relative_to(base):
                return path.relative_to(base)
        return None

    def shown(self, rel: PurePath) -> str:
        """The absolute path a root-relative path is shown as."""
        return str(self.root / rel) if rel.parts else str(self.root)

    def resolve(self, raw: object) -> Confined:
        """Confine one path (absolute, or relative to the root); raise ToolError if refused."""
        if not isinstance(raw, str) or not raw.strip():
            raise ToolError("a path is required (absolute, or relative to the workspace)")
        if "\0" in raw:
            raise ToolError("the path contains a NUL byte")
        given = Path(raw)
        lexical = Path(os.path.normpath(given if given.is_absolute() else self.root / given))
        rel = self._relative(lexical)
        if rel is None:
            raise ToolError(f"{raw}: outside the workspace ({self.root}); refused")
        if is_internal(rel):
            raise ToolError(f"{raw}: an internal path of freshline or git; refused")
        try:
            real = lexical.resolve()
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
            raise ToolError(f"{raw}: cannot resolve ({exc})") from exc
        real_rel = real.relative_to(self.real_root) if real.is_relative_to(self.real_root) else None
        if real_rel is None:
            raise ToolError(f"{raw}: a symlink leads outside the workspace; refused")
        if is_internal(real_rel):
            raise ToolError(f"{raw}: a symlink leads into an internal path; refused")
        return Confined(real, real_rel.as_posix(), self.shown(real_rel))
