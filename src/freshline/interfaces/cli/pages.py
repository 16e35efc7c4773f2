"""What the paged commands share (`changes --page`, `project files --page`): a page's
budget, the channel's as the command prints it, and how a page is printed.

An agent without freshline's tools runs these commands from a rolled-up block, so a page
must fit what its shell tool shows: the channel's budget (`--channel`), counted as the
command prints it (plain text, or the JSON object with the page as its `text`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from freshline.errors import UsageError
from freshline.interfaces.cli.output import json_text, say, write_json

if TYPE_CHECKING:
    from freshline.config import Config
    from freshline.context import Budget, ChangesPage, Channel

_RESERVED = 10**6  # the envelope is measured with numbers this wide


def channel_named(channel: str) -> Channel:
    """The delivery channel `--channel` names (UsageError for any other word), checked
    whether or not a page is asked for."""
    from freshline.context import Channel

    try:
        return Channel(channel)
    except ValueError:
        names = ", ".join(c.value for c in Channel)
        raise UsageError(f"--channel {channel}: not a channel ({names})") from None


def page_budget(cfg: Config, channel: str, as_json: bool, project: str) -> Budget:
    """The budget of one page of `project`'s on `channel` (UsageError for an unknown
    one), with this program's command for the page's footer."""
    from freshline.context import Encoding, Meter
    from freshline.program import workspace_command
    from freshline.session.delivery import delivery_budget

    chosen = channel_named(channel)
    if as_json:
        envelope = json_text(_fields(project, _RESERVED, _RESERVED, _RESERVED, ""))
        meter = Meter.around(envelope, Encoding.JSON_ASCII)
    else:
        meter = Meter(len("\n"))  # the line ending the page
    return delivery_budget(cfg, chosen, meter, command=workspace_command(cfg.root))


def print_page(page: ChangesPage, as_json: bool) -> None:
    """The page as text, or as JSON: its numbers and its text."""
    if as_json:
        write_json(_fields(page.project, page.since, page.epoch, page.page, page.text,
                           page.pages))
    else:
        say(page.text)


def _fields(
    project: str, since: int, epoch: int, page: int, text: str, pages: int = _RESERVED
) -> dict[str, object]:
    return {"project": project, "since": since, "epoch": epoch, "page": page,
            "pages": pages, "text": text}
