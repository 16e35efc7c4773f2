"""A manifest's input as JSON, the form a session stores until the manifest is delivered.

The manifest is rendered at each delivery, to that channel's budget, so a session keeps
what it was built from rather than its text: `compact_manifest(m, chars)` (files listed up
to about the budget it is rendered to, the rest already counted per folder, so the record
stays small), written with sorted keys and ASCII escapes (names that are not valid UTF-8
round-trip).
"""

from __future__ import annotations

import json
from typing import Any

from freshline.errors import FreshlineError

from .manifest import STORED_CHARS, compact_manifest
from .model import DocumentInfo, FileGroup, ManifestInput

_VERSION = 1


def manifest_to_json(m: ManifestInput, chars: int = STORED_CHARS) -> str:
    """The stored form of `m`, compacted: files listed up to `chars` characters (the
    largest budget it will be rendered to), the rest counted per folder."""
    c = compact_manifest(m, chars)
    data: dict[str, Any] = {
        "version": _VERSION,
        "project": c.project,
        "root": c.root,
        "epoch": c.epoch,
        "mode": c.mode,
        "include": [p.raw for p in c.include],
        "exclude": [p.raw for p in c.exclude],
        "files": None if c.files is None else list(c.files),
        "file_groups": [[g.folder, g.count] for g in c.file_groups],
        "pattern_files": list(c.pattern_files),
        "documents": [[d.path, d.state.value, d.snapshot, d.reason] for d in c.documents],
        "resumed": c.resumed,
        "forked": c.forked,
        "list_files_max": c.list_files_max,
    }
    return json.dumps(data, sort_keys=True)


def manifest_from_json(text: str) -> ManifestInput:
    """Read a stored manifest input; FreshlineError when `text` is not one."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            raise ValueError("not a stored manifest")
        documents = tuple(DocumentInfo(*row) for row in data["documents"])
        return ManifestInput(
            project=data["project"], root=data["root"], epoch=data["epoch"], mode=data["mode"],
            include=data["include"], exclude=data["exclude"], files=data["files"],
            file_groups=tuple(FileGroup(folder, n) for folder, n in data["file_groups"]),
            pattern_files=data["pattern_files"], documents=documents,
            resumed=data["resumed"], forked=data.get("forked", ""),
            list_files_max=data["list_files_max"],
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise FreshlineError(f"a stored manifest cannot be read: {exc}") from None
