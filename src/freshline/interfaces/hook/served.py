"""The hook served by the watcher: every hook event answered in the watcher's process.

The hook process (`cli/fast.hook`) sends its payload over the workspace's socket
(`watchsock.py`, op "hook") and prints the answer; the watcher answers with `core.answer`
over its warm trackers, session managers and parsed configs (`core.Warm`), one call at a
time, in the order they arrived. A START or PROMPT waits for its answer, and so does a
tool's start (a shell's window must open before it runs). A tool's end, a STOP, a
COMPACT or an END call is acknowledged as soon as the watcher holds it (its place in the
queue) and done after: the agent's next call queues behind it, so it finds the record
written and the session closed. A failure is logged to the hook log the hook process
names and answered with nothing, as the hook process itself does (`process.run`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from freshline.errors import UsageError
from freshline.interfaces.hook import adapter as adapter_named
from freshline.interfaces.hook.core import Answer, Follow, Warm, answer
from freshline.interfaces.hook.process import follow_up, log
from freshline.interfaces.hook.protocol import Adapter, Call, HookOptions, Phase
from freshline.session.evidence import Moment

T = TypeVar("T")
HANDED_OVER = frozenset({Moment.TOOL, Moment.STOP, Moment.COMPACT, Moment.END})  # once queued


def handed_over(call: Call) -> bool:
    """Whether a call is acknowledged once queued (its answer is always empty, and the
    agent need not wait for its work): not a start, a prompt or a tool's start."""
    starting = call.tool is not None and call.tool.phase is Phase.START
    return call.moment in HANDED_OVER and not starting


class HookService:
    """Answers hook calls for the watcher of the workspace at `root` (its own watcher is
    not started again by a follow-up)."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._warm = Warm()
        self._queue = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hook")

    def handle(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """One "hook" request: {"agent", "payload", "workspace", "project", "env"} →
        {"ok": true, "text": what the hook prints}."""
        chosen = adapter_named(str(request.get("agent")))
        env = {str(k): str(v) for k, v in dict(request.get("env") or {}).items()}
        workspace, project = request.get("workspace"), request.get("project")
        options = HookOptions.from_env(chosen, Path(workspace) if workspace else None,
                                       str(project) if project else None, env)
        payload = str(request.get("payload", ""))
        try:
            call = chosen.parse(payload)
        except UsageError as exc:
            log(chosen.name, f"{type(exc).__name__}: {exc}", env)
            return {"ok": True, "text": ""}
        job = self._queue.submit(self._answer, chosen, payload, options, env)
        return {"ok": True, "text": "" if handed_over(call) else job.result()}

    def _answer(
        self, chosen: Adapter, payload: str, options: HookOptions, env: Mapping[str, str]
    ) -> str:
        try:
            answered = answer(chosen, payload, options, self._warm)
        except Exception as exc:  # the hook must never break the prompt
            log(chosen.name, f"{type(exc).__name__}: {exc}", env)
            return ""
        others = tuple(f for f in answered.follow_ups
                       if not (f.kind is Follow.WATCH and f.root == self._root))
        if others:  # after the answer is out, before the next call
            self._queue.submit(self._follow, chosen, Answer(follow_ups=others), env)
        return answered.text

    def _follow(self, chosen: Adapter, answered: Answer, env: Mapping[str, str]) -> None:
        try:
            follow_up(answered, self._warm)
        except Exception as exc:  # a background step: nobody is there to see it raise
            log(chosen.name, f"{type(exc).__name__}: {exc}", env)

    def call(self, work: Callable[[Warm], T]) -> T:
        """Run `work` over the warm trackers and managers, in turn with the hook calls
        (another hot command the watcher answers)."""
        return self._queue.submit(work, self._warm).result()

    def drain(self) -> None:
        """Wait until every call handed over so far is done."""
        self._queue.submit(lambda: None).result()

    def close(self) -> None:
        """Finish what was handed over, then close the warm stores."""
        self._queue.shutdown(wait=True)
        self._warm.close()
