"""The snapshot store and probe: ids, headers, markers, statuses (no conversions)."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.materialize import (
    DocStatus,
    FailureMarker,
    SnapshotHeader,
    SnapshotStore,
    probe,
    snapshot_id,
)
from freshline.materialize.converters.pdf import PdfConverter
from freshline.materialize.snapshots import TEMP_MAX_AGE_S
from tests.docgen import entry

PDF = PdfConverter()

# Paths may hold lone surrogates: Python's spelling of bytes that are not UTF-8.
paths = st.text(
    st.characters(exclude_categories=(), exclude_characters="\x00"), min_size=1, max_size=120
)


@given(paths)
def test_snapshot_id_is_stable_and_file_name_safe(path: str) -> None:
    ident = snapshot_id(path)
    assert ident == snapshot_id(path)
    assert re.fullmatch(r"[A-Za-z0-9._-]+-[0-9a-f]{10}", ident)
    assert len(ident) <= 80 + 11 and not ident.startswith(".")


@given(paths, paths)
def test_snapshot_ids_differ_for_different_paths(a: str, b: str) -> None:
    assert (snapshot_id(a) == snapshot_id(b)) is (a == b)


@pytest.mark.parametrize(
    ("path", "stem"),
    [
        ("Research/Papers/a.pdf", "Research-Papers-a.pdf-"),
        ("deck with spaces.pptx", "deck-with-spaces.pptx-"),
        ("../x.pdf", "x.pdf-"),
        ("???", "document-"),
    ],
)
def test_snapshot_id_slugs(path: str, stem: str) -> None:
    assert snapshot_id(path).startswith(stem)


@given(source=paths, fingerprint=st.text(max_size=40), text=st.text())
def test_header_round_trip(source: str, fingerprint: str, text: str) -> None:
    with tempfile.TemporaryDirectory() as data:
        store = SnapshotStore(Path(data))
        header = SnapshotHeader(source, fingerprint, "pdf", "1", "2024-01-01T00:00:00Z")
        written = store.write_snapshot(header, text)
        assert store.read_header(source) == header
        first_line = written.read_text(encoding="utf-8").split("\n", 1)[0]
        assert first_line.count("-->") == 1  # no value can close the comment early


def test_torn_or_foreign_snapshot_reads_as_absent(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    store.write_snapshot(SnapshotHeader("a.pdf", "f", "pdf", "1", "t"), "text")
    path = store.snapshot_path("a.pdf")
    for damaged in ("", "<!-- freshline-snapshot {\"source\": \"a.pd", "# hand written\n"):
        path.write_text(damaged)
        assert store.read_header("a.pdf") is None
    path.write_bytes(b"\xff\xfe garbage")
    assert store.read_header("a.pdf") is None


def test_marker_round_trip_and_best_effort_write(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    marker = FailureMarker("a.pdf", "abc", "no extractable text", "pdf", "1", "t")
    assert store.write_marker(marker) and store.read_marker("a.pdf") == marker
    store.clear_marker("a.pdf")
    assert store.read_marker("a.pdf") is None
    store.marker_path("a.pdf").mkdir()
    assert store.write_marker(marker) is False
    store.clear_marker("a.pdf")  # cannot remove a directory: ignored
    assert list(store.directory.glob(".*.tmp")) == []


def test_prune_clears_old_temp_files_only(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    store.write_snapshot(SnapshotHeader("a.pdf", "f", "pdf", "1", "t"), "text")
    old, new = store.directory / ".x.md.1.2.tmp", store.directory / ".y.md.1.2.tmp"
    old.write_text("left by a killed writer")
    new.write_text("being written now")
    os.utime(old, (0, 0))

    assert store.prune(["a.pdf"]) == [old]
    assert new.exists() and store.snapshot_path("a.pdf").exists()


def test_prune_without_a_snapshot_dir(tmp_path: Path) -> None:
    assert SnapshotStore(tmp_path / "missing").prune([]) == []
    assert TEMP_MAX_AGE_S > 60


def test_probe_statuses(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / ".freshline")
    now = PDF.version
    (tmp_path / "a.pdf").write_bytes(b"version one")
    one = entry(tmp_path, "a.pdf")
    assert probe(store, tmp_path, "a.pdf", one).status is DocStatus.PENDING
    assert probe(store, tmp_path, "a.pdf", None).status is DocStatus.PENDING

    store.write_snapshot(SnapshotHeader("a.pdf", one.blob, "pdf", now, "t"), "text")
    ready = probe(store, tmp_path, "a.pdf", one)
    assert (ready.status, ready.snapshot) == (DocStatus.READY, store.snapshot_path("a.pdf"))

    (tmp_path / "a.pdf").write_bytes(b"version two")
    two = entry(tmp_path, "a.pdf")
    stale = probe(store, tmp_path, "a.pdf", two)
    assert (stale.status, stale.snapshot) == (DocStatus.STALE, store.snapshot_path("a.pdf"))

    store.write_marker(FailureMarker("a.pdf", one.blob, "old failure", "pdf", now, "t"))
    assert probe(store, tmp_path, "a.pdf", two).status is DocStatus.STALE  # older version
    store.write_marker(FailureMarker("a.pdf", two.blob, "bad", "pdf", now, "t"))
    failed = probe(store, tmp_path, "a.pdf", two)
    assert (failed.status, failed.reason, failed.snapshot) == (
        DocStatus.FAILED, "bad", store.snapshot_path("a.pdf"),
    )

    (tmp_path / "a.pdf").unlink()
    gone = probe(store, tmp_path, "a.pdf", two)
    assert (gone.status, gone.snapshot) == (DocStatus.DELETED, None)


def test_snapshot_of_another_converter_version_is_ready_and_older(tmp_path: Path) -> None:
    # Made again when read (`Materializer.for_reading`), not all at once.
    store = SnapshotStore(tmp_path / ".freshline")
    (tmp_path / "a.pdf").write_bytes(b"content")
    live = entry(tmp_path, "a.pdf")
    store.write_snapshot(SnapshotHeader("a.pdf", live.blob, "pdf", "0", "t"), "old text")
    found = probe(store, tmp_path, "a.pdf", live)
    assert (found.status, found.older) == (DocStatus.READY, "0")
    store.write_marker(FailureMarker("a.pdf", live.blob, "old bug", "pdf", "0", "t"))
    assert probe(store, tmp_path, "a.pdf", live).older == "0"  # another version's failure
    store.write_marker(FailureMarker("a.pdf", live.blob, "still bad", "pdf", PDF.version, "t"))
    kept = probe(store, tmp_path, "a.pdf", live)  # this version failed: the old one stays
    assert (kept.status, kept.older, kept.snapshot) == (
        DocStatus.READY, None, store.snapshot_path("a.pdf"))
    store.clear_marker("a.pdf")
    store.write_snapshot(SnapshotHeader("a.pdf", live.blob, "other", "1", "t"), "text")
    assert probe(store, tmp_path, "a.pdf", live).status is DocStatus.STALE  # not pdf's


def test_every_public_name_resolves() -> None:
    import freshline.materialize as package

    assert sorted(package.__all__) == package.__all__
    for name in package.__all__:
        assert getattr(package, name).__name__ == name
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018
