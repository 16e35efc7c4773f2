"""HTML: readable markdown from the standard library's parser.

Headings become `#` lines, list items `- `, links `[text](href)`, tables markdown tables,
`pre` blocks fences. Nothing inside head, script, style, template or svg leaks through.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from freshline.materialize.converters.base import Converter, Limits

CHARSET = re.compile(rb"""charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


class HtmlConverter(Converter):
    """Web pages saved as files."""

    name = "html"
    version = "2"
    extensions = (".html", ".htm", ".xhtml")

    def extract(self, path: Path, limits: Limits) -> str:
        return html_to_markdown(_decode(path.read_bytes()))


def html_to_markdown(html: str) -> str:
    """Readable markdown for an HTML document or fragment."""
    # The parser (html.parser) loads only when a page is converted, not with the registry.
    from freshline.materialize.converters.html_reader import HtmlReader

    reader = HtmlReader()
    reader.feed(html)
    reader.close()
    return reader.markdown()


def _decode(data: bytes) -> str:
    for bom, encoding in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16")):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    match = CHARSET.search(data[:4096])
    encoding = match.group(1).decode("ascii") if match else "utf-8"
    try:
        return data.decode(encoding, errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")
