"""A churning tree for concurrency tests and bench/store.py (no pytest here): a workspace
with one project over notes/, and a script that flushes it from another process."""

from __future__ import annotations

from pathlib import Path

from freshline.config import add_project, init_workspace

# argv: root, a writer's name, flushes, notes kept. Each round writes a new note whole (a
# rename), deletes the oldest past `kept`, flushes; prints the epochs its flushes logged.
FLUSHER = """
import json, sys
from pathlib import Path
from freshline.config import load_config
from freshline.tracker import Tracker
root, name, count, kept = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tracker = Tracker(load_config(root))
mine = root / "notes" / name
mine.mkdir()
epochs = []
for n in range(count):
    draft = root / f"{name}.draft"  # outside the project; written whole by a rename
    draft.write_text(f"{name} {n}")
    draft.replace(mine / f"{n}.md")
    if n >= kept:
        (mine / f"{n - kept}.md").unlink()
    delta = tracker.scan().projects.get("p")
    if delta is not None:
        epochs.append(delta.epoch)
print(json.dumps(epochs))
"""


def notes_workspace(tmp_path: Path) -> Path:
    """A workspace with one project, `p`, over `notes/`."""
    root = tmp_path / "ws"
    init_workspace(root)
    (root / "notes").mkdir()
    add_project(root, "p", ["notes"])
    return root
