"""Pure merge policy: when to refresh, and which executable bits to restore before a merge.

No I/O here: the refresh module gathers the facts from git and asks these functions.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import StrEnum

REGULAR = "100644"
EXECUTABLE = "100755"


class RefreshAction(StrEnum):
    """What the next human turn does about the checkout target."""

    NONE = "none"  # the target is where the last refresh left it
    MERGE = "merge"  # the target moved forward: merge it in
    SYNC_REQUIRED = "sync_required"  # rebased, reset or switched: an explicit sync decides
    UNRELATED = "unrelated"  # no shared history at all: stop as a conflict with no paths


def decide_refresh(
    target: str, last_parent: str | None, descends: bool, related: bool
) -> RefreshAction:
    """Decide a refresh from the target commit, the last refresh parent and their relation.

    `descends`: the target descends from the last refresh parent; `related`: they share
    any history at all.
    """
    if target == last_parent:
        return RefreshAction.NONE
    if last_parent is not None and descends:
        return RefreshAction.MERGE
    if last_parent is not None and related:
        return RefreshAction.SYNC_REQUIRED
    return RefreshAction.UNRELATED


@dataclass(frozen=True)
class ModeDiff:
    """One path that differs between the refresh base and the conversation's tree."""

    path: str
    base_mode: str
    base_oid: str
    our_mode: str
    our_oid: str


def exec_bit_restores(
    diffs: Iterable[ModeDiff], deliberate: Collection[str], same_content: bool = True
) -> dict[str, str]:
    """The paths to restore to the base's mode: {path: base mode}.

    A path qualifies when the executable bit flipped (100644 ↔ 100755) and no tool
    recorded the change as deliberate; with `same_content` (before a merge, against the
    refresh base) only when its content is also the base's. Every turn applies the rule
    against the previous event's tree whatever the content (an edit keeps a file's mode,
    so a flipped bit there was set outside the tools).
    """
    flip = {REGULAR, EXECUTABLE}
    return {
        d.path: d.base_mode
        for d in diffs
        if (d.base_oid == d.our_oid or not same_content)
        and {d.base_mode, d.our_mode} == flip
        and d.path not in deliberate
    }
