"""Hook calls answered in the service: every agent's events, from the socket or over HTTP.

Each call is answered with `core.answer` over the service's warm trackers, session
managers and parsed configs (`core.Warm`), one call at a time per workspace, in the order
they arrived: a workspace's calls queue on a thread of its own, so a slow one never holds
up another workspace's. A START or PROMPT waits for its answer, and so does a tool's
start (a shell's window must open before it runs). A tool's end, a STOP, a COMPACT or an
END call is acknowledged as soon as the service holds it (its place in the queue) and
done after: the agent's next call queues behind it, so it finds the record written and
the session closed. A payload that does not parse is refused before anything runs; a failure while
answering is logged to the hook log and answered with nothing, as the hook process does
(`process.run`). What an answer leaves for afterwards (a prompt's checkpoint to write:
`Warm.catch_up`) is queued once the reply is sent (`sent`; else the workspace's next call
does it first), and what it asks for (watch the workspace, convert its documents) is
handed to `follow`, after the answer is out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from freshline.interfaces.hook.core import FollowUp, Warm, answer
from freshline.interfaces.hook.process import log
from freshline.interfaces.hook.protocol import Adapter, Call, HookOptions, Phase
from freshline.session.evidence import Moment
from freshline.session.pinning import workspace_for

T = TypeVar("T")
HANDED_OVER = frozenset({Moment.TOOL, Moment.STOP, Moment.COMPACT, Moment.END})  # once queued


def handed_over(call: Call) -> bool:
    """Whether a call is acknowledged once queued (its answer is always empty, and the
    agent need not wait for its work): not a start, a prompt or a tool's start."""
    starting = call.tool is not None and call.tool.phase is Phase.START
    return call.moment in HANDED_OVER and not starting


class HookService:
    """Answers hook calls, and runs other work in turn with them, per workspace
    (`settle(root)` first waits for a workspace whose watcher is starting)."""

    def __init__(self, follow: Callable[[FollowUp], None],
                 settle: Callable[[Path], None] = lambda _root: None) -> None:
        self.warm = Warm()
        self._follow = follow
        self._settle = settle
        self._queues: dict[Path, ThreadPoolExecutor] = {}
        self._guard = threading.Lock()

    def handle(self, chosen: Adapter, payload: str, options: HookOptions,
               env: Mapping[str, str]) -> str:
        """What the hook prints for one call (UsageError, before anything runs, for a
        payload the adapter cannot read or a place outside every workspace)."""
        call = chosen.parse(payload)
        root = workspace_for(options.starts(call), options.workspace)
        self._settle(root)
        job = self.submit(root, lambda warm: self._answer(chosen, payload, options, env))
        return "" if handed_over(call) else job.result()

    def sent(self) -> None:
        """A reply went out: queue the work answers left (a prompt's checkpoint to write),
        each workspace's on its queue. Not sooner: on the queue's thread beside the reply's
        it would hold the interpreter's lock while the reply waits for it."""
        with self._guard:
            queues = [(root, q) for root, q in self._queues.items() if self.warm.pending(root)]
        for root, queue in queues:
            try:
                queue.submit(self._catch_up, root)
            except RuntimeError:  # the service is closing: `close` writes it
                pass

    def _answer(self, chosen: Adapter, payload: str, options: HookOptions,
                env: Mapping[str, str]) -> str:
        try:
            answered = answer(chosen, payload, options, self.warm)
        except Exception as exc:  # the hook must never break the prompt
            log(chosen.name, f"{type(exc).__name__}: {exc}", env)
            return ""
        for follow in answered.follow_ups:  # on this thread, after the answer is out
            self._queue(follow.root).submit(self._run_follow_up, chosen, follow, env)
        return answered.text

    def _catch_up(self, root: Path) -> None:
        try:
            self.warm.catch_up(root)
        except Exception as exc:  # a background step: nobody is there to see it raise
            log("service", f"{type(exc).__name__}: {exc}")  # the service's own hook log

    def _run_follow_up(self, chosen: Adapter, follow: FollowUp, env: Mapping[str, str]) -> None:
        try:
            self._follow(follow)
        except Exception as exc:  # a background step: nobody is there to see it raise
            log(chosen.name, f"{type(exc).__name__}: {exc}", env)

    def submit(self, root: Path, work: Callable[[Warm], T]) -> Future[T]:
        """Run `work` over the warm trackers and managers, in turn with the workspace's
        hook calls."""
        return self._queue(root).submit(work, self.warm)

    def call(self, root: Path, work: Callable[[Warm], T]) -> T:
        """`submit`, and wait for the result."""
        return self.submit(root, work).result()

    def drain(self) -> None:
        """Wait until every call handed over so far is done, and what the answers left."""
        with self._guard:
            queues = list(self._queues.items())
        for root, queue in queues:
            queue.submit(self.warm.catch_up, root).result()

    def close(self) -> None:
        """Finish what was handed over, then close the warm stores."""
        with self._guard:
            queues = list(self._queues.values())
            self._queues.clear()
        for queue in queues:
            queue.shutdown(wait=True)
        self.warm.close()

    def _queue(self, root: Path) -> ThreadPoolExecutor:
        with self._guard:
            queue = self._queues.get(root)
            if queue is None:
                queue = self._queues[root] = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix=f"hook-{root.name}")
            return queue
