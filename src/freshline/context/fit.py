"""Fitting blocks to a budget: the entry point that renders a delivery's blocks.

`render_blocks` renders a manifest and an updates block together (either may be absent)
so that what the channel delivers, the blocks joined by a blank line and measured by the
budget's meter, never exceeds the budget. It folds entries in the order `rollup.moves`
gives, as few as it can. Each fold lowers the cost (all but a block's first group, which
adds its heading), so a binary search over the number of folds finds a prefix that fits
where one fold fewer did not, rendering a handful of times (once when all fits).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from .budget import Budget
from .layout import Folds, Plan, write
from .manifest import manifest_plan
from .model import ManifestInput, UpdatesInput
from .rollup import MANIFEST, UPDATES, Move, apply, moves
from .updates import updates_plan

SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Blocks:
    """The blocks of one delivery, as rendered to its budget."""

    manifest: str | None
    updates: str | None
    folds: int = 0  # how many folds the budget took (0: nothing was rolled up for it)

    @property
    def text(self) -> str | None:
        """Both blocks as delivered, a blank line between them; None when there are none."""
        return SEPARATOR.join(b for b in (self.manifest, self.updates) if b) or None


def render_blocks(
    manifest: ManifestInput | None,
    updates: UpdatesInput | None,
    budget: Budget | None = None,
    priority: Collection[str] = (),
) -> Blocks:
    """Render a delivery's blocks so that `budget.meter.cost(blocks.text) <= budget.chars`.

    `priority` names workspace-relative paths to keep listed one by one as long as anything
    else can be folded (what the agent read or was told about). With no budget nothing is
    folded beyond the manifest's own file groups. The guarantee holds for any budget that
    fits the blocks at their minimum (a few hundred characters each; the config refuses
    budgets under 2,000).
    """
    plans: list[Plan | None] = [
        manifest_plan(manifest, budget) if manifest is not None else None,
        updates_plan(updates, budget, priority) if updates is not None else None,
    ]
    whole = _blocks(plans, [], 0)
    if budget is None or budget.fits(whole.text or ""):
        return whole
    sequence = moves(plans)

    def fits(made: int) -> bool:
        return budget.fits(_blocks(plans, sequence, made).text or "")

    low, high = 0, len(sequence)  # `low` folds do not fit; `high` do (or are all there are)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(middle) else (middle, high)
    return _blocks(plans, sequence, high)


def _blocks(plans: Sequence[Plan | None], sequence: Sequence[Move], made: int) -> Blocks:
    folds = [plan.start.copy() if plan else Folds() for plan in plans]
    for move in sequence[:made]:
        apply(folds[move.block], move)
    texts = [write(plan, f) if plan else None for plan, f in zip(plans, folds, strict=True)]
    return Blocks(texts[MANIFEST], texts[UPDATES], made)


def render_manifest(m: ManifestInput, budget: Budget | None = None) -> str:
    """The `<project_context>` block for `m` (see `manifest.py`), fitted to `budget`."""
    return render_blocks(m, None, budget).manifest or ""


def render_updates(
    u: UpdatesInput, budget: Budget | None = None, priority: Collection[str] = ()
) -> str | None:
    """The `<project_context_updates>` block for `u` (see `updates.py`) fitted to `budget`,
    or None when there is nothing to say."""
    return render_blocks(None, u, budget, priority).updates
