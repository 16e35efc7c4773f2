"""PDF snapshots as navigable Markdown, on PDFs the tests draw: headings by size, weight,
section number and outline; re-flowed paragraphs with hyphenated words joined; lists;
two columns in reading order; ruled tables; code; page markers. And the pure parts:
markers, reading order and tables, with hypothesis."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from freshline.materialize import Limits
from freshline.materialize.converters import pdf_runs
from freshline.materialize.converters.markers import unmark
from freshline.materialize.converters.pdf import PdfConverter
from freshline.materialize.converters.pdf_blocks import reflow
from freshline.materialize.converters.pdf_layout import Rule, Span, lines
from freshline.materialize.converters.pdf_tables import find_tables
from tests.docgen import Frame, Stroke, Text, write_layout_pdf

LEFT = [f"Left column sentence number {n} goes on here." for n in range(1, 9)]
RIGHT = [f"Right column sentence number {n} goes on too." for n in range(1, 9)]


def convert(path: Path) -> str:
    return PdfConverter().convert(path, Limits())


def body(text: str) -> list[str]:
    """The snapshot's lines other than page markers and blank ones."""
    return [line for line in text.splitlines() if line and not line.startswith("<!-- page")]


def test_hyphenated_paragraph_is_one_line_with_whole_words(tmp_path: Path) -> None:
    # pdfium reads `manip-` at a line's end as `manip\ufffe` (Debian's libtasn1 manual).
    path = write_layout_pdf(tmp_path / "h.pdf", [[
        Text(72, 700, "The library offers structure manip-"),
        Text(72, 686, "ulation and a parser; an IEEE-"),
        Text(72, 672, "754 number stays whole."),
    ]])
    assert body(convert(path)) == [
        "The library offers structure manipulation and a parser; an IEEE-754 number stays whole."
    ]


def test_two_column_page_reads_left_column_then_right(tmp_path: Path) -> None:
    # Drawn line across, as some writers do: left line 1, right line 1, left line 2, ...
    items = [Text(190, 740, "A Title Across Both Columns", size=18)]
    for n, (left, right) in enumerate(zip(LEFT, RIGHT, strict=True)):
        items += [Text(72, 700 - 14 * n, left, size=10), Text(320, 700 - 14 * n, right, size=10)]
    text = convert(write_layout_pdf(tmp_path / "two.pdf", [items]))
    assert body(text) == ["# A Title Across Both Columns", " ".join(LEFT), " ".join(RIGHT)]


def test_headings_of_three_sizes_get_three_levels(tmp_path: Path) -> None:
    words = "Plain body text at the size most of the document has, long enough to count."
    path = write_layout_pdf(tmp_path / "sizes.pdf", [[
        Text(72, 740, "Report Title", size=24),
        Text(72, 700, words),
        Text(72, 670, "Findings", size=16),
        Text(72, 640, words),
        Text(72, 610, "Detail of a finding", size=13),
        Text(72, 580, words),
        Text(72, 550, "Bold run-in heading", font="bold"),
        Text(72, 520, words),
    ]])
    assert body(convert(path)) == [
        "# Report Title", words, "## Findings", words, "### Detail of a finding", words,
        "#### Bold run-in heading", words,
    ]


def test_a_paragraph_cut_by_a_columns_end_is_whole_and_contents_lines_are_no_headings(
    tmp_path: Path,
) -> None:
    left = [Text(72, 700 - 14 * n, f"Left words line {n} goes on") for n in range(6)]
    right = [Text(320, 700, "and ends in the right column."),
             *[Text(320, 686 - 14 * n, f"Right line {n} stays apart.") for n in range(5)]]
    contents = [Text(72, 760, "1 Introduction . . . . . . . . 1", font="bold")]
    text = convert(write_layout_pdf(tmp_path / "cut.pdf", [contents + left + right]))
    assert body(text)[:2] == [
        "1 Introduction . . . . . . . . 1",
        " ".join(t.text for t in left) + " and ends in the right column. "
        + " ".join(t.text for t in right[1:]),
    ]


def test_a_run_in_heading_is_a_heading_of_its_own(tmp_path: Path) -> None:
    path = write_layout_pdf(tmp_path / "run-in.pdf", [[
        Text(72, 700, "Abstract.", font="bold"),
        Text(125, 700, "We study how words run on after a bold lead."),
        Text(72, 686, "The paragraph goes on here."),
    ]])
    assert body(convert(path)) == [
        "# Abstract", "We study how words run on after a bold lead. The paragraph goes on here."
    ]


def test_ruled_table_is_a_markdown_table(tmp_path: Path) -> None:
    xs, ys = (72, 200, 330), (700, 680, 660, 640)
    grid: list[Text | Stroke] = [Stroke(72, y, 330, y) for y in ys]
    grid += [Stroke(x, 640, x, 700) for x in xs]
    cells = [("Name", "Quantity"), ("apple", "3"), ("pear", "12")]
    for row, (left, right) in enumerate(cells):
        grid += [Text(78, 686 - 20 * row, left), Text(206, 686 - 20 * row, right)]
    grid.append(Text(72, 600, "Text below the table."))
    text = convert(write_layout_pdf(tmp_path / "table.pdf", [grid]))
    assert body(text) == [
        "| Name | Quantity |", "| --- | --- |", "| apple | 3 |", "| pear | 12 |",
        "Text below the table.",
    ]


def test_a_table_of_framed_cells_is_a_markdown_table(tmp_path: Path) -> None:
    cells: list[Text | Stroke | Frame] = []
    for row, (left, right) in enumerate([("Key", "Value"), ("alpha", "1")]):
        y = 680 - 20 * row
        cells += [Frame(72, y, 128, 20), Frame(200, y, 128, 20),
                  Text(78, y + 6, left), Text(206, y + 6, right)]
    text = convert(write_layout_pdf(tmp_path / "framed.pdf", [cells]))
    assert body(text) == ["| Key | Value |", "| --- | --- |", "| alpha | 1 |"]


def test_outline_names_headings_the_sizes_do_not(tmp_path: Path) -> None:
    text_lines = ["Introduction", "We begin here with words.", "Method",
                  "Then we go on with more words.", "Setup", "The setup is described."]
    page = [Text(72, 700 - 20 * n, line) for n, line in enumerate(text_lines)]
    path = write_layout_pdf(tmp_path / "outlined.pdf", [page],
                            outline=[("Introduction", 0, 0), ("Method", 0, 0), ("Setup", 0, 1)])
    assert body(convert(path)) == [
        "# Introduction", "We begin here with words.", "# Method",
        "Then we go on with more words.", "## Setup", "The setup is described.",
    ]


def test_lists_code_and_page_markers(tmp_path: Path) -> None:
    first = [
        Text(72, 700, "Steps to follow:"),
        Text(72, 680, "\xb7 install the package"),
        Text(72, 666, "\xb7 run it once"),
        Text(72, 646, "1. numbered first"),
        Text(72, 632, "2. numbered second"),
    ]
    second = [Text(72, 700, "$ freshline init", font="mono"),
              Text(72 + 4 * 6.6, 688, "--json", font="mono"),  # four glyphs in
              Text(72, 660, "After the code.")]
    text = convert(write_layout_pdf(tmp_path / "list.pdf", [first, second]))
    assert text.splitlines() == [
        "<!-- page 1 -->", "", "Steps to follow:", "", "- install the package",
        "- run it once", "1. numbered first", "2. numbered second", "",
        "<!-- page 2 -->", "", "```", "$ freshline init", "    --json", "```", "",
        "After the code.",
    ]


def test_text_that_looks_like_markup_is_escaped(tmp_path: Path) -> None:
    path = write_layout_pdf(tmp_path / "m.pdf", [[Text(72, 700, "# not a heading"),
                                                   Text(72, 670, "<!-- page 9 -->")]])
    assert body(convert(path)) == ["\\# not a heading", "\\<!-- page 9 -->"]


# -- pure parts --------------------------------------------------------------------------


def test_unmark_table() -> None:
    cases = {
        "manip\ufffeulation": "manipulation",
        "manip\ufffe\r\nulation": "manipulation",
        "repeat\x02 accumulate": "repeataccumulate",
        "IEEE\ufffe754": "IEEE-754",
        "end\ufffe": "end",
        "soft\u00adhyphen": "softhyphen",
        "\ufeffbom": "bom",
        "plain-text": "plain-text",
    }
    assert {given_: unmark(given_) for given_ in cases} == cases


@given(st.text(alphabet="ab \n-\ufffe\x02\u00adX1"))
def test_unmark_leaves_no_marker_and_is_idempotent(text: str) -> None:
    once = unmark(text)
    assert not set(once) & {"\ufffe", "\x02", "\u00ad"}
    assert unmark(once) == once


@given(st.text(alphabet="abc -\ufffe", min_size=1).filter(lambda t: t.strip()))
def test_reflow_keeps_every_letter(first: str) -> None:
    joined = reflow([first, "tail"])
    assert sorted(c for c in joined if c.isalpha()) == sorted(
        c for c in first + "tail" if c.isalpha()
    )


span_boxes = st.lists(
    st.tuples(st.integers(0, 500), st.integers(0, 700), st.integers(1, 200),
              st.sampled_from([8.0, 10.0, 14.0])),
    max_size=40,
)


@given(span_boxes)
def test_reading_order_keeps_every_run_once(boxes: list[tuple[int, int, int, float]]) -> None:
    spans = [Span(f"w{i}", x, y, x + w, y + size, size) for i, (x, y, w, size) in enumerate(boxes)]
    ordered = [s.text for line in lines(spans) for s in line.spans]
    assert sorted(ordered) == sorted(s.text for s in spans)


def test_reading_order_joins_a_word_drawn_in_two_runs() -> None:
    # pdfTeX drew `whit` and `e` as two objects, the second 1.5 pt higher.
    spans = [Span("additive whit", 54, 100, 295, 108, 9), Span("e", 295.2, 98.5, 298.8, 103, 9)]
    assert [line.text for line in lines(spans)] == ["additive white"]


def test_tables_need_two_rows_two_columns_and_text_in_most_cells() -> None:
    def grid(xs: range, ys: range) -> list[Rule]:
        return ([Rule(True, y, xs[0], xs[-1]) for y in ys]
                + [Rule(False, x, ys[0], ys[-1]) for x in xs])

    def cell(text: str, x: float, y: float) -> Span:
        return Span(text, x + 5, y + 5, x + 30, y + 15, 10)

    one_row = [cell("a", 0, 0), cell("b", 50, 0)]
    assert find_tables(grid(range(0, 101, 50), range(0, 21, 20)), one_row) == ([], one_row)
    plot = [cell("0.1", 0, 0), cell("0.2", 0, 20)]  # two labels in a 4 x 4 grid
    assert find_tables(grid(range(0, 201, 50), range(0, 81, 20)), plot) == ([], plot)
    filled = [cell(t, x, y) for t, x, y in (("k", 0, 0), ("v", 50, 0), ("a", 0, 20))]
    tables, rest = find_tables(grid(range(0, 101, 50), range(0, 41, 20)), filled)
    assert rest == [] and [t.rows for t in tables] == [[["k", "v"], ["a", ""]]]


def test_page_markers_count_pages(tmp_path: Path) -> None:
    pages = [[Text(72, 700, f"Page {n} words")] for n in range(1, 4)]
    text = convert(write_layout_pdf(tmp_path / "p.pdf", pages))
    assert re.findall(r"^<!-- page (\d+) -->$", text, re.MULTILINE) == ["1", "2", "3"]


# A run's text has spaces inside, not at its ends: a space between two runs is pdfium's.
_RUN = st.from_regex(r"[ab\x02-]([ab \x02-]{0,10}[ab\x02-])?", fullmatch=True)
_GAP = st.sampled_from(["", " ", "  ", "\r\n"])  # characters pdfium generated between runs


@given(st.lists(st.tuples(_RUN, _GAP), min_size=1, max_size=30))
def test_each_object_s_text_is_cut_from_the_page_s_by_few_questions(
    runs: list[tuple[str, str]]
) -> None:
    """Each text object's characters lie together in the page's text: asking a few
    characters' owners gives every object's text exactly, as pdfium's own call does."""
    text, owners = "", []
    truth: dict[int, str | None] = {}
    extents = {}
    for owner, (run, gap) in enumerate(runs):
        extents[owner] = (len(text), len(text) + len(run) - 1)
        text += run + gap
        owners += [owner] * len(run) + [None] * len(gap)
        truth[owner] = run + (" " if gap.startswith(" ") else "")
    asked: list[int] = []

    def ask(indices: list[int]) -> list[int | None]:
        asked.extend(indices)
        return [owners[i] for i in indices]

    assert pdf_runs.extents(text, ask) == extents
    assert len(asked) <= len(text) + text.count("\r\n") + 1  # a line's two ends may be one
    assert pdf_runs.texts(text, ask) == truth
