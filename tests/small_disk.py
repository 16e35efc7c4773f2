"""A small disk that tests can fill to 0 bytes free and then free again.

Two real mechanisms, both used where they work:

- `Tmpfs`: a tmpfs of a few MiB mounted for the test. Writes fail with ENOSPC, exactly as
  on a full disk. Mounting needs root with CAP_SYS_ADMIN; where that is refused (a CI
  container without it) the test using it is skipped, saying why.
- `FileSizeLimit`: no mount at all. While "full", every freshline command runs in a process
  whose RLIMIT_FSIZE is 0, so each write that would grow a file fails (EFBIG instead of
  ENOSPC; Python ignores SIGXFSZ, so it sees the error, as it would a full disk). This runs
  anywhere, so the scenario is never skipped.
"""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHUNKS = (1 << 20, 1 << 16, 1 << 12, 1)


class SmallDisk:
    """A directory on a disk that can be made full; commands run as the CLI would."""

    kind = ""
    words = ""  # what a command that failed for want of space must say

    def __init__(self, root: Path) -> None:
        self.root = root
        self.full = False

    def fill(self, spare: int = 0) -> None:
        """Leave no space (or about `spare` bytes) for any new write."""
        self.full = True

    def free(self) -> None:
        """Give the space back."""
        self.full = False

    def _limit(self) -> None:
        """Runs in the child before exec (see `run`)."""

    def run(self, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
        """`freshline --workspace WORKSPACE ARGS…` in a new process."""
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        return subprocess.run(
            [sys.executable, "-m", "freshline", "--workspace", str(workspace), *args],
            capture_output=True, text=True, env=env, timeout=120,
            preexec_fn=self._limit if self.full else None,
        )


class Tmpfs(SmallDisk):
    """A tmpfs of `size` bytes mounted at `root`."""

    kind = "tmpfs"
    words = "no space left on device"

    def __init__(self, root: Path, size: int) -> None:
        super().__init__(root)
        root.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(root)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise OSError(done.stderr.strip() or "mount failed")
        self.filler = root / "filler"

    def fill(self, spare: int = 0) -> None:
        with self.filler.open("ab", buffering=0) as handle:  # raw: partial writes count
            for chunk in CHUNKS:
                try:
                    while True:
                        handle.write(b"\0" * chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
        if spare:
            os.truncate(self.filler, max(0, self.filler.stat().st_size - spare))
        super().fill(spare)

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)
        super().free()

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.root)], capture_output=True)


class FileSizeLimit(SmallDisk):
    """A plain directory; "full" means commands run with RLIMIT_FSIZE 0."""

    kind = "fsize"
    words = "a file size limit"

    def _limit(self) -> None:
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))


def can_mount() -> str | None:
    """Why a tmpfs cannot be mounted here, or None when it can be tried."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    return None


@contextmanager
def tmpfs(root: Path, size: int = 6 << 20) -> Iterator[Tmpfs]:
    """A mounted tmpfs, unmounted after; skips the test when mounting is refused."""
    why = can_mount()
    if why is None:
        try:
            disk = Tmpfs(root, size)
        except OSError as exc:
            why = f"cannot mount a tmpfs here ({exc})"
    if why is not None:
        pytest.skip(f"{why}; the FileSizeLimit variant runs the same scenario without a mount")
    try:
        yield disk
    finally:
        disk.unmount()
