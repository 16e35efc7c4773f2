"""`freshline chat`: a terminal chat with an agent that is always told what changed.

The app holds no core logic: a send is `agent.runtime.send` and each slash command is
`tui.commands.run`, both run in a worker thread (they block on git, the tracker and the
model) while the UI stays live. The transcript shows the human's messages, each with one
dim line of what the model was told (click it, or `/updates last`, for the blocks), and
the model's answers; the wire blocks themselves go to the model only.

A message that could not be sent (a conflict stop, a backend failure) stays in the input
and is remembered: a command typed meanwhile (on a line of its own below it, or after
clearing the input) runs, and the message comes back.

`/rewind` without a turn opens a picker of the last turns (`TurnPicker`: Enter rewinds,
Escape cancels); a rewind of the transcript shows the transcript again as the model now
has it and puts the turn's message back in the input; `/fork` moves the chat to the fork.

Its widgets are in `widgets.py`; which session it opens, and running it, in `opening.py`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from rich.console import RenderableType
from rich.panel import Panel
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import OptionList, Static

from freshline.agent.backends import Backend
from freshline.agent.runtime import SendResult, send
from freshline.context import Channel
from freshline.conversation import Author
from freshline.errors import ConflictStop, FreshlineError, SyncRequired, UsageError
from freshline.interfaces.lines import tool_lines
from freshline.interfaces.told import told_from_wire, told_line, wire_blocks
from freshline.interfaces.tui import commands, rewinding
from freshline.interfaces.tui.commands import Command, Invocation, Reply
from freshline.interfaces.tui.editing import History
from freshline.interfaces.tui.picker import TurnPicker
from freshline.interfaces.tui.prompt import PromptArea
from freshline.interfaces.tui.status import Status, read_status
from freshline.interfaces.tui.widgets import (
    Entry,
    StatusBar,
    Told,
    Transcript,
    header_line,
    plain,
)
from freshline.session import PreparedTurn, SessionManager
from freshline.tracker.gitmoves import ref_stamps

PLACEHOLDER = "Message the agent · Enter sends · Ctrl+J new line · /help"
TICK_S = 0.25  # how often the activity line and the documents' state are looked at
QUIT_WINDOW_S = 3.0  # a second Ctrl-C within this many seconds quits


class ChatApp(App[None]):
    """A chat on one session: header, transcript, activity line, input and status bar."""

    CSS_PATH = "chat.tcss"
    TITLE = "freshline chat"
    BINDINGS = [
        Binding("ctrl+c", "interrupt", "Clear / quit", priority=True, show=False),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    busy: reactive[bool] = reactive(False)

    def __init__(
        self,
        manager: SessionManager,
        session_id: str,
        backend: Backend,
    ) -> None:
        super().__init__()
        self.manager = manager
        self.session_id = session_id
        self.backend = backend
        self.status: Status | None = None
        self.history = History()
        self.kept: str | None = None  # a message not sent, to give back after a command
        self._streamed = ""
        self._started = 0.0
        self._quit_armed = 0.0
        self._snapshots_seen: int | None = None
        self._workspace_seen: tuple[int, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="header")
        yield Transcript(id="transcript")
        yield Static("", id="activity")
        yield PromptArea(Path(self.manager.config.root), self.history, id="prompt",
                         placeholder=PLACEHOLDER)
        yield StatusBar("", id="status")

    def on_mount(self) -> None:
        s = self.manager.get(self.session_id)
        self.sub_title = f"session {self.session_id} · model {self.backend.name}"
        self.query_one("#header", Static).update(header_line(
            self.session_id, s.project, self.backend.name, Path(self.manager.config.root)))
        self._replay()
        self._workspace_seen = self._workspace_stamp()
        self._show_status(read_status(self.manager, self.session_id))
        self.set_interval(TICK_S, self._tick)
        self.prompt.focus()

    def _replay(self, remember: bool = True) -> None:
        """The earlier transcript of a resumed session as the model has it (a rewind's
        turns left out), with what each message carried; `remember` adds the messages to
        the input's history (once, when the chat opens)."""
        for event in self.manager.conversations.transcript(self.session_id):
            if event.rewind is not None:
                self.note(commands.rewind_note(event.rewind))
            elif event.author is Author.USER and event.content:
                if remember:
                    self.history.add(event.content)
                self._message(True, event.content)
                blocks = wire_blocks(event.wire or event.content, event.content)
                self.write(Told(told_from_wire(blocks), blocks))
            elif event.author is Author.ASSISTANT and event.content:
                self._message(False, event.content)

    @property
    def prompt(self) -> PromptArea:
        """The input."""
        return self.query_one("#prompt", PromptArea)

    # -- input ---------------------------------------------------------------------------

    @on(PromptArea.Submitted)
    def submitted(self, event: PromptArea.Submitted) -> None:
        """A message goes to the model; a command runs (alone, or on the last line below a
        message, which stays); nothing runs while busy."""
        text = event.value.strip()
        if not text:
            return
        message, _, last = text.rpartition("\n")
        if message and not commands.names_command(last):
            message, last = text, ""
        elif not message:
            message, last = ("", text) if text.startswith("/") else (text, "")
        if last:
            self._run_command(last.strip(), keep=message)
        else:
            self._send_message(message)

    def _run_command(self, line: str, keep: str) -> None:
        try:
            invocation = commands.parse(line)
        except UsageError as exc:
            self.note(str(exc), error=True)
            self._restore(keep)
            return
        assert invocation is not None
        self.history.add(line)
        if invocation.command is Command.QUIT:
            self.exit()
            return
        if self.busy:
            self.note("still working on the last request", error=True)
            return
        self._restore(keep)
        if invocation.command is Command.REWIND and rewinding.turn_of(invocation.args) is None:
            self._pick(invocation)
            return
        self.busy, self._streamed, self._started = True, "", time.monotonic()
        self._command(invocation)

    def _pick(self, invocation: Invocation) -> None:
        """Offer the last turns to rewind to."""
        turns = rewinding.recent_turns(self.manager, self.session_id)
        if not turns:
            self.note("no turn to rewind to yet", error=True)
            return
        picker = TurnPicker(turns, invocation)
        self.mount(picker, before=self.prompt)
        picker.focus()

    @on(OptionList.OptionSelected, "#picker")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        picker = self.query_one("#picker", TurnPicker)
        args = (event.option.id or "", *picker.invocation.args)
        picker.remove()
        self.busy, self._streamed, self._started = True, "", time.monotonic()
        self._command(Invocation(Command.REWIND, args))

    def _restore(self, keep: str) -> None:
        """Leave the input holding what is kept: the text around the command, else a
        message that was not sent."""
        self.prompt.load_text(keep or self.kept or "")
        self.prompt.move_cursor(self.prompt.document.end)

    def _send_message(self, message: str) -> None:
        if self.busy:
            self.note("still working on the last request", error=True)
            return
        self.history.add(message)
        self.busy, self._streamed, self._started = True, "", time.monotonic()
        self._send(message)

    def action_interrupt(self) -> None:
        """Ctrl-C: clear the input first; a second press (soon after) quits."""
        now = time.monotonic()
        if now - self._quit_armed < QUIT_WINDOW_S:
            self.exit()
            return
        self._quit_armed = now
        if self.prompt.text:
            self.prompt.clear()
        self.query_one("#activity", Static).update(Text("press Ctrl-C again to quit", "dim"))

    @on(PromptArea.Changed)
    def _typed(self, _event: PromptArea.Changed) -> None:
        if self.prompt.text:
            self._quit_armed = 0.0

    @on(PromptArea.Completed)
    def _choices(self, event: PromptArea.Completed) -> None:
        self.query_one("#activity", Static).update(Text("  ".join(event.options), "dim"))

    def watch_busy(self, busy: bool) -> None:
        prompt = self.prompt
        prompt.read_only = busy
        if not busy:
            self.query_one("#activity", Static).update("")
            prompt.focus()

    # -- workers (threads) ---------------------------------------------------------------

    @work(thread=True, group="freshline")
    def _send(self, message: str) -> None:
        try:
            result = send(
                self.manager, self.session_id, message, self.backend,
                on_text=lambda chunk: self.call_from_thread(self._stream, chunk),
                on_prepared=lambda turn: self.call_from_thread(self._prepared, turn),
                channel=Channel.CHAT,
                on_wait=lambda who: self.call_from_thread(
                    self.note, f"waiting for another send on this session ({who})"),
            )
        except ConflictStop as stop:
            self.call_from_thread(self._stopped, stop, message)
        except FreshlineError as exc:
            self.call_from_thread(self._failed, exc, message)
        else:
            self.call_from_thread(self._answered, result)
        finally:
            self.call_from_thread(self._idle, self._read_status())

    @work(thread=True, group="freshline")
    def _command(self, invocation: Invocation) -> None:
        try:
            reply = commands.run(self.manager, self.session_id, invocation)
        except FreshlineError as exc:
            reply = Reply(f"/{invocation.command.value} failed", str(exc), error=True)
        self.call_from_thread(self._reply, reply)
        self.call_from_thread(self._idle, self._read_status())

    @work(thread=True, group="status", exclusive=True)
    def _refresh_status(self) -> None:
        status = self._read_status()
        if status is not None:
            self.call_from_thread(self._show_status, status)

    def _read_status(self) -> Status | None:
        stamp = self._workspace_stamp()  # before the read: a move during it shows next tick
        try:
            status = read_status(self.manager, self.session_id)
        except FreshlineError:
            return None
        self._workspace_seen = stamp
        return status

    # -- results (main thread) -----------------------------------------------------------

    def _prepared(self, turn: PreparedTurn) -> None:
        self._message(True, turn.message)
        blocks = wire_blocks(turn.wire_prompt, turn.message)
        told = turn.staged.told if turn.updates else None
        self.write(Told(told_line(turn.manifest is not None, told), blocks))
        if turn.held:
            self.note(f"held: {turn.held}")

    def _stream(self, chunk: str) -> None:
        self._streamed += chunk
        self.query_one("#activity", Static).update(Text(f"model › {self._streamed}", "italic"))

    def _answered(self, result: SendResult) -> None:
        for line in tool_lines(result.events):
            self.note(line)
        self._message(False, result.response)
        self.kept = None
        self.prompt.clear()

    def _stopped(self, stop: ConflictStop, message: str) -> None:
        self.kept = message
        lines = [str(stop), *(f"  {line}" for line in commands.conflict_lines(stop)),
                 "nothing was sent; your message is kept. Resolve with /sync REV "
                 "[--with-conflicts] (type it on a new line, Ctrl+J), then send again."]
        self.write(Panel(Text("\n".join(lines)), title="conflict stop", border_style="red"))

    def _failed(self, exc: FreshlineError, message: str) -> None:
        self.kept = message
        hint = " Run /sync REV to choose what to merge." if isinstance(exc, SyncRequired) else ""
        self.note(f"not sent: {exc}.{hint} Nothing was recorded; your message is kept.",
                  error=True)

    def _reply(self, reply: Reply) -> None:
        if reply.session is not None:
            self.session_id = reply.session
            self.sub_title = f"session {self.session_id} · model {self.backend.name}"
            s = self.manager.get(self.session_id)
            self.query_one("#header", Static).update(header_line(
                self.session_id, s.project, self.backend.name, Path(self.manager.config.root)))
        if reply.reload:
            self.query_one("#transcript", Transcript).remove_children()
            self._replay(remember=False)
        style = "red" if reply.error else "blue"
        self.write(Panel(Text(reply.body), title=reply.title, title_align="left",
                         border_style=style))
        if reply.draft is not None:
            self.kept = None
            self.prompt.load_text(reply.draft)
            self.prompt.move_cursor(self.prompt.document.end)

    def _idle(self, status: Status | None) -> None:
        if status is not None:
            self._show_status(status)
        self.busy = False

    def _show_status(self, status: Status) -> None:
        self.status = status
        self.query_one("#status", StatusBar).status = status

    def _tick(self) -> None:
        if self.status is None:
            return
        converting = bool(self.manager.materializer.in_flight(self.status.project))
        if self.busy and not self._streamed:
            waited = time.monotonic() - self._started
            what = "converting documents (holding the send)" if converting else "working"
            self.query_one("#activity", Static).update(Text(f"… {what} {waited:.0f}s", "dim"))
        elif not self.busy and (converting != self.status.converting or self._new_snapshots()
                                or self._workspace_moved()):
            self._refresh_status()

    def _workspace_moved(self) -> bool:
        """Whether the project's epoch or a ref moved since the status was read or last
        looked at: the service logs changes as they happen, so the status bar shows the
        agent falling behind before the next send, and a commit on the checkout target
        shows as "moved" as soon as git writes it."""
        stamp = self._workspace_stamp()
        seen, self._workspace_seen = self._workspace_seen, stamp
        return seen is not None and seen != stamp

    def _workspace_stamp(self) -> tuple[int, ...]:
        project = self.manager.get(self.session_id).project
        return (self.manager.tracker.epoch(project), *ref_stamps(Path(self.manager.config.root)))

    def _new_snapshots(self) -> bool:
        """Whether a snapshot or failure marker was written since the last look (by this
        process or another: a watcher converts documents too)."""
        try:
            stamp = os.stat(self.manager.materializer.store.directory).st_mtime_ns
        except OSError:
            return False
        seen, self._snapshots_seen = self._snapshots_seen, stamp
        return seen is not None and seen != stamp

    # -- transcript ----------------------------------------------------------------------

    def write(self, item: RenderableType | Static) -> None:
        """Append to the transcript pane and keep its end in view."""
        pane = self.query_one("#transcript", Transcript)
        pane.mount(item if isinstance(item, Static) else Entry(item))
        pane.scroll_end(animate=False)

    def note(self, text: str, error: bool = False) -> None:
        """A line from freshline itself (not part of the conversation)."""
        self.write(Text(text, "bold red" if error else "dim"))

    def _message(self, human: bool, text: str) -> None:
        who = Text("you › ", "bold cyan") if human else Text("model › ", "bold magenta")
        self.write(who + Text(text))

    def transcript_text(self) -> str:
        """The transcript as plain text (what the pane shows)."""
        lines = []
        for child in self.query_one("#transcript", Transcript).children:
            if isinstance(child, Static):
                lines.append(plain(child))
        return "\n".join(lines)
