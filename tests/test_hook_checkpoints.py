"""Every prompt of an agent freshline does not run is a checkpoint (issue 43): the hook's
calls answered in this process (`hook.core.answer`, as the watcher and the hook process
answer them), the CLI in-process, real files, a real git repository under `.freshline/`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from freshline.conversation.checkpoints import Recording
from freshline.interfaces.cli import app
from freshline.interfaces.hook import adapter
from freshline.interfaces.hook.core import Warm, answer
from freshline.interfaces.hook.protocol import HookOptions
from freshline.session import SessionManager
from freshline.store.sessions import CHECKPOINT_KEY
from tests.conftest import Workspace, git

AWS = "aws_access_key_id = AKIAQ3EGRT5NXMPLW7ZD\n"
PROMPT = {"claude-code": "UserPromptSubmit", "gemini-cli": "BeforeAgent",
          "codex": "UserPromptSubmit"}
STOP = {"claude-code": "Stop", "gemini-cli": "AfterAgent", "codex": "Stop"}
TOOL_START = {"claude-code": "PreToolUse", "gemini-cli": "BeforeTool", "codex": "PreToolUse"}
TOOL_END = {"claude-code": "PostToolUse", "gemini-cli": "AfterTool", "codex": "PostToolUse"}
SHELL = {"claude-code": "Bash", "gemini-cli": "run_shell_command", "codex": "Bash"}
runner = CliRunner()


class Agent:
    """One session of an agent's client: its hook calls answered in this process over one
    `Warm`, as the watcher answers them (no transcript: what is printed is delivered)."""

    def __init__(self, ws: Workspace, warm: Warm, agent: str = "claude-code",
                 name: str = "s1") -> None:
        self.ws, self.warm, self.agent, self.name = ws, warm, agent, name
        self._tools = 0

    def call(self, event: str, **fields: Any) -> str:
        """One hook call; the context it printed ("" for none)."""
        data = {"hook_event_name": event, "session_id": self.name, "cwd": str(self.ws.root),
                **fields}
        text = answer(adapter(self.agent), json.dumps(data), HookOptions(), self.warm).text
        return json.loads(text)["hookSpecificOutput"]["additionalContext"] if text else ""

    def prompt(self, text: str, stop: bool = True) -> str:
        """A prompt (and, unless `stop` is False, the end of its answer); what it was told."""
        told = self.call(PROMPT[self.agent], prompt=text)
        if stop:
            self.call(STOP[self.agent])
        return told

    def shell(self, write: dict[str, str | None], command: str = "edit") -> None:
        """A shell tool that writes (None: deletes) files between its start and its end."""
        self._tools += 1
        tool = {"tool_name": SHELL[self.agent], "tool_input": {"command": command}}
        if self.agent != "gemini-cli":  # Gemini CLI gives a call no id
            tool["tool_use_id"] = f"toolu_{self._tools}"
        self.call(TOOL_START[self.agent], **tool)
        for rel, text in write.items():
            if text is None:
                (self.ws.root / rel).unlink()
            else:
                self.ws.write(rel, text)
        self.call(TOOL_END[self.agent], **tool, tool_response={"stdout": ""})

    @property
    def session(self) -> str:
        manager = self.warm.manager(self.ws.root)
        s = manager.by_external(f"{self.agent}:{self.name}")
        assert s is not None
        return s.id


def cli(ws: Workspace, *args: str) -> tuple[int, str, str]:
    done = runner.invoke(app, ["--workspace", str(ws.root), *args])
    return done.exit_code, done.stdout, done.stderr


def tree_of(ws: Workspace, commit: str) -> dict[str, str]:
    """The files a commit of freshline's repository holds → their text."""
    private = ws.root / ".freshline" / "conversations.git"
    names = git(private, "ls-tree", "-r", "--name-only", commit).splitlines()
    return {n: git(private, "show", f"{commit}:{n}") + "\n" for n in names}


def turns(ws: Workspace, session: str) -> list[dict[str, Any]]:
    code, out, err = cli(ws, "log", session, "--json")
    assert code == 0, err
    return [e for e in json.loads(out) if e["turn"] is not None]


@pytest.fixture
def warm() -> Iterator[Warm]:
    kept = Warm()
    yield kept
    kept.close()


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.write("notes/a.md", "# A\n")
    ws.write("notes/sub/b.md", "# B\n")
    ws.write("other/x.md", "# X\n")
    ws.configure({"p": {"include": ["notes"]}}, ignore=["*.tmp"])
    return ws


# --- each prompt, the files it found ---------------------------------------------------------


def test_each_prompt_is_a_checkpoint_of_the_files_it_found(notes: Workspace, warm: Warm) -> None:
    notes.write("notes/.env", "TOKEN=1\n")  # a secret by name: never in a tree
    notes.write("notes/scratch.tmp", "x\n")  # ignored
    notes.write("notes/keys.md", AWS)  # a secret by content: withheld
    agent = Agent(notes, warm)
    agent.call("SessionStart", source="startup")
    agent.prompt("first question")
    notes.write("notes/a.md", "# A, edited\n")
    notes.write("notes/c.md", "# C\n")
    (notes.root / "notes/sub/b.md").unlink()
    agent.prompt("second question")
    first, second = turns(notes, agent.session)
    assert (first["turn"], first["content"], second["content"]) == (
        1, "first question", "second question")
    one, two = tree_of(notes, first["commit"]), tree_of(notes, second["commit"])
    assert set(one) == {"notes/a.md", "notes/sub/b.md", "notes/keys.md"}
    assert one["notes/a.md"] == "# A\n" and "[secret withheld:" in one["notes/keys.md"]
    assert set(two) == {"notes/a.md", "notes/c.md", "notes/keys.md"}
    assert (two["notes/a.md"], two["notes/c.md"]) == ("# A, edited\n", "# C\n")


def test_a_checkpoint_written_after_its_answer_holds_the_files_its_prompt_found(
    notes: Workspace, warm: Warm
) -> None:
    """A prompt's objects and ref are written once its answer is out (the service's queue
    runs that next, else the workspace's next call): an edit made meanwhile stays out of
    its tree, and `log` in another manager writes it from its journal, once."""
    agent = Agent(notes, warm)
    agent.prompt("first")
    (first,) = turns(notes, agent.session)
    notes.write("notes/a.md", "# A, as the prompt found it\n")
    agent.prompt("second", stop=False)
    repo = warm.manager(notes.root).conversations.live_repo(agent.session)
    assert warm.pending(notes.root) and repo.ref_value(agent.session) == first["commit"]
    notes.write("notes/a.md", "# A, edited while it was answered\n")
    logged = turns(notes, agent.session)
    warm.catch_up(notes.root)  # written already: the same event, not a second one
    assert turns(notes, agent.session) == logged
    assert [t["content"] for t in logged] == ["first", "second"]
    assert tree_of(notes, logged[1]["commit"])["notes/a.md"] == "# A, as the prompt found it\n"
    key = CHECKPOINT_KEY.format(session=agent.session)
    assert not warm.manager(notes.root).store.meta_get(key)


def test_a_prompt_answered_by_a_process_killed_before_its_checkpoint_is_written_stays_a_turn(
    notes: Workspace, warm: Warm
) -> None:
    """The hook process is killed once its answer is printed, before the checkpoint's files
    are written: the store holds it, and the next prompt writes it first, as the killed
    prompt found the files."""
    agent = Agent(notes, warm)
    agent.prompt("first")
    notes.write("notes/a.md", "# A, as the killed prompt found it\n")
    call = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": agent.name,
                       "cwd": str(notes.root), "prompt": "killed"})
    killed = subprocess.run(
        [sys.executable, "-m", "freshline", "--workspace", str(notes.root), "hook",
         "claude-code"], input=call, capture_output=True, text=True, timeout=120,
        env={**os.environ, "FRESHLINE_KILL_AT": "hook:answered"})
    assert killed.returncode == -signal.SIGKILL and "notes/a.md" in killed.stdout
    notes.write("notes/a.md", "# A, later\n")
    agent.prompt("third")
    logged = turns(notes, agent.session)
    assert [t["content"] for t in logged] == ["first", "killed", "third"]
    assert [tree_of(notes, t["commit"])["notes/a.md"] for t in logged] == [
        "# A\n", "# A, as the killed prompt found it\n", "# A, later\n"]


OPERATIONS: list[list[tuple[str, str | None]]] = [
    [("notes/a.md", "one\n")],
    [("notes/deep/er/n.md", "n\n"), ("notes/sub/b.md", None)],
    [("notes/deep/er/n.md", None), ("notes/z.md", "z\n"), ("notes/a.md", "two\n")],
    [("notes/sub/b.md", "back\n"), ("notes/z.md", None), ("notes/c/d/e.md", "e\n")],
    [("notes/a.md", "# A\n")],  # back as it began
]


def test_checkpoints_built_from_the_changes_equal_a_whole_listing(
    notes: Workspace, warm: Warm
) -> None:
    """Each checkpoint applies the changes since the previous one to its tree; each must
    equal the tree a whole listing of the project writes."""
    agent = Agent(notes, warm)
    agent.prompt("start")
    manager = warm.manager(notes.root)
    for n, operation in enumerate(OPERATIONS):
        for rel, text in operation:
            if text is None:
                (notes.root / rel).unlink()
            else:
                notes.write(rel, text)
        agent.prompt(f"round {n}")
        checkpoint = turns(notes, agent.session)[-1]["commit"]
        whole = manager.conversations.live_tree(manager.in_scope.entries("p"), notes.root)
        assert git(notes.root / ".freshline" / "conversations.git", "rev-parse",
                   f"{checkpoint}^{{tree}}") == whole


# --- a shell's writes are the agent's own -----------------------------------------------------


@pytest.mark.parametrize("agent_name", ["claude-code", "gemini-cli", "codex"])
def test_what_a_shell_changed_is_never_told_back_as_news(
    notes: Workspace, warm: Warm, agent_name: str
) -> None:
    agent = Agent(notes, warm, agent_name)
    agent.prompt("first")
    agent.call(PROMPT[agent_name], prompt="edit with the shell")
    agent.shell({"notes/a.md": "# A by the shell\n", "notes/new.md": "new\n",
                 "notes/sub/b.md": None})
    agent.call(STOP[agent_name])
    notes.write("notes/theirs.md", "# the user's\n")  # after the shell ended
    told = agent.prompt("what changed?")
    assert "notes/theirs.md" in told
    for own in ("notes/a.md", "notes/new.md", "notes/sub/b.md"):
        assert own not in told


def test_every_file_of_a_codex_patch_is_its_own(notes: Workspace, warm: Warm) -> None:
    """With its start seen (its window), and without (the files it names): added,
    updated, deleted and moved files alike."""
    agent = Agent(notes, warm, "codex")
    agent.prompt("first")
    patch = ("*** Begin Patch\n*** Add File: notes/p1.md\n+one\n*** Add File: notes/p2.md\n"
             "+two\n*** Delete File: notes/sub/b.md\n*** End Patch\n")
    agent.call("UserPromptSubmit", prompt="patch")
    tool = {"tool_name": "apply_patch", "tool_input": {"command": patch},
            "tool_use_id": "call_1"}
    agent.call("PreToolUse", **tool)
    notes.write("notes/p1.md", "one\n")
    notes.write("notes/p2.md", "two\n")
    (notes.root / "notes/sub/b.md").unlink()
    agent.call("PostToolUse", **tool, tool_response="Success.")
    agent.call("Stop")
    unseen = patch.replace("p1.md", "p3.md").replace("p2.md", "p4.md").replace(
        "*** Delete File: notes/sub/b.md\n", "*** Update File: notes/a.md\n")
    notes.write("notes/p3.md", "one\n")
    notes.write("notes/p4.md", "two\n")
    notes.write("notes/a.md", "# A patched\n")
    agent.call("PostToolUse", tool_name="apply_patch", tool_input={"command": unseen},
               tool_use_id="call_2", tool_response="Success.")  # its start never came
    notes.write("notes/theirs.md", "# the user's\n")
    told = agent.prompt("what changed?")
    assert "notes/theirs.md" in told
    for own in ("p1.md", "p2.md", "sub/b.md", "p3.md", "p4.md", "notes/a.md"):
        assert own not in told


# --- rewind ------------------------------------------------------------------------------------


@pytest.fixture
def rewound(notes: Workspace, warm: Warm) -> tuple[Agent, str]:
    """Turn 1; turn 2 edits a.md with Bash; the user edits u.md; turn 3 writes b.md with
    Write. Returns the agent and turn 2's files of a.md and b.md."""
    agent = Agent(notes, warm)
    notes.write("notes/u.md", "# U\n")
    agent.prompt("one")
    agent.call("UserPromptSubmit", prompt="two: bash")
    agent.shell({"notes/a.md": "# A by bash\n"})
    agent.call("Stop")
    notes.write("notes/u.md", "# U, the user's\n")
    agent.call("UserPromptSubmit", prompt="three: write")
    notes.write("notes/sub/b.md", "# B by Write\n")
    agent.call("PostToolUse", tool_name="Write", tool_use_id="w1",
               tool_input={"file_path": str(notes.root / "notes/sub/b.md"), "content": "x"})
    agent.call("Stop")
    return agent, agent.session


def test_rewind_puts_back_the_agents_edits_by_any_tool_and_names_the_users(
    notes: Workspace, rewound: tuple[Agent, str]
) -> None:
    agent, session = rewound
    code, out, err = cli(notes, "rewind", session, "2", "--code", "--json")
    assert code == 3 and json.loads(out)["overwrites"] == [
        {"path": "notes/u.md", "by": "outside", "name": "", "turn": None}]
    assert (notes.root / "notes/a.md").read_text() == "# A by bash\n"  # nothing moved
    code, out, err = cli(notes, "rewind", session, "2", "--code", "--yes", "--json")
    assert code == 0, err
    done = json.loads(out)
    assert done["restored"] == ["notes/a.md", "notes/sub/b.md", "notes/u.md"]
    assert [o["path"] for o in done["overwrites"]] == ["notes/u.md"]
    assert (notes.root / "notes/a.md").read_bytes() == b"# A\n"
    assert (notes.root / "notes/sub/b.md").read_bytes() == b"# B\n"
    assert (notes.root / "notes/u.md").read_bytes() == b"# U\n"
    assert (notes.root / "other/x.md").read_bytes() == b"# X\n"  # outside the project
    told = agent.prompt("four")
    assert "rewound" in told and "notes/sub/b.md" in told
    assert "Modified:" not in told  # the rewind's writes are told once, as the rewind's
    code, out, _ = cli(notes, "log", session)
    assert "rewind to turn 2 (code)" in out and out.count("\nturn ") == 4


def test_bad_rewinds_are_one_line_and_change_nothing(
    notes: Workspace, rewound: tuple[Agent, str], tmp_path: Path
) -> None:
    agent, session = rewound
    other = Workspace(tmp_path / "other-ws")
    other.write("notes/a.md", "# elsewhere\n")
    other.configure({"p": {"include": ["notes"]}})
    checks = [
        (notes, [session, "9", "--code"], "no turn 9 in this conversation (turns 1 to 3)"),
        (other, [session, "2", "--code"], f"unknown session '{session}'"),
        (notes, [session, "2", "--conversation"], "rewind it there with /rewind"),
    ]
    for ws, args, message in checks:
        code, _out, err = cli(ws, "rewind", *args)
        assert code == 2 and err.count("\n") == 1 and message in err, err
    agent.prompt("four", stop=False)  # its answer has not ended
    head = turns(notes, session)[-1]["commit"]
    code, _out, err = cli(notes, "rewind", session, "2", "--code", "--yes")
    assert code == 2 and err.count("\n") == 1 and "is mid-turn (turn 4 began at" in err
    assert (notes.root / "notes/a.md").read_text() == "# A by bash\n"
    code, out, _ = cli(notes, "log", session, "--json")
    assert json.loads(out)[-1]["commit"] == head  # nothing recorded either
    agent.call("Stop")
    code, _out, err = cli(notes, "rewind", session, "2", "--code", "--yes")
    assert code == 0, err


def test_diff_between_two_prompts(notes: Workspace, rewound: tuple[Agent, str]) -> None:
    _agent, session = rewound
    code, out, err = cli(notes, "diff", session, "--from", "2", "--to", "3", "--json")
    assert code == 0, err
    patch = json.loads(out)["patch"]
    assert "-# A\n+# A by bash" in patch and "+# U, the user's" in patch
    assert "b.md" not in patch  # Write came in turn 3, after it began
    code, _out, err = cli(notes, "diff", session, "--to", "3")
    assert code == 2 and "--to needs --from" in err


# --- turns are prompts --------------------------------------------------------------------------


def test_a_notice_names_the_prompt_the_user_saw(notes: Workspace, warm: Warm) -> None:
    """Prompts 2 and 3 had nothing to deliver: the read in prompt 3 is still turn 3."""
    agent = Agent(notes, warm)
    for n in (1, 2, 3):
        assert (agent.prompt(f"prompt {n}", stop=False) != "") is (n == 1)
        if n == 3:
            agent.call("PostToolUse", tool_name="Read", tool_use_id="r1",
                       tool_input={"file_path": str(notes.root / "notes/a.md")})
        agent.call("Stop")
    notes.write("notes/a.md", "# A, edited\n")
    told = agent.prompt("prompt 4")
    assert f"you read {notes.root}/notes/a.md at turn 3" in told


# --- compaction ---------------------------------------------------------------------------------


@pytest.mark.parametrize("agent_name", ["claude-code", "codex"])
def test_compaction_tells_the_last_blocks_changes_again(
    notes: Workspace, warm: Warm, agent_name: str
) -> None:
    """Claude Code's `/compact` (and Codex's compaction) end with a SessionStart whose
    source is `compact`."""
    agent = Agent(notes, warm, agent_name)
    agent.call("SessionStart", source="startup")
    agent.prompt("one")
    notes.write("notes/edited-before-compact.md", "# news\n")
    assert "edited-before-compact.md" in agent.prompt("two")
    after = agent.call("SessionStart", source="compact")  # given once the summary is in
    assert "<project_context " in after  # the manifest
    assert "Created:" in after and "edited-before-compact.md" in after.split(
        "<project_context_updates")[1]  # and the change, told again as a change
    assert agent.prompt("three") == ""
    cleared = agent.call("SessionStart", source="clear")  # a new conversation: the manifest
    assert "<project_context " in cleared and "<project_context_updates " not in cleared


def test_gemini_compress_tells_the_changes_again_and_its_auto_check_does_not(
    notes: Workspace, warm: Warm
) -> None:
    agent = Agent(notes, warm, "gemini-cli")
    agent.prompt("one")
    notes.write("notes/news.md", "# news\n")
    assert "news.md" in agent.prompt("two")
    agent.call("PreCompress", trigger="auto")  # Gemini CLI fires it before every turn
    assert agent.prompt("three") == ""
    agent.call("PreCompress", trigger="manual")  # /compress
    after = agent.prompt("four")
    assert "<project_context " in after and "news.md" in after.split(
        "<project_context_updates")[1]


def test_a_hook_session_without_a_prompt_has_nothing_to_rewind(
    notes: Workspace, warm: Warm
) -> None:
    agent = Agent(notes, warm)
    agent.call("SessionStart", source="startup")
    code, _out, err = cli(notes, "rewind", agent.session, "1")
    assert code == 2 and "has recorded no prompt yet" in err
    manager = SessionManager(notes.config())
    try:
        assert not manager.conversations.exists(agent.session)
    finally:
        manager.close()


# --- a checkpoint's journal ------------------------------------------------------------------

OIDS = st.text("0123456789abcdef", min_size=40, max_size=40)


@settings(max_examples=50, deadline=None)
@given(OIDS, OIDS, OIDS, OIDS, st.text(),
       st.lists(st.tuples(st.sampled_from(["blob", "tree", "commit"]), st.binary())))
def test_a_journal_reads_back_as_the_recording(
    conversation: str, head: str, tree: str, commit: str, message: str,
    objects: list[tuple[str, bytes]],
) -> None:
    recording = Recording(conversation, head, tree, commit, message, objects)
    assert Recording.from_journal(recording.journal()) == recording


@pytest.mark.parametrize("text", [
    "", "[]", "{}", '{"conversation": "c"}', "not json",
    '{"conversation": "c", "head": "h", "tree": "t", "commit": "x", "message": "m", '
    '"objects": [["blob", "not base64!"]]}',
])
def test_what_is_not_a_journal_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(ValueError, match="^not a checkpoint's journal: "):
        Recording.from_journal(text)
