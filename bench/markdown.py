"""Note parsing cost: pathological lines, and a first scan of a vault, against the old parser.

Times are CPU times (the fastest of several runs), so other work on the machine does not
blur the ratios. Prints:
  1 MiB ÷ 64 KiB     parse time of a note holding one 1 MiB line ÷ one 64 KiB line, per
                     kind of line (URL-like characters, base64, hex), in the body and in
                     the front matter                                           (goal ≤ 20)
  old parser         the same for the parser this issue replaced, on 8 and 32 KiB hex
                     lines (its 1 MiB line takes minutes: it is quadratic)
  vault first scan   a first full scan of a generated vault of N notes with front matter
                     (10k; --quick: 2k), new parser ÷ old parser, same run      (goal ≤ 1.3)
                     (the new parser also stores the nested properties the old one lost)
  vault parse only   parse_note over the same notes, new ÷ old

The old parser is the `markdown.py` of commit BASELINE, read with `git show` from this
checkout and loaded under another name; nothing of it is kept in the package.
Usage: python bench/markdown.py [--quick]
"""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import freshline.tracker.scan as scan_module
from freshline.config import load_config
from freshline.markdown import parse_note
from freshline.tracker import Tracker

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the lines the tests use too
from tests.pathological import KINDS  # noqa: E402

BASELINE = "1b865f9"  # main before issue 12: the hand-written YAML subset and tag regexes
ROOT = Path(__file__).resolve().parents[1]
KIB = 1024


def old_parser(tmp: Path) -> ModuleType:
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{BASELINE}:src/freshline/markdown.py"],
        check=True, capture_output=True,
    ).stdout
    path = tmp / "old_markdown.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("old_markdown", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def note(kind: str, n: int, where: str) -> str:
    line = KINDS[kind](n, random.Random(n))
    if where == "front matter":
        return f"---\ntags: [a]\nsource: {line}\n---\n#x\n"
    return f"---\ntags: [a]\n---\n#x {line}\n"


def best(fn: Callable[[], Any], runs: int = 5) -> float:
    """The fastest of `runs` calls in CPU time: other processes share the machine's cores,
    and the fastest run is the one they disturbed least."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def pathological(old: ModuleType) -> None:
    for where in ("body", "front matter"):
        for kind in KINDS:
            sizes = (64 * KIB, 1024 * KIB)
            t_small, t_large = (best(partial(parse_note, note(kind, n, where))) for n in sizes)
            print(
                f"{kind:>9} in the {where:<12}  1 MiB ÷ 64 KiB  {t_large / t_small:6.1f}  "
                f"({t_large * 1000:.1f} ms vs {t_small * 1000:.2f} ms)"
            )
    small, large = note("hex", 8 * KIB, "body"), note("hex", 32 * KIB, "body")
    t_small = best(lambda: old.parse_note(small), 1)
    t_large = best(lambda: old.parse_note(large), 1)
    print(
        f"old parser, hex in the body        32 KiB ÷ 8 KiB   {t_large / t_small:6.1f}  "
        f"({t_large * 1000:.0f} ms vs {t_small * 1000:.0f} ms; linear would be 4)"
    )


def vault_note(i: int, rng: random.Random) -> str:
    tags = ", ".join(rng.sample(["paper", "idea", "project/alpha", "todo", "日本", "ml"], 3))
    front = (
        f"---\ntags: [{tags}]\nstatus: {rng.choice(['active', 'done', 'Draft'])}\n"
        f"created: 2025-0{1 + i % 9}-1{i % 10}\naliases:\n  - Note {i}\n"
        f"related:\n  - [[Note {rng.randrange(1000)}]]\nreview:\n  next: 2025-12-23\n"
        f"rating: {i % 5}\ndone: {str(i % 2 == 0).lower()}\n---\n"
    )
    body = (
        f"# Note {i}\n\nSome text about #topic{i % 13} with a [link](https://example.com/p#{i})"
        " and `inline #code`.\n\n```python\n# not a tag\nx = 1\n```\n\n"
        "> [!note]\n> a callout with #callout-tag\n\n- [ ] a task #todo\n"
    )
    return front + body * (1 + i % 3)


def build_vault(root: Path, n: int) -> list[str]:
    rng = random.Random(12)
    texts = []
    for i in range(n):
        d = root / f"area{i % 20}" / f"topic{(i // 20) % 10}"
        d.mkdir(parents=True, exist_ok=True)
        text = vault_note(i, rng)
        (d / f"note {i}.md").write_text(text, encoding="utf-8")
        texts.append(text)
    (root / "freshline.toml").write_text('[projects.all]\ninclude = ["**"]\n')
    (root / ".freshline").mkdir()
    return texts


def first_scan(root: Path, parser: Callable[[bytes | str], Any]) -> float:
    (root / ".freshline" / "freshline.db").unlink(missing_ok=True)
    for stale in (root / ".freshline").glob("freshline.db-*"):
        stale.unlink()
    scan_module.parse_note = parser  # type: ignore[assignment]
    try:
        return best(lambda: Tracker(load_config(root)).scan(), 1)
    finally:
        scan_module.parse_note = parse_note


def vault(old: ModuleType, n: int, tmp: Path) -> None:
    root = tmp / "vault"
    root.mkdir()
    texts = build_vault(root, n)
    new_times, old_times = [], []
    for _ in range(5):  # interleaved, so load on the machine hits both alike
        old_times.append(first_scan(root, old.parse_note))
        new_times.append(first_scan(root, parse_note))
    t_new, t_old = min(new_times), min(old_times)
    print(
        f"vault of {n} notes, first scan   new ÷ old  {t_new / t_old:6.2f}  "
        f"({t_new * 1000:.0f} ms vs {t_old * 1000:.0f} ms)"
    )
    p_new = best(lambda: [parse_note(t) for t in texts])
    p_old = best(lambda: [old.parse_note(t) for t in texts])
    print(
        f"{'':>17}parse only   new ÷ old  {p_new / p_old:6.2f}  "
        f"({p_new * 1e6 / n:.0f} µs vs {p_old * 1e6 / n:.0f} µs a note)"
    )


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        old = old_parser(Path(tmp))
        pathological(old)
        vault(old, 2_000 if "--quick" in sys.argv else 10_000, Path(tmp))
