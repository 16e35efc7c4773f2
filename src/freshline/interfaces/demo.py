"""`freshline demo`: the whole mission on a sample workspace, offline, in under a minute.

It builds a workspace in a temp dir (markdown notes with tags and front matter, a generated
DOCX and PDF, a git repository with a feature branch), drives two conversations with a
scripted model, and tells what happens at each step in sentences, showing what the model
receives: the wire blocks, which the visible transcript never shows. It is written for an
80-column terminal: panels wrap, and the temp dir's long paths are shortened on screen.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule

from freshline.agent.backends import Backend, get_backend
from freshline.agent.runtime import SendResult, send
from freshline.config import add_project, init_workspace, load_config
from freshline.errors import ConflictStop
from freshline.interfaces.lines import event_line, tool_lines
from freshline.interfaces.told import wire_blocks
from freshline.program import as_typed
from freshline.session import SessionManager

NOTES = {
    "notes/Reading List.md": (
        "---\ntags: [paper, reading]\nstatus: active\n---\n# Reading List\n\n"
        "- Attention Is All You Need\n- [[Retrieval notes]]\n"
    ),
    "notes/Retrieval notes.md": (
        "---\nstatus: active\n---\n# Retrieval notes\n\n"
        "Dense retrieval beats BM25 on most #paper benchmarks.\n"
    ),
    "notes/Groceries.md": "# Groceries\n\n#personal eggs, bread, coffee\n",
}
GREETING = 'def greet(name):\n    return "Hello " + name\n'
CODE = {
    "src/greeting.py": GREETING,
    "src/util.py": "def shout(text):\n    return text.upper()\n",
    "README.md": "# greeter\n\nSays hello.\n",
}
IDEA_NOTE = (
    "---\ntags: [paper]\n---\n# Ideas\n\nCombine dense retrieval with a re-ranker; "
    "see [[Reading List]].\n"
)
PDF_LINES = (
    "Attention Is All You Need",
    "The Transformer replaces recurrence with self-attention.",
    "It trains faster and reaches 28.4 BLEU on WMT 2014 English-German.",
)
RESOLVED = 'def greet(name):\n    return f"Hi, {name}!"\n'
WIDTH = 80  # the demo reads best at this width; wider terminals get it too
WORKSPACE = "<workspace>"  # how the temp workspace's path is shown (the model sees it whole)
TRY_IT = (  # what the demo ends with, after the command that runs freshline
    "init ~/notes",
    "-w ~/notes project add notes --include '*.md'",
    "-w ~/notes chat --project notes",
)

RESEARCH_SCRIPT = [
    [{"tool": "list", "args": {"path": "notes"}},
     {"say": "Your project holds a reading list, retrieval notes and a requirements document "
             "(I read it through its snapshot)."}],
    [{"tool": "read", "args": {"path": "notes/Ideas.md"}},
     {"say": "Your new note 'Ideas' suggests pairing dense retrieval with a re-ranker."}],
    [{"tool": "read", "args": {"path": "papers/attention.pdf"}},
     {"say": "The paper is still being converted; I will read its snapshot next turn."}],
    [{"tool": "read", "args": {"path": "papers/attention.pdf"}},
     {"say": "The Transformer replaces recurrence with self-attention and reaches 28.4 BLEU."}],
]
CODE_SCRIPT = [
    [{"tool": "read", "args": {"path": "src/greeting.py"}},
     {"tool": "edit", "args": {"path": "src/greeting.py", "old": '"Hello " + name',
                               "new": 'f"Hello, {name}!"'}},
     {"tool": "write", "args": {"path": "src/test_greeting.py", "content":
      "from greeting import greet\n\n\ndef test_greet():\n    assert greet('Ada')"
      " == 'Hello, Ada!'\n"}},
     {"say": "The greeting now reads 'Hello, Ada!' and has a test."}],
    [{"say": "The target moved: I will re-read src/util.py and README.md before using them."}],
    [{"tool": "read", "args": {"path": "src/greeting.py"}},
     {"tool": "write", "args": {"path": "src/greeting.py", "content": RESOLVED}},
     {"say": "Resolved: kept your teammate's 'Hi' with my f-string and punctuation."}],
]


def pdf_bytes(lines: Sequence[str]) -> bytes:
    """A one-page PDF with real text: each line in Helvetica."""
    def literal(text: str) -> str:
        return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"

    content = "\n".join(
        ["BT", "/F1 12 Tf", "16 TL", "72 720 Td", *(f"{literal(t)} Tj T*" for t in lines), "ET"]
    ).encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


def write_docx(path: Path) -> None:
    """A small requirements document."""
    import docx

    document = docx.Document()
    document.add_heading("Search requirements", level=1)
    document.add_paragraph("Answers must cite the notes they come from.", style="List Bullet")
    document.add_paragraph("Results within 200 ms.", style="List Bullet")
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))


def write_files(root: Path, files: dict[str, str]) -> None:
    """Create text files under `root`, making folders."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


class Demo:
    """The sample workspace, its two conversations, and the console they are shown on."""

    def __init__(self, base: Path, out: Console) -> None:
        self.out = out
        self.root = base / "workspace"
        self.teammate = base / "teammate"
        self.scripts = base / "scripts"
        self.home = base
        self.manager: SessionManager | None = None
        self.step = 0

    # -- setup ---------------------------------------------------------------------------

    def git(self, cwd: Path, *args: str) -> str:
        """Run git as the demo's teammate, independent of the user's git configuration."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_AUTHOR_NAME="Teammate", GIT_AUTHOR_EMAIL="teammate@example.com",
                   GIT_COMMITTER_NAME="Teammate", GIT_COMMITTER_EMAIL="teammate@example.com",
                   GIT_CONFIG_NOSYSTEM="1", HOME=str(self.home), LC_ALL="C")
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=True)
        return done.stdout.decode().strip()

    def build(self) -> SessionManager:
        """The sample workspace: files, projects, a git history with a feature branch."""
        init_workspace(self.root)
        write_files(self.root, NOTES | CODE)
        write_docx(self.root / "docs" / "requirements.docx")
        add_project(self.root, "research", ["notes", "papers", "*.docx"], ["#personal"])
        add_project(self.root, "code", ["src", "README.md"], mode="isolated")
        self.git(self.root, "init", "--quiet", "--initial-branch=main")
        self.git(self.root, "add", "-A")
        self.git(self.root, "commit", "--quiet", "-m", "Initial notes and code")
        self.git(self.root, "branch", "feature")
        self.git(self.root, "worktree", "add", "--quiet", str(self.teammate), "feature")
        for name, script in (("research", RESEARCH_SCRIPT), ("code", CODE_SCRIPT)):
            self.scripts.mkdir(exist_ok=True)
            (self.scripts / f"{name}.json").write_text(json.dumps({"turns": script}))
        config = load_config(self.root)
        self.heading("A sample workspace")
        self.say(f"A folder of notes (tagged markdown), a requirements document (DOCX) and a "
                 f"little Python program, kept in git on branch main, with a teammate working "
                 f"on branch feature. It lives in {self.root}, shown below as {WORKSPACE}.")
        for name, p in config.projects.items():
            kept = f", leaving out {', '.join(p.exclude)}" if p.exclude else ""
            how = ("the agent reads the workspace itself" if p.mode.value == "live"
                   else "the agent works in a worktree of its own")
            self.say(f"  Project [bold]{name}[/] takes in {', '.join(p.include)}{escape(kept)} "
                     f"({p.mode.value}: {how}).")
        return SessionManager(config)

    def backend(self, name: str) -> Backend:
        """The scripted model for one conversation."""
        return get_backend(f"scripted:{self.scripts / name}.json")

    def teammate_commits(self, files: dict[str, str], message: str) -> None:
        """An upstream commit on `feature`, made in the teammate's own checkout."""
        write_files(self.teammate, files)
        self.git(self.teammate, "commit", "--quiet", "-am", message)
        self.say(f"[yellow]Your teammate[/] commits \"{escape(message)}\" on feature, "
                 f"changing {', '.join(sorted(files))}.")

    # -- output --------------------------------------------------------------------------

    def heading(self, title: str) -> None:
        """A numbered step heading."""
        self.step += 1
        self.out.print()
        self.out.print(Rule(f"[bold]{self.step}. {escape(title)}", align="left"))

    def short(self, text: str) -> str:
        """`text` with the workspace's absolute path shown as <workspace>."""
        return text.replace(str(self.root), WORKSPACE)

    def say(self, text: str) -> None:
        """A line of narration."""
        self.out.print(text)

    def turn(self, session: str, message: str, backend: Backend) -> SendResult:
        """Send one human message and show the wire prompt, the tools used and the answer."""
        assert self.manager is not None
        self.say(f"[bold cyan]you ›[/] {escape(message)}")
        result = send(self.manager, session, message, backend)
        self.show(result, message)
        return result

    def show(self, result: SendResult, message: str) -> None:
        """The wire blocks in a panel, each tool call, the answer, and what it changed."""
        blocks = self.short(wire_blocks(result.wire_prompt, message))
        if result.held:
            self.say(f"[magenta]The send waited:[/] {escape(result.held)}.")
        self.out.print(Panel(escape(blocks or "(no blocks: nothing changed)"), border_style="dim",
                             title="what the model receives before your words",
                             title_align="left"))
        events = [replace(e, content=self.short(e.content)) for e in result.events]
        for line in tool_lines(events, 28):
            self.say("  " + escape(line))
        self.say(f"[bold magenta]model ›[/] {escape(result.response)}")
        self.say(f"[dim]{after_turn(result)}[/]")

    # -- the story -----------------------------------------------------------------------

    def run(self) -> None:
        """Every step, in order."""
        self.manager = self.build()
        try:
            self.live_steps()
            self.isolated_steps()
            self.transcript()
            self.heading("Done")
            self.try_it()
        finally:
            self.manager.close()

    def try_it(self) -> None:
        """How to go on with your own folder, in commands that run as printed (a command
        never wraps: it is copied whole)."""
        command, by_name = as_typed()
        if not by_name:
            self.say("freshline is not on your PATH: `make install` in its checkout puts it "
                     "there; until then run it by its full path, as below.")
        self.say("Try it on your own folder of notes:")
        for words in TRY_IT:
            self.out.print(f"  {command} {words}", markup=False, highlight=False,
                           soft_wrap=True)

    def transcript(self) -> None:
        """The isolated conversation as git records it: one commit per event, no blocks."""
        m = self.manager
        assert m is not None
        session = m.sessions("code")[-1].id
        self.heading("The transcript is git history")
        self.say(f"Every event of the isolated conversation is a commit on "
                 f"refs/freshline/conversations/{session}, oldest first. The messages are "
                 "there; the blocks the model received are not:")
        for event in m.conversations.log(session):
            content = self.short(event.content)
            self.say("  " + escape(event_line(replace(event, content=content), 48)))

    def live_steps(self) -> None:
        """A live conversation over notes: manifest, a new note, a PDF converting."""
        m = self.manager
        assert m is not None
        model = self.backend("research")
        s = m.new("research").id
        self.heading("First turn: the manifest")
        self.say("A new session's first prompt carries the project's manifest: its sources, "
                 "with converted documents as source → snapshot.")
        self.turn(s, "What is in this project?", model)

        self.heading("A note is added → named on the next turn")
        write_files(m.config.root, {"notes/Ideas.md": IDEA_NOTE})
        self.say("[yellow]You[/] write a new note, notes/Ideas.md, tagged #paper.")
        self.turn(s, "I jotted down an idea.", model)

        self.heading("A PDF is dropped in → conversion in progress")
        m.settle()
        (m.config.root / "papers").mkdir()
        (m.config.root / "papers" / "attention.pdf").write_bytes(pdf_bytes(PDF_LINES))
        self.say("[yellow]You[/] save a paper as papers/attention.pdf.")
        self.turn(s, "Here is the paper I mentioned.", model)

        self.heading("A later turn: the snapshot is ready")
        m.settle()
        self.say("The conversion finished in a worker process between turns.")
        self.turn(s, "What does it say?", model)

    def isolated_steps(self) -> None:
        """An isolated conversation on the code: edits, a refresh, a conflict, a sync."""
        m = self.manager
        assert m is not None
        model = self.backend("code")
        self.heading("An isolated conversation: the agent edits its own worktree")
        s = m.new("code", mode="isolated", target="feature").id
        self.say(f"A session on project code follows branch feature; its agent works in "
                 f"{self.short(str(m.conversations.worktree(s)))}.")
        self.turn(s, "Make the greeting friendlier and add a test.", model)
        self.say("Its edits are commits of the conversation. Its own work, against what it "
                 "started from:")
        self.out.print(Panel(escape(m.conversations.diff(s).strip()), border_style="dim"))

        self.heading("Upstream commits → a refresh merge on the next turn")
        self.teammate_commits({"src/util.py": "def shout(text):\n    return text.upper() + '!'\n",
                               "README.md": "# greeter\n\nSays hello, loudly.\n"},
                              "Shout louder")
        result = self.turn(s, "Anything new upstream?", model)
        if result.refreshed:
            self.say(f"The turn merged feature first; the paths it brought in, "
                     f"{', '.join(result.refreshed['paths'])}, were named to the model.")

        self.heading("A conflicting upstream edit → stop before the model is called")
        self.teammate_commits({"src/greeting.py": 'def greet(name):\n    return "Hi " + name\n'},
                              "Say hi")
        head = m.conversations.head(s)
        cursor = m.get(s).cursor
        message = "Carry on."
        self.say(f"[bold cyan]you ›[/] {message}")
        try:
            send(m, s, message, model)
        except ConflictStop as stop:
            self.say(f"[red]Stopped:[/] {escape(str(stop))}.")
        kept = m.conversations.head(s) == head and m.get(s).cursor == cursor
        self.say("The model was not called and nothing was recorded: the conversation and "
                 "the agent's cursor are where they were." if kept else
                 "[red]Unexpected: the conversation moved although the send stopped.[/]")

        self.heading("sync: merge with the conflict recorded, then let the agent resolve it")
        merged = m.conversations.sync(s, "feature", with_conflicts=True)
        conflicts = [c.describe() for c in merged.conflicts] if merged else []
        self.say(f"`freshline sync … feature --with-conflicts` records the merge with its "
                 f"conflicts ({'; '.join(conflicts)}), for the agent to resolve.")
        self.turn(s, "Resolve the conflict in src/greeting.py.", model)
        left = [c.describe() for c in m.conversations.unresolved_conflicts(s)]
        self.say(f"Conflicts left: {'; '.join(left)}." if left else
                 "No conflict is left: the work can be published as a branch.")


def after_turn(result: SendResult) -> str:
    """What an accepted turn changed, in a sentence: the agent's cursor and the commit."""
    before, after = result.cursor_before, result.cursor_after
    if before is None or "<project_context " in result.wire_prompt:
        told = f"The agent now knows the project as of epoch {after}"
    elif before == after:
        told = (f"The agent's cursor stays at epoch {after}: the project's files did not "
                "change since its last turn")
    else:
        told = (f"The agent's cursor moved from epoch {before} to {after}: it has been told "
                "every change so far")
    return f"{told}. The turn is commit {(result.head or '')[:10]} of the conversation."


def run_demo(out: Console | None = None) -> None:
    """Build the sample workspace in a temp dir and walk through every step on `out`."""
    console = out or Console(highlight=False, width=min(Console().width, WIDTH))
    with tempfile.TemporaryDirectory(prefix="freshline-demo-") as base:
        Demo(Path(base).resolve(), console).run()
