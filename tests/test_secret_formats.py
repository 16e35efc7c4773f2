"""Issue 47's item 3 on a real checkout: secrets in .docx, .xlsx and .pptx files and in
UTF-16 text reached the conversation trees verbatim (trees are meant to be pushed), and a
password cell of an .xlsx stayed in its snapshot. Every format is scanned before it is
stored: a binary document holding a secret is left out of the tree (a clean one is kept),
UTF-16 text is stored with its secret withheld in UTF-16, and snapshots withhold a table
cell named by its neighbour or its column's header."""

from __future__ import annotations

import io
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from freshline.agent.backends import get_backend
from freshline.agent.runtime import send
from freshline.session import SessionManager

from .conftest import Workspace, git, git_env, isolate
from .docgen import write_docx, write_pptx, write_xlsx

GITHUB = "ghp_" + "Fm7Kq2Lw9Xc4Vb6Nz1Ps8Rt3Yu5Ie0Oa2Sdx"  # 36 after the prefix
PASSWORD = "Zq8#mK2$pL9vX4wR"  # high entropy: a password by any measure
API_KEY = "Jm4Tx9Lq2Wv7Rb3Kz8Nc"
SECRETS = (GITHUB, PASSWORD, API_KEY)
HOLDING = ["docs/token.docx", "docs/table.docx", "docs/creds.xlsx", "docs/deck.pptx"]


def leaks(data: bytes) -> list[str]:
    """The secrets `data` holds: as UTF-8, as UTF-16, or inside a zip's members."""
    texts = [data.decode("utf-8", "replace"), data.decode("utf-16-le", "replace")]
    if data.startswith(b"PK\x03\x04"):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            texts += [archive.read(name).decode("utf-8", "replace")
                      for name in archive.namelist()]
    return [s for s in SECRETS if any(s in t for t in texts)]


@dataclass(frozen=True)
class Stored:
    """What one send and one conversion stored of the documents."""

    trees: dict[str, bytes]  # every file of every tree of the conversation
    snapshots: dict[str, str]  # each document's snapshot text


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Stored:
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate(monkeypatch, tmp_path_factory.mktemp("home"))
        return _stored(tmp_path_factory.mktemp("formats") / "ws")


def _stored(root: Path) -> Stored:
    docs = root / "docs"
    docs.mkdir(parents=True)
    write_docx(docs / "token.docx", "Deploy", [f"token {GITHUB}"], [["a", "b"]])
    write_docx(docs / "table.docx", "Keys", ["none inline"], [["API key", API_KEY]])
    write_docx(docs / "clean.docx", "Notes", ["nothing to hide"], [["a", "b"]])
    write_xlsx(docs / "creds.xlsx", {"logins": [["service", "user", "password"],
                                                ["db", "admin", PASSWORD]]})
    write_pptx(docs / "deck.pptx", [("Setup", "steps", f"speaker note: {GITHUB}")])
    (docs / "utf16.txt").write_bytes(f'password = "{PASSWORD}"\nmore\n'.encode("utf-16"))
    ws = Workspace(root)
    ws.configure({"docs": {"include": ["docs"]}})
    git(root, "init", "--quiet", "--initial-branch=main")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "documents")  # so trees borrow their blobs
    manager = SessionManager(ws.config())
    try:
        s = manager.new("docs")  # converts the documents for its manifest
        send(manager, s.id, "hello", get_backend("echo"))
        converted = manager.materialize("docs").snapshots
    finally:
        manager.close()
    repo, ref = root / ".freshline/conversations.git", f"refs/freshline/conversations/{s.id}"
    snapshots = {path: snap.read_text(encoding="utf-8") for path, snap in converted.items()}
    return Stored(tree_blobs(repo, ref), snapshots)


def tree_blobs(repo: Path, ref: str) -> dict[str, bytes]:
    """Every file of every tree a conversation's commits point at, by path (last wins)."""
    found: dict[str, bytes] = {}
    for commit in git(repo, "rev-list", ref).split():
        for line in git(repo, "ls-tree", "-r", commit).splitlines():
            info, path = line.split("\t", 1)
            found[path] = subprocess.run(["git", "cat-file", "blob", info.split()[2]], cwd=repo,
                                         env=git_env(), check=True, capture_output=True).stdout
    return found


def test_a_secret_in_any_format_reaches_no_conversation_tree(stored: Stored) -> None:
    files = stored.trees
    assert {path: leaks(data) for path, data in files.items() if leaks(data)} == {}
    assert [p for p in HOLDING if p in files] == []  # left out, not stored
    assert "docs/clean.docx" in files
    utf16 = files["docs/utf16.txt"].decode("utf-16")
    assert utf16 == 'password = "[secret withheld: assigned-secret]"\nmore\n'


def test_a_secret_in_a_table_cell_reaches_no_snapshot(stored: Stored) -> None:
    snapshots = stored.snapshots
    assert {path: [s for s in SECRETS if s in text] for path, text in snapshots.items()} == {
        path: [] for path in snapshots}
    assert "| db | admin | [secret withheld: assigned-secret] |" in snapshots["docs/creds.xlsx"]
    assert "| API key | [secret withheld: assigned-secret] |" in snapshots["docs/table.docx"]
