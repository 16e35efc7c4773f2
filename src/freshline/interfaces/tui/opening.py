"""Which session `freshline chat` opens (`--session`, `--continue`, or a new one on the
project), and running the chat on it until the user quits."""

from __future__ import annotations

from freshline.agent.backends import backend_for
from freshline.config import Config
from freshline.context import Channel
from freshline.errors import UsageError
from freshline.interfaces.tui.app import ChatApp
from freshline.session import SessionManager
from freshline.session.lifecycle import most_recent


def open_session(
    manager: SessionManager, project: str | None, session: str | None, resume_last: bool = False
) -> str:
    """The session to chat on: resume `session`; with `resume_last`, the chat session (of
    `project`, if given) used last; else a new one on `project` (or the only project there
    is). Raises UsageError when none can be chosen."""
    if session is not None:
        if project is not None or resume_last:
            other = "--project" if project is not None else "--continue"
            raise UsageError(f"give {other} or --session, not both")
        return manager.resume(session).id
    if resume_last:
        last = most_recent(manager.sessions(project), Channel.CHAT.value, project)
        if last is None:
            where = f" of project '{project}'" if project else ""
            raise UsageError(f"no chat session{where} to continue: start one with --project")
        return manager.resume(last.id).id
    if project is None:
        names = sorted(manager.config.projects)
        if len(names) != 1:
            raise UsageError(f"choose a project with --project ({', '.join(names) or 'none'})")
        project = names[0]
    return manager.new(project, channel=Channel.CHAT).id


def run_chat(
    config: Config,
    project: str | None = None,
    session: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    resume_last: bool = False,
) -> str:
    """Run the chat until the user quits; returns the session id (to resume it later).
    `resume_last` continues the chat session used last (`open_session`)."""
    from freshline.interfaces.autostart import ensure

    backend = backend_for(config.model, model, base_url)
    manager = SessionManager(config)
    try:
        session_id = open_session(manager, project, session, resume_last)
        ensure(config)  # the service logs changes as they happen
        ChatApp(manager, session_id, backend).run()
        return session_id
    finally:
        manager.close()
