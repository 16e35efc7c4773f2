"""What freshline's hooks add to a turn of the real Claude Code, with the service running.

Two Claude Code sessions in stream-json mode (several turns in one process each), against
one loopback model stub: A in a workspace with `freshline hook install claude-code`
(http hooks to the service, each with its stand-in command), B in a copy without hooks.
Turns go to A and to B in turn (A B A B …), a note edited before each pair, so every A
turn delivers a change; a turn is timed from the user message written to Claude Code's
`result` line. Prints the median of A − B over the pairs:
  added per turn              a plain turn (UserPromptSubmit)          goal ≤ 10 ms
  added per PostToolUse       (a turn of READS Read calls − a plain turn) ÷ READS
                                                                       goal ≤ 3 ms
The service and its folders are the bench's own user's.
Usage: python bench/claude_code_turn.py [PAIRS]   (default 20)
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from measure import end_private_user, private_user, start_service  # noqa: E402
from startup import build  # noqa: E402
from tests.fake_model_servers import FakeReply  # noqa: E402
from tests.integration.anthropic_stub import (  # noqa: E402
    AnthropicStub,
    answered_tool,
    last_user_text,
)
from tests.integration.clients import CLAUDE_CODE, install  # noqa: E402

PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
READS = 10
MODEL = "claude-sonnet-4-5"
OFFLINE = {"ANTHROPIC_API_KEY": "sk-offline", "DISABLE_TELEMETRY": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
           "DISABLE_ERROR_REPORTING": "1"}


def responder(body: dict[str, Any]) -> FakeReply:
    """READS Read calls for a turn that asks for them, else a short answer."""
    text = last_user_text(body)
    if "READS" in text and not answered_tool(body):
        root = text.split("READS ", 1)[1].split()[0]
        return FakeReply(tool_calls=[(f"toolu_{i}", "Read", {
            "file_path": f"{root}/notes/f{i}/note{i}.md"}) for i in range(READS)])
    return FakeReply(text="Noted.")


class Session:
    """One Claude Code process in stream-json mode, in one workspace."""

    def __init__(self, executable: Path, root: Path, stub: AnthropicStub, home: Path) -> None:
        env = {**os.environ, **OFFLINE, "ANTHROPIC_BASE_URL": stub.url, "HOME": str(home)}
        self.root = root
        self.process = subprocess.Popen(
            [str(executable), "-p", "--input-format", "stream-json", "--output-format",
             "stream-json", "--verbose", "--model", MODEL, "--allowedTools", "Read",
             "--permission-mode", "acceptEdits"],
            cwd=root, env=env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL)

    def turn(self, text: str) -> float:
        """Seconds from the message written to the turn's result."""
        assert self.process.stdin is not None and self.process.stdout is not None
        message = {"type": "user", "message": {"role": "user", "content": text}}
        start = time.perf_counter()
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        for line in self.process.stdout:
            if json.loads(line).get("type") == "result":
                return time.perf_counter() - start
        raise SystemExit("bench: Claude Code ended mid-turn")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def added(a: Session, b: Session, kind: str, pairs: int) -> float:
    """The median of A − B over `pairs` turns of `kind` taken in turn, in seconds."""
    differences = []
    for i in range(pairs):
        for session in (a, b):  # the same change in both: only A is told of it
            note = session.root / "notes" / "f0" / f"edit{i % 3}.md"
            note.write_text(f"# edit {kind} {i}\n")
        text = f"{kind} {i}" + (f" READS {a.root}" if kind == "reads" else "")
        took_a = a.turn(text)
        took_b = b.turn(text.replace(str(a.root), str(b.root)))
        differences.append(took_a - took_b)
    return statistics.median(differences)


def main() -> None:
    executable = install(CLAUDE_CODE)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder).resolve()
        private_user(tmp)
        hooked, plain = tmp / "hooked", tmp / "plain"
        build(hooked)
        shutil.copytree(hooked, plain)
        subprocess.run([sys.executable, "-m", "freshline", "-w", str(hooked), "hook",
                        "install", "claude-code"], check=True, capture_output=True)
        try:
            start_service(hooked)
            with AnthropicStub(responder) as stub:
                a = Session(executable, hooked, stub, tmp / "home-a")
                b = Session(executable, plain, stub, tmp / "home-b")
                try:
                    a.turn("hello")  # SessionStart's command and the manifest: once
                    b.turn("hello")
                    per_turn = added(a, b, "plain", PAIRS)
                    reads = added(a, b, "reads", max(PAIRS // 2, 5))
                finally:
                    a.close()
                    b.close()
        finally:
            end_private_user()
    print(f"real Claude Code {CLAUDE_CODE.version}, the service running, {PAIRS} pairs (A B)")
    print(f"added per turn          {per_turn * 1000:6.1f} ms   (goal ≤ 10 ms)")
    print(f"added per PostToolUse   {(reads - per_turn) / READS * 1000:6.1f} ms   "
          f"(goal ≤ 3 ms; a turn of {READS} Reads added {reads * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
