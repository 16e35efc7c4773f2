"""What a session's readers may see: the `access.Rules` of a project, live or isolated.

Live: the files in the project's scope (judged on the files as they are now), the folders
the index knows to hold such files, and the snapshots of its documents (the blocks name
them).
Isolated: the conversation's worktree, minus what the project excludes (judged on the
worktree's own files), and, as everywhere, minus secrets and internal files.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from freshline.access import Rules, file_facts
from freshline.config import Config, ProjectConfig
from freshline.ignore import load_rules
from freshline.scope import FileFacts
from freshline.sensitive import is_secret
from freshline.store.records import Change, ChangeKind

if TYPE_CHECKING:
    from freshline.session.base import SessionBase


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def live_rules(manager: SessionBase, projects: Sequence[str]) -> Rules:
    """The rules of readers of the live workspace on behalf of `projects` (a path is
    admitted when one of them includes it)."""
    config = manager.config
    chosen = [config.project(name) for name in projects]
    scopes = [p.scope for p in chosen]
    folders: set[str] | None = None

    needs_facts = any(scope.needs_facts for scope in scopes)

    def admits(rel: str) -> bool:
        # The file as it is now, not as last scanned: a note that just lost its tag is out.
        # A missing file is judged by its path, so a reader learns "no such file" for its
        # project's paths and nothing about anyone else's.
        facts = file_facts(config.root, rel) if needs_facts else FileFacts(rel)
        return any(scope.matches(facts) for scope in scopes)

    def admits_folder(rel: str) -> bool:
        nonlocal folders
        if folders is None:  # listed on first use: a turn that never lists pays nothing
            folders = {
                parent
                for name in projects
                for entry in manager.in_scope.entries(name)
                for parent in _parents(entry.path)
            }
        return rel in folders

    snapshots = manager.materializer.store
    try:
        prefix = snapshots.directory.relative_to(config.root).as_posix() + "/"
    except ValueError:  # a data dir outside the workspace: no path of it is internal
        prefix = None

    def readable_internal(rel: str) -> bool:
        if prefix is None or not rel.startswith(prefix):
            return False
        source = snapshots.source_of(config.root / rel)
        return source is not None and admits(source)

    names = ", ".join(repr(name) for name in projects)
    return Rules(
        ignore=config.workspace.ignore,
        ignored=load_rules(config.root, config.workspace.ignore_settings).ignored,
        allow_secrets=frozenset(s for p in chosen for s in p.allow_secrets),
        admits=admits,
        admits_folder=admits_folder,
        readable_internal=readable_internal,
        not_admitted=f"not in project {names}" if len(chosen) == 1 else "not in any project",
        allow_hardlinks=config.security.allow_hardlinks,
    )


def workspace_rules(config: Config, project: str) -> Rules:
    """Every file of the workspace but internal, ignored and secret ones (those `project`
    opts into excepted): what a read ledger may record for a session of `project`."""
    return Rules(
        ignore=config.workspace.ignore,
        ignored=load_rules(config.root, config.workspace.ignore_settings).ignored,
        allow_secrets=frozenset(config.project(project).allow_secrets),
        allow_hardlinks=config.security.allow_hardlinks,
    )


def isolated_rules(project: ProjectConfig, worktree: Path, allow_hardlinks: bool = False) -> Rules:
    """The rules of an isolated session's tools in its worktree."""
    scope = project.scope
    return Rules(
        ignore=project.ignore,
        allow_secrets=frozenset(project.allow_secrets),
        admits=lambda rel: not scope.excludes(file_facts(worktree, rel)),
        admits_folder=lambda rel: not scope.excludes_folder(rel),
        not_admitted=f"excluded by project {project.name!r}",
        allow_hardlinks=allow_hardlinks,
    )


def without_secrets(changes: Sequence[Change], allowed: Collection[str]) -> list[Change]:
    """`changes` less every secret path, for a block. Scopes keep secrets out of the log;
    this drops what a log written before the deny list (or under an opt-in since
    withdrawn) still names. A rename from a secret name is announced as a creation."""
    out: list[Change] = []
    for change in changes:
        if change.path and is_secret(change.path, allowed):
            continue
        if change.old_path and is_secret(change.old_path, allowed):
            change = replace(change, kind=ChangeKind.CREATED, old_path=None)
        out.append(change)
    return out
