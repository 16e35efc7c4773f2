"""Bytecode for freshline's own modules, written ahead of time.

An agent runs the hook with the user's environment, and with `PYTHONDONTWRITEBYTECODE=1`
in it Python compiles every module it imports on every call unless its bytecode is
already there. A wheel's install writes it; an editable install (`pip install -e`,
`make`) does not, so `make` and `hook install` run `compile_package` (best effort:
a read-only install keeps what it has). `python -m freshline.compiled` runs it.
"""

from __future__ import annotations

import compileall
import os


def compile_package() -> bool:
    """Write the missing or stale bytecode of every module of the package; False when
    some could not be written."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        return bool(compileall.compile_dir(here, quiet=2))
    except OSError:
        return False


if __name__ == "__main__":
    compile_package()
