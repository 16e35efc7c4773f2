"""Context blocks: the wire text that tells a model what its project is and what changed.

Pure functions of plain records (no I/O). `render_blocks` renders a delivery's manifest
(`<project_context>`) and updates (`<project_context_updates>`) together, fitted to a
channel's `Budget` and keeping `priority` paths listed longest; `render_manifest` and
`render_updates` render one block. The wire formats are documented in `manifest.py` and
`updates.py`, the roll-ups in `rollup.py`, the escaping of workspace strings in `wire.py`.
Document states are `freshline.materialize.DocStatus`; patterns are
`freshline.scope.Pattern` (or raw strings).
"""

from __future__ import annotations

from .budget import Budget, Channel, Encoding, Meter
from .fit import Blocks, render_blocks, render_manifest, render_updates
from .manifest import compact_manifest
from .model import (
    ConfigChange,
    DocumentInfo,
    FileGroup,
    GitOperation,
    ManifestInput,
    Refresh,
    Rewound,
    Source,
    SourceKind,
    StaleRead,
    UpdatesInput,
)
from .paging import ChangesPage, page_changes, page_files
from .stored import manifest_from_json, manifest_to_json

__all__ = [
    "Blocks",
    "Budget",
    "Channel",
    "ChangesPage",
    "ConfigChange",
    "DocumentInfo",
    "Encoding",
    "FileGroup",
    "GitOperation",
    "ManifestInput",
    "Meter",
    "Refresh",
    "Rewound",
    "Source",
    "SourceKind",
    "StaleRead",
    "UpdatesInput",
    "compact_manifest",
    "manifest_from_json",
    "manifest_to_json",
    "page_changes",
    "page_files",
    "render_blocks",
    "render_manifest",
    "render_updates",
]
