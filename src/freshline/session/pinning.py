"""Where an agent's session belongs: its workspace and the project it is pinned to.

A hook pins an agent's session to one project at its first call, from the most stable
folder it knows: the client's own project folder (Claude Code's `$CLAUDE_PROJECT_DIR`,
which the agent's `cd` does not move), else the working directory; the ACP proxy uses
`project_for` on a session's `cwd`. `project_for` is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from freshline.access import Rules, reach
from freshline.config import Config, find_workspace
from freshline.errors import NotFoundError, WorkspaceError
from freshline.paths import shown
from freshline.scope import Pattern, PatternKind


def _base(pattern: Pattern) -> str:
    """The folder a pattern's files must be under (`""`: anywhere in the workspace)."""
    if pattern.kind is PatternKind.FOLDER:
        return pattern.value
    if pattern.kind is PatternKind.GLOB:
        fixed = []
        for segment in pattern.value.split("/"):
            if any(ch in segment for ch in "*?["):
                break
            fixed.append(segment)
        return "/".join(fixed)
    return ""


def _within(path: str, folder: str) -> bool:
    return folder == "" or path == folder or path.startswith(folder + "/")


def project_for(config: Config, rel: str) -> str:
    """The project for a working directory at workspace-relative `rel` (`""`: the root).

    1. The project with the deepest folder include (or glob's fixed folder) holding `rel`.
    2. Else the first project, in config order, whose files may lie under `rel`: a folder
       include below it, or a pattern that matches anywhere (extension, tag, note, property).
    3. Else none: NotFoundError.
    """
    best: tuple[int, str] | None = None
    for name, project in config.projects.items():
        for pattern in project.scope.include:
            base = _base(pattern)
            depth = base.count("/") + 1
            if base and _within(rel, base) and (best is None or depth > best[0]):
                best = (depth, name)
    if best is not None:
        return best[1]
    for name, project in config.projects.items():
        if any(not _base(p) or _within(_base(p), rel) for p in project.scope.include):
            return name
    where = rel or "the workspace root"
    raise NotFoundError(shown(f"{where} is outside every project of {config.root}"))


def workspace_for(starts: Sequence[Path], explicit: Path | None = None) -> Path:
    """The workspace: `explicit` (`--workspace`), else the one holding the first of
    `starts` that is in one (WorkspaceError if none is)."""
    if explicit is not None:
        return find_workspace(starts[-1], explicit)
    error: WorkspaceError | None = None
    for start in starts:
        try:
            return find_workspace(start)
        except WorkspaceError as exc:
            error = error or exc
    assert error is not None
    raise error


def pinned_project(config: Config, starts: Sequence[Path], project: str | None = None) -> str:
    """The project a new session is pinned to: `project` (`--project`), else the project
    of the first of `starts` inside the workspace."""
    if project is not None:
        return config.project(project).name
    rules = Rules(ignore=config.workspace.ignore)
    for i, start in enumerate(starts):
        try:
            # Resolved and checked like any path read for an agent: never .git/, a secret.
            here = reach(config.root, str(start), rules)
        except WorkspaceError:
            if i == len(starts) - 1:
                raise
            continue
        return project_for(config, here.rel)
    raise NotFoundError("the hook names no working directory")
