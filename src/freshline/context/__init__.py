"""Context blocks: the wire text that tells a model what its project is and what changed.

Pure functions of plain records (no I/O): `render_manifest` builds `<project_context>`,
`render_updates` builds `<project_context_updates>`. The wire formats are documented in
`manifest.py` and `updates.py`. Document states are `freshline.materialize.DocStatus`;
patterns are `freshline.scope.Pattern` (or raw strings).
"""

from __future__ import annotations

from .manifest import render_manifest
from .model import (
    ConfigChange,
    DocumentInfo,
    ManifestInput,
    Refresh,
    UpdatesInput,
)
from .updates import render_updates

__all__ = [
    "ConfigChange",
    "DocumentInfo",
    "ManifestInput",
    "Refresh",
    "UpdatesInput",
    "render_manifest",
    "render_updates",
]
