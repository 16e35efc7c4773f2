"""PDF: Markdown an agent can navigate, read with pypdfium2 (pypdf when pdfium cannot
open the file, as plain text).

Each page starts with a `<!-- page N -->` line. Its runs (`pdf_page.py`) are put in
reading order (`pdf_layout.py`), ruled tables taken out (`pdf_tables.py`), the lines cut
into blocks (`pdf_blocks.py`), and the whole document's headings found from sizes,
weights, section numbers and the outline (`pdf_headings.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from freshline.materialize.converters.base import (
    ConversionFailed,
    Converter,
    Limits,
    allocation_failed,
    first_line,
)
from freshline.materialize.converters.markers import unmark
from freshline.materialize.converters.pdf_blocks import Block, Kind, blocks, render
from freshline.materialize.converters.pdf_layout import Rule, Span

ENCRYPTED = "encrypted PDF (password required)"


def page_marker(number: int) -> str:
    """The line a page's text starts with: `<!-- page 3 -->`."""
    return f"<!-- page {number} -->"


class PdfConverter(Converter):
    """Headings, paragraphs, lists, code and tables, page by page."""

    name = "pdf"
    version = "2"
    extensions = (".pdf",)

    def extract(self, path: Path, limits: Limits) -> str:
        import pypdfium2 as pdfium

        try:
            document = pdfium.PdfDocument(str(path))
        except MemoryError:
            raise
        except Exception as first:  # pdfium raises its own error type for any bad input
            pages = list(_pypdf_pages(path, first))
        else:
            pages = _pdfium_pages(document)
        return "\n\n".join(
            f"{page_marker(n)}\n\n{text}".rstrip() for n, text in enumerate(pages, 1)
        )


def _pdfium_pages(document: Any) -> list[str]:
    import pypdfium2.raw as raw

    from freshline.materialize.converters.pdf_headings import mark_headings
    from freshline.materialize.converters.pdf_page import PageReader, outline

    try:
        reader = PageReader(raw)
        pages = [_page_blocks(*reader.page(document.raw, index)) for index in range(len(document))]
        mark_headings(pages, outline(document, raw))
    finally:
        document.close()
    return [_markdown(page) for page in pages]


def _page_blocks(spans: list[Span], rules: list[Rule]) -> list[Block]:
    from freshline.materialize.converters.pdf_layout import lines
    from freshline.materialize.converters.pdf_tables import find_tables

    tables, rest = find_tables(rules, spans)
    return blocks(lines(rest), tables)


def _markdown(page: list[Block]) -> str:
    parts: list[str] = []
    for index, block in enumerate(page):
        text = render(block)
        if not text.strip():
            continue
        joined = index and block.kind is Kind.ITEM and page[index - 1].kind is Kind.ITEM
        parts.append(("\n" if joined else "\n\n") + text if parts else text)
    return "".join(parts)


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
    return unmark("\n".join(line.rstrip() for line in lines).strip())
