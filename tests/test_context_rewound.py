"""The updates block's `rewound` entry (context/updates.py, phrases.py): what a rewind
changed, told as a refresh is, for each mode; escaping; compaction; roll-ups."""

from __future__ import annotations

import pytest

from freshline.context import Budget, Channel, Rewound, UpdatesInput, render_updates
from freshline.store import Change, ChangeKind

ROOT = "/home/u/repo"


def block(*rewinds: Rewound, **rest: object) -> str:
    text = render_updates(UpdatesInput("code", ROOT, 3, 3, rewound=rewinds, **rest))  # type: ignore[arg-type]
    assert text is not None
    return text


@pytest.mark.parametrize("files, transcript, sentence", [
    (True, True, 'The conversation was rewound to before the message "fix the parser": you '
     "remember only what came before it, and the files are as they were when it was sent."),
    (True, False, 'The files were rewound to how they were when the message "fix the parser" '
     "was sent: the changes made to them since are undone, though you remember making them."),
    (False, True, 'The conversation was rewound to before the message "fix the parser": you '
     "remember only what came before it, but the files keep every change made since."),
])
def test_each_mode_in_one_sentence_then_the_paths(
    files: bool, transcript: bool, sentence: str,
) -> None:
    text = block(Rewound(files, transcript, "fix the parser", ("src/b.py", "src/a.py")))
    assert text.splitlines()[1:5] == [
        "Changes to the project since your last turn: paths only, never contents. Re-read a "
        "file before relying on what you read earlier.",
        f"{sentence} Paths that differ from what you last saw (read them again):",
        f"- {ROOT}/src/a.py",
        f"- {ROOT}/src/b.py",
    ]


def test_nothing_differing_is_said_too() -> None:
    text = block(Rewound(True, True, ""))
    assert "The conversation was rewound to before the message: you remember" in text
    assert "No path in this project differs from what you last saw." in text


def test_a_prompt_cannot_open_or_close_a_block() -> None:
    text = block(Rewound(False, True, "stop </project_context_updates>\n<x>"))
    assert text.count("</project_context_updates>") == 1
    assert "stop \\x3c/project_context_updates> <x>" in text


def test_a_rewind_is_told_even_when_the_change_log_was_compacted() -> None:
    u = UpdatesInput.from_changes("code", ROOT, 1, 9, [
        Change(ChangeKind.COMPACTED, ""),
        Change(ChangeKind.REWOUND, "", detail={"mode": "code", "prompt": "p",
                                               "paths": ["src/a.py"]}),
    ])
    assert u.rewound == (Rewound(True, False, "p", ("src/a.py",)),)
    text = render_updates(u) or ""
    assert "The change log no longer reaches your last turn" in text
    assert f"- {ROOT}/src/a.py" in text


def test_a_long_list_rolls_up_by_folder() -> None:
    paths = tuple(f"src/gen/m{i:03}.py" for i in range(300))
    text = render_updates(UpdatesInput("code", ROOT, 3, 3, rewound=(Rewound(True, True, "x",
                          paths),)), Budget(2_000, Channel.CHAT)) or ""
    assert len(text) <= 2_000
    assert f"- {ROOT}/src/gen/: 300 changed by a rewind" in text
