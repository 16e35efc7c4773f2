"""Context blocks: the wire text that tells a model what its project is and what changed.

Pure functions of plain records (no I/O): `render_manifest` builds `<project_context>`,
`render_updates` builds `<project_context_updates>`. The wire formats are documented in
`manifest.py` and `updates.py`.
"""

from __future__ import annotations

from .manifest import render_manifest
from .model import (
    ConfigChange,
    DocState,
    DocumentInfo,
    ManifestInput,
    Refresh,
    Source,
    SourceKind,
    UpdatesInput,
)
from .updates import render_updates

__all__ = [
    "ConfigChange",
    "DocState",
    "DocumentInfo",
    "ManifestInput",
    "Refresh",
    "Source",
    "SourceKind",
    "UpdatesInput",
    "render_manifest",
    "render_updates",
]
