"""Generators of real test documents (PDFs written by hand, office files through their
libraries, an encrypted PDF, a zip-bomb DOCX), index entries for them, and converters
that hang, crash or exhaust memory on purpose."""

from __future__ import annotations

import hashlib
import os
import signal
import time
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from freshline.materialize.converters import ConversionFailed, Converter, Limits
from freshline.store.records import FileKind, IndexEntry


def blob_id(data: bytes) -> str:
    """The git blob id of some content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def entry(root: Path, path: str) -> IndexEntry:
    """An index entry for a file under root, as the tracker would record it."""
    st = (root / path).stat()
    data = (root / path).read_bytes()
    return IndexEntry(
        path=path,
        kind=FileKind.FILE,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        inode=st.st_ino,
        dev=st.st_dev,
        blob=blob_id(data),
    )


def _pdf_string(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def _text_stream(lines: Sequence[str]) -> bytes:
    body = ["BT", "/F1 11 Tf", "14 TL", "72 740 Td"]
    for line in lines:
        body.append(f"{_pdf_string(line)} Tj T*")
    body.append("ET")
    return "\n".join(body).encode("latin-1")


def pdf_bytes(pages: Sequence[Sequence[str]], *, text: bool = True) -> bytes:
    """A valid PDF with one page per entry, each line written in Helvetica.

    With text=False the pages carry only drawn lines (what a scan looks like to a parser).
    """
    streams = [_text_stream(lines) if text else b"72 72 m 500 700 l S" for lines in pages]
    return _pdf_file(streams)


@dataclass(frozen=True)
class Text:
    """Text drawn at (x, y) from the page's bottom left, in a font of `_FONTS`."""

    x: float
    y: float
    text: str
    size: float = 11
    font: str = "regular"  # regular | bold | mono


@dataclass(frozen=True)
class Stroke:
    """A straight line drawn from (x0, y0) to (x1, y1)."""

    x0: float
    y0: float
    x1: float
    y1: float


@dataclass(frozen=True)
class Frame:
    """A rectangle stroked as one path (`re`), from (x, y) at its bottom left."""

    x: float
    y: float
    width: float
    height: float


_FONTS = {"regular": "F1", "bold": "F2", "mono": "F3"}


def layout_pdf_bytes(
    pages: Sequence[Sequence[Text | Stroke | Frame]], outline: Sequence[tuple[str, int, int]] = ()
) -> bytes:
    """A PDF drawing each page's items in the order given, with an outline of
    (title, 0-based page, depth 0 or 1) entries."""
    streams = []
    for items in pages:
        ops = []
        for item in items:
            if isinstance(item, Stroke):
                ops.append(f"0.5 w {item.x0} {item.y0} m {item.x1} {item.y1} l S")
            elif isinstance(item, Frame):
                ops.append(f"0.5 w {item.x} {item.y} {item.width} {item.height} re S")
            else:
                font = _FONTS[item.font]
                ops.append(f"BT /{font} {item.size} Tf {item.x} {item.y} Td "
                           f"{_pdf_string(item.text)} Tj ET")
        streams.append("\n".join(ops).encode("latin-1"))
    return _pdf_file(streams, outline)


def _pdf_file(streams: Sequence[bytes], outline: Sequence[tuple[str, int, int]] = ()) -> bytes:
    n = len(streams)
    first_page = 6  # objects 1-5: catalog, pages, three fonts
    page_ids = [first_page + 2 * i for i in range(n)]
    outline_id = first_page + 2 * n
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    outlines = f" /Outlines {outline_id} 0 R" if outline else ""
    objects = [
        f"<< /Type /Catalog /Pages 2 0 R{outlines} >>".encode(),
        f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>",
    ]
    fonts = "/F1 3 0 R /F2 4 0 R /F3 5 0 R"
    for i, content in enumerate(streams):
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << {fonts} >> >> /Contents {page_ids[i] + 1} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    objects.extend(_outline_objects(outline, outline_id, page_ids))
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _outline_objects(
    outline: Sequence[tuple[str, int, int]], root: int, page_ids: list[int]
) -> list[bytes]:
    """The outline's dictionaries: the root, then one per entry (object root + 1 + i)."""
    if not outline:
        return []
    ids = [root + 1 + i for i in range(len(outline))]
    parents = []
    for i, (_title, _page, depth) in enumerate(outline):
        parent = root
        if depth:
            parent = max(ids[j] for j in range(i) if outline[j][2] == 0)
        parents.append(parent)
    siblings: dict[int, list[int]] = {}
    for entry_id, parent in zip(ids, parents, strict=True):
        siblings.setdefault(parent, []).append(entry_id)

    def family(entry_id: int) -> str:
        kids = siblings.get(entry_id, [])
        return f" /First {kids[0]} 0 R /Last {kids[-1]} 0 R /Count {len(kids)}" if kids else ""

    objects = [f"<< /Type /Outlines{family(root)} >>".encode()]
    for entry_id, parent, (title, page, _depth) in zip(ids, parents, outline, strict=True):
        row = siblings[parent]
        at = row.index(entry_id)
        links = (f" /Prev {row[at - 1]} 0 R" if at else "") + (
            f" /Next {row[at + 1]} 0 R" if at + 1 < len(row) else "")
        objects.append(
            f"<< /Title {_pdf_string(title)} /Parent {parent} 0 R{links}{family(entry_id)} "
            f"/Dest [{page_ids[page]} 0 R /XYZ 0 792 0] >>".encode("latin-1")
        )
    return objects


def write_layout_pdf(
    path: Path, pages: Sequence[Sequence[Text | Stroke | Frame]],
    outline: Sequence[tuple[str, int, int]] = (),
) -> Path:
    """Write a PDF (see layout_pdf_bytes) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(layout_pdf_bytes(pages, outline))
    return path


def write_pdf(path: Path, pages: Sequence[Sequence[str]], *, text: bool = True) -> Path:
    """Write a PDF (see pdf_bytes) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pdf_bytes(pages, text=text))
    return path


def write_encrypted_pdf(path: Path, pages: Sequence[Sequence[str]]) -> Path:
    """A PDF that needs the user password "secret" to open."""
    from pypdf import PdfReader, PdfWriter

    source = path.with_suffix(".plain.tmp")
    write_pdf(source, pages)
    writer = PdfWriter(clone_from=PdfReader(source))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="AES-128")
    with path.open("wb") as handle:
        writer.write(handle)
    source.unlink()
    return path


def write_docx(
    path: Path, heading: str, items: Sequence[str], table: Sequence[Sequence[str]]
) -> Path:
    """A DOCX with a heading, a paragraph, a bulleted list and a table."""
    import docx

    document = docx.Document()
    document.add_heading(heading, level=1)
    document.add_paragraph("An opening paragraph.")
    for item in items:
        document.add_paragraph(item, style="List Bullet")
    grid = document.add_table(rows=len(table), cols=len(table[0]))
    for row, values in zip(grid.rows, table, strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.save(str(path))
    return path


def write_pptx(path: Path, slides: Sequence[tuple[str, str, str]]) -> Path:
    """A PPTX with one (title, body, notes) slide each."""
    import pptx

    deck = pptx.Presentation()
    layout = deck.slide_layouts[1]  # title and content
    for title, body, notes in slides:
        slide = deck.slides.add_slide(layout)
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        slide.notes_slide.notes_text_frame.text = notes
    deck.save(str(path))
    return path


def write_xlsx(path: Path, sheets: dict[str, Sequence[Sequence[object]]]) -> Path:
    """An XLSX with one sheet per entry, rows as given."""
    import openpyxl

    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    workbook.save(str(path))
    return path


def write_zip_bomb_docx(path: Path, unpacked_mib: int = 1024) -> Path:
    """A DOCX whose document.xml truly inflates to `unpacked_mib` MiB of zeros.

    The deflate stream is one compressed MiB repeated (full flushes make each piece
    independent), so writing it takes milliseconds.
    """
    chunk = b"\0" * (1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = compressor.compress(chunk) + compressor.flush(zlib.Z_FULL_FLUSH)
    stream = piece * unpacked_mib + zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    crc = 0
    for _ in range(unpacked_mib):
        crc = zlib.crc32(chunk, crc)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES)
        archive.writestr("_rels/.rels", _RELS)
        info = zipfile.ZipInfo("word/document.xml", date_time=(2024, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        _write_raw(archive, info, stream, crc, unpacked_mib << 20)
    return path


def _write_raw(archive: zipfile.ZipFile, info: zipfile.ZipInfo, raw: bytes, crc: int, size: int):
    # zipfile has no API for pre-compressed data: write the header and bytes ourselves.
    info.CRC, info.compress_size, info.file_size = crc, len(raw), size
    info.header_offset = archive.fp.tell()
    archive.fp.write(info.FileHeader(zip64=False))
    archive.fp.write(raw)
    archive.start_dir = archive.fp.tell()
    archive.filelist.append(info)
    archive.NameToInfo[info.filename] = info
    archive._didModify = True


_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Override PartName="/word/document.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
_RELS = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/officeDocument" Target="word/document.xml"/></Relationships>'
)


# Converters that misbehave on purpose. They live here, not in a test module, because
# workers unpickle them by module name and this module is cheap to import.


class FakeConverter(Converter):
    """`.fake` files: text as is; a first line WAIT waits for `gate` to exist, FAIL fails.

    Every conversion appends the file name to `log`, so tests can count them.
    """

    name = "fake"
    version = "1"
    extensions = (".fake",)

    def __init__(self, log: Path, gate: Path) -> None:
        self.log, self.gate = log, gate

    def extract(self, path: Path, limits: Limits) -> str:
        with self.log.open("a") as handle:
            handle.write(path.name + "\n")
        text = path.read_text()
        if text.startswith("WAIT"):
            deadline = time.monotonic() + 60
            while not self.gate.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            text = text.removeprefix("WAIT").lstrip()
        if text.startswith("FAIL"):
            raise ConversionFailed("told to fail")
        return text


class HangConverter(Converter):
    """`.hang` files: record the worker's pid and the folder of the path it was given in
    the file the document names (an absolute path), then never finish."""

    name = "hang"
    version = "1"
    extensions = (".hang",)

    def extract(self, path: Path, limits: Limits) -> str:
        record = Path(path.read_text().strip())
        if record.is_absolute():
            record.write_text(f"{os.getpid()}\n{path.parent}")
        time.sleep(3600)
        return ""


class CrashConverter(Converter):
    """`.crash` files: the worker dies of SIGKILL mid-conversion."""

    name = "crash"
    version = "1"
    extensions = (".crash",)

    def extract(self, path: Path, limits: Limits) -> str:
        os.kill(os.getpid(), signal.SIGKILL)
        return ""


class ExitConverter(Converter):
    """`.exit` files: the worker exits with status 3 mid-conversion."""

    name = "exit"
    version = "1"
    extensions = (".exit",)

    def extract(self, path: Path, limits: Limits) -> str:
        os._exit(3)


class HogConverter(Converter):
    """`.hog` files: allocate 2 GiB."""

    name = "hog"
    version = "1"
    extensions = (".hog",)

    def extract(self, path: Path, limits: Limits) -> str:
        return str(len(bytearray(2 << 30)))
