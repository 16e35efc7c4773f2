"""The read ledger's parts: the store table, the provenance rules (pure), the stale-read
section of the updates block and its place under a budget."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.context import (
    Budget,
    GitOperation,
    Refresh,
    Source,
    SourceKind,
    StaleRead,
    UpdatesInput,
    render_blocks,
    render_updates,
)
from freshline.errors import FreshlineError
from freshline.session.provenance import LedgerNews, ledger_news
from freshline.store import Change, ChangeKind, LedgerEntry, LedgerKind
from freshline.tracker.hashing import blob_id_bytes, blob_of
from tests.conftest import StoreBackend

K = ChangeKind
R, W = LedgerKind.READ, LedgerKind.WRITE
ROOT = "/w"
ME, OTHER = "me0000000001", "other0000001"
GIT = GitOperation("checkout", "a" * 40, "b" * 40, ("g.md",))


def entry(path: str, kind: LedgerKind, blob: str, turn: int = 1, session: str = ME,
          seq: int = 1, at: float = 1.0) -> LedgerEntry:
    return LedgerEntry(session, path, kind, blob, turn, seq, at)


# ---------------------------------------------------------------- the store table


def test_the_store_keeps_the_latest_read_and_write_per_path(
    backend: StoreBackend, tmp_path: Path
) -> None:
    store = backend.store(tmp_path)
    store.ledger_put([LedgerEntry(ME, "a.md", R, "x1", 1), LedgerEntry(ME, "a.md", W, "x2", 2)])
    store.ledger_put([LedgerEntry(ME, "a.md", R, "x3", 3), LedgerEntry(OTHER, "a.md", W, "y", 1)])
    mine = store.ledger_of(ME)
    assert [(e.kind, e.blob, e.turn) for e in mine] == [(W, "x2", 2), (R, "x3", 3)]
    assert [e.seq for e in mine] == sorted(e.seq for e in mine)
    last = store.ledger_last(ME, "a.md")
    assert last is not None and last.blob == "x3"
    assert store.ledger_last(ME, "b.md") is None
    assert store.ledger_paths(ME) == {"a.md"}
    rows = store.ledger_on(["a.md", "missing.md"])
    assert sorted((r.entry.session, r.entry.kind) for r in rows) == [
        (ME, R), (ME, W), (OTHER, W)]
    assert all(r.indexed is None for r in rows)  # not in the index
    store.close()


def test_ledger_paths_round_trip_any_file_name(backend: StoreBackend, tmp_path: Path) -> None:
    store = backend.store(tmp_path)
    odd = "notes/\udcff weird\n.md"
    store.ledger_put([LedgerEntry(ME, odd, R, "x", 1)])
    assert store.ledger_paths(ME) == {odd}
    assert [r.entry.path for r in store.ledger_on([odd])] == [odd]
    store.close()


def test_blob_of_is_gits_blob_id(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"hello\n")
    assert blob_of(tmp_path / "a") == "ce013625030ba8dba906f756967f9e9ca394464a"  # git's
    assert blob_of(tmp_path / "a") == blob_id_bytes(b"hello\n")
    assert blob_of(tmp_path / "missing") is None
    assert blob_of(tmp_path) is None  # a folder holds no blob
    (tmp_path / "l").symlink_to("a")
    assert blob_of(tmp_path / "l") == blob_id_bytes(b"a")  # a link: its target's text


# ---------------------------------------------------------------- provenance, table tests


def news(changes: list[Change], rows: list[LedgerEntry], current: dict[str, str | None],
         git: tuple[GitOperation, ...] = (), refreshes: tuple[Refresh, ...] = ()) -> LedgerNews:
    return ledger_news(ME, changes, rows, current, git, refreshes,
                       {OTHER: "claude-code"})


def test_own_write_is_not_announced() -> None:
    n = news([Change(K.CREATED, "b.md")], [entry("b.md", W, "w")], {"b.md": "w"})
    assert n.own == {"b.md"} and n.kept([Change(K.CREATED, "b.md")]) == []
    assert n.stale == () and n.writers == ()


def test_own_write_changed_again_is_announced_as_stale() -> None:
    n = news([Change(K.MODIFIED, "b.md")], [entry("b.md", W, "w", turn=2)], {"b.md": "x"})
    assert n.own == frozenset()
    assert n.stale == (StaleRead("b.md", 2, K.MODIFIED, Source(SourceKind.OUTSIDE), wrote=True),)


@pytest.mark.parametrize(("change", "current", "expected"), [
    (Change(K.MODIFIED, "a.md"), {"a.md": "new"}, StaleRead("a.md", 3, K.MODIFIED)),
    (Change(K.DELETED, "a.md"), {"a.md": None}, StaleRead("a.md", 3, K.DELETED)),
    (Change(K.RENAMED, "z.md", "a.md"), {"a.md": None},
     StaleRead("a.md", 3, K.RENAMED, new_path="z.md")),
    (Change(K.CREATED, "a.md"), {"a.md": "new"}, StaleRead("a.md", 3, K.MODIFIED)),
    (Change(K.MODIFIED, "a.md"), {"a.md": "seen"}, None),  # read after the change
    # hidden by an ignore rule or moved out: it left the project, it was not deleted
    (Change(K.LEFT, "a.md", detail={"why": "moved"}), {"a.md": None},
     StaleRead("a.md", 3, K.LEFT)),
    (Change(K.LEFT, "a.md", detail={"why": "tagged", "pattern": "#x"}), {"a.md": "seen"}, None),
])
def test_stale_reads(change: Change, current: dict[str, str | None],
                     expected: StaleRead | None) -> None:
    n = news([change], [entry("a.md", R, "seen", turn=3)], current)
    assert n.stale == ((expected,) if expected else ())
    assert n.own == frozenset()


def test_the_latest_look_decides() -> None:
    rows = [entry("a.md", R, "old", turn=1, seq=1), entry("a.md", W, "mine", turn=2, seq=2)]
    assert news([Change(K.MODIFIED, "a.md")], rows, {"a.md": "mine"}).own == {"a.md"}
    rows = [entry("a.md", W, "mine", turn=1, seq=1), entry("a.md", R, "later", turn=2, seq=2)]
    n = news([Change(K.MODIFIED, "a.md")], rows, {"a.md": "new"})
    assert n.stale == (StaleRead("a.md", 2, K.MODIFIED),)


def test_sources_only_where_provable() -> None:
    rows = [entry(p, R, "seen") for p in ("g.md", "r.md", "s.md", "o.md")]
    rows += [entry("s.md", W, "theirs", session=OTHER), entry("o.md", W, "stale", session=OTHER)]
    changes = [Change(K.MODIFIED, p) for p in ("g.md", "s.md", "o.md")]
    current = {"g.md": "g2", "r.md": "r2", "s.md": "theirs", "o.md": "o2"}
    refresh = Refresh("main", "c" * 40, "d" * 40, ("r.md",))
    n = news(changes, rows, current, (GIT,), (refresh,))
    by_path = {s.path: s.source for s in n.stale}
    assert by_path["g.md"] == Source(SourceKind.GIT, "checkout", "", "a" * 40, "b" * 40)
    assert by_path["r.md"] == Source(SourceKind.REFRESH, "main", "", "c" * 40, "d" * 40)
    assert by_path["s.md"] == Source(SourceKind.SESSION, OTHER, "claude-code")
    # another session wrote o.md once, but not this content: nobody is guessed
    assert by_path["o.md"] == Source(SourceKind.OUTSIDE)
    assert n.writers == (("s.md", Source(SourceKind.SESSION, OTHER, "claude-code")),)


def test_another_sessions_write_is_attributed_without_a_read() -> None:
    n = news([Change(K.CREATED, "c.md"), Change(K.DELETED, "d.md")],
             [entry("c.md", W, "c1", session=OTHER), entry("d.md", W, "", session=OTHER)],
             {"c.md": "c1", "d.md": None})
    other = Source(SourceKind.SESSION, OTHER, "claude-code")
    assert n.writers == (("c.md", other), ("d.md", other)) and n.stale == ()


def test_the_latest_writer_of_a_blob_is_named() -> None:
    rows = [entry("c.md", W, "c1", session=OTHER, at=1.0),
            entry("c.md", W, "c1", session="third0000001", at=2.0)]
    n = news([Change(K.MODIFIED, "c.md")], rows, {"c.md": "c1"})
    assert n.writers[0][1].name == "third0000001"


def test_own_deletion_and_own_rename_are_not_announced() -> None:
    rows = [entry("a.md", W, ""), entry("b.md", W, "x"), entry("c.md", W, "", seq=2)]
    changes = [Change(K.DELETED, "a.md"), Change(K.RENAMED, "b.md", "c.md")]
    n = news(changes, rows, {"a.md": None, "b.md": "x", "c.md": None})
    assert n.own == {"a.md", "b.md"} and n.stale == ()


def test_stale_records_refuse_what_they_cannot_say() -> None:
    with pytest.raises(FreshlineError):
        StaleRead("a.md", 1, K.CREATED)
    with pytest.raises(FreshlineError):
        StaleRead("a.md", 1, K.RENAMED)
    with pytest.raises(FreshlineError):
        StaleRead("a.md", 1, K.MODIFIED, new_path="b.md")


# ---------------------------------------------------------------- provenance, properties

paths = st.sampled_from(["a.md", "b.md", "c/d.md", "e.md"])
blobs = st.sampled_from(["", "x", "y", "z"])
sessions = st.sampled_from([ME, OTHER])


@st.composite
def ledgers(draw: st.DrawFn) -> list[LedgerEntry]:
    found = draw(st.lists(st.tuples(sessions, paths, st.sampled_from([R, W]), blobs,
                                    st.integers(1, 9)), max_size=8))
    return [LedgerEntry(s, p, k, b, t, seq, float(seq))
            for seq, (s, p, k, b, t) in enumerate(found, 1)]


@st.composite
def changes_of(draw: st.DrawFn) -> list[Change]:
    out = []
    for path in draw(st.lists(paths, unique=True, max_size=4)):
        kind = draw(st.sampled_from([K.CREATED, K.MODIFIED, K.DELETED, K.RENAMED]))
        old = draw(paths.filter(lambda p, path=path: p != path)) if kind is K.RENAMED else None
        out.append(Change(kind, path, old))
    return out


@given(changes_of(), ledgers(), st.dictionaries(paths, st.one_of(st.none(), blobs)))
def test_ledger_news_properties(changes: list[Change], rows: list[LedgerEntry],
                                current: dict[str, str | None]) -> None:
    current = {p: current.get(p) for p in ("a.md", "b.md", "c/d.md", "e.md")}
    n = news(changes, rows, current)
    mine = {e.path for e in rows if e.session == ME}
    stale = {s.path for s in n.stale}
    assert stale <= mine  # only what this agent read or wrote
    assert n.own <= {c.path for c in changes} and n.own <= mine  # only its own writes
    assert not n.own & {p for p, _ in n.writers}
    for s in n.stale:  # the turn is the one of the agent's last look
        last = max((e for e in rows if e.session == ME and e.path == s.path),
                   key=lambda e: e.seq)
        assert s.turn == last.turn and s.wrote == (last.kind is W)
    assert all(src.name == OTHER for _, src in n.writers)  # never this session itself
    assert n.kept(changes) == [c for c in changes if c.path not in n.own]
    if not any(e.session == ME for e in rows):
        assert n.stale == () and n.own == frozenset()


# ---------------------------------------------------------------- the block


def block(**fields: object) -> UpdatesInput:
    base: dict[str, object] = {"changes": [Change(K.MODIFIED, "notes/plan.md")]}
    return UpdatesInput("p", ROOT, 1, 2, **(base | fields))  # type: ignore[arg-type]


def test_the_stale_section_opens_the_block() -> None:
    text = render_updates(block(stale=[StaleRead("notes/plan.md", 3, K.MODIFIED)]))
    assert text is not None
    lines = text.split("\n")
    assert lines[1].startswith("Files you read or wrote that changed since")
    assert lines[2] == "- you read /w/notes/plan.md at turn 3; it has changed since " \
                       "(outside freshline)"
    assert lines[3].startswith("Changes to the project since your last turn")


@pytest.mark.parametrize(("stale", "line"), [
    (StaleRead("a.md", 2, K.DELETED, Source(SourceKind.GIT, "reset", "", "", "b" * 40)),
     "you read /w/a.md at turn 2; it was deleted since (by git reset (to bbbbbbb))"),
    (StaleRead("a.md", 1, K.RENAMED, Source(SourceKind.GIT, "other", "", "a" * 40, "b" * 40),
               new_path="b.md"),
     "you read /w/a.md at turn 1; it was renamed to /w/b.md since "
     "(by a git operation (aaaaaaa → bbbbbbb))"),
    (StaleRead("a.md", 4, K.MODIFIED, Source(SourceKind.SESSION, "3f2a9c1b0d4e", "mcp"),
               wrote=True),
     "you wrote /w/a.md at turn 4; it has changed since (by freshline session 3f2a9c1b0d4e, mcp)"),
    (StaleRead("a.md", 1, K.MODIFIED, Source(SourceKind.REFRESH, "refs/heads/main</x>")),
     "you read /w/a.md at turn 1; it has changed since "
     "(by the refresh from main</x>)"),
    (StaleRead("a.md", 2, K.LEFT),
     "you read /w/a.md at turn 2; it has left the project since, though the file is still "
     "there (outside freshline)"),
])
def test_stale_lines(stale: StaleRead, line: str) -> None:
    text = render_updates(block(changes=[], stale=[stale]))
    assert text is not None and f"- {line}\n" in text


def test_another_sessions_write_is_named_on_its_entry() -> None:
    who = Source(SourceKind.SESSION, "3f2a9c1b0d4e", "claude-code")
    text = render_updates(block(changes=[Change(K.CREATED, "c.md"), Change(K.DELETED, "d.md"),
                                         Change(K.RENAMED, "f.md", "e.md")],
                                writers=[("c.md", who), ("d.md", who), ("f.md", who)]))
    assert text is not None
    note = "(by freshline session 3f2a9c1b0d4e, claude-code)"
    assert f"- /w/c.md {note}\n" in text and f"- /w/d.md {note}\n" in text
    assert f"- /w/e.md → /w/f.md {note}\n" in text


def test_stale_lines_are_kept_when_a_budget_rolls_up_the_rest() -> None:
    changes = [Change(K.CREATED, f"notes/many/n{i:03}.md") for i in range(400)]
    stale = [StaleRead("notes/many/n007.md", 2, K.MODIFIED), StaleRead("x/plan.md", 1, K.DELETED)]
    blocks = render_blocks(None, block(changes=changes, stale=stale), Budget(2000),
                           priority={"notes/many/n007.md", "x/plan.md"})
    text = blocks.updates
    assert text is not None and blocks.folds > 0 and len(text) <= 2000
    assert "you read /w/notes/many/n007.md at turn 2" in text
    assert "you read /w/x/plan.md at turn 1; it was deleted since" in text
    assert re.search(r"/w/notes/many/: \d+ created", text)  # the rest was grouped
    assert text.index("you read") < text.index("Changes to the project")


def test_at_its_minimum_the_block_counts_stale_reads_too() -> None:
    stale = [StaleRead(f"d{i}/f{j}.md", 1, K.MODIFIED) for i in range(40) for j in range(5)]
    text = render_blocks(None, block(changes=[], stale=stale), Budget(2000)).updates
    assert text is not None and len(text) <= 2000
    assert "read by you and changed since" in text  # counted in a group, never dropped
