"""`freshline chat`: a terminal chat with an agent that is always told what changed.

The app holds no core logic: a send is `agent.runtime.send` and each slash command is
`tui.commands.run`, both run in a worker thread (they block on git, the tracker and the
model) while the UI stays live. The transcript pane shows the human's message and the
model's answer; the wire blocks go to the model only (`/updates` previews them).
"""

from __future__ import annotations

import threading
import time

from rich.console import RenderableType
from rich.panel import Panel
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import Input, RichLog, Static

from freshline.agent.backends import Backend, get_backend
from freshline.agent.runtime import SendResult, send
from freshline.config import Config
from freshline.context import Channel
from freshline.conversation import Author
from freshline.errors import ConflictStop, FreshlineError, SyncRequired, UsageError
from freshline.interfaces.tui import commands
from freshline.interfaces.tui.commands import Command, Invocation, Reply
from freshline.interfaces.tui.status import Status, read_status
from freshline.session import PreparedTurn, SessionManager
from freshline.tracker import FlushResult
from freshline.tracker.watcher import Watcher

PLACEHOLDER = "Message the agent, or /status /updates /diff /sync REV /log /help /quit"
TICK_S = 0.25  # how often the activity line and a converting status are refreshed


class ChatApp(App[None]):
    """A chat on one session: transcript, activity line, input and status bar."""

    CSS_PATH = "chat.tcss"
    TITLE = "freshline chat"
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", priority=True)]

    busy: reactive[bool] = reactive(False)

    def __init__(
        self,
        manager: SessionManager,
        session_id: str,
        backend: Backend,
        watcher: Watcher | None = None,
    ) -> None:
        super().__init__()
        self.manager = manager
        self.session_id = session_id
        self.backend = backend
        self.watcher = watcher
        self.status: Status | None = None
        self._streamed = ""
        self._started = 0.0

    def compose(self) -> ComposeResult:
        yield RichLog(id="transcript", wrap=True, markup=False, highlight=False)
        yield Static("", id="activity")
        yield Input(placeholder=PLACEHOLDER, id="prompt")
        yield Static("", id="status")

    def on_mount(self) -> None:
        self.sub_title = f"session {self.session_id} · model {self.backend.name}"
        for event in self.manager.conversations.log(self.session_id):
            if event.author in (Author.USER, Author.ASSISTANT) and event.content:
                self._message(event.author is Author.USER, event.content)
        self._show_status(read_status(self.manager, self.session_id))
        self.set_interval(TICK_S, self._tick)
        self.query_one("#prompt", Input).focus()
        if self.watcher is not None:
            # Changes are logged as they happen, so the status bar shows the agent falling
            # behind before the next send, not only after it.
            self.watcher.on_flush = self._changes_logged
            threading.Thread(target=self.watcher.run, daemon=True).start()

    def _changes_logged(self, _result: FlushResult) -> None:
        self.call_from_thread(self._refresh_status)

    def on_unmount(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()

    # -- input ---------------------------------------------------------------------------

    @on(Input.Submitted, "#prompt")
    def submitted(self, event: Input.Submitted) -> None:
        """A message goes to the model; a slash command runs; nothing runs while busy."""
        text = event.value.strip()
        if not text:
            return
        try:
            invocation = commands.parse(text)
        except UsageError as exc:
            self.note(str(exc), error=True)
            return
        if invocation is not None and invocation.command is Command.QUIT:
            self.exit()
            return
        if self.busy:
            self.note("still working on the last request", error=True)
            return
        self.busy, self._streamed, self._started = True, "", time.monotonic()
        if invocation is None:
            self._send(text)
        else:
            event.input.value = ""
            self._command(invocation)

    def watch_busy(self, busy: bool) -> None:
        prompt = self.query_one("#prompt", Input)
        prompt.disabled = busy
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
            self.call_from_thread(self._stopped, stop)
        except FreshlineError as exc:
            self.call_from_thread(self._failed, exc)
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
        self.call_from_thread(self._show_status, self._read_status())

    def _read_status(self) -> Status | None:
        try:
            return read_status(self.manager, self.session_id)
        except FreshlineError:
            return None

    # -- results (main thread) -----------------------------------------------------------

    def _prepared(self, turn: PreparedTurn) -> None:
        self._message(True, turn.message)
        if turn.held:
            self.note(f"held: {turn.held}")

    def _stream(self, chunk: str) -> None:
        self._streamed += chunk
        self.query_one("#activity", Static).update(Text(f"model › {self._streamed}", "italic"))

    def _answered(self, result: SendResult) -> None:
        for line in commands.tool_lines(result.events):
            self.note(line)
        self._message(False, result.response)
        if result.refreshed:
            paths = ", ".join(result.refreshed["paths"]) or "no paths in scope"
            self.note(f"refreshed from {result.refreshed['target']}: {paths}")
        self.query_one("#prompt", Input).value = ""

    def _stopped(self, stop: ConflictStop) -> None:
        lines = [str(stop), *(f"  {line}" for line in commands.conflict_lines(stop)),
                 "nothing was sent; your message is kept. Resolve with /sync REV "
                 "[--with-conflicts], then send again."]
        self.write(Panel(Text("\n".join(lines)), title="conflict stop", border_style="red"))

    def _failed(self, exc: FreshlineError) -> None:
        hint = " Run /sync REV to choose what to merge." if isinstance(exc, SyncRequired) else ""
        self.note(f"not sent: {exc}.{hint} Nothing was recorded; your message is kept.",
                  error=True)

    def _reply(self, reply: Reply) -> None:
        style = "red" if reply.error else "blue"
        self.write(Panel(Text(reply.body), title=reply.title, title_align="left",
                         border_style=style))

    def _idle(self, status: Status | None) -> None:
        if status is not None:
            self._show_status(status)
        self.busy = False

    def _show_status(self, status: Status) -> None:
        self.status = status
        self.query_one("#status", Static).update(status.line())

    def _tick(self) -> None:
        if self.status is None:
            return
        converting = bool(self.manager.materializer.in_flight(self.status.project))
        if self.busy and not self._streamed:
            waited = time.monotonic() - self._started
            what = "converting documents (holding the send)" if converting else "working"
            self.query_one("#activity", Static).update(Text(f"… {what} {waited:.0f}s", "dim"))
        elif not self.busy and converting != self.status.converting:
            self._refresh_status()

    # -- transcript ----------------------------------------------------------------------

    def write(self, renderable: RenderableType) -> None:
        """Append to the transcript pane."""
        self.query_one("#transcript", RichLog).write(renderable, expand=True)

    def note(self, text: str, error: bool = False) -> None:
        """A line from freshline itself (not part of the conversation)."""
        self.write(Text(text, "bold red" if error else "dim"))

    def _message(self, human: bool, text: str) -> None:
        who = Text("you › ", "bold cyan") if human else Text("model › ", "bold magenta")
        self.write(who + Text(text))


def open_session(manager: SessionManager, project: str | None, session: str | None) -> str:
    """The session to chat on: resume `session`, else a new one on `project` (or the only
    project there is). Raises UsageError when neither can be chosen."""
    if session is not None:
        if project is not None:
            raise UsageError("give --project or --session, not both")
        return manager.resume(session).id
    if project is None:
        names = sorted(manager.config.projects)
        if len(names) != 1:
            raise UsageError(f"choose a project with --project ({', '.join(names) or 'none'})")
        project = names[0]
    return manager.new(project).id


def run_chat(
    config: Config,
    project: str | None = None,
    session: str | None = None,
    model: str = "echo",
    base_url: str | None = None,
) -> str:
    """Run the chat until the user quits; returns the session id (to resume it later)."""
    backend = get_backend(model, base_url=base_url)
    manager = SessionManager(config)
    try:
        session_id = open_session(manager, project, session)
        ChatApp(manager, session_id, backend, Watcher(config)).run()
        return session_id
    finally:
        manager.close()

