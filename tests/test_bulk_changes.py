"""Bulk changes told whole, through the Claude Code hook run as Claude Code runs it (the
absolute console script, `--workspace`): 2,000 files in 20 folders at the default cap, a
log compacted past its cap (per-folder counts with their epochs), a log whose counts are
gone too (a fresh manifest), and the way back: a command the agent can run as written
from `/`, without freshline on its PATH, paged to the hook's budget."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from freshline.config import CHANNEL_BUDGETS

from .conftest import Workspace
from .test_hook import MANIFEST, UPDATES, context, payload

FRESHLINE = Path(sys.executable).with_name("freshline")  # the console script `hook install` names
HOOK_BUDGET = CHANNEL_BUDGETS["hook"]
# No freshline on PATH; CI=1 only keeps the command from leaving a watcher behind.
BARE_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "CI": "1"}
COMMAND = re.compile(r"run `([^`]+)`")


def hook(root: Path, stdin: str) -> str:
    """The hook as `hook install` writes it: the absolute console script, `--workspace`."""
    done = subprocess.run(
        [str(FRESHLINE), "--workspace", str(root), "hook", "claude-code"],
        input=stdin, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def prompt(ws: Workspace) -> str:
    return payload("user_prompt_submit", ws.root)


def bulk(ws: Workspace, folders: range, files: int = 100) -> None:
    """`files` new notes in each `Bulk/subNN/`, logged folder by folder (as a watcher
    running through an unzip logs them: a flush per batch)."""
    tracker = ws.tracker()
    for n in folders:
        for i in range(files):
            ws.write(f"Bulk/sub{n:02}/note {i:03}.md", f"# {n} {i}\n")
        tracker.flush()


@pytest.fixture
def vault(ws: Workspace, hook_log: Path) -> Workspace:
    ws.write("Bulk/readme.md", "# Bulk\n")
    return ws


def first_prompt(ws: Workspace) -> None:
    assert MANIFEST in context(hook(ws.root, prompt(ws)), "UserPromptSubmit")


def test_two_thousand_files_at_the_default_cap_are_counted_per_folder(vault: Workspace) -> None:
    vault.configure({"vault": {"include": ["Bulk"]}})  # the default change_log_cap
    first_prompt(vault)
    bulk(vault, range(20))
    out = hook(vault.root, prompt(vault))
    told = context(out, "UserPromptSubmit")
    assert len(out) <= HOOK_BUDGET
    assert "re-enumerate" not in told and "compacted" not in told
    for n in range(20):
        assert f"- {vault.root}/Bulk/sub{n:02}/: 100 created" in told


def test_a_log_compacted_past_its_cap_keeps_per_folder_counts_with_their_epochs(
    vault: Workspace,
) -> None:
    vault.configure({"vault": {"include": ["Bulk"]}}, change_log_cap=500)
    first_prompt(vault)
    start = vault.tracker().epoch("vault")
    bulk(vault, range(20))
    told = context(hook(vault.root, prompt(vault)), "UserPromptSubmit")
    assert "re-enumerate" not in told
    # The first 15 folders were compacted, one epoch each; the last 5 are still listed.
    for n in range(15):
        epoch = start + n + 1
        assert f"- {vault.root}/Bulk/sub{n:02}/: 100 created (epoch {epoch})" in told
    for n in range(15, 20):
        assert f"- {vault.root}/Bulk/sub{n:02}/: 100 created" in told
    assert hook(vault.root, prompt(vault)) == ""  # delivered: the cursor moved past them


def test_when_even_the_counts_are_gone_the_agent_gets_a_fresh_manifest(
    vault: Workspace,
) -> None:
    vault.configure({"vault": {"include": ["Bulk"]}}, change_log_cap=10)
    first_prompt(vault)
    bulk(vault, range(60), files=10)  # 59 compactions: more folder counts than are kept
    told = context(hook(vault.root, prompt(vault)), "UserPromptSubmit")
    assert "re-enumerate" not in told
    assert MANIFEST in told and UPDATES in told
    assert "the project as it is now" in told
    assert f"{vault.root}/Bulk/sub59/" in told  # the manifest holds today's folders
    assert hook(vault.root, prompt(vault)) == ""


def run_from_root(command: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """A command a block names, run as an agent's shell tool would: from `/`, with a PATH
    that holds no freshline."""
    return subprocess.run([*shlex.split(command), *extra], cwd="/", env=BARE_ENV,
                          capture_output=True, text=True, timeout=120)


def way_back(told: str, verb: str) -> str:
    """The command a rolled-up block's last line names (`changes` or `project files`)."""
    commands = [c for c in COMMAND.findall(told) if f" {verb} " in c]
    assert len(commands) == 1, told[-800:]
    assert commands[0].startswith(shlex.quote(str(FRESHLINE)) + " --workspace ")
    return commands[0]


def pages(command: str, as_json: bool = False, most: int = 100) -> list[str]:
    """The pages of a paged command (the first `most`), each within the hook's budget;
    their texts."""
    texts: list[str] = []
    number, total = 1, 1
    while number <= min(total, most):
        flags = ["--json"] if as_json else []
        paged = command.replace("--page 1", f"--page {number}")
        done = run_from_root(paged, *flags)
        assert done.returncode == 0, done.stderr
        assert len(done.stdout) <= HOOK_BUDGET
        if as_json:
            data: dict[str, Any] = json.loads(done.stdout)
            total, text = data["pages"], data["text"]
        else:
            text = done.stdout
            total = int(re.search(r"page \d+ of (\d+)", text).group(1))  # type: ignore[union-attr]
        texts.append(text)
        number += 1
    assert total > 1
    return texts


def test_the_way_back_runs_from_anywhere_and_pages_to_the_hook_budget(vault: Workspace) -> None:
    vault.configure({"vault": {"include": ["Bulk"]}})
    first_prompt(vault)
    bulk(vault, range(4))
    told = context(hook(vault.root, prompt(vault)), "UserPromptSubmit")
    command = way_back(told, "changes")
    assert "--page 1" in command and "--channel hook" in command
    listed = "\n".join(pages(command))
    for n in range(4):
        for i in range(100):
            assert f"{vault.root}/Bulk/sub{n:02}/note {i:03}.md" in listed
    first, second = pages(command, as_json=True, most=2)
    assert f"{vault.root}/Bulk/sub00/note 000.md" in first and "Next: the same command" in first


def test_the_manifest_names_a_listing_that_runs_from_anywhere(vault: Workspace) -> None:
    vault.configure({"vault": {"include": ["Bulk"]}})
    bulk(vault, range(4))
    told = context(hook(vault.root, prompt(vault)), "UserPromptSubmit")
    assert MANIFEST in told
    command = way_back(told, "project files")
    listed = "\n".join(pages(command))
    for n in range(4):
        assert f"Bulk/sub{n:02}/note 099.md" in listed
    one = run_from_root(command, "--folder", "Bulk/sub03")
    assert one.returncode == 0, one.stderr
    assert "Bulk/sub03/note 000.md" in one.stdout and "Bulk/sub04/" not in one.stdout
