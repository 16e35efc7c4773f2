"""What the model was told with a message, in one line for people.

The wire blocks go to the model only; the chat shows this line under each message
("↳ 3 created, 1 modified · refreshed from main (12 paths)") and the blocks themselves on
request. Pure functions: from the turn's records when the turn is at hand, else from the
blocks' opening tags (an earlier turn read back from the conversation).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from freshline.interfaces.text import plural
from freshline.refs import short_ref

if TYPE_CHECKING:
    from freshline.context import UpdatesInput

ARROW = "↳ "
NOTHING = "nothing new"
_KINDS = ("created", "modified", "deleted", "renamed", "entered", "left")
# An opening tag starts its line; the manifest's instructions name the updates block
# mid-line, which is no block of its own.
_TAG = re.compile(r"^<(project_context(?:_updates)?)\b([^>]*)>", re.MULTILINE)
_ATTR = re.compile(r'(\w+)="([^"]*)"')


def told_line(manifest: bool, updates: UpdatesInput | None) -> str:
    """One line: the manifest, the path changes by kind, scope changes, refreshes and
    documents the updates carried, or "nothing new"."""
    parts = ["the project manifest"] if manifest else []
    if updates is not None:
        parts += _update_parts(updates)
    return ARROW + (" · ".join(parts) or NOTHING)


def _update_parts(u: UpdatesInput) -> list[str]:
    parts = []
    if u.compacted:
        parts.append("the change log no longer reached back: the project manifest again")
    counted = sum(n for g in u.folded for n in g.counts.values())
    if counted:
        parts.append(f"{plural(counted, 'earlier change')} counted per folder")
    kinds = Counter(c.kind.value for c in u.changes)
    counts = [f"{kinds[k]} {k}" for k in _KINDS if kinds[k]]
    if counts:
        parts.append(", ".join(counts))
    for config in u.config:
        parts.append(f"scope changed ({plural(len(config.newly_included), 'file')} newly in)")
    for refresh in u.refreshed:
        counts = [plural(len(refresh.paths), "path")]
        if refresh.conflicts:
            counts.append(plural(len(refresh.conflicts), "conflict"))
        parts.append(f"refreshed from {short_ref(refresh.target)} ({', '.join(counts)})")
    converting = sum(1 for d in u.documents if d.state.value == "pending")
    for count, what in ((len(u.ready_documents), "snapshot ready"),
                        (converting, "document converting"),
                        (len(u.failed_documents), "document failed")):
        if count:
            noun, _, rest = what.partition(" ")
            parts.append(f"{plural(count, noun)} {rest}")
    if u.resumed:
        parts.append("resumed")
    return parts


def told_from_wire(blocks: str) -> str:
    """The line for blocks read back as text: which blocks, and the epochs they span."""
    parts = []
    for match in _TAG.finditer(blocks):
        attrs = dict(_ATTR.findall(match.group(2)))
        if match.group(1) == "project_context":
            parts.append("the project manifest")
        else:
            span = f"epoch {attrs.get('from_epoch', '?')} → {attrs.get('to_epoch', '?')}"
            parts.append(f"what changed ({span})")
    return ARROW + (" · ".join(parts) or NOTHING)


def wire_blocks(wire_prompt: str, message: str) -> str:
    """The context blocks of a wire prompt: everything before the human's message."""
    return wire_prompt.removesuffix(message).rstrip()
