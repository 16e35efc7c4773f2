"""The workspace's own ignore rules: paths never in any project, never scanned, never in a tree.

Four sources, each of which can be turned off in `freshline.toml`:

1. `[workspace] ignore`: folders, globs and extensions (`paths.ignore_regex`).
2. `.gitignore` files with git's semantics (`respect_gitignore`): every folder's own file,
   deeper files first and the last matching line of a file deciding, `!` negation, `/`
   anchoring, `dir/` for folders only; then the `.gitignore` files of the enclosing
   repository above the workspace root, then its `.git/info/exclude`. As in git, nothing
   below an ignored folder can be brought back. The lines are translated by the
   `pathspec` library. The per-user `core.excludesFile` is not read: every user of a
   workspace must see the same scopes. A path is matched against the rules whether or not
   git tracks it (what `git check-ignore --no-index` answers).
3. Obsidian's "Excluded files" (`respect_obsidian`): `userIgnoreFilters` in
   `.obsidian/app.json`, each a path prefix (`Archive/`) or a regular expression written
   between slashes (`/\\.excalidraw\\.md$/`), as Obsidian reads them.
4. Obsidian's trash, `.trash/` at the root (`ignore_trash`).

`IgnoreRules` is the matcher. Its rule files come from a reader (a function from a folder
to the `.gitignore` there), so the same matcher serves a scan, which reads them from disk
as it walks, and a comparison of old and new rules, which reads them from the recorded
`IgnoreState`. `load_rules` builds the matcher for a workspace on disk.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from freshline import paths

GITIGNORE = ".gitignore"
TRASH = ".trash"
OBSIDIAN_APP = ".obsidian/app.json"


@dataclass(frozen=True)
class IgnoreSettings:
    """Which sources apply (the `[workspace]` keys of the same names)."""

    ignore: tuple[str, ...] = ()
    respect_gitignore: bool = True
    respect_obsidian: bool = True
    ignore_trash: bool = True


@dataclass(frozen=True)
class RuleFile:
    """One gitignore-style file as read: which paths its lines apply to, and the lines."""

    name: str  # as shown: "docs/.gitignore", "../.gitignore", ".git/info/exclude"
    base: str  # the workspace folder its patterns are relative to ("" is the root)
    lines: tuple[str, ...] = ()
    lead: str = ""  # above the root: the root's path from the file's folder, "vault/"

    @property
    def outer(self) -> bool:
        """Whether it applies to the whole workspace from outside: above the root, or the
        repository's exclude file."""
        return not self.name.endswith(GITIGNORE) or self.name.startswith("../")


@dataclass(frozen=True)
class IgnoreState:
    """What a set of rules was built from; equal states ignore the same paths.

    Recorded with each project's patterns, so a change of an ignore file is a config
    change, and the old rules can be rebuilt to tell which paths entered or left scope.
    """

    ignore: tuple[str, ...] = ()  # `[workspace] ignore`
    files: tuple[RuleFile, ...] = ()  # the .gitignore and exclude files read, in any order
    obsidian: tuple[str, ...] = ()  # userIgnoreFilters
    trash: bool = True

    def rules_json(self) -> dict[str, Any]:
        """The rule files, Obsidian filters and trash flag as JSON, defaults left out."""
        out: dict[str, Any] = {}
        if self.files:
            files = sorted(self.files, key=lambda f: f.name)
            out["files"] = [[f.name, f.base, f.lead, list(f.lines)] for f in files]
        if self.obsidian:
            out["obsidian"] = list(self.obsidian)
        if not self.trash:
            out["trash"] = False
        return out

    @classmethod
    def from_json(cls, ignore: Iterable[str], rules: Mapping[str, Any] | None) -> IgnoreState:
        """Rebuild a state from `[workspace] ignore` and `rules_json()`."""
        rules = rules or {}
        files = tuple(
            RuleFile(name, base, tuple(lines), lead)
            for name, base, lead, lines in rules.get("files", ())
        )
        return cls(tuple(ignore), files, tuple(rules.get("obsidian", ())), rules.get("trash", True))

    def changed_files(self, new: IgnoreState) -> list[str]:
        """The files whose ignore rules differ in `new`, by name (`freshline.toml` for a
        switch): what a config change says changed."""
        old, now = {f.name: f for f in self.files}, {f.name: f for f in new.files}
        names = {name for name in old.keys() | now.keys() if old.get(name) != now.get(name)}
        if self.obsidian != new.obsidian:
            names.add(OBSIDIAN_APP)
        if self.trash != new.trash:
            names.add("freshline.toml")
        return sorted(names)

    def rules(self) -> IgnoreRules:
        """A matcher for exactly these rules (no file is read)."""
        nested = {f.base: f for f in self.files if not f.outer}
        outer = _outer_order(f for f in self.files if f.outer)
        return IgnoreRules(self.ignore, outer, self.obsidian, self.trash, nested.get)


def _outer_order(files: Iterable[RuleFile]) -> tuple[RuleFile, ...]:
    """Files above the root in git's order: the nearest folder's first (`../` before
    `../../`), the exclude file last."""
    return tuple(sorted(files, key=lambda f: (f.name.endswith("exclude"), len(f.name))))


# --- one gitignore-style file -------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    regex: re.Pattern[str]
    include: bool  # True: ignores what it matches; False: a `!` line
    marked: bool  # the regex ends in pathspec's folder marker: `…(?P<ps_d>/)` or `…|$)`


class _Spec:
    """A compiled rule file: which of its lines, if any, decides about a path."""

    def __init__(self, lines: Iterable[str]) -> None:
        # pathspec loads with the first rule file: a workspace with none never pays for it.
        from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

        self.lines: list[_Line] = []
        for text in lines:
            try:
                pattern = GitIgnoreSpecPattern(text)
            except (ValueError, re.error):
                continue  # git skips a line it cannot read too
            if pattern.include is None or pattern.regex is None:
                continue  # blank or comment
            marked = "ps_d" in pattern.regex.groupindex
            self.lines.append(_Line(pattern.regex, pattern.include, marked))
        # One alternation of the lines tells cheaply whether any line could decide; most
        # lines name folders only (`node_modules/`), and a file's check leaves them out.
        self.any_dir = _alternation(self.lines)
        self.any_file = _alternation(
            line for line in self.lines if not line.regex.pattern.endswith(_FOLDERS_ONLY)
        )

    def decide(self, path: str, is_dir: bool) -> bool | None:
        """True (ignored) or False (re-included) by the last line matching `path`, or None."""
        screen = self.any_dir if is_dir else self.any_file
        if screen is None or not screen.match(path + "/" if is_dir else path):
            return None
        for line in reversed(self.lines):
            if _matches(line, path, is_dir):
                return line.include
        return None


@functools.lru_cache(maxsize=256)
def _spec(lines: tuple[str, ...]) -> _Spec:
    """A compiled rule file, kept: a flush compiles only what it has not seen."""
    return _Spec(lines)


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
_FOLDERS_ONLY = "(?P<ps_d>/)"  # how pathspec ends the regex of a `dir/` line


def _alternation(lines: Iterable[_Line]) -> re.Pattern[str] | None:
    sources = [_NAMED_GROUP.sub("(?:", line.regex.pattern) for line in lines]
    return re.compile("|".join(f"(?:{s})" for s in sources)) if sources else None


def _matches(line: _Line, path: str, is_dir: bool) -> bool:
    """Whether a line matches the path itself, as git matches a name (not a folder above).

    pathspec's regexes also match everything below a matched folder, marking that case
    with the `ps_d` group; the folders above a path are checked on their own here.
    """
    if not line.marked:
        return line.regex.match(path) is not None  # `a/**`, `*`: prefix patterns
    if is_dir:
        m = line.regex.match(path + "/")
        return m is not None and m.group("ps_d") is not None and m.end() == len(path) + 1
    m = line.regex.match(path)
    return m is not None and m.group("ps_d") is None


# --- the matcher --------------------------------------------------------------------------


class Checks(NamedTuple):
    """Which entries of a folder a walker must check."""

    files: bool
    folders: bool


@dataclass
class IgnoreRules:
    """Whether a workspace path is ignored by any source (see the module docstring)."""

    ignore: tuple[str, ...] = ()
    outer: tuple[RuleFile, ...] = ()  # files above the root, in git's order
    obsidian: tuple[str, ...] = ()
    trash: bool = True
    gitignore: Callable[[str], RuleFile | None] = field(default=lambda _folder: None)
    _read: dict[str, RuleFile | None] = field(default_factory=dict)
    _levels: dict[str, list[tuple[int, _Spec]]] = field(default_factory=dict)
    _folders: dict[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._ignore = paths.ignore_regex(self.ignore) if self.ignore else None
        self._prefixes, self._regexes = _obsidian_filters(self.obsidian)
        self._obsidian = bool(self._prefixes or self._regexes)
        self._outer = [(rules.lead, _spec(rules.lines)) for rules in self.outer]

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        """Whether `rel` (workspace-relative, POSIX) or a folder above it is ignored."""
        parent = rel.rpartition("/")[0]
        if parent and self._folder_ignored(parent):
            return True
        return self.ignored_entry(rel, is_dir)

    def ignored_entry(self, rel: str, is_dir: bool) -> bool:
        """Whether `rel` itself is ignored, the folders above it being known not to be."""
        if self._ignore is not None and self._ignore.match(rel):
            return True
        if self.trash and rel.startswith(TRASH) and (rel == TRASH or rel[len(TRASH)] == "/"):
            return True
        if self._obsidian and self._obsidian_ignores(rel + "/" if is_dir else rel):
            return True
        return self._git_ignores(rel, is_dir)

    def checks_in(self, folder: str, has_gitignore: bool | None = None) -> Checks:
        """Whether any file, and any folder, of `folder` (itself not ignored) can be
        ignored: a walker skips the per-entry check where none can. Reads the folder's
        rule files; a walker that listed it says whether it holds a .gitignore, which saves
        a failed open."""
        if has_gitignore is False:
            self._read.setdefault(folder, None)
        if self._ignore is not None or self._obsidian or (not folder and self.trash):
            return Checks(True, True)
        specs = [spec for _cut, spec in self._git_levels(folder)]
        specs += [spec for _lead, spec in self._outer]
        files = any(spec.any_file is not None for spec in specs)
        return Checks(files, files or any(spec.any_dir is not None for spec in specs))

    def state(self) -> IgnoreState:
        """What these rules are built from: the rule files read so far included."""
        nested = [f for f in self._read.values() if f is not None]
        files = tuple(sorted((*self.outer, *nested), key=lambda f: f.name))
        return IgnoreState(self.ignore, files, self.obsidian, self.trash)

    def _folder_ignored(self, folder: str) -> bool:
        known = self._folders.get(folder)
        if known is None:
            parent = folder.rpartition("/")[0]
            known = bool(parent) and self._folder_ignored(parent)
            known = known or self.ignored_entry(folder, True)
            self._folders[folder] = known
        return known

    def _obsidian_ignores(self, path: str) -> bool:
        return path.startswith(self._prefixes) or any(r.search(path) for r in self._regexes)

    def _git_ignores(self, rel: str, is_dir: bool) -> bool:
        for cut, spec in self._git_levels(rel.rpartition("/")[0]):
            verdict = spec.decide(rel[cut:], is_dir)
            if verdict is not None:
                return verdict
        for lead, spec in self._outer:
            verdict = spec.decide(lead + rel, is_dir)
            if verdict is not None:
                return verdict
        return False

    def _git_levels(self, folder: str) -> list[tuple[int, _Spec]]:
        """The .gitignore files that apply inside `folder`, deepest first, each with the
        length of the prefix its paths are relative to."""
        levels = self._levels.get(folder)
        if levels is None:
            above = self._git_levels(folder.rpartition("/")[0]) if folder else []
            if folder not in self._read:
                self._read[folder] = self.gitignore(folder)
            own = self._read[folder]
            cut = len(folder) + 1 if folder else 0
            levels = self._levels[folder] = ([(cut, _spec(own.lines))] if own else []) + above
        return levels


def _obsidian_filters(filters: Iterable[str]) -> tuple[tuple[str, ...], list[re.Pattern[str]]]:
    prefixes: list[str] = []
    regexes: list[re.Pattern[str]] = []
    for text in filters:
        if len(text) > 2 and text.startswith("/") and text.endswith("/"):
            try:
                regexes.append(re.compile(text[1:-1]))
            except re.error:
                continue  # Obsidian cannot use it either
        elif text:
            prefixes.append(text)
    return tuple(prefixes), regexes


# --- reading the rules of a workspace on disk ----------------------------------------------


def load_rules(root: Path, settings: IgnoreSettings) -> IgnoreRules:
    """The rules of the workspace at `root`: the files above the root and Obsidian's
    settings are read now, each folder's `.gitignore` when a path below it is checked."""
    obsidian = _obsidian_settings(root) if settings.respect_obsidian else ()
    if not settings.respect_gitignore:
        return IgnoreRules(settings.ignore, (), obsidian, settings.ignore_trash)
    outer = _outer_order(_files_above(root))
    gitignore = partial(_read_gitignore, root)
    return IgnoreRules(settings.ignore, outer, obsidian, settings.ignore_trash, gitignore)


def _lines(path: Path) -> tuple[str, ...] | None:
    try:
        data = path.read_bytes()
    except OSError:  # missing, a folder, unreadable: no rules from it
        return None
    return tuple(data.decode("utf-8", errors="surrogateescape").splitlines())


def _read_gitignore(root: Path, folder: str) -> RuleFile | None:
    name = f"{folder}/{GITIGNORE}" if folder else GITIGNORE
    lines = _lines(paths.to_abs(root, name))
    return None if lines is None else RuleFile(name, folder, lines)


def _files_above(root: Path) -> list[RuleFile]:
    """The enclosing repository's .gitignore files above the root, and its exclude file."""
    top = next((p for p in (root, *root.parents) if (p / ".git").exists()), None)
    if top is None:
        return []
    files: list[RuleFile] = []
    for folder in (root, *root.parents):
        if folder == top:
            break
        lines = _lines(folder.parent / GITIGNORE)
        if lines is not None:
            lead = root.relative_to(folder.parent).as_posix() + "/"
            files.append(RuleFile("../" * lead.count("/") + GITIGNORE, "", lines, lead))
    lines = _lines(_git_common_dir(top / ".git") / "info" / "exclude")
    if lines is not None:
        lead = "" if top == root else root.relative_to(top).as_posix() + "/"
        files.append(RuleFile("../" * lead.count("/") + ".git/info/exclude", "", lines, lead))
    return files


def _git_common_dir(dot_git: Path) -> Path:
    """The repository's own folder: `.git`, or where a worktree's `.git` file points."""
    if dot_git.is_dir():
        return dot_git
    try:
        gitdir = Path(dot_git.read_text(encoding="utf-8").partition("gitdir:")[2].strip())
    except OSError:
        return dot_git
    gitdir = gitdir if gitdir.is_absolute() else dot_git.parent / gitdir
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return gitdir
    return Path(os.path.normpath(gitdir / common))


def _obsidian_settings(root: Path) -> tuple[str, ...]:
    try:
        data = json.loads((root / OBSIDIAN_APP).read_bytes())
    except (OSError, ValueError):  # no vault settings, or a file Obsidian is mid-way writing
        return ()
    filters = data.get("userIgnoreFilters") if isinstance(data, dict) else None
    if not isinstance(filters, list):
        return ()
    return tuple(f for f in filters if isinstance(f, str))
