"""The content scan: recall on fake credentials, false positives and speed on real source.

Prints, for today's scan (`secretscan.py` of commit BASELINE, loaded from git under
another name), the scan of this checkout, and detect-secrets (installed from PyPI into
a throwaway folder, where pip can reach it):

  recall         samples whose secret is gone from the scan's text, of the held-out split
                 of `bench/secret_samples.py` (and the tune split), by format missed
                 (detect-secrets cannot withhold: a sample counts when it reports the line)
                                                                           (goal ≥ 95 %)
  false pos.     findings per 1,000 files of real source: every .py file of this venv's
                 site-packages and of Django (pip-installed into a throwaway folder), none
                 of which holds a live credential; the kinds and a few lines found
                                                                 (goal ≤ 1 per 1,000 files)
  throughput     MB/s of `scan` over the same source, new ÷ today's (CPU time, best of 3)

Usage: python bench/secret_scan.py [--quick]   (--quick: 1,500 files, no detect-secrets)
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from freshline import secretscan

sys.path.insert(0, str(Path(__file__).resolve().parent))
from secret_samples import Sample, samples  # noqa: E402

BASELINE = "3b3e4e5"  # main before issue 47: 17 hand-written formats
ROOT = Path(__file__).resolve().parents[1]
THROWAWAY = Path(tempfile.gettempdir())
Scan = Callable[[str], str]


def _module(tmp: Path, name: str, source: bytes) -> ModuleType:
    path = tmp / f"{name}.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def old_scan(tmp: Path) -> Scan:
    """Today's scan: BASELINE's secretscan.py."""
    source = subprocess.run(["git", "-C", str(ROOT), "show",
                             f"{BASELINE}:src/freshline/secretscan.py"],
                            check=True, capture_output=True).stdout
    module = _module(tmp, "old_secretscan", source)
    return lambda text: str(module.scan(text).text)


def installed(package: str) -> Path | None:
    """A throwaway folder `package` is pip-installed into (None if pip cannot)."""
    target = THROWAWAY / f"freshline-bench-{package}"
    if not target.exists():
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target",
                               str(target), package], capture_output=True)
        if done.returncode:
            return None
    return target


def source_files(limit: int | None) -> list[Path]:
    """Real source: the venv's site-packages and Django's, every .py file."""
    roots = [Path(p) for p in sys.path if p.endswith("site-packages")]
    django = installed("django")
    files = [f for root in [*roots, *([django] if django else [])]
             for f in sorted(root.rglob("*.py"))]
    return files[::len(files) // limit + 1] if limit else files


def recall(scan: Scan, split: list[Sample]) -> tuple[float, Counter[str]]:
    """The share of samples whose secret is gone after `scan`, and the formats missed."""
    missed = Counter(s.format for s in split if s.secret in scan(s.text))
    return 1 - sum(missed.values()) / len(split), missed


def false_positives(scan: Callable[[str], list[tuple[str, str]]], texts: dict[Path, str]
                    ) -> tuple[float, Counter[str], list[str]]:
    """Findings per 1,000 files, by kind, and a few of them."""
    kinds: Counter[str] = Counter()
    shown = []
    for path, text in texts.items():
        for kind, line in scan(text):
            kinds[kind] += 1
            if len(shown) < 40:
                shown.append(f"    {kind:28} {path.name}: {line.strip()[:90]}")
    return 1000 * sum(kinds.values()) / len(texts), kinds, shown


def new_findings(text: str) -> list[tuple[str, str]]:
    """(kind, line) of each finding of this checkout's scan."""
    out = []
    for f in secretscan.find_secrets(text):
        start = text.rfind("\n", 0, f.start) + 1
        end = text.find("\n", f.end)
        out.append((f.kind.value, text[start:end if end >= 0 else len(text)]))
    return out


def throughput(scan: Scan, texts: list[str]) -> float:
    """MB/s of `scan` over `texts` (CPU time, best of 3)."""
    size = sum(len(t) for t in texts) / 1e6
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for text in texts:
            scan(text)
        best = min(best, time.process_time() - start)
    return size / best


class DetectSecrets:
    """detect-secrets 1.x with its default plugins, on files named as samples would be."""

    def __init__(self, where: Path, tmp: Path) -> None:
        sys.path.insert(0, str(where))
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings

        self.collection, self.settings, self.tmp = SecretsCollection, default_settings, tmp

    def lines(self, text: str, suffix: str) -> list[tuple[str, int]]:
        """(type, line number) of each secret it reports in `text`."""
        path = self.tmp / f"sample{suffix}"
        path.write_text(text)
        found = self.collection()
        with self.settings():
            found.scan_file(str(path))
        return [(s.type, s.line_number) for _, s in found]

    def caught(self, sample: Sample) -> bool:
        """Whether it reports a line holding the sample's secret."""
        lines = sample.text.splitlines()
        return any(sample.secret[:40] in lines[n - 1] for _, n in self.lines(sample.text,
                                                                             sample.suffix))


def main(quick: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        old = old_scan(tmp)
        new: Scan = lambda text: secretscan.scan(text).text  # noqa: E731
        held, tune = samples("held_out"), samples("tune")
        print(f"recall ({len(held)} held-out samples in {len({s.format for s in held})} "
              f"formats; tune split: {len(tune)})")
        for name, scan in (("today's", old), ("new", new)):
            (r, missed), (t, _) = recall(scan, held), recall(scan, tune)
            print(f"  {name:15} {r:6.1%}  (tune {t:6.1%})  missed: "
                  f"{', '.join(f'{k}×{n}' for k, n in missed.most_common()) or 'none'}")
        detect = None if quick else installed("detect-secrets")
        ds = DetectSecrets(detect, tmp) if detect else None
        if ds:
            caught = [ds.caught(s) for s in held]
            missed = Counter(s.format for s, c in zip(held, caught, strict=True) if not c)
            print(f"  {'detect-secrets':15} {sum(caught) / len(held):6.1%}  missed: "
                  f"{', '.join(f'{k}×{n}' for k, n in missed.most_common())}")

        files = source_files(1500 if quick else None)
        texts = {f: f.read_text("utf-8", "replace") for f in files}
        size = sum(len(t) for t in texts.values()) / 1e6
        print(f"\nfalse positives ({len(texts)} files of real source, {size:.1f} MB)")
        old_kinds = Counter(line for t in texts.values() for line in
                            _withheld_kinds(old(t)))
        print(f"  {'today':15} {1000 * sum(old_kinds.values()) / len(texts):6.1f} per 1,000 "
              f"files  {dict(old_kinds.most_common(8))}")
        rate, kinds, shown = false_positives(new_findings, texts)
        print(f"  {'new':15} {rate:6.1f} per 1,000 files  {dict(kinds.most_common(8))}")
        print("\n".join(shown))
        if ds:
            some = list(texts.items())[::max(1, len(texts) // 1000)]
            reported = sum(len(ds.lines(t, p.suffix)) for p, t in some)
            print(f"  {'detect-secrets':15} {1000 * reported / len(some):6.1f} per 1,000 files "
                  f"(every {max(1, len(texts) // 1000)}th file: {len(some)})")

        print("\nthroughput (MB/s of scan over the same source, CPU time, best of 3)")
        sources = list(texts.values())
        a, b = throughput(new, sources), throughput(old, sources)
        print(f"  new {a:6.1f} MB/s ÷ today's {b:6.1f} MB/s = {a / b:4.2f}×")


def _withheld_kinds(text: str) -> list[str]:
    marker = secretscan.WITHHELD_PREFIX
    return [part.split("]", 1)[0] for part in text.split(marker)[1:]]


if __name__ == "__main__":
    main("--quick" in sys.argv)
