"""One-line JSON for the service's socket without the json package.

The client of the socket (`serviceclient.py`) runs in every hot command, and importing
`json` loads `re`, `enum` and `functools` with it, about as much as the rest of a served
command. The json package's own C accelerator (`_json`, in every CPython) encodes and
decodes the same text without it.
"""

from __future__ import annotations

import _json

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from typing import Any


class _Context:
    """What `_json.make_scanner` reads of a decoder: json.loads' defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity, as json.loads reads them


def dumps(data: Any) -> str:
    """`data` as `json.dumps(data)` writes it (ASCII, `", "` and `": "` between items)."""
    encode = _json.make_encoder(None, _unencodable, _json.encode_basestring_ascii, None,
                                ": ", ", ", False, False, True)
    return "".join(encode(data, 0))


def loads(text: str | bytes) -> Any:
    """The value of one JSON text (ValueError when it is not one)."""
    if isinstance(text, bytes):
        text = text.decode()
    stripped = text.strip(" \t\n\r")
    try:
        # (typeshed types the context as a scanner; any object with a decoder's fields does)
        value, end = _json.make_scanner(_Context())(stripped, 0)  # type: ignore[arg-type]
    except (StopIteration, SystemError):
        # Text that is not JSON: the scanner reports some of it only through the json
        # package (a SystemError without it), which words it best anyway.
        import json

        return json.loads(stripped)
    if end != len(stripped):
        raise ValueError(f"more than one JSON value: extra data at character {end}")
    return value


def _unencodable(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
