"""The converter registry: which converter, if any, turns a file into a text snapshot.

Lookup is by lower-cased file extension. Markdown, plain text, images and unknown types
have no converter, so they are never materialized. `register` lets tests and plugins add
a converter (or replace the one for an extension).

A built-in converter's module is imported when a file of its type is first converted or
probed: whether a path is a document is known from its extension alone (a manifest asks
it of every file; the hook's first call lists a workspace that may hold none).
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import PurePath

from freshline.materialize.converters.base import (
    ConversionFailed,
    Converter,
    Limits,
    check_unpacked_size,
    markdown_table,
)

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

# The built-in converters: each one's module and class, by extension (its `extensions`).
_BUILTIN: dict[str, tuple[str, str]] = {
    ".pdf": ("pdf", "PdfConverter"),
    ".docx": ("word", "DocxConverter"),
    ".pptx": ("slides", "PptxConverter"),
    ".xlsx": ("sheets", "XlsxConverter"),
    ".xlsm": ("sheets", "XlsxConverter"),
    ".html": ("web", "HtmlConverter"),
    ".htm": ("web", "HtmlConverter"),
    ".xhtml": ("web", "HtmlConverter"),
}
# The converter of each extension; None: the built-in one, not imported yet.
_BY_EXTENSION: dict[str, Converter | None] = dict.fromkeys(_BUILTIN)


@cache
def _builtin(module: str, name: str) -> Converter:
    """The one instance of a built-in converter, its module imported now."""
    found: type[Converter] = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    return found()


def register(converter: Converter) -> None:
    """Make `converter` the one used for each of its extensions."""
    for extension in converter.extensions:
        _BY_EXTENSION[extension.lower()] = converter


def unregister(converter: Converter) -> None:
    """Remove `converter`; the built-in one for its extensions comes back, if any."""
    for extension in converter.extensions:
        if _BY_EXTENSION.get(extension.lower()) is converter:
            if extension.lower() in _BUILTIN:
                _BY_EXTENSION[extension.lower()] = None
            else:
                del _BY_EXTENSION[extension.lower()]


def registered() -> list[Converter]:
    """Every converter in use, one entry each."""
    return list({id(c): c for c in map(_for_extension, _BY_EXTENSION)}.values())


def converter_for(path: str | PurePath) -> Converter | None:
    """The converter for a file, or None when it is not a document freshline converts."""
    extension = _suffix(path).lower()
    return _for_extension(extension) if extension in _BY_EXTENSION else None


def _for_extension(extension: str) -> Converter:
    found = _BY_EXTENSION[extension]
    return found if found is not None else _builtin(*_BUILTIN[extension])


def _suffix(path: str | PurePath) -> str:
    """`PurePath(path).suffix`, without building a path object for a workspace path (a
    manifest asks it of every file in scope)."""
    if not isinstance(path, str) or path.endswith("/"):
        return PurePath(path).suffix
    dot = path.rfind(".")
    # In the last name, neither its first character (a hidden file) nor its last.
    return path[dot:] if path.rfind("/") + 1 < dot < len(path) - 1 else ""


def document_suffixes() -> tuple[str, ...]:
    """The extensions a converter takes now (lowercase, with the dot): a path whose
    lowercase form ends with none of them is no document (a first look that judges a
    workspace's files without a call each)."""
    return tuple(_BY_EXTENSION)


def is_document(path: str | PurePath) -> bool:
    """True when the file has a converter and so gets a text snapshot."""
    return _suffix(path).lower() in _BY_EXTENSION
