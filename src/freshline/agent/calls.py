"""What every tool shares: its arguments read and checked, and the outcome it hands back.

A tool never raises to the model's caller: a refusal is a `ToolError`, turned into an error
result the model reads (`Toolbox.run`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from freshline.agent.confine import Confinement, ToolError
from freshline.agent.witness import Witness
from freshline.materialize.status import Probe
from freshline.withholding import Withholder

DocumentLookup = Callable[[str], Probe | None]
"""Given a root-relative path, the materializer's probe of it, or None for a plain file."""


@dataclass
class Means:
    """What every tool works with: where it may reach, how secrets are withheld from what
    it shows, the ledger's witness of what it saw and wrote, which paths are converted
    documents, and how much it may print."""

    confinement: Confinement
    withholder: Withholder
    witness: Witness
    read_document: DocumentLookup
    output_cap: int


@dataclass
class Outcome:
    """What one tool call did: its text for the model, and the files it changed."""

    text: str
    is_error: bool = False
    changed: tuple[str, ...] = ()
    mode_changes: dict[str, str] = field(default_factory=dict)


def arg(args: dict[str, Any], name: str, kind: type, default: Any = ...) -> Any:
    """One argument of a tool call, checked for type; integers may come as digit strings."""
    value = args.get(name)
    if value is None:
        if default is ...:
            raise ToolError(f"missing argument {name!r}")
        return default
    if kind is int and isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ToolError(f"argument {name!r} must be a {kind.__name__}")
    return value


def encodable(text: str) -> str:
    """`text` with lone surrogates (undecodable file-name bytes, or a model's JSON) written
    as escapes, so it can be encoded as UTF-8: for the model's API and the commit."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
