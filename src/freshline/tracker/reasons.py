"""Why a file entered or left a project's scope (pure), when it is cheap to state.

A `left`/`entered` change carries the reason as its detail: `{"why": WHY, "pattern":
TEXT}` (the pattern in its canonical text) and, for a property, the value it has now.
The flush works it out from the two scopes (the same one for a content change, the old
and the new one for a config change) and the file's facts before and after; `reason_text`
says it in words, the paths of folder and glob patterns shown by the caller (absolute in
blocks, as written on the command line).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

from freshline.scope import (
    FileFacts,
    Pattern,
    PatternKind,
    Scope,
    describe,
    parse_pattern,
    pattern_matches,
    property_values,
)

Detail = dict[str, Any]


class Why(StrEnum):
    """What moved a file across the scope's edge."""

    TAGGED = "tagged"  # it gained a tag an exclusion (or inclusion) names
    UNTAGGED = "untagged"  # it lost a tag an inclusion (or exclusion) names
    PROPERTY = "property"  # a front-matter property a pattern names now has another value
    EXCLUDED = "excluded"  # the config added an exclusion that matches it
    UNEXCLUDED = "unexcluded"  # the config dropped an exclusion that matched it
    INCLUDED = "included"  # the config added an inclusion that matches it
    UNINCLUDED = "unincluded"  # the config dropped the inclusion that matched it
    IGNORED = "ignored"  # the workspace's ignore rules now cover it
    UNIGNORED = "unignored"  # they no longer do
    MOVED = "moved"  # moved out of the project's folders (where to is never said)


def why(before: Scope, after: Scope, old: FileFacts, new: FileFacts) -> Detail | None:
    """Why a file with facts `old` under `before` crossed into or out of `after` (with
    facts `new`); None when no pattern tells it cheaply."""
    if before.matches(old) == after.matches(new):
        return None
    leaving = before.matches(old)
    ignored = [s.rules is not None and s.rules.ignored(f.path) for s, f in
               ((before, old), (after, new))]
    if ignored[0] != ignored[1]:
        return {"why": Why.IGNORED if ignored[1] else Why.UNIGNORED}
    if leaving:
        return _crossing(before.exclude, after.exclude, old, new, Why.EXCLUDED, gained=True) \
            or _crossing(before.include, after.include, old, new, Why.UNINCLUDED, gained=False)
    return _crossing(before.exclude, after.exclude, old, new, Why.UNEXCLUDED, gained=False) \
        or _crossing(before.include, after.include, old, new, Why.INCLUDED, gained=True)


def _crossing(
    was: tuple[Pattern, ...], now: tuple[Pattern, ...], old: FileFacts, new: FileFacts,
    by_config: Why, gained: bool,
) -> Detail | None:
    """The first pattern whose verdict on the file flipped the way `gained` says (it
    matches now and did not, or the other way round): a pattern on both sides flipped
    by the file's content, one on a single side by the config."""
    for p in (now if gained else was):
        matched = p in was and pattern_matches(p, old)
        matches = p in now and pattern_matches(p, new)
        if matches == matched or matches != gained:
            continue
        if p in was and p in now:
            return _by_content(p, new, gained)
        return {"why": by_config, "pattern": p.text}
    return None


def _by_content(p: Pattern, new: FileFacts, gained: bool) -> Detail:
    if p.kind is PatternKind.TAG:
        return {"why": Why.TAGGED if gained else Why.UNTAGGED, "pattern": p.text}
    if p.kind is PatternKind.PROPERTY:
        value = next(iter(property_values(new.properties, p.key)), None)
        return {"why": Why.PROPERTY, "pattern": p.text, "value": _as_text(value)}
    # A path pattern cannot flip for a file that kept its path; say what matched.
    return {"why": Why.INCLUDED if gained else Why.UNINCLUDED, "pattern": p.text}


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def reason_text(detail: Detail | None, source: Callable[[Pattern], str] = describe) -> str | None:
    """The reason in words (`now tagged #personal`, `mobile is now false`, `excluded by
    folder Drafts`); `source` shows a pattern. None for no (or an unknown) reason."""
    kind = (detail or {}).get("why")
    if kind in (Why.IGNORED, Why.UNIGNORED):
        return "now ignored" if kind == Why.IGNORED else "no longer ignored"
    if kind == Why.MOVED:
        return "moved or renamed out of the project"
    try:
        pattern = parse_pattern(str((detail or {})["pattern"]))
    except (KeyError, ValueError):
        return None
    if kind == Why.TAGGED:
        return f"now tagged {pattern.text}"
    if kind == Why.UNTAGGED:
        return f"no longer tagged {pattern.text}"
    if kind == Why.PROPERTY:
        value = (detail or {}).get("value")
        return f"{pattern.key} is now {'unset' if value is None else value}"
    lead = _BY_CONFIG.get(str(kind))
    return f"{lead} {source(pattern)}" if lead else None


_BY_CONFIG = {Why.EXCLUDED.value: "excluded by", Why.UNEXCLUDED.value: "no longer excluded by",
              Why.INCLUDED.value: "now included by", Why.UNINCLUDED.value: "no longer included by"}
