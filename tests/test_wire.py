"""The socket's JSON without the json package (`interfaces/wire.py`): the same text as
`json.dumps` writes, and the same values as `json.loads` reads."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.interfaces import wire

SCALARS = (st.none() | st.booleans() | st.integers() | st.text()
           | st.floats(allow_nan=False))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(), inner, max_size=4), max_leaves=20)


@given(VALUES)
def test_dumps_writes_what_json_writes(value: object) -> None:
    assert wire.dumps(value) == json.dumps(value)


@given(VALUES)
def test_loads_reads_what_json_reads(value: object) -> None:
    text = json.dumps(value, indent=1, ensure_ascii=False)
    assert wire.loads(text) == json.loads(text) == value
    assert wire.loads(text.encode() + b"\n") == value


NOT_JSON = ["", "{", '{"a": 1} x', "nul", '"\x01"', "[1,]", '{"a" 1}', '{"cwd": "/x", ']


@pytest.mark.parametrize("text", [*NOT_JSON, b"\xff"])
def test_loads_refuses_what_is_not_one_json_value(text: str | bytes) -> None:
    with pytest.raises(ValueError):
        wire.loads(text)


def test_loads_refuses_it_in_a_process_that_never_loaded_json() -> None:
    """(The scanner reports an error inside an object through the json package.)"""
    check = ("import sys\nfrom freshline.interfaces import wire\nfor text in sys.argv[1:]:\n"
             "    try:\n        wire.loads(text)\n    except ValueError:\n        continue\n"
             "    sys.exit(f'read {text!r}')\n")
    done = subprocess.run([sys.executable, "-c", check, *NOT_JSON], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("text", "value"), [("NaN", math.nan), ("-Infinity", -math.inf),
                                             ("  [1.5e3, -0]  ", [1500.0, 0]), ("{}", {})])
def test_loads_reads_json_loads_extras(text: str, value: object) -> None:
    got = wire.loads(text)
    assert got == value or (math.isnan(value) and math.isnan(got))  # type: ignore[arg-type]


def test_dumps_refuses_what_json_refuses() -> None:
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        wire.dumps({"a": {1}})
