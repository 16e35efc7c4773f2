"""The tools' side of the read ledger: what the agent saw and wrote, and the write guard.

`read` and `search` tell the witness which content (git blob id) they showed (of the
bytes they read, or the content a snapshot was made from), `write` and
`edit` what they wrote, `delete` what it deleted; the witness notes it in the turn's
`TurnLedger`. Before a write
replaces a file, `guard` checks that the file holds the content the agent last read or
wrote in this conversation, by content, never by mtime: otherwise the agent would
overwrite an edit it never saw. A file that does not exist may always be created. Without
a ledger (a bare toolbox) the witness notes nothing and guards nothing.
"""

from __future__ import annotations

from freshline.agent.confine import Confined, ToolError
from freshline.session.ledger import TurnLedger
from freshline.store import LedgerKind
from freshline.tracker.hashing import blob_id_bytes, blob_of


class Witness:
    """Notes what one turn's tools showed and wrote in its ledger, and guards writes."""

    def __init__(self, ledger: TurnLedger | None = None) -> None:
        self.ledger = ledger

    def saw(self, rel: str, blob: str | None) -> None:
        """The agent was shown the content `blob` of root-relative `rel`."""
        if self.ledger is not None and blob is not None:
            self.ledger.note(rel, blob, LedgerKind.READ)

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
