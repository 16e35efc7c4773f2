"""PDF: text per page with pypdfium2, and pypdf when pdfium cannot open the file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from freshline.materialize.converters.base import (
    ConversionFailed,
    Converter,
    Limits,
    allocation_failed,
    first_line,
)

ENCRYPTED = "encrypted PDF (password required)"


class PdfConverter(Converter):
    """Text of every page under a `## Page N` header."""

    name = "pdf"
    version = "1"
    extensions = (".pdf",)

    def extract(self, path: Path, limits: Limits) -> str:
        try:
            pages = list(_pdfium_pages(path))
        except MemoryError:
            raise
        except Exception as first:  # pdfium raises its own error type for any bad input
            pages = list(_pypdf_pages(path, first))
        return "\n\n".join(f"## Page {n}\n\n{text}".rstrip() for n, text in enumerate(pages, 1))


def _pdfium_pages(path: Path) -> Iterator[str]:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(path))
    try:
        for index in range(len(document)):
            page = document[index]
            textpage = page.get_textpage()
            yield _clean(textpage.get_text_range())
            textpage.close()
            page.close()
    finally:
        document.close()


def _pypdf_pages(path: Path, pdfium_error: Exception) -> Iterator[str]:
    import logging

    from pypdf import PdfReader

    # pypdf logs every repair it attempts; the failure reason says what matters.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ConversionFailed(ENCRYPTED)
        texts = [_clean(page.extract_text() or "") for page in reader.pages]
    except (ConversionFailed, MemoryError):
        raise
    except Exception as exc:
        if allocation_failed(exc):
            raise MemoryError(str(exc)) from exc
        raise ConversionFailed(_reason(pdfium_error, exc)) from exc
    yield from texts


def _reason(pdfium_error: Exception, pypdf_error: Exception) -> str:
    if "password" in str(pdfium_error).lower():
        return ENCRYPTED
    both = f"pdfium: {first_line(pdfium_error)}; pypdf: {first_line(pypdf_error)}"
    return f"unreadable PDF ({both})"


def _clean(text: str) -> str:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip()
