"""What a running watcher costs at idle, and how fast it comes up while clients ask.

On a vault of 20k notes (a hundred folders), prints:
  idle CPU ÷ watchfiles     `freshline watch` at idle (heartbeat, periodic wake-ups) ÷ a bare
                            `watchfiles.watch` of the same tree, CPU seconds over the same span
  idle RSS ÷ watchfiles     resident memory after the first full scan ÷ the bare watcher's
  up, polled ÷ alone        spawn to first heartbeat while `freshline status` runs every
                            0.2 s ÷ the same with nobody asking (goal: about 1)
Usage: python bench/watcher.py [--quick]   (--quick: 2k notes, a 5 s span)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from freshline.tracker.autowatch import stop

TICKS = os.sysconf("SC_CLK_TCK")
BARE = ("import sys, watchfiles\n"
        "for _ in watchfiles.watch(sys.argv[1], rust_timeout=1000, yield_on_timeout=True):\n"
        "    pass\n")
ENV = {**os.environ, "FRESHLINE_AUTOWATCH": "0"}


def build(root: Path, n: int) -> None:
    """A vault of `n` notes with tags, in a hundred folders, and a project over all."""
    for i in range(n):
        folder = root / f"area{i % 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\nSee [[note{i + 1}]]. #tag{i % 9}\n")
    subprocess.run([sys.executable, "-m", "freshline", "init", str(root)], env=ENV, check=True,
                   capture_output=True)
    subprocess.run([sys.executable, "-m", "freshline", "-w", str(root), "project", "add",
                    "vault", "--include", "**"], env=ENV, check=True, capture_output=True)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mib(pid: int) -> float:
    """Resident memory of a running process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def idle(command: list[str], ready: Path | None, span: float) -> tuple[float, float]:
    """CPU seconds over `span` and RSS of `command` once it is up (`ready` exists, else
    after 3 s) and settled."""
    proc = subprocess.Popen(command, env=ENV, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while ready is not None and not ready.exists():
            assert time.monotonic() < deadline, "never up"
            time.sleep(0.05)
        time.sleep(3.0)  # the first conversions and checks settle
        before = cpu_seconds(proc.pid)
        time.sleep(span)
        return cpu_seconds(proc.pid) - before, rss_mib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def up(root: Path, polled: bool) -> float:
    """Seconds from spawning `freshline watch` to its first heartbeat, with `freshline
    status` asked every 0.2 s meanwhile (`polled`) or not."""
    beat = root / ".freshline" / "watcher.heartbeat"
    done = threading.Event()

    def ask() -> None:
        while polled and not done.wait(0.2):
            subprocess.run([sys.executable, "-m", "freshline", "-w", str(root), "status"],
                           env=ENV, capture_output=True)

    asker = threading.Thread(target=ask)
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "freshline", "-w", str(root), "watch",
                             "--quiet"], env=ENV)
    asker.start()
    try:
        while not beat.exists():
            assert time.monotonic() - start < 120, "never up"
            time.sleep(0.01)
        return time.monotonic() - start
    finally:
        done.set()
        asker.join()
        proc.terminate()
        proc.wait(timeout=30)
        stop(root)


def main() -> None:
    quick = "--quick" in sys.argv
    n, span = (2_000, 5.0) if quick else (20_000, 30.0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, n)
        ours = idle([sys.executable, "-m", "freshline", "-w", str(root), "watch", "--quiet"],
                    root / ".freshline" / "watcher.heartbeat", span)
        bare = idle([sys.executable, "-c", BARE, str(root)], None, span)
        alone = min(up(root, polled=False) for _ in range(3))
        polled = min(up(root, polled=True) for _ in range(3))
    print(f"{n} notes, {span:.0f} s at idle")
    print(f"  idle CPU ÷ watchfiles   {ours[0] / max(bare[0], 1 / TICKS):6.1f}  "
          f"({ours[0] / span * 100:.2f} % vs {bare[0] / span * 100:.2f} % of a core)")
    print(f"  idle RSS ÷ watchfiles   {ours[1] / bare[1]:6.1f}  "
          f"({ours[1]:.0f} MiB vs {bare[1]:.0f} MiB)")
    print(f"  up, polled ÷ alone      {polled / alone:6.2f}  "
          f"({polled:.2f} s vs {alone:.2f} s from spawn to first heartbeat)")


if __name__ == "__main__":
    main()
