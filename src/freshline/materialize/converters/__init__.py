"""The converter registry: which converter, if any, turns a file into a text snapshot.

Lookup is by lower-cased file extension. Markdown, plain text, images and unknown types
have no converter, so they are never materialized. `register` lets tests and plugins add
a converter (or replace the one for an extension).
"""

from __future__ import annotations

from pathlib import PurePath

from freshline.materialize.converters.base import (
    ConversionFailed,
    Converter,
    Limits,
    check_unpacked_size,
    markdown_table,
)
from freshline.materialize.converters.pdf import PdfConverter
from freshline.materialize.converters.sheets import XlsxConverter
from freshline.materialize.converters.slides import PptxConverter
from freshline.materialize.converters.web import HtmlConverter
from freshline.materialize.converters.word import DocxConverter

__all__ = [
    "ConversionFailed",
    "Converter",
    "Limits",
    "check_unpacked_size",
    "converter_for",
    "is_document",
    "markdown_table",
    "register",
    "registered",
    "unregister",
]

_BUILTIN: tuple[Converter, ...] = (
    PdfConverter(),
    DocxConverter(),
    PptxConverter(),
    XlsxConverter(),
    HtmlConverter(),
)
_BY_EXTENSION: dict[str, Converter] = {}


def register(converter: Converter) -> None:
    """Make `converter` the one used for each of its extensions."""
    for extension in converter.extensions:
        _BY_EXTENSION[extension.lower()] = converter


def unregister(converter: Converter) -> None:
    """Remove `converter`; the built-in one for its extensions comes back, if any."""
    for extension in converter.extensions:
        if _BY_EXTENSION.get(extension.lower()) is converter:
            del _BY_EXTENSION[extension.lower()]
            builtin = [c for c in _BUILTIN if extension.lower() in c.extensions]
            if builtin:
                _BY_EXTENSION[extension.lower()] = builtin[0]


def registered() -> list[Converter]:
    """Every converter in use, one entry each."""
    return list({id(c): c for c in _BY_EXTENSION.values()}.values())


def converter_for(path: str | PurePath) -> Converter | None:
    """The converter for a file, or None when it is not a document freshline converts."""
    return _BY_EXTENSION.get(_suffix(path).lower())


def _suffix(path: str | PurePath) -> str:
    """`PurePath(path).suffix`, without building a path object for a workspace path (a
    manifest asks it of every file in scope)."""
    if not isinstance(path, str) or path.endswith("/"):
        return PurePath(path).suffix
    name = path.rpartition("/")[2]
    dot = name.rfind(".")
    return name[dot:] if 0 < dot < len(name) - 1 else ""


def is_document(path: str | PurePath) -> bool:
    """True when the file has a converter and so gets a text snapshot."""
    return converter_for(path) is not None


for _converter in _BUILTIN:
    register(_converter)
