"""Vendor gitleaks' rule set: its `config/gitleaks.toml`, verbatim, and the JSON the scan loads.

freshline's content scan (`secretscan.py`) takes its token formats from gitleaks' default
configuration (MIT, its license beside the file as `gitleaks-LICENSE`). The TOML is kept
byte for byte as upstream publishes it; the JSON beside it is `tomllib`'s reading of it
(parsing the TOML costs ~95 ms, the JSON ~1 ms, and every scan's first call pays it) with
a note of where it came from. `tests/test_secret_rules.py` checks the two agree.

Take the file from a gitleaks checkout at a release tag, then run this script:

    git -C gitleaks show v8.30.1:config/gitleaks.toml > /tmp/gitleaks.toml
    git -C gitleaks show v8.30.1:LICENSE > src/freshline/data/gitleaks-LICENSE
    python scripts/gitleaks_rules.py /tmp/gitleaks.toml v8.30.1

and run `tests/test_secretscan.py` and `bench/secrets.py` before committing: a new rule
may find what is not a secret in real source (`bench/secrets.py` counts that).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tomllib
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "src" / "freshline" / "data"
REPOSITORY = "gitleaks/gitleaks"


def vendored_json(toml: bytes, version: str) -> str:
    """The JSON the scan loads for the gitleaks TOML `toml` of release `version`."""
    source = {"repository": REPOSITORY, "path": "config/gitleaks.toml", "version": version,
              "sha256": hashlib.sha256(toml).hexdigest()}
    config = tomllib.loads(toml.decode("utf-8"))
    return json.dumps({"source": source, "config": config}, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    """Write `data/gitleaks.toml` and `data/gitleaks.json` from a TOML file and its tag."""
    if len(argv) != 2:
        print("usage: python scripts/gitleaks_rules.py GITLEAKS_TOML VERSION", file=sys.stderr)
        return 2
    source, version = Path(argv[0]), argv[1]
    try:
        toml = source.read_bytes()
        text = vendored_json(toml, version)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        print(f"error: {source}: {error}", file=sys.stderr)
        return 2
    (DATA / "gitleaks.toml").write_bytes(toml)
    (DATA / "gitleaks.json").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
