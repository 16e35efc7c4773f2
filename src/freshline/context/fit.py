"""Fitting blocks to a budget: the entry point that renders a delivery's blocks.

`render_blocks` renders a manifest and an updates block together (either may be absent)
so that what the channel delivers, the blocks joined by a blank line and measured by the
budget's meter, never exceeds the budget. It folds entries in the order `rollup.moves`
gives, as few as it can. Each fold lowers the cost (all but a block's first group, which
adds its heading), so a binary search over the number of folds finds a prefix that fits
where one fold fewer did not, rendering a handful of times (once when all fits). Then it
unfolds again what the room left allows, the largest gain first (`unfold.py`): a second
binary search keeps the longest run of those undoings that really fits.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from .budget import Budget
from .layout import Folds, Placement, Plan, write
from .manifest import manifest_plan
from .model import ManifestInput, UpdatesInput
from .rollup import MANIFEST, UPDATES, Move, apply, moves, undo
from .unfold import unfolds
from .updates import updates_plan

SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Blocks:
    """The blocks of one delivery, as rendered to its budget."""

    manifest: str | None
    updates: str | None
    folds: int = 0  # how many folds the budget took (0: nothing was rolled up for it)
    # the updates block's plan and where its entries went (`listed`)
    _updates: tuple[Plan, Placement] | None = field(default=None, repr=False, compare=False)

    @property
    def listed(self) -> frozenset[str]:
        """The paths the updates block lists one by one (not those only counted in a
        group): a change, a stale read, a document's news."""
        return self._updates[1].listed_paths(self._updates[0]) if self._updates else frozenset()

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
    rendered: dict[int, Blocks] = {}

    def fits(made: int) -> bool:
        rendered[made] = _blocks(plans, sequence, made)
        return budget.fits(rendered[made].text or "")

    made = _shortest(len(sequence), fits)
    return _unfolded(plans, sequence, made, rendered.get(made), budget)


def _unfolded(plans: Sequence[Plan | None], sequence: Sequence[Move], made: int,
              folded: Blocks | None, budget: Budget) -> Blocks:
    """The blocks of the first `made` folds, with the longest run of `unfolds` that fits
    undone (`folded`: the blocks of those folds, when rendered already)."""
    folded = folded or _blocks(plans, sequence, made)
    room = budget.chars - budget.meter.cost(folded.text or "")
    undone = unfolds(plans, _folds(plans, sequence, made), sequence[:made], room,
                     budget.meter)
    tries: dict[int, Blocks] = {0: folded}

    def fits(count: int) -> bool:
        tries[count] = _blocks(plans, sequence, made, undone[:count])
        return budget.fits(tries[count].text or "")

    # The estimates miss little (a heading that appears): the whole run mostly fits, or
    # all of it but its last.
    total = len(undone)
    if not total or fits(total):
        kept = total
    elif total > 1 and fits(total - 1):
        kept = total - 1
    else:
        kept = _longest(total - 2, fits)
    return tries.get(kept) or _blocks(plans, sequence, made, undone[:kept])


def _shortest(most: int, fits: Callable[[int], bool]) -> int:
    """The least n in 1..`most` for which `fits(n)`, where `fits(most)` is taken to hold
    and fits only ever turns true as n grows (a binary search)."""
    low, high = 0, most  # `low` do not fit; `high` do (or are all there are)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(middle) else (middle, high)
    return high


def _longest(most: int, fits: Callable[[int], bool]) -> int:
    """The greatest n in 0..`most` for which `fits(n)`, where `fits(0)` is taken to hold
    and fits only ever turns false as n grows (a binary search)."""
    low, high = 0, most + 1  # `low` fits; `high` does not (or is past the end)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def _folds(plans: Sequence[Plan | None], sequence: Sequence[Move], made: int) -> list[Folds]:
    folds = [plan.start.copy() if plan else Folds() for plan in plans]
    for move in sequence[:made]:
        apply(folds[move.block], move)
    return folds


def _blocks(plans: Sequence[Plan | None], sequence: Sequence[Move], made: int,
            undone: Sequence[Move] = ()) -> Blocks:
    folds = _folds(plans, sequence, made)
    for move in undone:
        undo(folds[move.block], move)
    placed = [Placement(plan, f) if plan else None for plan, f in zip(plans, folds, strict=True)]
    texts = [write(plan, f, p) if plan else None
             for plan, f, p in zip(plans, folds, placed, strict=True)]
    updates = plans[UPDATES], placed[UPDATES]
    kept = (updates[0], updates[1]) if updates[0] and updates[1] else None
    return Blocks(texts[MANIFEST], texts[UPDATES], made - len(undone), kept)


def render_manifest(m: ManifestInput, budget: Budget | None = None) -> str:
    """The `<project_context>` block for `m` (see `manifest.py`), fitted to `budget`."""
    return render_blocks(m, None, budget).manifest or ""


def render_updates(
    u: UpdatesInput, budget: Budget | None = None, priority: Collection[str] = ()
) -> str | None:
    """The `<project_context_updates>` block for `u` (see `updates.py`) fitted to `budget`,
    or None when there is nothing to say."""
    return render_blocks(None, u, budget, priority).updates
