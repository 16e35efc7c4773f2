"""Conversations through git remotes: push, pull, fork, against a bare repository on disk
and `git daemon` on 127.0.0.1 (issue 21)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from freshline.agent import get_backend
from freshline.agent.runtime import send
from freshline.config import add_project, init_workspace, load_config
from freshline.context import Channel
from freshline.conversation.remotes import REMOTES_PREFIX, Relation, relation, resolve
from freshline.errors import NotFoundError, UsageError
from freshline.interfaces.cli.root import app
from freshline.session import SessionManager, sharing
from tests.conftest import git, git_env
from tests.serving import free_port

runner = CliRunner()


def cli(root: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--workspace", str(root), *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare repository holding a checkout with freshline.toml: project `notes` (live)
    over notes/ and `code` (isolated) over src/."""
    seed = tmp_path / "seed"
    init_workspace(seed)
    add_project(seed, "notes", ["notes"])
    add_project(seed, "code", ["src"], mode="isolated")
    (seed / "notes").mkdir()
    (seed / "notes/a.md").write_text("# A\n")
    (seed / "src").mkdir()
    (seed / "src/a.py").write_text("a = 1\n")
    git(seed, "init", "-q", "--initial-branch=main")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "start")
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    return bare


def clone(origin: Path, where: Path) -> SessionManager:
    git(origin.parent, "clone", "-q", str(origin), str(where))
    init_workspace(where)
    return SessionManager(load_config(where))


@pytest.fixture
def pair(origin: Path, tmp_path: Path) -> Iterator[tuple[SessionManager, SessionManager]]:
    """Two machines' checkouts of `origin`, each a workspace with its own store."""
    a, b = clone(origin, tmp_path / "a"), clone(origin, tmp_path / "b")
    yield a, b
    a.close()
    b.close()


def turn(m: SessionManager, session: str, message: str) -> None:
    send(m, session, message, get_backend("echo"))


def shared(a: SessionManager, b: SessionManager, first: str) -> str:
    """A session of `notes` opened on a, one turn, pushed, and pulled by b."""
    s = a.new("notes")
    turn(a, s.id, first)
    sharing.push(a, None)
    sharing.pull(b, None)
    return s.id


def said(m: SessionManager, session: str) -> list[str]:
    return [e.content for e in m.conversations.log(session) if e.author.value == "user"]


@given(st.sampled_from(["x", None]), st.sampled_from(["x", "y", None]), st.booleans(),
       st.booleans())
def test_relation_is_decided_by_presence_then_identity_then_ancestry(
    ours: str | None, theirs: str | None, in_theirs: bool, in_ours: bool
) -> None:
    got = relation(ours, theirs, in_theirs, in_ours)
    if ours is None or theirs is None:
        assert got is Relation.ABSENT
    elif ours == theirs:
        assert got is Relation.SAME
    else:
        assert got is {(True, False): Relation.BEHIND, (True, True): Relation.BEHIND,
                       (False, True): Relation.AHEAD, (False, False): Relation.DIVERGED}[
            (in_theirs, in_ours)]


def test_round_trip_live_and_isolated_and_continue_on_the_other_machine(
    pair: tuple[SessionManager, SessionManager],
) -> None:
    a, b = pair
    live = a.new("notes", channel=Channel.CHAT)
    turn(a, live.id, "first on a")
    iso = a.new("code")
    turn(a, iso.id, "edit on a")
    pushed = sharing.push(a, None)  # the checkout's origin
    assert sorted(pushed.pushed) == sorted([live.id, iso.id]) and not pushed.rejected

    pulled = sharing.pull(b, None)
    assert sorted(pulled.report.created) == sorted([live.id, iso.id])
    assert sorted(pulled.adopted) == sorted([live.id, iso.id])
    # live in freshline's own repository, isolated in the checkout's, as on machine a
    assert b.conversations.repo_of(live.id).private
    assert not b.conversations.repo_of(iso.id).private
    assert b.conversations.head(live.id) == a.conversations.head(live.id)

    from freshline.interfaces.tui import open_session  # what `chat --session` does

    assert open_session(b, None, live.id) == live.id
    turn(b, live.id, "second on b")  # continued on the other machine
    turn(b, iso.id, "more on b")  # its worktree is created on demand
    assert said(b, live.id) == ["first on a", "second on b"]
    assert (b.config.root / ".freshline/worktrees" / iso.id / "src/a.py").is_file()
    assert b.store.session_get(live.id).turns == 2

    assert set(sharing.push(b, None).pushed) == {live.id, iso.id}
    back = sharing.pull(a, None).report
    assert sorted(back.forwarded) == sorted([live.id, iso.id])
    assert said(a, live.id) == ["first on a", "second on b"]
    turn(a, iso.id, "third on a")  # the worktree was moved to the new head
    assert said(a, iso.id) == ["edit on a", "more on b", "third on a"]


def test_seen_a_pulled_session_was_listed_as_send_opened_at_the_pull(
    pair: tuple[SessionManager, SessionManager], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen: a pulled session listed channel `send` and the pull time as `opened`."""
    a, b = pair
    s = a.new("notes", channel=Channel.CHAT)
    turn(a, s.id, "first on a")
    sharing.push(a, None)
    later = time.time() + 7200  # pulled two hours later
    monkeypatch.setattr(sharing, "time", SimpleNamespace(time=lambda: later))
    sharing.pull(b, None)
    pulled = b.store.session_get(s.id)
    assert pulled.channel == "pull" and pulled.resumed_at == later
    assert abs(pulled.created_at - a.store.session_get(s.id).created_at) < 2
    listed = json.loads(cli(b.config.root, "session", "list", "--json")[1])
    assert [(x["id"], x["channel"]) for x in listed] == [(s.id, "pull")]
    turn(b, s.id, "second on b")  # a pulled session records its turns like any other
    assert said(b, s.id) == ["first on a", "second on b"]


def test_divergent_appends_keep_the_remotes_aside_and_fork_makes_it_a_session(
    pair: tuple[SessionManager, SessionManager],
) -> None:
    a, b = pair
    sid = shared(a, b, "shared")
    turn(a, sid, "only on a")
    turn(b, sid, "only on b")
    sharing.push(a, None)

    rejected = sharing.push(b, None)  # b lacks a's event: never overwritten
    assert sid in rejected.rejected and "pull first" in rejected.rejected[sid]
    pulled = sharing.pull(b, None).report
    assert pulled.diverged == {sid: f"{REMOTES_PREFIX}origin/{sid}"}
    assert said(b, sid) == ["shared", "only on b"]  # ours untouched

    forked = sharing.fork(b, sid, "origin")
    assert said(b, forked.id) == ["shared", "only on a"]
    assert forked.project == "notes"
    turn(b, forked.id, "after the fork")
    assert said(b, forked.id)[-1] == "after the fork"
    copy = sharing.fork(b, forked.id, None)  # without --from: a local conversation's head
    assert said(b, copy.id) == said(b, forked.id)
    with pytest.raises(NotFoundError):  # the kept head became the fork
        sharing.fork(b, sid, "origin")
    assert set(sharing.push(b, None).pushed) == {forked.id, copy.id}
    assert sid in sharing.push(b, None).rejected  # still diverged: still refused


def test_concurrent_pushes_one_wins_the_other_is_refused_and_nothing_is_lost(
    pair: tuple[SessionManager, SessionManager], origin: Path,
) -> None:
    a, b = pair
    sid = shared(a, b, "shared")
    turn(a, sid, "a's")
    turn(b, sid, "b's")
    barrier = threading.Barrier(2)
    results: dict[str, object] = {}

    def pusher(name: str, m: SessionManager) -> None:
        barrier.wait()
        results[name] = sharing.push(m, None)

    threads = [threading.Thread(target=pusher, args=(n, m)) for n, m in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    reports = [results["a"], results["b"]]
    winners = [r for r in reports if sid in r.pushed]  # type: ignore[attr-defined]
    losers = [r for r in reports if sid in r.rejected]  # type: ignore[attr-defined]
    assert len(winners) == 1 and len(losers) == 1
    on_remote = git(origin, "rev-parse", f"refs/freshline/conversations/{sid}")
    assert on_remote in (a.conversations.head(sid), b.conversations.head(sid))
    # the loser's events are still its own; a pull keeps the winner's aside
    loser = a if losers[0] is results["a"] else b
    mine = loser.conversations.head(sid)
    assert sharing.pull(loser, None).report.diverged
    assert loser.conversations.head(sid) == mine


def test_a_turn_in_progress_is_not_moved_under_it(
    pair: tuple[SessionManager, SessionManager],
) -> None:
    from tests.conftest import turn_running

    a, b = pair
    sid = shared(a, b, "one")
    turn(a, sid, "two")
    sharing.push(a, None)
    with turn_running(b, sid):
        report = sharing.pull(b, None).report
    assert report.busy == [sid]
    assert said(b, sid) == ["one"]
    assert sharing.pull(b, None).report.forwarded == [sid]


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[str]:
    """`git daemon` on 127.0.0.1 serving a bare repository (push enabled); stopped after."""
    base = tmp_path / "served"
    base.mkdir()
    git(base, "init", "-q", "--bare", "shared.git")
    port = free_port()
    proc = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={port}",
         f"--base-path={base}", "--export-all", "--enable=receive-pack", str(base)],
        env=git_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"git://127.0.0.1:{port}/shared.git"
    try:
        deadline = time.monotonic() + 30
        while subprocess.run(["git", "ls-remote", url], env=git_env(),
                             capture_output=True).returncode != 0:
            assert time.monotonic() < deadline and proc.poll() is None, "git daemon never came up"
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_git_daemon_remote_by_url_through_the_cli(
    pair: tuple[SessionManager, SessionManager], daemon: str,
) -> None:
    a, b = pair
    s = a.new("notes")
    turn(a, s.id, "over the daemon")
    code, out, err = cli(a.config.root, "push", daemon, "--session", s.id)
    assert code == 0, err
    assert "pushed 1 conversation" in out
    code, out, err = cli(b.config.root, "pull", daemon, "--json")
    assert code == 0, err
    assert s.id in out
    b.reload_config()
    assert said(b, s.id) == ["over the daemon"]
    turn(a, s.id, "a again")
    turn(b, s.id, "b again")
    assert cli(a.config.root, "push", daemon)[0] == 0
    code, _, err = cli(b.config.root, "push", daemon)
    assert code == 3 and "pull first" in err
    code, out, _ = cli(b.config.root, "pull", daemon)
    assert code == 0 and "session fork" in out
    code, out, err = cli(b.config.root, "session", "fork", s.id, "--from", daemon)
    assert code == 0, err
    forked = out.strip()
    assert said(b, forked) == ["over the daemon", "a again"]


def test_bad_remotes_are_one_line_usage_errors(
    pair: tuple[SessionManager, SessionManager], tmp_path: Path,
) -> None:
    a, _ = pair
    code, _, err = cli(a.config.root, "push", str(tmp_path / "nowhere"))
    assert code == 2 and "no remote named" in err and len(err.strip().splitlines()) == 1
    code, _, err = cli(a.config.root, "pull", "--", "-x")
    assert code == 2
    code, _, err = cli(a.config.root, "session", "fork", "nosuch", "--from", "origin")
    assert code == 2 and "no diverged head" in err
    code, _, err = cli(a.config.root, "push", "--session", "nosuch")
    assert code == 2 and "unknown session" in err
    plain = tmp_path / "plain"
    init_workspace(plain)
    with pytest.raises(UsageError, match="no git remote"):
        resolve(plain, None)
