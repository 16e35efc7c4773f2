"""What a client's transcript proves about the hook's deliveries (`session/evidence.py`,
pure, and file reads), read with Claude Code's format (`session/transcripts/claude_code.py`).

The entries are shaped as Claude Code 2.1 writes them (seen in real transcripts): hook
context as an `attachment` of type `hook_additional_context`, a hook's failure as a
`hook_non_blocking_error` attachment that quotes its stdout, the model's answers as
`assistant` entries, context over its limit as a `<persisted-output>` preview.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.session.evidence import (
    Evidence,
    Moment,
    Stage,
    Verdict,
    Witness,
    scan_lines,
    size_of,
    stage,
    verdict,
)
from freshline.session.evidence import read_evidence as read_with
from freshline.session.transcripts.claude_code import CLAUDE_CODE


def read_evidence(path: Path | None, start: int, tokens: list[str]) -> Evidence:
    return read_with(path, start, tokens, CLAUDE_CODE)


def context_entry(text: str, event: str = "UserPromptSubmit") -> dict[str, Any]:
    return {"type": "attachment", "attachment": {
        "type": "hook_additional_context", "content": [text], "hookName": event,
        "hookEvent": event}}


def error_entry(stdout: str) -> dict[str, Any]:
    return {"type": "attachment", "attachment": {
        "type": "hook_non_blocking_error", "hookEvent": "SessionStart",
        "stderr": f"Failed to run: Full stdout: {stdout}", "stdout": "", "exitCode": 1}}


ASSISTANT = {"type": "assistant", "message": {"role": "assistant", "content": [
    {"type": "text", "text": "ok"}]}}


def user_entry(content: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": content}}


def lines(*entries: Any) -> list[tuple[int, bytes]]:
    out, offset = [], 0
    for entry in entries:
        raw = (entry if isinstance(entry, bytes) else json.dumps(entry).encode()) + b"\n"
        out.append((offset, raw))
        offset += len(raw)
    return out


def scan(*entries: Any, tokens: tuple[str, ...] = ("tok1",)) -> Evidence:
    return scan_lines(lines(*entries), tokens, CLAUDE_CODE, Evidence(readable=True))


# --- the verdict (pure) -------------------------------------------------------------------


P, S, D = Stage.PENDING, Stage.SENT, Stage.DEAD


@pytest.mark.parametrize(
    ("found", "answered", "where", "readable", "expected"),
    [
        (True, False, P, True, Verdict.FOUND),
        (True, True, D, False, Verdict.FOUND),
        (False, False, P, True, Verdict.IN_FLIGHT),
        (False, False, P, False, Verdict.IN_FLIGHT),
        (False, True, P, True, Verdict.MISSING),  # the model answered without it
        (False, False, S, True, Verdict.MISSING),
        (False, True, S, False, Verdict.UNREADABLE),
        (False, False, S, False, Verdict.UNREADABLE),
        (False, False, D, True, Verdict.MISSING),  # it never went out
        (False, False, D, False, Verdict.MISSING),
    ],
)
def test_verdict_table(
    found: bool, answered: bool, where: Stage, readable: bool, expected: Verdict
) -> None:
    assert verdict(found, answered, where, readable) is expected


@given(st.booleans(), st.booleans(), st.sampled_from(list(Stage)), st.booleans())
def test_found_always_wins_and_only_what_went_out_falls_back_to_printing(
    found: bool, answered: bool, where: Stage, readable: bool
) -> None:
    fate = verdict(found, answered, where, readable)
    assert (fate is Verdict.FOUND) == found
    if fate is Verdict.UNREADABLE:
        assert where is not Stage.DEAD and not readable
    if fate is Verdict.IN_FLIGHT:
        assert where is Stage.PENDING and not answered


START, PROMPT, TOOL, END = Moment.START, Moment.PROMPT, Moment.TOOL, Moment.END


@pytest.mark.parametrize(
    ("printed", "prompted", "now", "expected"),
    [
        (START, False, PROMPT, P),  # goes out with this prompt
        (START, True, PROMPT, S),
        (START, True, END, S),
        (START, False, TOOL, P),  # decided once an answer follows in the transcript
        (START, False, END, D),  # no prompt ever came
        (START, False, START, D),
        (PROMPT, False, PROMPT, S),
        (PROMPT, False, TOOL, P),  # the transcript may not hold the request yet
        (PROMPT, False, Moment.STOP, P),
        (PROMPT, False, END, S),
    ],
)
def test_stage_follows_the_clients_flow(
    printed: Moment, prompted: bool, now: Moment, expected: Stage
) -> None:
    assert stage(printed, prompted, now) is expected


def test_a_witness_says_why_nothing_can_prove_a_delivery(tmp_path: Path) -> None:
    assert Witness(tmp_path / "t.jsonl", CLAUDE_CODE, PROMPT).blind is None
    assert Witness(None, CLAUDE_CODE, PROMPT).blind == "the hook's payload names no transcript"
    assert Witness(tmp_path / "t.jsonl", None, PROMPT).blind == (
        "freshline reads no transcript of this client")


# --- scanning lines -------------------------------------------------------------------------


def test_hook_context_with_the_token_counts() -> None:
    evidence = scan(context_entry('<project_context delivery="tok1">…'), ASSISTANT)
    assert set(evidence.found) == {"tok1"}
    assert evidence.answered_after(0) and evidence.last_answer > 0


def test_an_error_entry_quoting_the_output_does_not_count() -> None:
    evidence = scan(error_entry('{"additionalContext": "<x delivery=\\"tok1\\">"}'), ASSISTANT)
    assert evidence.found == {} and evidence.answered_after(0)


@pytest.mark.parametrize(
    "content",
    ['<project_context delivery="tok1">', [{"type": "text", "text": "a tok1 b"}]],
)
def test_a_user_message_carrying_the_token_counts(content: Any) -> None:
    assert set(scan(user_entry(content)).found) == {"tok1"}


def test_broken_and_foreign_lines_prove_nothing() -> None:
    evidence = scan(b'{"type": "attachment", "attach', b"[1, 2]", b"tok1 not json",
                    {"type": "summary", "summary": "tok1"})
    assert evidence.found == {} and evidence.last_answer == -1


def test_several_tokens_each_found_once() -> None:
    evidence = scan(context_entry("a tok1"), context_entry("b tok2 tok1"),
                    tokens=("tok1", "tok2", "tok3"))
    assert set(evidence.found) == {"tok1", "tok2"}
    assert evidence.found["tok1"] == 0  # the first entry that carried it


@given(st.lists(st.sampled_from(["ctx", "err", "answer", "user"]), max_size=12))
def test_found_exactly_when_given_context_carries_it(kinds: list[str]) -> None:
    make = {"ctx": lambda: context_entry("tok1"), "err": lambda: error_entry("tok1"),
            "answer": lambda: ASSISTANT, "user": lambda: user_entry("hello")}
    evidence = scan(*[make[k]() for k in kinds])
    assert ("tok1" in evidence.found) == ("ctx" in kinds)
    assert (evidence.last_answer >= 0) == ("answer" in kinds)


# --- reading the file ---------------------------------------------------------------------


def write(path: Path, *entries: Any) -> None:
    with path.open("ab") as handle:
        for offset_raw in lines(*entries):
            handle.write(offset_raw[1])


def test_read_from_an_offset_sees_only_what_came_after(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write(path, context_entry("tok1"), ASSISTANT)
    middle = size_of(path)
    write(path, context_entry("tok2"))
    evidence = read_evidence(path, middle, ["tok1", "tok2"])
    assert evidence.readable and set(evidence.found) == {"tok2"}
    assert not evidence.answered_after(middle)
    whole = read_evidence(path, 0, ["tok1", "tok2"])
    assert set(whole.found) == {"tok1", "tok2"} and whole.answered_after(0)


def test_a_rewritten_shorter_file_is_read_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write(path, context_entry("tok1"))
    assert set(read_evidence(path, 10**6, ["tok1"]).found) == {"tok1"}


@pytest.mark.parametrize("kind", ["none", "missing", "folder"])
def test_no_transcript_is_unreadable(tmp_path: Path, kind: str) -> None:
    path = {"none": None, "missing": tmp_path / "nope.jsonl", "folder": tmp_path}[kind]
    assert read_evidence(path, 0, ["tok1"]) == Evidence(readable=False)
    assert read_with(tmp_path / "t.jsonl", 0, ["tok1"], None) == Evidence(readable=False)
    assert size_of(path if kind != "folder" else None) == 0


# --- what counts as given, and whether the transcript records hook output at all ------------


PREVIEW = ("<persisted-output>\nOutput too large (16.1KB). Full output saved to: /h/x.txt\n\n"
           "Preview (first 2KB):\n<project_context_updates delivery=\"tok1\">\n- /a.md\n...\n"
           "</persisted-output>")


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (PREVIEW, False),  # only a preview: the model never had the block
        (PREVIEW.removesuffix("</persisted-output>"), False),  # the tag left open
        (PREVIEW + '\n<project_context delivery="tok1">…</project_context>', True),
        ('<project_context delivery="tok1">…</project_context>\n' + PREVIEW, True),
    ],
)
def test_a_token_only_inside_a_persisted_output_preview_is_not_found(
    text: str, found: bool
) -> None:
    assert ("tok1" in scan(context_entry(text)).found) is found


def test_a_transcript_records_hook_output_once_any_hook_entry_is_there() -> None:
    assert not scan(ASSISTANT, user_entry("hi")).hooked
    assert not scan({"type": "progress", "data": {"type": "hook_progress"}}).hooked
    assert scan(context_entry("other context")).hooked
    assert scan(error_entry("boom")).hooked


def test_hook_output_before_the_offset_counts_too(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(raw for _, raw in lines(context_entry("earlier"), ASSISTANT)))
    start = path.stat().st_size
    with path.open("ab") as handle:
        handle.write(json.dumps(ASSISTANT).encode() + b"\n")
    assert read_evidence(path, start, ["tok1"]).hooked
    bare = tmp_path / "bare.jsonl"
    bare.write_bytes(b"".join(raw for _, raw in lines(user_entry("hi"), ASSISTANT)))
    assert not read_evidence(bare, 0, ["tok1"]).hooked
