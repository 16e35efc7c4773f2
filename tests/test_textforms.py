"""The texts a file's bytes hold for the scan (`textforms`, pure): UTF-16 and UTF-32 text
decoded and encoded back byte for byte; archive members, an .xlsx's cells as a table,
PDF streams inflated and printable runs; every archive and stream bounded."""

from __future__ import annotations

import codecs
import io
import zipfile
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline import textforms
from freshline.textforms import binary_texts, decoded

TOKEN = "ghp_" + "Fm7Kq2Lw9Xc4Vb6Nz1Ps8Rt3Yu5Ie0Oa2Sdx"
TEXT = f"token = {TOKEN}\nmore\n"

# bytes → the encoding they decode with (None: not text in another encoding)
ENCODINGS: list[tuple[bytes, str | None]] = [
    (TEXT.encode("utf-16"), "utf-16-le"),  # marked, as Windows writes it
    (codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"), "utf-16-be"),
    (TEXT.encode("utf-16-le"), "utf-16-le"),  # unmarked: told by its NULs
    (TEXT.encode("utf-16-be"), "utf-16-be"),
    (codecs.BOM_UTF32_LE + TEXT.encode("utf-32-le"), "utf-32-le"),
    (codecs.BOM_UTF32_BE + TEXT.encode("utf-32-be"), "utf-32-be"),
    (TEXT.encode("utf-8"), None),
    (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)), None),
    (TEXT.encode("utf-16-le")[:-1], None),  # an odd length is no UTF-16
    (codecs.BOM_UTF16_LE + b"\x00\xd8", None),  # a lone surrogate: not text after all
]


@pytest.mark.parametrize(("data", "encoding"), ENCODINGS)
def test_other_encodings_are_decoded(data: bytes, encoding: str | None) -> None:
    found = decoded(data)
    assert (found.encoding if found else None) == encoding
    if found is not None:
        assert found.text == TEXT and found.encode(found.text) == data


# (A mark then U+0000 is also UTF-32's mark: no text file begins with a NUL.)
@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
               min_size=1))
def test_marked_utf16_round_trips(text: str) -> None:
    data = text.encode("utf-16")
    found = decoded(data)
    assert found is not None and found.text == text and found.encode(text) == data


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in members.items():
            archive.writestr(name, body)
    return buffer.getvalue()


SHEET = (b'<worksheet><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c>'
         b'<c r="C1" t="inlineStr"><is><t>password</t></is></c></row>'
         b'<row r="2"><c r="C2" t="s"><v>1</v></c><c r="D2"><f>SUM(A1)</f><v>3</v></c></row>'
         b"</sheetData></worksheet>")
STRINGS = b"<sst><si><t>user</t></si><si><r><t>Zq8#mK2</t></r><r><t>$pL9vX4wR</t></r></si></sst>"
WORD = (b"<w:document><w:body><w:p><w:r><w:t>token &amp; </w:t></w:r><w:r><w:t>" + TOKEN.encode()
        + b"</w:t></w:r></w:p><w:tbl><w:tr><w:tc><w:p><w:r><w:t>API</w:t></w:r></w:p>"
        b"<w:p><w:r><w:t>key</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>v</w:t></w:r></w:p>"
        b"</w:tc></w:tr></w:tbl></w:body></w:document>")


def test_an_archive_stands_for_its_members() -> None:
    data = zipped({"xl/worksheets/sheet1.xml": SHEET, "xl/sharedStrings.xml": STRINGS,
                   "word/document.xml": WORD, "word/styles.xml": b"<w:t>" + TOKEN.encode(),
                   "inner.zip": zipped({"a.txt": b"inside a zip inside a zip"}),
                   "media/raw.bin": b"\0\0 a printable run \0"})
    texts = list(binary_texts(data))
    assert "| user |  | password |\n|  |  | Zq8#mK2$pL9vX4wR | 3 |\n" in texts  # cells placed
    assert f"token & {TOKEN}\n\n| API key | v |\n" in texts  # a cell's paragraphs: one line
    assert "inside a zip inside a zip" in texts and " a printable run " in texts
    assert not any(TOKEN in t for t in texts if "token &" not in t)  # styles are looks


def test_a_broken_zip_is_read_as_bytes() -> None:
    assert list(binary_texts(b"PK\x03\x04 not a zip at all " + TOKEN.encode())) == [
        f"PK\x03\x04 not a zip at all {TOKEN}".removeprefix("PK\x03\x04")]


def test_pdf_streams_are_inflated() -> None:
    stream = zlib.compress(f"BT ({TOKEN}) Tj ET".encode())
    data = b"%PDF-1.4\n1 0 obj <<>> stream\n" + stream + b"\nendstream\nendobj\n"
    assert any(TOKEN in text for text in binary_texts(data))


def test_printable_runs_find_ascii_and_utf16() -> None:
    data = b"\0\x01" + TOKEN.encode() + b"\0\x02" + "wide words".encode("utf-16-le") + b"\xff"
    assert list(textforms.printable_runs(data)) == [TOKEN, "wide words"]


def test_inflating_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(textforms, "INFLATE_LIMIT", 1 << 20)
    bomb = zipped({f"part{i}.xml": b"<a>" + b"x" * (1 << 20) + b"</a>" for i in range(4)})
    assert sum(len(t) for t in binary_texts(bomb)) <= (1 << 20) + 8
    stream = zlib.compress(b"y" * (4 << 20))
    pdf = b"%PDF-1.4\nstream\n" + stream + b"\nendstream\nstream\n" + stream + b"\nendstream\n"
    assert sum(len(t) for t in binary_texts(pdf)) <= (1 << 20) + len(pdf)
