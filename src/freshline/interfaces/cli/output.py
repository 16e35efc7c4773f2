"""How every command prints: JSON for scripts, plain lines for people, errors one way.

Kept free of typer and rich so the fast path can use it. An error is one line on stderr
(`error: …`), and under `--json` also a JSON object on stdout, `{"error": …, "exit": N}`
(plus whatever the command adds, e.g. the conflicting paths), so a script reading stdout
always gets JSON.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

_RED = "\x1b[31m"
_DIM = "\x1b[2m"
_RESET = "\x1b[0m"


def json_text(data: Any) -> str:
    """`data` as the commands print JSON: indented, keys sorted, a line end."""
    import json  # not for people's lines: json loads re, enum and functools

    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"


def write_json(data: Any) -> None:
    """Print `data` as indented JSON on stdout."""
    sys.stdout.write(json_text(data))


def emit(data: Any, as_json: bool, human: Callable[[], None]) -> None:
    """Print `data` as JSON, or call `human` to print it for people."""
    if as_json:
        write_json(data)
    else:
        human()


def say(line: str = "") -> None:
    """One plain line on stdout (nothing in it is interpreted as markup)."""
    sys.stdout.write(line + "\n")


def say_all(lines: list[str]) -> None:
    """Plain lines on stdout."""
    for line in lines:
        say(line)


def _colored(stream: Any) -> bool:
    return "NO_COLOR" not in os.environ and bool(getattr(stream, "isatty", lambda: False)())


def dim(text: str, stream: Any) -> str:
    """`text` dimmed when `stream` is a terminal that takes colours, else as it is."""
    return f"{_DIM}{text}{_RESET}" if _colored(stream) else text


def warn(line: str) -> None:
    """A warning on stderr."""
    sys.stderr.write(f"warning: {line}\n")


def note(line: str) -> None:
    """A remark for people on stderr, so stdout keeps only the answer a script reads."""
    sys.stderr.write(f"{line}\n")


def fail(
    message: str, exit_code: int, as_json: bool, extra: Mapping[str, Any] | None = None
) -> int:
    """Report an error: the line on stderr, and the JSON object on stdout under `--json`.
    Returns the exit code, for the caller to exit with."""
    if as_json:
        write_json({**(extra or {}), "error": message, "exit": exit_code})
    label = f"{_RED}error:{_RESET}" if _colored(sys.stderr) else "error:"
    sys.stderr.write(f"{label} {' '.join(message.split())}\n")
    sys.stderr.flush()
    return exit_code


def machine_failure(exc: BaseException) -> str:
    """The one line for an OS or store failure (a full disk, a file where a folder should
    be, a locked database): said as people say it, never a traceback."""
    from freshline.errors import os_failure
    from freshline.paths import shown

    message = os_failure(exc) if isinstance(exc, OSError) else f"the store failed: {exc}"
    return shown(str(message))
