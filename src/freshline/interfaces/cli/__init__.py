"""The `freshline` command line: a thin layer over the library.

`main()` runs the hot commands (`--version`, `status`, `scan`, `hook claude-code`) without
loading typer, click or rich (`fast.py`); everything else goes through the typer app
(`root.py`), imported only then. Importing this package loads neither.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from typing import Any

    from freshline.interfaces.cli.root import app


def main() -> None:
    """The console script's entry point."""
    from freshline.interfaces.cli import fast, helptext
    from freshline.interfaces.cli.argv import split_workspace

    code = fast.run(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from freshline.interfaces.cli.root import app

    with helptext.Recording(helptext.asked(split_workspace(sys.argv[1:])[1])):
        app(prog_name="freshline")


def __getattr__(name: str) -> Any:
    if name == "app":  # the typer app, for tests and embedding (loads typer)
        from freshline.interfaces.cli.root import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["app", "main"]
