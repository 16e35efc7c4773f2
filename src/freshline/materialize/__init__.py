"""Documents to text snapshots: converters, isolated workers, the snapshot store with
fingerprinted failure markers, cheap probes and single-flight runs (DESIGN section 5).

Names are imported on first use, so a conversion worker, which needs only the
converters, starts without loading the runner and the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from freshline.lazy import exports

if TYPE_CHECKING:
    from freshline.materialize.converters import (
        ConversionFailed,
        Converter,
        Limits,
        converter_for,
        document_suffixes,
        is_document,
        register,
        registered,
        unregister,
    )
    from freshline.materialize.runner import (
        Materializer,
        MaterializeResult,
        MaterializeSettings,
        Progress,
        RunInfo,
    )
    from freshline.materialize.snapshots import (
        FailureMarker,
        SnapshotHeader,
        SnapshotStore,
        snapshot_id,
    )
    from freshline.materialize.status import (
        DocStatus,
        Probe,
        Upgrade,
        census,
        probe,
        upgrades,
    )

_HOMES = {
    "ConversionFailed": "converters",
    "Converter": "converters",
    "Limits": "converters",
    "converter_for": "converters",
    "document_suffixes": "converters",
    "is_document": "converters",
    "register": "converters",
    "registered": "converters",
    "unregister": "converters",
    "DocStatus": "status",
    "Probe": "status",
    "probe": "status",
    "census": "status",
    "Upgrade": "status",
    "upgrades": "status",
    "MaterializeResult": "runner",
    "MaterializeSettings": "runner",
    "Materializer": "runner",
    "Progress": "runner",
    "RunInfo": "runner",
    "FailureMarker": "snapshots",
    "SnapshotHeader": "snapshots",
    "SnapshotStore": "snapshots",
    "snapshot_id": "snapshots",
}

__all__ = [
    "ConversionFailed",
    "Converter",
    "DocStatus",
    "FailureMarker",
    "Limits",
    "MaterializeResult",
    "MaterializeSettings",
    "Materializer",
    "Probe",
    "Progress",
    "RunInfo",
    "SnapshotHeader",
    "SnapshotStore",
    "Upgrade",
    "census",
    "converter_for",
    "document_suffixes",
    "is_document",
    "probe",
    "register",
    "registered",
    "snapshot_id",
    "unregister",
    "upgrades",
]


__getattr__ = exports(__name__, {k: f"{__name__}.{v}" for k, v in _HOMES.items()})
