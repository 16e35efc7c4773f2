"""The `search` tool: a regular expression over every text file the rules admit under a
path, a converted document searched in its snapshot.

Each file is opened once beneath the root (no link followed) and scanned for secrets
before a pattern sees it, so a search cannot probe a withheld value. A file with more than
one hard link is not searched (unless the rules allow it) and is named as such.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from freshline.agent import textview
from freshline.agent.calls import Means, Outcome, arg
from freshline.agent.confine import Confined, ToolError
from freshline.agent.textview import SNIFF, is_binary
from freshline.beneath import Kind, Opened, files_under, open_entry
from freshline.secretscan import WITHHELD_PREFIX
from freshline.session.ledger import snapshot_fingerprint

MATCH_LIMIT = 200  # matching lines shown by one search call
SEARCH_FILE_LIMIT = 5_000_000  # bytes; larger files are skipped by search
LINE_PREVIEW = 200  # characters of a matching line shown by search


@dataclass(frozen=True)
class _Searched:
    label: str  # how its hits are shown
    rel: str  # the source's root-relative path
    text: str  # its text (a document's: its snapshot's), secrets withheld
    withheld: bool  # whether any were
    blob: str | None  # the content shown: the bytes read, or the document's fingerprint


def search(means: Means, args: dict[str, Any]) -> Outcome:
    """Run one `search` call within `means`."""
    pattern = arg(args, "pattern", str)
    flags = re.IGNORECASE if arg(args, "ignore_case", bool, False) else 0
    try:
        regex = re.compile(pattern, flags)
    except re.error as exc:
        raise ToolError(f"invalid regular expression: {exc}") from exc
    hits: list[str] = []
    searched = used = withheld = 0
    linked: list[str] = []
    with means.confinement.open(arg(args, "path", str, ".")) as base:
        for source in _searchable(means, base, linked):
            searched += 1
            found = _matches(source, regex)
            for number, line in found:
                hit = f"{source.label}:{number}: {line.rstrip()[:LINE_PREVIEW]}"
                hits.append(hit)
                withheld += hit.count(WITHHELD_PREFIX) if source.withheld else 0
                used += len(hit) + 1
                if len(hits) >= MATCH_LIMIT or used > means.output_cap:
                    means.witness.saw(source.rel, source.blob)
                    hits.append(f"[stopped after {len(hits)} matches; narrow the pattern "
                                "or path]")
                    return Outcome(_notes(hits, withheld, linked))
            if found:
                means.witness.saw(source.rel, source.blob)
    if not hits:
        files = "1 file" if searched == 1 else f"{searched} files"
        hits = [f"no matches for /{pattern}/ in {files}"]
    return Outcome(_notes(hits, withheld, linked))


def _notes(hits: list[str], withheld: int, linked: list[str]) -> str:
    """A search's lines, then how many secrets its lines withheld and which files with
    more than one hard link it did not search."""
    lines = list(hits)
    if withheld:
        lines.append(f"[{withheld} {'secret' if withheld == 1 else 'secrets'} withheld]")
    if linked:
        shown = ", ".join(linked[:5]) + (f" and {len(linked) - 5} more" if len(linked) > 5 else "")
        lines.append(f"[not searched, each has more than one hard link: {shown}]")
    return "\n".join(lines)


def _searchable(means: Means, base: Confined, linked: list[str]) -> Iterator[_Searched]:
    """Each text source the rules admit under `base`, read once and scanned; files with
    more than one hard link are left out and named in `linked` (unless the rules allow
    them)."""
    for opened in _walk(means, base):
        with opened:
            shown = means.confinement.shown(opened.rel)
            try:
                source = _source(means, opened, shown, linked)
            except (OSError, ToolError):
                continue  # vanished, unreadable, or grew past what is scanned
        if source is not None:
            yield source


def _source(means: Means, opened: Opened, shown: str, linked: list[str]) -> _Searched | None:
    """What search reads of one open file: its text, or its document's snapshot."""
    view = means.read_document(opened.rel)
    links = opened.info.st_nlink if opened.info is not None else 1
    if links > 1 and not means.confinement.rules.allow_hardlinks:
        linked.append(shown)
        return None
    if view is None:
        if opened.size > SEARCH_FILE_LIMIT or is_binary(opened.read(SNIFF)):
            return None
        loaded = textview.load(opened, shown, opened.rel, means.withholder)
        return _Searched(shown, opened.rel, loaded.text, bool(loaded.kinds), loaded.blob)
    if view.snapshot is None:
        return None
    with means.confinement.open_snapshot(view.snapshot) as snapshot:
        if snapshot.kind is not Kind.FILE:
            return None
        label = f"{shown} (snapshot)"
        loaded = textview.load(snapshot, label, opened.rel, means.withholder)
    return _Searched(label, opened.rel, loaded.text, bool(loaded.kinds),
                     snapshot_fingerprint(view))


def _walk(means: Means, base: Confined) -> Iterator[Opened]:
    """Every regular file the rules admit under `base`, in path order, opened from its
    folder's descriptor (no link followed). Iterative: a tree thousands of levels deep is
    walked too."""
    if base.kind is Kind.FILE:
        yield replace(base.opened, fd=os.dup(base.opened.fd))
        return
    if base.kind is not Kind.FOLDER:
        return
    for folder_fd, name, rel in files_under(base.opened, means.confinement.visible):
        try:
            opened = open_entry(folder_fd, name, rel)
        except OSError:
            continue  # unreadable since the walk saw it
        if opened.kind is Kind.FILE:
            yield opened


def _matches(source: _Searched, regex: re.Pattern[str]) -> list[tuple[int, str]]:
    """(number, line) of each matching line, searched in the text with its secrets withheld:
    a pattern cannot probe a withheld value."""
    return [(number, line)
            for number, line in enumerate(io.StringIO(source.text, newline=""), 1)
            if regex.search(line)]
