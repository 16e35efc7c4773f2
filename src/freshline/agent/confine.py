"""The tools' side of confinement: `freshline.access` with refusals as ToolErrors.

A path is opened beneath the root and checked on what was opened (see `freshline.access`),
so neither `../x`, an absolute path elsewhere, a symlink that leads out (also one swapped
in after the check), an internal path, a secret nor a file outside the session's project
gets through; a walk checks each entry it meets the same way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from freshline.access import AccessDenied, Rules, open_reached, reach, refusal
from freshline.beneath import Kind, Opened, open_inside
from freshline.errors import FreshlineError, WorkspaceError
from freshline.paths import to_abs


class ToolError(FreshlineError):
    """A tool refused or failed; the message goes back to the model as the tool result."""


@dataclass(frozen=True)
class Confined:
    """A path that passed confinement; with `opened`, the very file or folder checked."""

    path: Path  # the real path to operate on (symlinks resolved)
    rel: str  # root-relative POSIX path of `path` ("" for the root itself)
    shown: str  # the absolute path as shown to the model
    is_dir: bool = False
    opened: Opened = field(default_factory=lambda: Opened("", Kind.MISSING))

    @property
    def kind(self) -> Kind:
        """What was opened: a file, a folder, or nothing there."""
        return self.opened.kind

    def __enter__(self) -> Confined:
        return self

    def __exit__(self, *exc: object) -> None:
        self.opened.close()


class Confinement:
    """Resolves paths given by a model against `root` and `rules`, refusing what they bar."""

    def __init__(self, root: Path, rules: Rules | None = None) -> None:
        self.root = Path(os.path.abspath(root))
        self.real_root = self.root.resolve()
        self.rules = rules or Rules()

    def shown(self, rel: str) -> str:
        """The absolute path a root-relative path is shown as."""
        return str(to_abs(self.root, rel))

    def resolve(self, raw: object, hardlinks: bool = False) -> Confined:
        """Confine one path (absolute, or relative to the root); raise ToolError if refused.
        `hardlinks`: a file with more than one link passes (to be replaced, never read)."""
        if not isinstance(raw, str) or not raw.strip():
            raise ToolError("a path is required (absolute, or relative to the workspace)")
        rules = replace(self.rules, allow_hardlinks=True) if hardlinks else self.rules
        try:
            reached = reach(self.root, raw, rules)
        except AccessDenied as exc:
            raise ToolError(str(exc)) from None
        return Confined(reached.path, reached.rel, self.shown(reached.rel), reached.is_dir)

    def open(self, raw: object) -> Confined:
        """Confine one path and open what it names (`Confined.opened`, closed on leaving
        the `with`): read that, never the path again. ToolError if refused."""
        if not isinstance(raw, str) or not raw.strip():
            raise ToolError("a path is required (absolute, or relative to the workspace)")
        try:
            opened = open_reached(self.root, raw, self.rules)
        except AccessDenied as exc:
            raise ToolError(str(exc)) from None
        rel = opened.rel
        return Confined(to_abs(self.real_root, rel), rel, self.shown(rel),
                        opened.kind is Kind.FOLDER, opened)

    def open_snapshot(self, path: Path) -> Opened:
        """A document's snapshot, opened under the root through no link."""
        try:
            return open_inside(self.root, path)
        except (OSError, WorkspaceError) as exc:
            raise ToolError(f"{path}: its snapshot cannot be opened ({exc}); try again on "
                            "a later turn") from None

    def visible(self, rel: str, folder: bool) -> bool:
        """Whether a real root-relative entry met by a walk may be shown."""
        return refusal(rel, self.rules, folder) is None
