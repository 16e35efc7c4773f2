"""What the per-user service costs at idle, against one of the per-workspace watchers it
replaced.

Builds a vault of 20,000 notes (a hundred folders) and three small workspaces, starts the
service watching all four (a private runtime folder: no other service is touched) and,
once they are up, counts its CPU time over a span in which nothing changes; then runs the
watcher of the named baseline commit (`freshline watch` as of BASE, its source taken from
this repository with `git archive`) on the vault alone, the same way. Prints:
  idle CPU, service (4 workspaces)      % of one core over the span       (goal ≤ 0.1 %)
  idle CPU, BASE's watcher (the vault)  % of one core over the span
  RSS service ÷ BASE's watcher          resident memory once up            (goal ≤ 1.5)
  up: service, BASE's watcher           seconds from spawn to all watched (the service's
                                        first scan indexes the vault; BASE's, after it,
                                        finds it indexed)
Usage: python bench/watcher.py [--quick]   (--quick: 2k notes, a 10 s span; else 60 s)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BASE = "3b3e4e5"  # the last commit with a watcher per workspace
ROOT = Path(__file__).resolve().parent.parent
QUICK = "--quick" in sys.argv
NOTES, SPAN = (2_000, 10.0) if QUICK else (20_000, 60.0)
TICKS = os.sysconf("SC_CLK_TCK")


def build(root: Path, n: int) -> None:
    """A vault of `n` notes with tags, in a hundred folders, and a project over all."""
    for i in range(n):
        folder = root / f"area{i % 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\nSee [[note{i + 1}]]. #tag{i % 9}\n")
    (root / "freshline.toml").write_text('[projects.vault]\ninclude = ["**"]\n')
    (root / ".freshline").mkdir()


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


def wait(condition: Callable[[], bool], what: str, timeout: float = 600) -> float:
    """Seconds until `condition` held."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise SystemExit(f"bench: gave up waiting for {what}")
        time.sleep(0.05)
    return time.monotonic() - start


def idle(proc: subprocess.Popen[bytes]) -> tuple[float, float]:
    """Percent of one core over the span, and resident MiB, of a process that is up."""
    time.sleep(3.0)  # what the start left (conversions, the last batch) settles
    before = cpu_seconds(proc.pid)
    time.sleep(SPAN)
    return 100 * (cpu_seconds(proc.pid) - before) / SPAN, rss_mib(proc.pid)


def service(roots: list[Path], env: dict[str, str]) -> tuple[float, float, float]:
    """The service watching `roots`: idle % of a core, RSS, seconds until all watched."""
    from freshline.interfaces import serviceclient

    watch = [word for root in roots for word in ("--watch", str(root))]
    proc = subprocess.Popen([sys.executable, "-m", "freshline", "service", "run", *watch],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def all_watching() -> bool:
        answer = serviceclient.ask({"op": "list"}, timeout=10)
        return bool(answer) and sum(w["state"] == "watching" for w in answer["data"]) == 4

    try:
        up = wait(all_watching, "the service watching the four workspaces")
        cpu, rss = idle(proc)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return cpu, rss, up


def baseline(vault: Path, tmp: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """BASE's `freshline watch` on the vault: idle % of a core, RSS, seconds until up."""
    source = tmp / "base"
    source.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", BASE, "src"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    old = env | {"PYTHONPATH": str(source / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "freshline", "-w", str(vault), "watch",
                             "--quiet"], env=old, stdout=subprocess.DEVNULL)
    beat = vault / ".freshline" / "watcher.heartbeat"
    try:
        up = wait(beat.exists, "the baseline watcher's first heartbeat")
        cpu, rss = idle(proc)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return cpu, rss, up


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder).resolve()
        runtime = Path(tempfile.mkdtemp(prefix="flb-", dir="/tmp"))
        env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "HOME": str(tmp / "home"),
               "XDG_STATE_HOME": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config"),
               "FRESHLINE_AUTOWATCH": "0"}
        os.environ.update(env)
        roots = [tmp / "vault", tmp / "small1", tmp / "small2", tmp / "small3"]
        build(roots[0], NOTES)
        for small in roots[1:]:
            build(small, 50)
        cpu, rss, up = service(roots, env)
        old_cpu, old_rss, old_up = baseline(roots[0], tmp, env)
        shutil.rmtree(runtime)
    figures = {"notes": NOTES, "span_s": SPAN, "service_idle_cpu_pct": round(cpu, 3),
               "base_idle_cpu_pct": round(old_cpu, 3), "service_rss_mib": round(rss, 1),
               "base_rss_mib": round(old_rss, 1), "rss_ratio": round(rss / old_rss, 2),
               "service_up_s": round(up, 2), "base_up_s": round(old_up, 2)}
    print(f"a vault of {NOTES:,} notes and three of 50; idle over {SPAN:.0f} s")
    print(f"idle CPU, service (4 workspaces)       {cpu:6.3f} % of a core   (goal ≤ 0.1 %)")
    print(f"idle CPU, {BASE}'s watcher (the vault) {old_cpu:6.3f} % of a core")
    print(f"RSS service ÷ {BASE}'s watcher          {rss / old_rss:6.2f}×  ({rss:.0f} MiB ÷ "
          f"{old_rss:.0f} MiB)   (goal ≤ 1.5)")
    print(f"up: service {up:.1f} s (four workspaces, the vault indexed), {BASE}'s watcher "
          f"{old_up:.1f} s (the vault already indexed)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
