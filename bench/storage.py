"""What freshline's own data costs on disk, and what the first hook call costs in time.

Builds a generated vault of 20,000 notes (80 MB of markdown: front matter, headings,
prose drawn from a Zipf-distributed vocabulary, links and tags; not a git checkout) and
prints, each against a baseline measured in the same run:
  first turn        what a live chat session's first turn adds to `.freshline`
                    ÷ the vault's size (goal ≤ 25 %), by disk usage and by bytes, and
                    ÷ git's own floor: `.git` after `git add` + `git gc` of the same notes
  later turns       what each later turn adds ÷ the bytes it changed (goal ≤ 1)
  gc                `.freshline` after `gc` removed three closed sessions
                    ÷ its size before they were opened (goal ≤ 1.10)
  first hook call   a hook session's first UserPromptSubmit on a fresh copy, wall and CPU
                    seconds (goal ≤ 1.5 s), ÷ `freshline scan` of another fresh copy;
                    and the git objects it wrote (none: a hook records no conversation)
Sizes are disk usage (allocated blocks, as `du`), measured after SQLite's write-ahead
log is folded into the database (it is scratch space SQLite reuses, up to a few MB).
Usage: python bench/storage.py [--quick]      (--quick: 2,000 notes, 8 MB)
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from measure import end_private_user, private_user, timed

from freshline.agent.backends import get_backend
from freshline.agent.runtime import send
from freshline.config import load_config
from freshline.context import Channel
from freshline.conversation.storage import disk_usage
from freshline.session import SessionManager, lifecycle

NOTES = 2_000 if "--quick" in sys.argv else 20_000
NOTE_BYTES = 4_000  # the mean: 80 MB for 20,000 notes
EDITED = 20  # notes rewritten before each later turn
SESSIONS_REMOVED = 3


class Writer:
    """Markdown notes that compress like real ones: a vocabulary with Zipf's frequencies."""

    def __init__(self, seed: int = 19) -> None:
        self.rng = random.Random(seed)
        syllables = ["ka", "to", "ri", "an", "el", "mo", "su", "ve", "la", "ne", "po", "di",
                     "ur", "is", "ot", "ba", "ce", "fi", "gu", "he", "ja", "qu", "wy", "xo"]
        words: set[str] = set()
        while len(words) < 6000:
            words.add("".join(self.rng.choices(syllables, k=self.rng.choice((1, 2, 2, 3, 4)))))
        self.vocab = sorted(words)
        self.cumulative = list(itertools.accumulate(1 / (r + 1) for r in range(len(self.vocab))))

    def words(self, n: int) -> str:
        return " ".join(self.rng.choices(self.vocab, cum_weights=self.cumulative, k=n))

    def note(self, i: int) -> str:
        rng = self.rng
        head = [
            "---", f"title: Note {i}", f"tags: [topic/{self.vocab[i % 40]}, {self.vocab[i % 7]}]",
            f"created: 2024-{1 + i % 12:02d}-{1 + i % 28:02d}", "---", "", f"# Note {i}", "",
        ]
        body: list[str] = []
        size = sum(len(line) + 1 for line in head)
        target = int(rng.expovariate(1 / NOTE_BYTES)) % (3 * NOTE_BYTES) + 200
        while size < target:
            line = self.words(rng.randint(20, 60)).capitalize() + "."
            if rng.random() < 0.3:
                line += f" See [[Note {rng.randrange(NOTES)}]]."
            if rng.random() < 0.15:
                body += [f"## {self.words(3).title()}", ""]
            body += [line, ""]
            size += len(line) + 2
        return "\n".join(head + body)


def build(root: Path, writer: Writer) -> int:
    """The vault: NOTES notes in 40 × 25 folders; returns their bytes."""
    total = 0
    for i in range(NOTES):
        folder = root / f"area{i % 40}" / f"topic{(i // 40) % 25}"
        folder.mkdir(parents=True, exist_ok=True)
        text = writer.note(i)
        (folder / f"note {i}.md").write_text(text)
        total += len(text)
    (root / "freshline.toml").write_text('[projects.vault]\ninclude = ["area*/**"]\n')
    (root / ".freshline").mkdir()
    return total



def freshline(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "freshline", "--workspace", str(root), *args]


def data_size(m: SessionManager) -> int:
    """`.freshline` on disk, the store's write-ahead log folded in first."""
    m.store.checkpoint()
    return disk_usage(m.config.data_dir)


def chat(m: SessionManager, message: str) -> str:
    sid = m.new("vault", channel=Channel.CHAT).id
    send(m, sid, message, get_backend("echo"))
    return sid


def edit(root: Path, writer: Writer, start: int) -> int:
    """Rewrite EDITED notes; returns the bytes written."""
    changed = 0
    for i in range(start, start + EDITED):
        path = root / f"area{i % 40}" / f"topic{(i // 40) % 25}" / f"note {i}.md"
        text = writer.note(i + NOTES)
        path.write_text(text)
        changed += len(text)
    return changed


def git_floor(copy: Path) -> int:
    """`.git` on disk after committing the notes and `git gc`: what git needs to hold them."""
    def run(*args: str) -> None:
        settings = ["-c", "gc.auto=0", "-c", "user.name=b", "-c", "user.email=b@b"]
        done = subprocess.run(["git", *settings, *args], cwd=copy, capture_output=True,
                              text=True)
        if done.returncode:
            raise SystemExit(f"git {args[0]} failed: {done.stderr.strip()}")

    run("init", "-q")
    run("add", "-A", "--", "area*")
    run("commit", "-q", "-m", "notes")
    run("gc", "-q")
    return disk_usage(copy / ".git")


def live_chat(root: Path, writer: Writer, vault_bytes: int, floor: int) -> None:
    subprocess.run(freshline(root, "scan"), check=True, capture_output=True)
    vault = disk_usage(root) - disk_usage(root / ".freshline")
    m = SessionManager(load_config(root))
    try:
        indexed = data_size(m)
        start = time.perf_counter()
        keep = chat(m, "first")
        first_s = time.perf_counter() - start
        after_first = data_size(m)
        added = after_first - indexed
        print(f"live chat over {NOTES:,} notes ({vault_bytes / 1e6:.1f} MB of text, "
              f"{vault / 1e6:.1f} MB on disk)")
        print(f"  first turn adds     {added / 1e6:6.2f} MB   ÷ vault on disk {added / vault:6.1%}"
              f"   ÷ vault bytes {added / vault_bytes:6.1%}   (goal ≤ 25 %; {first_s:.1f} s)")
        print(f"  ÷ git's own floor   {added / floor:6.2f}   (git add + gc: {floor / 1e6:.2f} MB)")
        ratios = []
        size = after_first
        for turn in range(3):
            changed = edit(root, writer, turn * 97)
            send(m, keep, f"turn {turn + 2}", get_backend("echo"))
            now = data_size(m)
            grown, size = now - size, now
            ratios.append(grown / changed)
            print(f"  later turn {turn + 2}        {grown / 1e3:6.1f} kB   ÷ changed "
                  f"{changed / 1e3:.1f} kB = {grown / changed:5.2f}")
        print(f"  later turns         worst {max(ratios):5.2f} × the bytes changed (goal ≤ 1)")
        collect(m, root, writer, size)
    finally:
        m.close()


def collect(m: SessionManager, root: Path, writer: Writer, before: int) -> None:
    for n in range(SESSIONS_REMOVED):
        edit(root, writer, 5_000 % NOTES + n * EDITED)
        sid = chat(m, f"to remove {n}")
        m.close_session(sid)
    grown = data_size(m)
    start = time.perf_counter()
    done = lifecycle.collect(m, older_than=0)
    gc_s = time.perf_counter() - start
    after = data_size(m)
    print(f"  gc                  {before / 1e6:.2f} MB → {grown / 1e6:.2f} MB with "
          f"{SESSIONS_REMOVED} more sessions → {after / 1e6:.2f} MB after gc "
          f"(removed {len(done.sessions)}; {gc_s:.1f} s)")
    print(f"  gc ÷ before         {after / before:6.2f}   (goal ≤ 1.10)")


def first_hook(fresh: Path, baseline: Path) -> None:
    scan = timed(freshline(baseline, "scan"))
    payload = json.dumps({"session_id": "bench", "cwd": str(fresh), "prompt": "hi",
                          "hook_event_name": "UserPromptSubmit"})
    hook = timed(freshline(fresh, "hook", "claude-code"), payload)
    objects = fresh / ".freshline" / "conversations.git" / "objects"
    written = sum(len(files) for _, _, files in os.walk(objects)) if objects.exists() else 0
    print(f"first hook call at {NOTES:,} notes (wall s / CPU s)")
    print(f"  first call          {hook[0]:6.2f} / {hook[1]:5.2f}   (goal ≤ 1.5 s)")
    print(f"  ÷ freshline scan    {hook[0] / scan[0]:6.2f} / {hook[1] / scan[1]:5.2f}"
          f"   (scan {scan[0]:.2f} / {scan[1]:.2f})")
    print(f"  objects written     {written}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        private_user(Path(tmp))
        vault = Path(tmp) / "vault"
        writer = Writer()
        vault_bytes = build(vault, writer)
        copies = [Path(tmp) / "hook", Path(tmp) / "scan"]
        for copy in copies:
            shutil.copytree(vault, copy, symlinks=True)
        try:
            first_hook(*copies)
            live_chat(vault, writer, vault_bytes, git_floor(copies[1]))
        finally:  # a service the commands started does not outlive its folders
            end_private_user()


if __name__ == "__main__":
    main()
