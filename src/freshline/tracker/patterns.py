"""A project's patterns as the store remembers them (pure): what a flush compares to tell
a config change, the scopes it rebuilds from them, and how two of them differ."""

from __future__ import annotations

from freshline.config import ProjectConfig
from freshline.ignore import IgnoreState
from freshline.scope import Scope, canonical

REMOVED: dict[str, object] = {"removed": True}  # the patterns of a project taken out of the config


def patterns_of(project: ProjectConfig, ignore: IgnoreState) -> dict[str, object]:
    """The normalized patterns a project's log state remembers, with the ignore rules
    (an ignore file that changes is a config change)."""
    patterns: dict[str, object] = {
        "include": canonical(project.include),
        "exclude": canonical(project.exclude),
        "mode": project.mode.value,
        **ignore_patterns(ignore),
    }
    if project.allow_secrets:  # absent when empty, as states written before it had it
        patterns["allow_secrets"] = sorted(project.allow_secrets)
    return patterns


def ignore_patterns(ignore: IgnoreState) -> dict[str, object]:
    """The ignore rules' part of remembered patterns (also the last full scan's rules)."""
    patterns: dict[str, object] = {"ignore": sorted(ignore.ignore)}
    rules = ignore.rules_json()
    if rules:  # left out when there are none, as before ignore files were read
        patterns["ignore_rules"] = rules
    return patterns


def ignore_of(patterns: dict[str, object]) -> IgnoreState:
    """The ignore rules remembered patterns were stored with."""
    ignore, rules = patterns.get("ignore", []), patterns.get("ignore_rules")
    assert isinstance(ignore, list) and (rules is None or isinstance(rules, dict))
    return IgnoreState.from_json(ignore, rules)


def patterns_need_facts(patterns: dict[str, object]) -> bool:
    """Whether a project's remembered patterns match on notes' tags or properties."""
    include, exclude = patterns.get("include", []), patterns.get("exclude", [])
    assert isinstance(include, list) and isinstance(exclude, list)
    return Scope.from_strings(include, exclude).needs_facts


def scope_of(patterns: dict[str, object]) -> Scope:
    """The scope remembered patterns describe, with their ignore rules."""
    include, exclude = patterns["include"], patterns["exclude"]
    allowed = patterns.get("allow_secrets", [])
    assert isinstance(include, list) and isinstance(exclude, list) and isinstance(allowed, list)
    ignore = ignore_of(patterns)
    return Scope.from_strings(include, exclude, ignore.ignore, allowed, ignore.rules())


def pattern_diff(old: dict[str, object], new: dict[str, object]) -> dict[str, object]:
    """What changed between two pattern sets, keyed as the updates block reads it."""

    def as_set(d: dict[str, object], key: str) -> set[str]:
        value = d.get(key, [])
        return set(value) if isinstance(value, list) else set()

    detail: dict[str, object] = {}
    for key in ("include", "exclude", "ignore", "allow_secrets"):
        added, removed = as_set(new, key) - as_set(old, key), as_set(old, key) - as_set(new, key)
        if added:
            detail[f"{key}_added"] = sorted(added)
        if removed:
            detail[f"{key}_removed"] = sorted(removed)
    files = ignore_of(old).changed_files(ignore_of(new))
    if files:
        detail["ignore_files"] = files
    if old.get("mode") != new.get("mode"):
        detail["mode"] = {"from": old.get("mode"), "to": new.get("mode")}
    return detail
