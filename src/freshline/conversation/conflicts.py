"""Merge conflicts as git reports them, and when the agent's tree has resolved them (pure).

`git merge-tree --write-tree -z --name-only` (git 2.39) prints the merged tree, the
conflicted paths, then one informational record per message:
`<count>NUL<path>NUL…<type>NUL<message>NUL`. Each `CONFLICT …` record names the paths a
conflict involves and its type; records that share a path are one conflict, of the most
demanding kind among them. A content conflict (or add/add) is resolved when no conflict
markers remain; every other kind leaves no markers, so it is resolved only when the agent
chose: a path git left in the tree is gone, or a tool wrote one of the paths on purpose.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

_MARKERS = re.compile(rb"^(<{7}|>{7})( |$)", re.MULTILINE)


class ConflictKind(StrEnum):
    """What kind of conflict git reported for a set of paths."""

    CONTENT = "content"  # both sides edited the same lines: markers in the file
    ADD_ADD = "add/add"  # both sides added the path with different content: markers
    MODIFY_DELETE = "modify/delete"  # one side edited, the other deleted: one version kept
    RENAME_DELETE = "rename/delete"  # one side renamed, the other deleted
    RENAME_RENAME = "rename/rename"  # both sides renamed the path differently: both kept
    FILE_DIRECTORY = "file/directory"  # a file where the other side has a directory
    BINARY = "binary"  # both sides changed a binary file: ours kept, no markers
    DISTINCT_TYPES = "distinct types"  # e.g. a file on one side, a symlink on the other
    OTHER = "other"  # any other conflict git reports (directory renames, submodules…)


# Kinds resolved by removing the markers; every other kind needs the agent's choice.
MARKER_KINDS = frozenset({ConflictKind.CONTENT, ConflictKind.ADD_ADD})
_TYPES = {
    "CONFLICT (modify/delete)": ConflictKind.MODIFY_DELETE,
    "CONFLICT (rename/delete)": ConflictKind.RENAME_DELETE,
    "CONFLICT (rename/rename)": ConflictKind.RENAME_RENAME,
    "CONFLICT (file/directory)": ConflictKind.FILE_DIRECTORY,
    "CONFLICT (binary)": ConflictKind.BINARY,
    "CONFLICT (distinct modes)": ConflictKind.DISTINCT_TYPES,
}


@dataclass(frozen=True)
class Conflict:
    """One conflict: its kind and every path it involves (sorted)."""

    kind: ConflictKind
    paths: tuple[str, ...]

    def describe(self) -> str:
        """`kind: path, path` for messages."""
        return f"{self.kind.value}: {', '.join(self.paths)}"


@dataclass(frozen=True)
class MergeResult:
    """What `merge-tree --write-tree` produced: the tree and its conflicts."""

    tree: str
    conflicts: tuple[Conflict, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path involved in a conflict, sorted."""
        return tuple(sorted({p for c in self.conflicts for p in c.paths}))


def kind_of(type_: str, message: str) -> ConflictKind | None:
    """The conflict kind of one informational record, or None when it is not a conflict."""
    if not type_.startswith("CONFLICT"):
        return None
    if type_ == "CONFLICT (contents)":
        return ConflictKind.ADD_ADD if "(add/add)" in message else ConflictKind.CONTENT
    return _TYPES.get(type_, ConflictKind.OTHER)


def parse_merge_tree(output: bytes) -> MergeResult:
    """Parse `merge-tree --write-tree -z --name-only` output (with messages).

    Paths are decoded with surrogate escapes, so any file name round-trips.
    """
    fields = output.decode("utf-8", "surrogateescape").split("\0")
    tree, rest = fields[0].strip(), iter(fields[1:])
    conflicted = []
    for field in rest:
        if not field:  # an empty field ends the conflicted-file list
            break
        conflicted.append(field)
    found: list[tuple[ConflictKind, tuple[str, ...]]] = []
    for count in rest:
        if not count:
            continue
        paths = tuple(next(rest) for _ in range(int(count)))
        type_, message = next(rest), next(rest)
        kind = kind_of(type_, message)
        if kind is not None:
            found.append((kind, paths))
    found += [(ConflictKind.OTHER, (p,)) for p in conflicted if not _named(p, found)]
    return MergeResult(tree, group(found))


def _named(path: str, found: Iterable[tuple[ConflictKind, tuple[str, ...]]]) -> bool:
    return any(path in paths for _, paths in found)


def group(found: Iterable[tuple[ConflictKind, tuple[str, ...]]]) -> tuple[Conflict, ...]:
    """Records that share a path become one conflict whose kind is the most demanding:
    a kind that needs a choice beats one resolved by removing markers (a binary file
    reports both `binary` and `contents`, and has no markers)."""
    groups: list[tuple[list[ConflictKind], set[str]]] = []
    for kind, paths in found:
        joined = [g for g in groups if g[1] & set(paths)]
        kinds = [k for g in joined for k in g[0]] + [kind]
        merged = set(paths).union(*(g[1] for g in joined))
        groups = [g for g in groups if g not in joined] + [(kinds, merged)]
    conflicts = [Conflict(_strongest(kinds), tuple(sorted(paths))) for kinds, paths in groups]
    return tuple(sorted(conflicts, key=lambda c: c.paths))


def _strongest(kinds: list[ConflictKind]) -> ConflictKind:
    choices = [k for k in kinds if k not in MARKER_KINDS]
    return (choices or kinds)[0]


def has_markers(content: bytes) -> bool:
    """Whether a file holds a conflict marker line (`<<<<<<<` or `>>>>>>>`)."""
    return _MARKERS.search(content) is not None


def is_resolved(
    conflict: Conflict,
    recorded: Collection[str],
    present: Mapping[str, bytes | None],
    touched: Collection[str],
) -> bool:
    """Whether the agent's tree now resolves `conflict`.

    `recorded`: the conflict's paths that the tree recording it held; `present`: the paths
    the tree holds now → their content (None for what is not a regular file); `touched`:
    paths a tool wrote or deleted since. No present path may hold markers; a kind without
    markers also needs a choice: a recorded path gone, or a path a tool touched.
    """
    here = [present[p] for p in conflict.paths if p in present]
    if any(content is not None and has_markers(content) for content in here):
        return False
    if conflict.kind in MARKER_KINDS:
        return True
    deleted = any(p in recorded and p not in present for p in conflict.paths)
    return deleted or any(p in touched for p in conflict.paths)


def by_kind(conflicts: Iterable[Conflict]) -> str:
    """Conflicts listed by kind (in ConflictKind's order), for one-line messages:
    `content: c; modify/delete: a, b`."""
    kinds: dict[ConflictKind, set[str]] = {}
    for c in conflicts:
        kinds.setdefault(c.kind, set()).update(c.paths)
    return "; ".join(f"{k.value}: {', '.join(sorted(kinds[k]))}" for k in ConflictKind
                     if k in kinds)


def path_kinds(conflicts: Iterable[Conflict]) -> dict[str, str]:
    """Each conflicted path → the kind of its conflict (for JSON and the updates block)."""
    return {p: c.kind.value for c in conflicts for p in c.paths}

