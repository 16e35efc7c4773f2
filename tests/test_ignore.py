"""The workspace's own ignore rules: the matcher against git itself, and what the tracker
does with them (never in a project, never scanned, a change announced as a config change)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from freshline.context import ConfigChange, UpdatesInput, render_updates
from freshline.ignore import IgnoreSettings, IgnoreState, RuleFile, load_rules
from freshline.interfaces.cli import app
from freshline.store.records import Change, ChangeKind
from freshline.tracker.scan import Scanner

from .conftest import Workspace, git

C, D = ChangeKind.CREATED, ChangeKind.DELETED


def rules_of(**files: str) -> IgnoreState:
    """A state with one .gitignore per folder (`root`, `sub`, `sub__deep` → sub/deep)."""
    out = []
    for key, text in files.items():
        folder = "" if key == "root" else key.replace("__", "/")
        name = f"{folder}/.gitignore" if folder else ".gitignore"
        out.append(RuleFile(name, folder, tuple(text.splitlines())))
    return IgnoreState(files=tuple(out), trash=False)


@pytest.mark.parametrize(
    ("state", "path", "is_dir", "ignored"),
    [
        # last matching line of a file decides; `!` re-includes
        (rules_of(root="*.log\n!keep.log"), "a.log", False, True),
        (rules_of(root="*.log\n!keep.log"), "x/keep.log", False, False),
        (rules_of(root="!keep.log\n*.log"), "keep.log", False, True),
        # a deeper file decides before a shallower one
        (rules_of(root="*.log", sub="!*.log"), "sub/a.log", False, False),
        (rules_of(root="!*.log", sub__deep="*.log"), "sub/deep/x/a.log", False, True),
        (rules_of(root="*.log", sub="!*.log"), "other/a.log", False, True),
        # `dir/` matches folders only; `/x` is anchored to the file's own folder
        (rules_of(root="build/"), "build", True, True),
        (rules_of(root="build/"), "build", False, False),
        (rules_of(root="build/"), "src/build/x.o", False, True),
        (rules_of(sub="/anch"), "sub/anch", False, True),
        (rules_of(sub="/anch"), "sub/x/anch", False, False),
        (rules_of(sub="/anch"), "anch", False, False),
        # nothing below an ignored folder comes back
        (rules_of(root="logs/\n!logs/keep"), "logs/keep", False, True),
        (rules_of(root="logs/*\n!logs/keep"), "logs/keep", False, False),
        (rules_of(root="logs/*\n!logs/keep"), "logs/other", False, True),
        (rules_of(root="logs/*"), "logs", True, False),
        (rules_of(root="a/**\n!a/b/keep"), "a/b/keep", False, True),
        (rules_of(root="a/**"), "a", True, False),
        (rules_of(root="a/**"), "a/x.md", False, True),
        # comments, escapes, and lines git cannot read either
        (rules_of(root="# c\n\\#hash\n\\!bang"), "#hash", False, True),
        (rules_of(root="# c\n\\#hash\n\\!bang"), "!bang", False, True),
        (rules_of(root="[z-a]\nok"), "ok", False, True),
        # the other sources
        (IgnoreState(ignore=("node_modules", "*.tmp")), "a/node_modules/x", False, False),
        (IgnoreState(ignore=("node_modules", "*.tmp")), "node_modules/x", False, True),
        (IgnoreState(ignore=("node_modules", "*.tmp")), "a/b.TMP", False, True),
        (IgnoreState(), ".trash/old.md", False, True),
        (IgnoreState(), ".trash", True, True),
        (IgnoreState(), "a/.trash/x.md", False, False),
        (IgnoreState(trash=False), ".trash/old.md", False, False),
        (IgnoreState(obsidian=("Archive/",)), "Archive/a.md", False, True),
        (IgnoreState(obsidian=("Archive/",)), "Archive", True, True),
        (IgnoreState(obsidian=("Archive/",)), "Archived/a.md", False, False),
        (IgnoreState(obsidian=("Arch",)), "Archived/a.md", False, True),
        (IgnoreState(obsidian=(r"/\.excalidraw\.md$/",)), "d/x.excalidraw.md", False, True),
        (IgnoreState(obsidian=(r"/\.excalidraw\.md$/",)), "d/x.md", False, False),
        (IgnoreState(obsidian=("/[unclosed/",)), "d/x.md", False, False),
        # above the root: the root's path is put in front
        (
            IgnoreState(files=(RuleFile("../.gitignore", "", ("vault/drafts/",), "vault/"),)),
            "drafts/a.md",
            False,
            True,
        ),
        (
            IgnoreState(files=(RuleFile("../.gitignore", "", ("/drafts/",), "vault/"),)),
            "drafts/a.md",
            False,
            False,
        ),
    ],
)
def test_matcher(state: IgnoreState, path: str, is_dir: bool, ignored: bool) -> None:
    assert state.rules().ignored(path, is_dir) is ignored


def test_state_round_trips_through_json() -> None:
    state = IgnoreState(
        ("build",),
        (RuleFile(".gitignore", "", ("*.log",)), RuleFile("../.gitignore", "", ("x",), "v/")),
        ("Archive/",),
        False,
    )
    again = IgnoreState.from_json(state.ignore, json.loads(json.dumps(state.rules_json())))
    assert again.rules_json() == state.rules_json() and again.ignore == state.ignore
    assert IgnoreState().rules_json() == {}  # nothing recorded when nothing applies
    changed = IgnoreState(files=(RuleFile(".gitignore", "", ("*.log", "x")),), trash=True)
    assert state.changed_files(changed) == [
        "../.gitignore", ".gitignore", ".obsidian/app.json", "freshline.toml"
    ]


# --- against git itself ---------------------------------------------------------------------


def scanned(root: Path, settings: IgnoreSettings) -> set[str]:
    """The files a real scan walks (internal paths aside)."""
    scanner = Scanner(root, Workspace(root).tracker().store, load_rules(root, settings))
    return {os.fsdecode(raw) for raw, _st in scanner.walk()}


def all_files(root: Path) -> set[str]:
    out = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", ".freshline")]
        out.update(Path(folder, f).relative_to(root).as_posix() for f in files)
    return out - {"freshline.toml"}


def git_ignored(cwd: Path) -> set[str]:
    """What git says is ignored under `cwd` (untracked files, as `git status` sees them)."""
    out = git(cwd, "ls-files", "-z", "--others", "--ignored", "--exclude-standard")
    return {p for p in out.split("\0") if p}


TREE = [
    "a.log", "keep.log", "x/keep.log", "build/x", "sub/build/y", "top.txt", "sub/top.txt",
    "logs/x", "logs/keep", "a/b/keep", "a/c", "docs/a.tmp", "docs/b/a.tmp", "sub/a.log",
    "sub/secret", "sub/z/secret", "sub/anch", "sub/z/anch", "sub/x/f", "sub/deep/q.log",
    "sub/deep/r.o", "r.o", "excl/f", "sub/excl/g", "plain.md", "sub/plain.md", "build.md",
    ".venv/lib/site.py", "node_modules/p/index.js", "sub/node_modules/q.js",
]
GITIGNORES = {
    ".gitignore": "*.log\n!keep.log\nbuild/\n/top.txt\nlogs/*\n!logs/keep\na/**\n!a/b/keep\n"
    "docs/*.tmp\n*.o\n.venv/\nnode_modules/\n",
    "sub/.gitignore": "!*.log\nsecret\n/anch\nx/\n",
    "sub/deep/.gitignore": "*.log\n!*.o\n",
}


def make_repo(ws: Workspace, gitignores: dict[str, str], exclude: str = "excl/\n") -> None:
    git(ws.root, "init", "-q")
    ws.configure({"p": {"include": ["**"]}})
    (ws.root / ".git" / "info" / "exclude").write_text(".freshline/\n" + exclude)
    for rel in TREE:
        ws.write(rel, "x\n")
    for rel, text in gitignores.items():
        ws.write(rel, text)


def test_a_scan_skips_exactly_what_git_ignores(ws: Workspace) -> None:
    make_repo(ws, GITIGNORES)
    walked = scanned(ws.root, IgnoreSettings(ignore_trash=False))
    ignored = git_ignored(ws.root)
    assert {"a/b/keep", "sub/deep/q.log", ".venv/lib/site.py"} <= ignored  # interesting ones
    assert not {"sub/a.log", "logs/keep", "sub/deep/r.o"} & ignored
    assert walked == all_files(ws.root) - ignored
    assert scanned(ws.root, IgnoreSettings(respect_gitignore=False)) == all_files(ws.root)


def test_a_workspace_inside_a_repository_honours_the_files_above_it(ws: Workspace) -> None:
    git(ws.root, "init", "-q")
    ws.write(".gitignore", "mid/vault/drafts/\n*.bak\n*.txt\n")
    ws.write("mid/.gitignore", "!keep.txt\n")  # nearer the workspace: it decides first
    (ws.root / ".git" / "info" / "exclude").write_text("secret.md\n!c.bak\n")
    vault = Workspace(ws.root / "mid" / "vault")
    vault.root.mkdir(parents=True)
    vault.configure({"p": {"include": ["**"]}})
    for rel in ("drafts/a.md", "b.bak", "c.bak", "secret.md", "deep/secret.md", "c.md",
                "keep.txt", "other.txt"):
        vault.write(rel, "x\n")
    vault.write(".gitignore", ".freshline/\n")
    walked = scanned(vault.root, IgnoreSettings())
    assert walked == {"c.md", ".gitignore", "keep.txt"}
    assert walked == all_files(vault.root) - git_ignored(vault.root)


_LINES = st.sampled_from(
    ["*.log", "!keep.log", "!*.log", "build/", "!build/", "/top.txt", "logs/*", "!logs/keep",
     "a/**", "!a/b/keep", "*.o", "!r.o", "secret", "x/", "/anch", "**/deep", "sub/*.md",
     "!sub/plain.md", "*", "!*.md", "docs/**/a.tmp", "#comment", ""]
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(_LINES, max_size=6), st.lists(_LINES, max_size=4), st.lists(_LINES, max_size=3)
)
def test_random_gitignore_files_agree_with_git(
    tmp_path_factory: pytest.TempPathFactory, root: list[str], sub: list[str], deep: list[str]
) -> None:
    ws = Workspace(tmp_path_factory.mktemp("repo"))
    files = {".gitignore": root, "sub/.gitignore": sub, "sub/deep/.gitignore": deep}
    make_repo(ws, {name: "".join(f"{line}\n" for line in lines) for name, lines in files.items()})
    ignored = git_ignored(ws.root)
    assert scanned(ws.root, IgnoreSettings()) == all_files(ws.root) - ignored


# --- the tracker ----------------------------------------------------------------------------


def changes(ws: Workspace, hinted: list[str] | None = None) -> list[Change]:
    result = ws.tracker().scan(hinted)
    delta = result.projects.get("p")
    return delta.changes if delta else []


def config_detail(found: list[Change]) -> dict[str, object]:
    configs = [c for c in found if c.kind is ChangeKind.CONFIG]
    assert len(configs) == 1, found
    return configs[0].detail or {}


@pytest.fixture
def vault(ws: Workspace) -> Workspace:
    ws.configure({"p": {"include": ["*.md"]}})
    for rel in ("a.md", "drafts/b.md", ".venv/c.md", "node_modules/x/d.md", ".trash/e.md"):
        ws.write(rel, "x\n")
    ws.write(".gitignore", ".venv/\nnode_modules/\n")
    ws.tracker().scan()
    return ws


def files(ws: Workspace) -> list[str]:
    result = CliRunner().invoke(
        app, ["--workspace", str(ws.root), "project", "files", "p", "--json"]
    )
    assert result.exit_code == 0, result.stderr
    return list(json.loads(result.stdout))


def test_ignored_paths_are_never_in_a_project_nor_in_the_index(vault: Workspace) -> None:
    assert files(vault) == ["a.md", "drafts/b.md"]
    indexed = {e.path for e in vault.tracker().store.index_iter()}
    assert indexed == {"a.md", "drafts/b.md", ".gitignore"}


def test_an_ignore_file_change_is_announced_as_a_config_change(vault: Workspace) -> None:
    vault.write(".gitignore", ".venv/\nnode_modules/\ndrafts/\n")
    found = changes(vault)
    detail = config_detail(found)
    assert detail["ignore_files"] == [".gitignore"]
    assert detail["no_longer_included"] == ["drafts/b.md"]
    assert (ChangeKind.LEFT, "drafts/b.md") in [(c.kind, c.path) for c in found]
    assert files(vault) == ["a.md"]

    vault.write(".gitignore", "node_modules/\n")  # un-ignores .venv and drafts
    found = changes(vault, [".gitignore"])  # as a watcher hints it: the rules reach further
    detail = config_detail(found)
    assert detail["newly_included"] == [".venv/c.md", "drafts/b.md"]
    assert {(c.kind, c.path) for c in found if c.kind is ChangeKind.ENTERED} == {
        (ChangeKind.ENTERED, ".venv/c.md"), (ChangeKind.ENTERED, "drafts/b.md")
    }
    assert files(vault) == [".venv/c.md", "a.md", "drafts/b.md"]
    assert changes(vault) == []  # and nothing more the next time


def test_a_nested_gitignore_with_negation(vault: Workspace) -> None:
    vault.write("drafts/.gitignore", "*.md\n!keep.md\n")
    vault.write("drafts/keep.md", "x\n")
    found = changes(vault, ["drafts"])
    assert config_detail(found)["ignore_files"] == ["drafts/.gitignore"]
    assert files(vault) == ["a.md", "drafts/keep.md"]


def test_the_exclude_file_and_obsidian_settings_are_sources_too(vault: Workspace) -> None:
    git(vault.root, "init", "-q")
    changes(vault)
    (vault.root / ".git" / "info" / "exclude").write_text("a.md\n")
    found = changes(vault, [])  # a flush with no hints still checks the rules above
    assert config_detail(found)["ignore_files"] == [".git/info/exclude"]
    assert files(vault) == ["drafts/b.md"]

    vault.write(".obsidian/app.json", json.dumps({"userIgnoreFilters": ["drafts/"]}))
    found = changes(vault, [".obsidian/app.json"])
    assert config_detail(found)["ignore_files"] == [".obsidian/app.json"]
    assert files(vault) == []


def test_each_source_can_be_turned_off(vault: Workspace) -> None:
    vault.configure(
        {"p": {"include": ["*.md"]}},
        respect_gitignore=False, ignore_trash=False, respect_obsidian=False,
    )
    found = changes(vault)
    assert config_detail(found)["newly_included"] == [
        ".trash/e.md", ".venv/c.md", "node_modules/x/d.md"
    ]
    assert files(vault) == [
        ".trash/e.md", ".venv/c.md", "a.md", "drafts/b.md", "node_modules/x/d.md"
    ]


def test_updates_block_names_the_ignore_file(vault: Workspace) -> None:
    vault.write(".gitignore", ".venv/\nnode_modules/\ndrafts/\n")
    found = changes(vault)
    config = ConfigChange.from_detail(config_detail(found))
    paths = tuple(c for c in found if c.kind is not ChangeKind.CONFIG)
    block = render_updates(UpdatesInput("p", str(vault.root), 1, 2, paths, config=(config,)))
    assert block is not None
    assert f"Scope changed:\n- ignore rules changed in {vault.root}/.gitignore\n" in block
    assert f"- {vault.root}/drafts/b.md" in block
