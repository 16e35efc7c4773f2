"""Documents to text snapshots: converters, isolated workers, the snapshot store with
fingerprinted failure markers, cheap probes and single-flight runs (DESIGN section 5)."""

from __future__ import annotations

from freshline.materialize.converters import (
    ConversionFailed,
    Converter,
    Limits,
    converter_for,
    is_document,
    register,
    registered,
    unregister,
)
from freshline.materialize.probe import DocStatus, Probe, probe
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
    "converter_for",
    "is_document",
    "probe",
    "register",
    "registered",
    "snapshot_id",
    "unregister",
]
