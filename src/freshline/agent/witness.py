"""The tools' side of the read ledger: what the agent saw and wrote, and the write guard.

`read` and `search` tell the witness which content (git blob id) they showed, `write` and
`edit` what they wrote, `delete` what it deleted; the witness notes it in the turn's
`TurnLedger`. Before a write
replaces a file, `guard` checks that the file holds the content the agent last read or
wrote in this conversation, by content, never by mtime: otherwise the agent would
overwrite an edit it never saw. A file that does not exist may always be created. Without
a ledger (a bare toolbox) the witness notes nothing and guards nothing.
"""

from __future__ import annotations

from pathlib import Path

from freshline.agent.confine import Confined, ToolError
from freshline.materialize.status import Probe
from freshline.session.ledger import TurnLedger, snapshot_fingerprint
from freshline.store import LedgerKind
from freshline.tracker.hashing import blob_id_bytes, blob_of


class Witness:
    """Notes what one turn's tools showed and wrote in its ledger, and guards writes."""

    def __init__(self, ledger: TurnLedger | None = None) -> None:
        self.ledger = ledger

    def content(self, path: Path) -> str | None:
        """The blob `path` holds now, when there is a ledger to note it in."""
        return blob_of(path) if self.ledger is not None else None

    def saw(self, rel: str, blob: str | None) -> None:
        """The agent was shown the content `blob` of root-relative `rel`."""
        if self.ledger is not None and blob is not None:
            self.ledger.note(rel, blob, LedgerKind.READ)

    def saw_source(self, rel: str, view: Probe | None, path_read: Path) -> None:
        """The agent was shown lines of `rel`: of the file at `path_read`, or of the
        document snapshot `view` names (the content it was made from)."""
        if self.ledger is None:
            return
        try:
            self.saw(rel, blob_of(path_read) if view is None else snapshot_fingerprint(view))
        except OSError:
            pass  # it changed or vanished meanwhile: record nothing rather than a guess

    def wrote(self, rel: str, text: str) -> None:
        """A tool wrote `text` (as UTF-8) to root-relative `rel`."""
        if self.ledger is not None:
            self.ledger.note(rel, blob_id_bytes(text.encode("utf-8")), LedgerKind.WRITE)

    def deleted(self, rel: str) -> None:
        """A tool deleted root-relative `rel` (the ledger's blob for "no file")."""
        if self.ledger is not None:
            self.ledger.note(rel, "", LedgerKind.WRITE)

    def guard(self, target: Confined) -> None:
        """Raise ToolError unless the agent may replace `target`: it does not exist, or it
        holds what the agent last read or wrote in this conversation."""
        if self.ledger is None:
            return
        current = blob_of(target.path)
        if current is None:
            return
        known = self.ledger.known(target.rel)
        if known is None or not known.blob:
            raise ToolError(f"{target.shown} exists and you have not read it in this "
                            "conversation; read it before changing it")
        if known.blob != current:
            verb = "wrote" if known.kind is LedgerKind.WRITE else "read"
            raise ToolError(f"{target.shown} changed since you {verb} it at turn "
                            f"{known.turn}; read it again")
