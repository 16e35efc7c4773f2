"""Delivery budgets and paging: how big a channel's blocks may be, and the full list
behind a rolled-up block.

Each delivery names its channel (`freshline.context.Channel`); `delivery_budget` reads its
budget from `[delivery]` in freshline.toml. A block that did not fit is rolled up and
names its way back: `changes_page`, which the chat's `changes` tool and MCP's
`project_changes` serve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from freshline.config import Config, Mode
from freshline.context import (
    Budget,
    ChangesPage,
    Channel,
    Meter,
    UpdatesInput,
    page_changes,
)
from freshline.materialize import is_document
from freshline.session.documents import DocumentDesk, info
from freshline.store.records import Change, ChangeKind

if TYPE_CHECKING:  # the manager uses this module: it takes the base
    from freshline.session.base import SessionBase

_DOCUMENT_KINDS = (ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.RENAMED)


def delivery_budget(
    config: Config,
    channel: Channel,
    meter: Meter | None = None,
    session: str | None = None,
    limit: int | None = None,
    token: str | None = None,
) -> Budget:
    """A delivery's budget on `channel`: `[delivery]` in freshline.toml, at most `limit`;
    `token` is the delivery's token, written into each block's opening tag."""
    chars = config.delivery.budget(channel.value)
    if limit is not None:
        chars = min(chars, limit)
    return Budget(chars, channel, meter or Meter(), session, token)


def changes_page(
    manager: SessionBase,
    session_id: str,
    since: int | None = None,
    page: int = 1,
    channel: Channel = Channel.SEND,
    meter: Meter | None = None,
    limit: int | None = None,
) -> ChangesPage:
    """One page of every change to the session's project after epoch `since` (default:
    the session's cursor), each page within `channel`'s budget and `limit` characters:
    the full list behind a rolled-up block. Confined to the session's project; moves no
    cursor. UsageError for a page past the last."""
    s = manager.get(session_id)
    manager.tracker.flush()
    start = since if since is not None else s.cursor if s.cursor is not None else 0
    answer = manager.tracker.changes_since(s.project, start)
    desk = DocumentDesk(manager.materializer, manager.store.index_get)
    documents = [info(desk.probe(c.path)) for c in answer.changes
                 if c.kind in _DOCUMENT_KINDS and is_document(c.path)]
    compacted = [Change(ChangeKind.COMPACTED, "")] if answer.compacted else []
    isolated = s.mode == Mode.ISOLATED.value
    root = manager.conversations.worktree(s.id) if isolated else manager.config.root
    updates = UpdatesInput.from_changes(
        s.project, str(root), start, answer.epoch, compacted or answer.changes,
        documents=documents,
    )
    budget = delivery_budget(manager.config, channel, meter, s.id, limit)
    return page_changes(updates, page, budget)
