"""The chat's /rewind (with its picker of the last turns) and /fork, through textual's
headless pilot on a real repository and a scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from freshline.agent.backends import get_backend
from freshline.errors import UsageError
from freshline.interfaces.tui import ChatApp
from freshline.interfaces.tui.commands import Command, Invocation, parse
from freshline.interfaces.tui.picker import TurnPicker
from freshline.session import SessionManager

from .test_chat import SIZE, script, submit, transcript
from .test_rewind import READ_A, edit, write


def chat(
    code: tuple[SessionManager, Path], tmp_path: Path, *more: list[dict[str, object]]
) -> tuple[SessionManager, str, ChatApp]:
    """A chat on a new isolated session, with a model whose turn 1 writes src/b.py and
    turn 2 edits src/a.py (then the turns `more`)."""
    m, _root = code
    s = m.new("code").id
    model = script(tmp_path, [write("src/b.py", "b = 1\n"), {"say": "added b"}],
                   [READ_A, edit("src/a.py", "a = 1", "a = 2"), {"say": "changed a"}], *more)
    return m, s, ChatApp(m, s, get_backend(model))


async def test_rewind_picks_a_turn_and_gives_its_message_back(
    code: tuple[SessionManager, Path], tmp_path: Path,
) -> None:
    m, s, app = chat(code, tmp_path, [{"say": "did it again"}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "add b")
        await submit(pilot, "change a")
        await submit(pilot, "/rewind")
        picker = app.query_one("#picker", TurnPicker)
        assert [str(o.prompt) for o in picker.options] == ["turn 1  add b", "turn 2  change a"]
        assert picker.highlighted == 1 and app.focused is picker
        await pilot.press("escape")  # changes its mind: nothing happens
        assert not app.query("#picker") and len(m.conversations.log(s)) == 10
        await submit(pilot, "/rewind")
        await pilot.press("enter")  # the latest turn
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        text = transcript(app)
        assert "you › add b" in text and "you › change a" not in text
        assert "rewind to turn 2 (code and conversation): 1 file put back" in text
        assert app.prompt.text == "change a"  # to edit and send again
        tree = m.conversations.worktree(s)
        assert (tree / "src/a.py").read_text() == "a = 1\n"
        await submit(pilot, "change a, but carefully")
        assert "model › did it again" in transcript(app)
        await submit(pilot, "/rewind")  # a rewound turn is offered too, to go back to it
        assert [str(o.prompt) for o in app.query_one("#picker", TurnPicker).options] == [
            "turn 1  add b", "turn 2  change a  (rewound)", "turn 3  change a, but carefully"]
        await pilot.press("escape")


async def test_rewind_asks_for_yes_before_overwriting_edits_by_hand(
    code: tuple[SessionManager, Path], tmp_path: Path,
) -> None:
    m, s, app = chat(code, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "add b")
        (m.conversations.worktree(s) / "src/b.py").write_text("b = 'mine'\n")
        await submit(pilot, "/rewind 1 --code")
        text = transcript(app)
        assert "would overwrite 1 path" in text
        assert "src/b.py (edited by hand in the worktree, not recorded yet)" in text
        assert "type /rewind 1 --code --yes to overwrite them" in text
        assert (m.conversations.worktree(s) / "src/b.py").exists()
        await submit(pilot, "/rewind 1 --code --yes")
        assert not (m.conversations.worktree(s) / "src/b.py").exists()
        assert app.prompt.text == ""  # the transcript stays: no message comes back


async def test_fork_moves_the_chat_and_leaves_the_original(
    code: tuple[SessionManager, Path], tmp_path: Path,
) -> None:
    m, s, app = chat(code, tmp_path, [{"say": "in the fork"}])
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "add b")
        await submit(pilot, "change a")
        head = m.conversations.head(s)
        await submit(pilot, "/fork 2")
        forked = app.session_id
        assert forked != s and f"this chat is now on session {forked}" in transcript(app)
        assert "you › change a" not in transcript(app)
        await submit(pilot, "something else")
        assert "model › in the fork" in transcript(app)
    assert m.conversations.head(s) == head
    assert (m.conversations.worktree(forked) / "src/a.py").read_text() == "a = 1\n"


@pytest.mark.parametrize("text, expected", [
    ("/rewind", Invocation(Command.REWIND)),
    ("/rewind 3 --code --yes", Invocation(Command.REWIND, ("3", "--code", "--yes"))),
    ("/fork", Invocation(Command.FORK)),
    ("/fork 2", Invocation(Command.FORK, ("2",))),
])
def test_parse(text: str, expected: Invocation) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize("text, error", [
    ("/rewind 1 2", "usage: /rewind [TURN]"),
    ("/rewind 1 --code --both", "usage: /rewind [TURN]"),
    ("/rewind --later", "usage: /rewind [TURN]"),
    ("/fork 1 2", "usage: /fork [TURN]"),
    ("/fork --at 1", "usage: /fork [TURN]"),
])
def test_parse_refuses(text: str, error: str) -> None:
    with pytest.raises(UsageError, match=error.replace("[", r"\[")):
        parse(text)
