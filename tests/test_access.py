"""Confinement: `access.reach` resolves before it checks, and every tool refuses the same
paths for the same reason in one line (security table per path kind and per tool)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from freshline.access import AccessDenied, Refusal, Rules, reach, refusal
from freshline.agent import Toolbox, ToolCall, ToolMode, ToolResult
from freshline.paths import under
from freshline.scope import FileFacts, Scope

TOKEN = "ghp_SECRETTOKEN"  # what each forbidden file holds; it must never come back


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    files = {
        "notes/a.md": "alpha note\n",
        "notes/sub/b.md": "beta note\n",
        "notes/.env": f"API_KEY={TOKEN}\n",
        "notes/keys/id_rsa": f"{TOKEN}\n",
        "notes/.aws/credentials": f"{TOKEN}\n",
        "notes/excluded/x.md": f"{TOKEN}\n",
        "notes/build/out.md": f"{TOKEN}\n",
        "private/p.md": f"{TOKEN}\n",
        ".git/config": f"[remote]\nurl = https://{TOKEN}@host/x\n",
        ".freshline/freshline.db": TOKEN,
        "freshline.toml": f"# {TOKEN}\n",
    }
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    (tmp_path / "outside.txt").write_text(TOKEN)
    links = {
        "notes/gitcfg": "../.git/config",
        "notes/private": "../private/p.md",
        "notes/up": "../../outside.txt",
        "notes/envlink": ".env",
        "notes/good": "a.md",
        "notes/loop": "loop",
    }
    for rel, target in links.items():
        (ws / rel).symlink_to(target)
    linked = tmp_path / "linked.txt"  # a file outside with a hard link in the project
    linked.write_text("linked text\n")
    os.link(linked, ws / "notes/hard.md")
    return ws


SCOPE = Scope.from_strings(["notes"], ["notes/excluded"])


def rules() -> Rules:
    return Rules(
        ignore=("notes/build",),
        admits=lambda rel: SCOPE.matches(FileFacts(rel)),
        admits_folder=lambda rel: under(rel, "notes") and not under(rel, "notes/excluded"),
        not_admitted="not in project 'notes'",
    )


# path → the refusal (None: allowed); every reader must agree with this table
TABLE: list[tuple[str, Refusal | None]] = [
    ("notes/a.md", None),
    ("notes/sub/../a.md", None),
    ("./notes//sub/b.md", None),
    ("notes/good", None),  # a link to a file in scope
    ("notes/hard.md", Refusal.HARDLINK),  # its other name may be anything: never read
    ("notes", None),
    ("notes/.env", Refusal.SECRET),
    ("notes/keys/id_rsa", Refusal.SECRET),
    ("notes/.aws/credentials", Refusal.SECRET),
    ("notes/envlink", Refusal.SECRET),  # a link to a secret: refused where it leads
    ("notes/excluded/x.md", Refusal.OUT_OF_SCOPE),
    ("notes/excluded", Refusal.OUT_OF_SCOPE),
    ("private/p.md", Refusal.OUT_OF_SCOPE),
    ("notes/private", Refusal.OUT_OF_SCOPE),  # a link out of the project
    ("notes/build/out.md", Refusal.IGNORED),
    (".git/config", Refusal.INTERNAL),
    ("notes/gitcfg", Refusal.INTERNAL),  # seen: MCP followed this to a token
    ("freshline.toml", Refusal.INTERNAL),
    (".freshline/freshline.db", Refusal.INTERNAL),
    ("notes/up", Refusal.OUTSIDE),
    ("../outside.txt", Refusal.OUTSIDE),
    ("notes/../../outside.txt", Refusal.OUTSIDE),
    ("/etc/passwd", Refusal.OUTSIDE),
    ("notes/loop", Refusal.OUTSIDE),
    ("notes/a\0.md", Refusal.OUTSIDE),
]


@pytest.mark.parametrize(("path", "expected"), TABLE)
def test_reach_resolves_then_checks(root: Path, path: str, expected: Refusal | None) -> None:
    if expected is None:
        reached = reach(root, path, rules())
        assert reached.path.is_relative_to(root.resolve())
        return
    with pytest.raises(AccessDenied) as denied:
        reach(root, path, rules())
    assert denied.value.refusal is expected
    message = str(denied.value)
    assert "\n" not in message and message.endswith("refused") and TOKEN not in message


def test_absolute_paths_inside_the_root_are_the_same_paths(root: Path) -> None:
    assert reach(root, str(root / "notes/a.md"), rules()).rel == "notes/a.md"
    with pytest.raises(AccessDenied, match="secret"):
        reach(root, str(root / "notes/.env"), rules())


def test_refusal_checks_one_real_path_without_resolving() -> None:
    assert refusal("notes/a.md", rules()) is None
    assert refusal("notes/.env", rules())[0] is Refusal.SECRET  # type: ignore[index]
    assert refusal("private", rules(), folder=True)[0] is Refusal.OUT_OF_SCOPE  # type: ignore[index]
    allowing = Rules(allow_secrets={".env"})
    assert refusal("notes/.env", allowing) is None
    snapshots = Rules(readable_internal=lambda rel: rel.startswith(".freshline/snapshots/"))
    assert refusal(".freshline/snapshots/a.md", snapshots) is None
    assert refusal(".freshline/freshline.db", snapshots)[0] is Refusal.INTERNAL  # type: ignore[index]


# --- every tool, the same table ----------------------------------------------------------------

READERS = ["read", "list", "search"]
WRITERS = ["write", "edit", "chmod"]


def run(box: Toolbox, tool: str, path: str) -> ToolResult:
    args: dict[str, object] = {"path": path}
    if tool == "search":
        args["pattern"] = "."
    elif tool == "write":
        args["content"] = "replaced"
    elif tool == "edit":
        args.update(old="a", new="b")
    elif tool == "chmod":
        args["executable"] = True
    return box.run(ToolCall("c", tool, args))


@pytest.mark.parametrize("mode", [ToolMode.LIVE, ToolMode.ISOLATED])
@pytest.mark.parametrize(("path", "expected"), [t for t in TABLE if t[1] is not None])
def test_every_tool_refuses_the_same_paths_in_one_line(
    root: Path, mode: ToolMode, path: str, expected: Refusal
) -> None:
    box = Toolbox(root, mode, rules())
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}
    writers = WRITERS if expected is not Refusal.HARDLINK else ["edit", "chmod"]  # write replaces
    tools = READERS + (writers if mode is ToolMode.ISOLATED else [])
    for tool in tools:
        result = run(box, tool, path)
        assert result.is_error, (tool, path, result.content)
        assert "\n" not in result.content and TOKEN not in result.content
        assert result.content.startswith(f"{tool}: ")
    after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}
    assert after == before
    assert (root.parent / "outside.txt").read_text() == TOKEN


@pytest.mark.parametrize("mode", [ToolMode.LIVE, ToolMode.ISOLATED])
def test_walks_never_show_what_the_rules_refuse(root: Path, mode: ToolMode) -> None:
    box = Toolbox(root, mode, rules())
    listing = run(box, "list", "notes").content
    for hidden in (".env", "excluded/", "build/"):
        assert f"\n{hidden}" not in listing
    assert "\na.md" in listing and "\nsub/" in listing
    top = run(box, "list", ".").content
    assert "notes/" in top and "private" not in top and ".git" not in top
    found = box.run(ToolCall("c", "search", {"pattern": "SECRET|note"})).content
    assert TOKEN not in found and "alpha note" in found and "beta note" in found


def test_isolated_writes_replace_the_file_so_hard_links_keep_their_content(root: Path) -> None:
    outside = root.parent / "linked.txt"
    box = Toolbox(root, ToolMode.ISOLATED, rules())
    assert not run(box, "write", "notes/hard.md").is_error
    assert (root / "notes/hard.md").read_text() == "replaced"
    assert outside.read_text() == "linked text\n"  # seen: written through the shared inode
    os.link(outside, root / "notes/hard2.md")
    edited = box.run(ToolCall("c", "edit", {"path": "notes/hard2.md", "old": "text", "new": "x"}))
    assert edited.is_error and "2 hard links" in edited.content  # edit reads: refused
    assert outside.read_text() == "linked text\n"
    os.link(outside, root / "notes/hard3.md")
    refused = run(box, "chmod", "notes/hard3.md")
    assert refused.is_error and "hard links" in refused.content
    assert not stat.S_IMODE(outside.stat().st_mode) & 0o111


def test_a_write_keeps_the_mode_and_leaves_no_temporary_file(root: Path) -> None:
    (root / "notes/run.sh").write_text("old\n")
    (root / "notes/run.sh").chmod(0o750)
    box = Toolbox(root, ToolMode.ISOLATED, rules())
    assert not run(box, "write", "notes/run.sh").is_error
    assert stat.S_IMODE((root / "notes/run.sh").stat().st_mode) == 0o750
    assert not [p for p in (root / "notes").iterdir() if "freshline-tmp" in p.name]


def test_a_write_through_a_link_replaces_the_target_not_the_link(root: Path) -> None:
    box = Toolbox(root, ToolMode.ISOLATED, rules())
    assert not run(box, "write", "notes/good").is_error
    assert (root / "notes/good").is_symlink() and (root / "notes/a.md").read_text() == "replaced"
