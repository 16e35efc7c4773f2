"""Budgets and roll-ups: golden blocks at 2,000 / 9,000 / 50,000 characters for large
scenarios, and properties: the output never exceeds the budget, and every changed path is
listed or inside a listed group.

Regenerate the golden files with `FRESHLINE_UPDATE_GOLDEN=1` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshline.context import (
    Budget,
    Channel,
    ConfigChange,
    DocumentInfo,
    Encoding,
    ManifestInput,
    Meter,
    UpdatesInput,
    compact_manifest,
    manifest_from_json,
    manifest_to_json,
    page_changes,
    render_blocks,
    render_manifest,
    render_updates,
)
from freshline.context.manifest import STORED_CHARS
from freshline.context.model import FileGroup
from freshline.context.wire import show
from freshline.errors import FreshlineError, UsageError
from freshline.materialize.status import DocStatus
from freshline.store.records import Change, ChangeKind

GOLDEN = Path(__file__).parent / "golden" / "budget"
ROOT = "/home/u/vault"
K = ChangeKind
BUDGETS = (2_000, 9_000, 50_000)
HOOK = Meter(87, Encoding.JSON_ASCII)  # the hook's JSON line around the blocks
SHA = ("a1b2c3d4e5" * 4, "e4f5a6b7c8" * 4)
SNAPSHOTS = ".freshline/snapshots"


# ---------------------------------------------------------------- scenarios

def created_notes() -> UpdatesInput:
    """1,000 created notes in 40 folders."""
    folders = [f"notes/{y}/{m:02}" for y in (2023, 2024) for m in range(1, 13)]
    folders += [f"projects/p{i:02}" for i in range(16)]
    changes = [Change(K.CREATED, f"{f}/note {i:03}.md") for f in folders for i in range(25)]
    return UpdatesInput("research", ROOT, 3, 9, changes=changes)


def checkout_paths(n: int, top: str = "src") -> list[str]:
    return [f"{top}/pkg{i % 10}/mod{i // 10 % 10}/file{i // 100:03}.py" for i in range(n)]


def checkout_changes(paths: list[str]) -> list[Change]:
    kinds = [K.MODIFIED] * 6 + [K.CREATED] * 3 + [K.DELETED]
    return [Change(kinds[i % 10], p) for i, p in enumerate(paths)]


def git_entry(paths: list[str], operation: str = "checkout") -> Change:
    detail = {"operation": operation, "from": SHA[0], "to": SHA[1], "paths": paths,
              "count": len(paths)}
    return Change(K.GIT, "", detail=detail)


def checkout() -> UpdatesInput:
    """A checkout moving 5,000 files, and two edits of the user's own."""
    paths = checkout_paths(5_000)
    changes = [*checkout_changes(paths), git_entry(paths),
               Change(K.MODIFIED, "notes/todo.md"), Change(K.CREATED, "notes/idea.md")]
    return UpdatesInput.from_changes("code", ROOT, 10, 11, changes)


def pdfs(resumed: bool = False) -> ManifestInput:
    """200 PDFs with mixed statuses, in a project of 300 files."""
    states = ["ready", "ready", "pending", "stale", "failed"]
    topics = ["ml", "nlp", "vision", "systems"]
    docs = []
    for i in range(200):
        path = f"papers/{2019 + i % 6}/{topics[i % 4]}/paper {i:03}.pdf"
        state = DocStatus(states[i % 5])
        snapshot = f".freshline/snapshots/{path.replace('/', '-')}-{i:010x}.md"
        reason = "encrypted PDF: a password is needed" if state == "failed" else None
        docs.append(DocumentInfo(path, state, snapshot if state in ("ready", "stale") else None,
                                 reason))
    files = [d.path for d in docs] + [f"notes/reading/n{i:03}.md" for i in range(100)]
    return ManifestInput("papers", ROOT, 42, include=["papers", "notes/reading", "#paper"],
                         exclude=["papers/old"], files=files, documents=docs, resumed=resumed)


def folder_rename() -> UpdatesInput:
    """A folder of 3,000 files renamed as a whole."""
    rels = [f"{t}/{s:02}/draft {i:03}.md" for t in ("essays", "letters", "poems")
            for s in range(20) for i in range(50)]
    changes = [Change(K.RENAMED, "Archive/Drafts 2023", "Drafts", {"folder": True})]
    changes += [Change(K.RENAMED, f"Archive/Drafts 2023/{r}", f"Drafts/{r}") for r in rels]
    return UpdatesInput("writing", ROOT, 5, 6, changes=changes)


def mix() -> tuple[ManifestInput, UpdatesInput, frozenset[str]]:
    """Everything at once: a resumed manifest with its PDFs, then notes, a checkout, a
    folder rename, a scope change, document news; a few paths the agent read."""
    notes = created_notes().changes[:300]
    paths = checkout_paths(1_000)
    renamed = folder_rename().changes[:501]
    config = Change(K.CONFIG, "", detail={"include_added": ["inbox"],
                                          "newly_included": [f"inbox/i{i}.md" for i in range(20)]})
    inbox = {"why": "included", "pattern": "inbox"}
    changes = [*notes, *checkout_changes(paths), git_entry(paths, "merge"), *renamed, config,
               *(Change(K.ENTERED, f"inbox/i{i}.md", detail=inbox) for i in range(20))]
    ready = [DocumentInfo(f"papers/new {i}.pdf", DocStatus.READY, f"{SNAPSHOTS}/n{i}.md")
             for i in range(5)]
    failed = [DocumentInfo(f"papers/bad {i}.pdf", DocStatus.FAILED, None, "corrupt")
              for i in range(3)]
    updates = UpdatesInput.from_changes(
        "research", ROOT, 3, 9, changes, ready_documents=ready, failed_documents=failed,
        invalid_snapshots=[("papers/gone.pdf", ".freshline/snapshots/gone.md")], resumed=True)
    read = frozenset({notes[7].path, paths[42], "inbox/i3.md", renamed[9].path})
    return pdfs(resumed=True), updates, read


Scenario = Callable[[int], str]
SCENARIOS: dict[str, Scenario] = {
    "created_notes": lambda b: render_updates(created_notes(), Budget(b, Channel.CHAT)) or "",
    "checkout": lambda b: render_updates(checkout(), Budget(b, Channel.HOOK, HOOK)) or "",
    "manifest_pdfs": lambda b: render_manifest(pdfs(), Budget(b, Channel.MCP, session="s1")),
    "folder_rename": lambda b: render_updates(folder_rename(), Budget(b, Channel.SEND)) or "",
    "mix": lambda b: render_blocks(*mix()[:2], Budget(b, Channel.HOOK, HOOK), mix()[2]).text or "",
}


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_golden_budgets(name: str, budget: int) -> None:
    text = SCENARIOS[name](budget)
    meter = HOOK if name in ("checkout", "mix") else Meter()
    assert 0 < meter.cost(text) <= budget
    golden = GOLDEN / f"{name}_{budget}.txt"
    if os.environ.get("FRESHLINE_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text + "\n", encoding="utf-8")
    assert text + "\n" == golden.read_text(encoding="utf-8")


def test_large_scenarios_are_covered_at_every_budget() -> None:
    cases = [(created_notes(), frozenset()), (checkout(), frozenset()),
             (folder_rename(), frozenset()), (mix()[1], mix()[2])]
    for u, read in cases:
        for budget in BUDGETS:
            text = render_updates(u, Budget(budget), read) or ""
            assert len(text) <= budget
            assert_covered(text, u)


def test_the_agent_s_paths_stay_listed_while_the_rest_is_grouped() -> None:
    manifest, updates, read = mix()
    text = render_blocks(manifest, updates, Budget(9_000, Channel.HOOK, HOOK), read).text or ""
    listed = entries(text)
    assert "Changes grouped by folder (counts by kind):" in text
    for path in read - {mix()[1].changes[-1].path}:
        assert any(show(ROOT, path) in line for line in listed), path
    # documents whose status changed stay listed too
    assert any("papers/bad 0.pdf (conversion failed: corrupt)" in line for line in listed)


def test_a_checkout_counts_its_paths_by_folder_under_its_line() -> None:
    text = render_updates(checkout(), Budget(2_000)) or ""
    assert ("HEAD moved a1b2c3d → e4f5a6b by checkout: 5,000 paths in this project, counted "
            "by folder, not listed one by one (1,500 created, 3,000 modified, 500 deleted):\n"
            f"- {ROOT}/src/pkg0/: 500 modified\n") in text
    assert all(f"- {ROOT}/src/pkg{i}/" in text for i in range(10))
    assert f"- {ROOT}/notes/idea.md" in text and f"- {ROOT}/notes/todo.md" in text


def checkout_in_folders(n: int, folders: int) -> UpdatesInput:
    """A checkout of `n` paths spread over `folders` top folders, a third of each created,
    modified and deleted."""
    paths = [f"area{i % folders:02}/module/file {i:05}.py" for i in range(n)]
    kinds = [K.CREATED, K.MODIFIED, K.DELETED]
    changes = [Change(kinds[i % 3], p) for i, p in enumerate(paths)]
    return UpdatesInput.from_changes("code", ROOT, 1, 2, [*changes, git_entry(paths)])


def test_a_2000_path_checkout_names_its_folders_in_the_hook_s_budget() -> None:
    text = render_updates(checkout_in_folders(2_000, 20), Budget(9_000, Channel.HOOK, HOOK))
    assert text is not None and HOOK.cost(text) <= 9_000
    named = {f for f in range(20) if f"{ROOT}/area{f:02}/" in text}
    assert len(named) >= 18, text


def test_a_git_operation_collapses_to_its_line_alone_at_the_least() -> None:
    text = render_updates(checkout_in_folders(2_000, 20), Budget(2_000, Channel.HOOK, HOOK))
    assert text is not None and HOOK.cost(text) <= 2_000
    assert ("2,000 paths in this project; counted here, not listed one by one: 667 created, "
            "667 modified, 666 deleted.") in text or text.count(f"- {ROOT}/area") >= 18


def test_news_beside_many_ready_snapshots_keeps_its_folders() -> None:
    """1,000 new notes in 40 folders beside 300 snapshots that became ready: the documents
    fold, and the room left names the notes' folders again (not `notes/: 1,000 created`)."""
    notes = created_notes()
    ready = [DocumentInfo(f"papers/paper {i:03}.pdf", DocStatus.READY, f"{SNAPSHOTS}/p{i}.md")
             for i in range(300)]
    u = replace(notes, ready_documents=tuple(ready))
    folders = {c.path.rpartition("/")[0] for c in notes.changes}
    for chars, least in ((2_000, 25), (9_000, 40)):
        text = render_updates(u, Budget(chars, Channel.HOOK, HOOK)) or ""
        assert HOOK.cost(text) <= chars
        named = {f for f in folders if f"{ROOT}/{f}/" in text}
        assert len(named) >= least, text


def test_a_folder_renamed_as_a_whole_is_one_line() -> None:
    text = render_updates(folder_rename(), Budget(2_000)) or ""
    assert f"- {ROOT}/Drafts/ → {ROOT}/Archive/Drafts 2023/ (a folder moved as a whole, " \
           "3,000 files)" in text
    assert text.count("\n- ") == 1


def test_nothing_is_folded_when_everything_fits() -> None:
    u = created_notes()
    assert render_updates(u, Budget(10_000_000)) == render_updates(u)
    assert "grouped" not in (render_updates(u) or "")


def test_the_way_back_names_each_channel_s_tool() -> None:
    u = created_notes()
    lines = {channel: (render_updates(u, Budget(2_000, channel, session="s1")) or "")
             .split("\n")[-2] for channel in Channel}
    assert "the changes tool (since=3)" in lines[Channel.CHAT] == lines[Channel.SEND]
    assert "`freshline changes research --since 3 --page 1`" in lines[Channel.CHAT]
    assert 'project_changes(session="s1", since=3, page=1)' in lines[Channel.MCP]
    assert "run `freshline changes research --since 3 --channel hook --page 1`" \
        in lines[Channel.HOOK]
    assert 'freshline\'s project_changes(session="s1", since=3, page=1)' in lines[Channel.ACP]
    manifest = render_manifest(pdfs(), Budget(2_000, Channel.ACP, session="s1"))
    assert 'freshline\'s project_files(project="papers", page=1)' in manifest.split("\n")[-2]


def test_the_way_back_command_runs_from_anywhere_as_written() -> None:
    program = ("/opt/my tools/bin/freshline", "--workspace", "/home/u/my vault")
    budget = Budget(2_000, Channel.HOOK, session="s1", command=program)
    last = (render_updates(created_notes(), budget) or "").split("\n")[-2]
    assert "run `'/opt/my tools/bin/freshline' --workspace '/home/u/my vault' changes " \
           "research --since 3 --channel hook --page 1` for the full list" in last
    manifest = render_manifest(pdfs(), budget).split("\n")[-2]
    assert "`'/opt/my tools/bin/freshline' --workspace '/home/u/my vault' project files " \
           "papers --channel hook --page 1`" in manifest
    page = page_changes(created_notes(), 1, budget)
    assert page.text.endswith("Next: the same command with --page 2.")


def test_a_manifest_rolls_up_only_as_far_as_its_budget_needs() -> None:
    """1,630 notes in 20 language folders of 4 sections each, under the chat's 30,000
    characters: each section is listed whole or counted in one line, and only as many
    are counted as the budget needs (50 lines per manifest once counted every folder)."""
    langs = ["ar", "cs", "de", "en", "es", "fr", "he", "hi", "id", "it", "ja", "ko", "nl",
             "pl", "pt", "ru", "sv", "tr", "uk", "zh"]
    files = [f"{langs[i % 20]}/section{i // 20 % 4}/note {i:04}.md" for i in range(1_630)]
    m = ManifestInput("vault", ROOT, 3, include=["**/*.md"], files=files)
    budget = Budget(30_000, Channel.CHAT)
    text = render_manifest(m, budget)
    assert 27_000 < len(text) <= 30_000
    lines = entries(text)
    counted = {g.group(1) for line in lines if (g := GROUP.match(line))}
    assert counted and all(c.count("/section") == 1 for c in counted)  # no language folded
    for folder in {f.rpartition("/")[0] for f in files}:
        listed = sum(line.startswith(f"- {ROOT}/{folder}/note") for line in lines)
        assert listed in (0, sum(f.startswith(folder + "/") for f in files))
        assert (listed == 0) == (f"{ROOT}/{folder}/" in counted)
    assert render_manifest(manifest_from_json(manifest_to_json(m)), budget) == text


# ---------------------------------------------------------------- what a block holds

GROUP = re.compile(r"- (/.*/): \d[\d,]* ")
FOLDER_MOVE = re.compile(r"- (/.*/) → (/.*/) \(a folder moved as a whole")


def entries(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("- ")]


def assert_covered(text: str, u: UpdatesInput) -> None:
    """Every changed path is listed, or inside a listed group: a folder group, a git
    operation's line, a folder rename's line."""
    if u.compacted:
        return
    lines = entries(text)
    listed = set()
    for line in lines:
        listed.update(line[2:].split(" (")[0].split(" → "))
    groups = [m.group(1) for line in lines if (m := GROUP.match(line))]
    moves = [(m.group(1), m.group(2)) for line in lines if (m := FOLDER_MOVE.match(line))]
    git_lines = [line for line in text.split("\n") if line.startswith("HEAD moved")]
    folded = {p for op, line in zip(u.git, git_lines, strict=True) if "counted here" in line
              for p in op.paths}
    for c in u.changes:
        if c.detail and c.detail.get("folder"):
            continue
        shown = show(ROOT, c.path)
        moved = c.old_path and any(show(ROOT, c.old_path).startswith(a) and shown.startswith(b)
                                   for a, b in moves)
        assert (shown in listed or any(shown.startswith(g) for g in groups)
                or c.path in folded or c.old_path in folded or moved), c


# ---------------------------------------------------------------- properties

names = st.text("abcXY09 é", min_size=1, max_size=4).filter(lambda s: s.strip() == s)
rel_paths = st.lists(names, min_size=1, max_size=4).map("/".join)
meters = st.sampled_from([Meter(), Meter(87, Encoding.JSON_ASCII), Meter(120, Encoding.JSON)])


@st.composite
def updates_inputs(draw: st.DrawFn) -> tuple[UpdatesInput, frozenset[str]]:
    paths = draw(st.lists(rel_paths, min_size=1, max_size=120, unique=True))
    changes = []
    for i, path in enumerate(paths):
        kind = draw(st.sampled_from([K.CREATED, K.MODIFIED, K.DELETED, K.RENAMED]))
        old = f"old/{i}/{path}" if kind is K.RENAMED else None
        changes.append(Change(kind, path, old))
    if draw(st.booleans()):
        folder = draw(names)
        moved = [f"{folder}/{p}" for p in draw(st.lists(rel_paths, max_size=30, unique=True))]
        changes.append(Change(K.RENAMED, folder, f"was {folder}", {"folder": True}))
        changes += [Change(K.RENAMED, p, f"was {p}") for p in moved]
    for op in range(draw(st.integers(0, 2))):
        covered = draw(st.lists(st.sampled_from(paths), max_size=60, unique=True))
        changes.append(git_entry(covered, ["checkout", "merge"][op]))
    priority = frozenset(draw(st.lists(st.sampled_from(paths), max_size=5)))
    failed = [DocumentInfo(p, DocStatus.FAILED, None, "x")
              for p in draw(st.lists(rel_paths, max_size=3))]
    u = UpdatesInput.from_changes("p", ROOT, 1, 2, changes, failed_documents=failed,
                                  resumed=draw(st.booleans()))
    return u, priority


@given(updates_inputs(), st.integers(2_000, 12_000), meters, st.sampled_from(list(Channel)))
@settings(max_examples=150, deadline=None)
def test_updates_fit_and_name_every_path_or_its_group(
    case: tuple[UpdatesInput, frozenset[str]], chars: int, meter: Meter, channel: Channel,
) -> None:
    u, priority = case
    budget = Budget(chars, channel, meter, "s1")
    text = render_updates(u, budget, priority) or ""
    assert meter.cost(text) <= chars
    assert_covered(text, u)


@st.composite
def manifest_inputs(draw: st.DrawFn) -> ManifestInput:
    drawn = draw(st.lists(rel_paths, max_size=150, unique=True))
    folders = {f[:i] for f in drawn for i, c in enumerate(f) if c == "/"}
    files = [f for f in drawn if f not in folders]  # a path is a file or a folder, not both
    docs = [DocumentInfo(p, s, f".freshline/snapshots/{i}.md", "why") for i, (p, s) in
            enumerate(zip(files, draw(st.lists(st.sampled_from(
                [DocStatus.READY, DocStatus.PENDING, DocStatus.STALE, DocStatus.FAILED]),
                max_size=40)), strict=False))]
    return ManifestInput("p", ROOT, 3, include=["notes", "#x"], files=files, documents=docs,
                         list_files_max=draw(st.integers(0, 60)), resumed=draw(st.booleans()))


@given(manifest_inputs(), st.one_of(st.none(), updates_inputs()), st.integers(2_000, 12_000),
       meters)
@settings(max_examples=100, deadline=None)
def test_both_blocks_fit_together_and_a_stored_manifest_renders_the_same(
    m: ManifestInput, case: tuple[UpdatesInput, frozenset[str]] | None, chars: int, meter: Meter,
) -> None:
    u, priority = case or (None, frozenset())
    budget = Budget(chars, Channel.SEND, meter)
    blocks = render_blocks(m, u, budget, priority)
    assert blocks.text is not None and meter.cost(blocks.text) <= chars
    stored = manifest_from_json(manifest_to_json(m))
    assert stored == compact_manifest(m)
    assert render_blocks(stored, u, budget, priority) == blocks
    assert render_manifest(stored) == render_manifest(m)
    for doc in m.documents:  # every document is listed or counted in a folder group
        shown = show(ROOT, doc.path)
        listed = any(line[2:].startswith(shown) for line in entries(blocks.manifest or ""))
        grouped = any(shown.startswith(g.group(1)) for line in entries(blocks.manifest or "")
                      if (g := GROUP.match(line)))
        assert listed or grouped, doc


def planned_compact(m: ManifestInput, chars: int) -> tuple[tuple[str, ...], tuple[FileGroup, ...]]:
    """The files `compact_manifest` lists and the groups it counts, as the block's plan
    places them: its folds from `_start`, its entries through `Placement`."""
    from freshline.context.layout import Placement, Pool
    from freshline.context.manifest import _plan, _start

    plan = _plan(m, None)
    placed = Placement(plan, _start(plan, None, chars))
    listed = tuple(e.path for e in plan.entries() if e.pool is Pool.FILES and placed.is_listed(e))
    groups = placed.groups.get(Pool.FILES, {})
    return listed, tuple(FileGroup(f, c["files"]) for f, c in sorted(groups.items()))


@given(manifest_inputs(), st.integers(0, 6_000), st.booleans())
@settings(max_examples=150, deadline=None)
def test_compacting_from_paths_places_as_the_plan_does(
    m: ManifestInput, chars: int, twice: bool
) -> None:
    if twice:  # a stored form compacted again, to a smaller budget: its groups stay
        m = compact_manifest(m, chars * 2)
    compact = compact_manifest(m, chars)
    assert (compact.files, compact.file_groups) == planned_compact(m, chars)


@pytest.mark.parametrize("text", ["", "<project_context/>", '{"version": 2}', "[]",
                                  '{"version": 1, "project": "p"}'])
def test_a_stored_manifest_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(FreshlineError, match="stored manifest"):
        manifest_from_json(text)


def test_a_stored_manifest_stays_bounded() -> None:
    many = ManifestInput("p", ROOT, 1, include=["n"],
                         files=[f"n/{i % 97}/{i}.md" for i in range(30_000)])  # 4× the bound
    stored = manifest_to_json(many)
    assert len(stored) < STORED_CHARS + 5_000
    assert render_manifest(manifest_from_json(stored)) == render_manifest(many)
    budget = Budget(50_000, Channel.SEND)
    assert render_manifest(manifest_from_json(stored), budget) == render_manifest(many, budget)


# ---------------------------------------------------------------- meters

@pytest.mark.parametrize("text", ["", "plain", 'q"uote\\ and\nnewline', "é日本\U0001f600"])
def test_meters_count_what_the_channel_writes(text: str) -> None:
    assert Meter().cost(text) == len(text)
    assert Meter(10, Encoding.JSON).cost(text) == 10 + len(json.dumps(text, ensure_ascii=False)) - 2
    assert Meter(0, Encoding.JSON_ASCII).cost(text) == len(json.dumps(text)) - 2
    envelope = json.dumps({"a": ""})
    assert Meter.around(envelope, Encoding.JSON_ASCII).cost(text) == len(json.dumps({"a": text}))


# ---------------------------------------------------------------- paging

@pytest.mark.parametrize("meter", [Meter(), HOOK])
def test_pages_fit_and_hold_the_full_list(meter: Meter) -> None:
    u = UpdatesInput.from_changes("code", ROOT, 10, 11, checkout_changes(checkout_paths(1_500)))
    budget = Budget(5_000, Channel.HOOK, meter)
    first = page_changes(u, 1, budget)
    assert first.pages > 10 and (first.since, first.epoch) == (10, 11)
    seen = []
    for n in range(1, first.pages + 1):
        page = page_changes(u, n, budget)
        assert meter.cost(page.text) <= 5_000
        lines = page.text.split("\n")
        assert lines[0] == f"Changes to code after epoch 10 (up to epoch 11), page {n:,} of " \
                           f"{first.pages:,}:"
        last = "This is the last page." if n == first.pages else f"Next: page={n + 1}."
        assert lines[-1] == last
        seen += lines[1:-1]
    full = (render_updates(u) or "").split("\n")[2:-1]
    assert [line for line in seen if not line.endswith(" (continued)")] == full


def test_a_page_that_starts_inside_a_section_repeats_its_heading() -> None:
    page = page_changes(created_notes(), 2, Budget(2_000))
    assert page.text.split("\n")[1] == "Created: (continued)"


def test_paging_edges() -> None:
    empty = UpdatesInput("p", ROOT, 4, 4)
    assert page_changes(empty, 1, Budget(1_000)).text.split("\n")[1] == "No changes."
    with pytest.raises(UsageError, match="page 2 does not exist"):
        page_changes(empty, 2, Budget(1_000))
    huge = UpdatesInput("p", ROOT, 1, 2, changes=[Change(K.CREATED, "x" * 3_000)])
    page = page_changes(huge, 1, Budget(1_000))
    assert len(page.text) <= 1_000 and page.text.split("\n")[2].endswith("…")
    compacted = page_changes(UpdatesInput("p", ROOT, 1, 2, compacted=True), 1, Budget(1_000))
    assert "no longer reaches epoch 1" in compacted.text
    assert "`freshline project files p --page 1`" in compacted.text


def test_scope_changes_are_kept_when_paths_fold() -> None:
    inbox = [f"inbox/{i}.md" for i in range(500)]
    config = ConfigChange(include_added=["inbox"], newly_included=inbox)
    why = {"why": "included", "pattern": "inbox"}
    u = UpdatesInput("p", ROOT, 1, 2, config=[config],
                     changes=[Change(K.ENTERED, path, detail=why) for path in inbox])
    text = render_updates(u, Budget(2_000)) or ""
    assert "- now included: folder /home/u/vault/inbox/" in text
    assert f"- {ROOT}/inbox/: 500 entered the project" in text
