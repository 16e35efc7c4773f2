"""`freshline hook <agent>`: the hook as a process, around `core.answer`.

It reads the payload from stdin, prints the answer, then runs the follow-ups: has the
service watch the workspace (starting it: autowatch) and converts documents in a
detached process, so the prompt never waits. It runs when no service answered the call
(`cli/fast.hook` asks the service first). It never blocks a prompt on its own failure:
it exits 0 with no output and appends one line to the hook log (`hook_log_path`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from freshline.config import load_config
from freshline.interfaces.hook.core import Answer, Follow, Warm, answer
from freshline.interfaces.hook.protocol import Adapter, HookOptions

LOG_ENV = "FRESHLINE_HOOK_LOG"
CONVERT = "convert"  # `python -m freshline.interfaces.hook.process convert ROOT PROJECT`


def hook_log_path(env: Mapping[str, str] = os.environ) -> Path:
    """Where the hook logs its failures: $FRESHLINE_HOOK_LOG, else
    $XDG_CACHE_HOME/freshline/hook.log, else ~/.cache/freshline/hook.log."""
    explicit = env.get(LOG_ENV)
    if explicit:
        return Path(explicit)
    home = env.get("HOME") or str(Path.home())
    cache = env.get("XDG_CACHE_HOME") or str(Path(home) / ".cache")
    return Path(cache) / "freshline" / "hook.log"


def log(agent: str, message: str, env: Mapping[str, str] = os.environ) -> None:
    """Append one line to the hook log of the hook's environment `env` (never raises: the
    hook must not fail a prompt)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    line = f"{stamp} freshline hook {agent}: {' '.join(message.split())}\n"
    try:
        path = hook_log_path(env)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(line)
    except OSError:
        pass  # Nowhere to log; the hook must still never fail the prompt.


def run(adapter: Adapter, stdin: TextIO, out: TextIO, options: HookOptions) -> int:
    """The whole hook: always 0; failures are logged, never printed."""
    warm = Warm()
    try:
        answered = answer(adapter, stdin.read(), options, warm)
        if answered.text:
            out.write(answered.text)
            out.flush()
        follow_up(answered, warm)
    except Exception as exc:  # the hook must never break the prompt
        log(adapter.name, f"{type(exc).__name__}: {exc}")
    finally:
        warm.close()
    return 0


def follow_up(answered: Answer, warm: Warm) -> None:
    """Run what the answer asks for once it is printed: the service watching the
    workspace (started if none runs), documents converted in a detached process."""
    from freshline.interfaces.autostart import ensure

    for f in answered.follow_ups:
        if f.kind is Follow.WATCH:
            ensure(warm.tracker(f.root).config)
        elif f.project is not None:
            _convert_in_background(f.root, f.project)


def _convert_in_background(root: Path, project: str) -> None:
    """Convert the project's documents in a detached process, so the prompt never waits
    (the next prompt announces them as readable). It holds none of the client's pipes."""
    subprocess.Popen(
        [sys.executable, "-m", "freshline.interfaces.hook.process", CONVERT, str(root), project],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def convert(root: Path, project: str) -> None:
    """Convert one project's documents now; failures go to the hook log."""
    try:
        from freshline.session import SessionManager

        manager = SessionManager(load_config(root))
        try:
            manager.materialize(project)
        finally:
            manager.close()
    except Exception as exc:  # a background helper: nobody is there to see it raise
        log("convert", f"converting {project}: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    if sys.argv[1:2] == [CONVERT]:
        convert(Path(sys.argv[2]), sys.argv[3])
