"""Secrets in table cells (`tablescan`, pure): a cell named by the cell before it or by its
column's header is judged as the scan judges `name = "value"`; the rest of the text stays
as it was, line for line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.secretscan import WITHHELD_PREFIX, SecretKind
from freshline.tablescan import Cell, markdown_tables, secret_cells, withhold_cells

PASSWORD = "Zq8#mK2$pL9vX4wR"
KEY = "Jm4Tx9Lq2Wv7Rb3Kz8Nc"
GONE = "[secret withheld: assigned-secret]"

# table text → the cells' texts after withholding
TABLE: list[tuple[str, str]] = [
    (f"| password | {PASSWORD} |\n", f"| password | {GONE} |\n"),  # named by its neighbour
    (f"| user | password |\n| --- | --- |\n| admin | {PASSWORD} |\n",
     f"| user | password |\n| --- | --- |\n| admin | {GONE} |\n"),  # by its header
    (f"| API key | {KEY} |\n", f"| API key | {GONE} |\n"),  # a name of two words
    ("| password | hunter2 |\n", "| password | hunter2 |\n"),  # too short to be random
    (f"| colour | {PASSWORD} |\n", f"| colour | {PASSWORD} |\n"),  # no secret's name
    ("| password | your-password-here |\n", "| password | your-password-here |\n"),
    (f"| password | {GONE} |\n", f"| password | {GONE} |\n"),  # already withheld
    (f"| db \\| token | {PASSWORD} |\n", f"| db \\| token | {GONE} |\n"),  # escaped pipe
    (f"password | {PASSWORD}\n", f"password | {PASSWORD}\n"),  # not a table line
    (f"| password |\n\n| {PASSWORD} |\n", f"| password |\n\n| {PASSWORD} |\n"),  # two tables
    (f"  | secret | {PASSWORD} |  \r\n", f"  | secret | {GONE} |  \r\n"),  # indented, CRLF
]


@pytest.mark.parametrize(("text", "expected"), TABLE)
def test_cells_are_judged_by_their_neighbour_and_their_header(text: str, expected: str) -> None:
    withheld = withhold_cells(text)
    assert withheld.text == expected
    assert withheld.count == expected.count(GONE) - text.count(GONE)


def test_cells_know_where_they_stand() -> None:
    text = "intro\n| a | b\\|c |\n| --- | --- |\n| 1 |  |\n"
    (table,) = markdown_tables(text)
    assert [[c.text for c in row] for row in table] == [["a", "b\\|c"], ["1", ""]]
    assert all(text[c.start:c.end] == c.text for row in table for c in row)


def test_a_header_names_its_column_only_below_it() -> None:
    rows = [[Cell("password"), Cell(PASSWORD)], [Cell("x"), Cell("y")]]
    assert secret_cells(rows) == {(0, 1): SecretKind.ASSIGNED_SECRET}


cells = st.text(st.sampled_from("ab |\\-:Zq8#mK2$pL9vX4wR"), max_size=20)
lines = st.lists(st.one_of(cells, cells.map(lambda c: f"| password | {c} |")), max_size=8)


@given(lines)
def test_withholding_keeps_every_line_and_all_but_the_cells(parts: list[str]) -> None:
    text = "\n".join(parts)
    withheld = withhold_cells(text)
    assert withheld.text.count("\n") == text.count("\n")
    if not withheld.count:
        assert withheld.text == text
    assert withheld.text.count(WITHHELD_PREFIX) == text.count(WITHHELD_PREFIX) + withheld.count
    assert withhold_cells(withheld.text).count == 0  # nothing left to find
