"""How a session's deliveries were acknowledged, for `freshline session show`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from freshline.interfaces.text import plural

if TYPE_CHECKING:
    from freshline.session import SessionManager
    from freshline.store import SessionRecord


def delivery_dict(m: SessionManager, s: SessionRecord) -> dict[str, Any]:
    """How the session's deliveries are acknowledged: the latest one taken, and how many
    are still out."""
    from freshline.session.engine import Deliveries

    engine = Deliveries(m)
    taken = engine.last_acknowledged(s.id)
    return {
        "outstanding": len(engine.outstanding(s.id)),
        "last_acknowledged": None if taken is None else {
            "token": taken.token, "channel": taken.channel, "how": taken.how,
            "note": taken.note, "covers": taken.covers,
        },
    }


def acknowledgement_line(deliveries: dict[str, Any]) -> str | None:
    """How the session's deliveries were taken, in a sentence; None for a session that
    never had one by token (freshline's own chat and send accept their turns)."""
    taken = deliveries["last_acknowledged"]
    waiting = deliveries["outstanding"]
    out = (f"{plural(waiting, 'delivery', 'deliveries')} not known to be taken yet."
           if waiting else "")
    if taken is None:
        return f"No delivery acknowledged yet; {out}" if waiting else None
    how = {"token": "acknowledged by its token", "transcript": "found in the agent's transcript",
           "printed": "acknowledged when printed"}[taken["how"]]
    note = f" ({taken['note']})" if taken["note"] else ""
    last = f"The last delivery taken, {taken['token']} on {taken['channel']}, was {how}{note}."
    return f"{last} {out}".rstrip()
