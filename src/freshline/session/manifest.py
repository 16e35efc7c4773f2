"""Building a session's manifest: materialize the project, then describe `<project_context>`.

The manifest is rendered at each delivery, to that channel's budget; a session stores its
input (`stored`, JSON) until then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from freshline.config import Config
from freshline.context import Budget, ManifestInput, manifest_to_json, render_manifest
from freshline.context.manifest import STORED_CHARS
from freshline.materialize import DocStatus, Materializer, document_suffixes, is_document
from freshline.materialize.runner import ProgressFn
from freshline.session.documents import IN_PROGRESS, info
from freshline.store.records import IndexEntry
from freshline.tracker import Tracker


@dataclass(frozen=True)
class BuiltManifest:
    """A manifest's input and what it was built from."""

    input: ManifestInput
    epoch: int  # captured when its materialization began
    dirty_key: str  # `signature#epoch` at that moment
    complete: bool  # the materialization covered every document
    pending: list[str]  # documents still in progress when it was built
    chars: int = STORED_CHARS  # the largest budget it will be rendered to

    @property
    def stored(self) -> str:
        """The form a session keeps (`SessionRecord.manifest`): files listed up to
        `chars` characters, the rest counted per folder."""
        return manifest_to_json(self.input, self.chars)

    def render(self, budget: Budget | None = None) -> str:
        """The `<project_context>` block, fitted to `budget` (none: files per folder past
        the usual count, documents one by one)."""
        return render_manifest(self.input, budget)


def dirty_key(config: Config, tracker: Tracker, project: str) -> str:
    """`signature#epoch`: changes whenever the project's scope or content does."""
    return f"{config.project(project).signature}#{tracker.epoch(project)}"


def build_manifest(
    config: Config,
    tracker: Tracker,
    materializer: Materializer,
    project: str,
    resumed: bool = False,
    listing: Callable[[str], list[IndexEntry]] | None = None,
    worktree: Path | None = None,
    convert: bool = True,
    flush: bool = True,
    progress: ProgressFn | None = None,
    chars: int = STORED_CHARS,
    forked: str = "",
) -> BuiltManifest:
    """Flush, materialize the project's documents, and describe its manifest.

    `listing` gives the project's in-scope entries (default `tracker.files_in_scope`).
    `worktree` (isolated sessions) is where the agent reads: paths are shown under it, and
    no documents are converted, since the agent's tools cannot reach the snapshots.
    `convert=False` renders documents as they stand without converting any (for callers
    that must answer at once; they convert in the background). `flush=False` describes
    the index as it is (the caller has just flushed). `progress` hears each conversion.
    `chars` is the largest budget the stored form will be rendered to (a session's
    channel's). `forked` names the conversation a fork continues, and where.
    """
    if flush:
        tracker.flush()
    epoch = tracker.epoch(project)
    key = dirty_key(config, tracker, project)
    entries = (listing or tracker.files_in_scope)(project)
    suffixes = document_suffixes()  # most files are no document: a look in C rules them out
    documents = [] if worktree else [
        e for e in entries if e.path.lower().endswith(suffixes) and is_document(e.path)]
    converted = (materializer.ensure(project, epoch, documents, progress=progress).complete
                 if convert else True)
    probes = [materializer.probe(e.path, e) for e in documents]
    p = config.project(project)
    manifest = ManifestInput(
        project=project,
        root=str(worktree or config.root),
        epoch=epoch,
        mode=p.mode.value if worktree is None else "isolated",
        include=p.scope.include,
        exclude=p.scope.exclude,
        files=tuple(e.path for e in entries),
        documents=tuple(info(x) for x in probes if x.status is not DocStatus.DELETED),
        resumed=resumed,
        forked=forked,
    )
    pending = [x.path for x in probes if x.status in IN_PROGRESS]
    return BuiltManifest(manifest, epoch, key, converted and not pending, pending, chars)
