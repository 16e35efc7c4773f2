"""Converters on real generated documents, in process (the worker isolation is tested in
test_materialize_runner.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.materialize import (
    ConversionFailed,
    Limits,
    converter_for,
    document_suffixes,
    is_document,
)
from freshline.materialize.converters import markdown_table, register, registered, unregister
from freshline.materialize.converters.web import html_to_markdown
from tests import docgen

LIMITS = Limits()


def convert(path: Path, limits: Limits = LIMITS) -> str:
    converter = converter_for(path)
    assert converter is not None
    return converter.convert(path, limits)


def failure(path: Path, limits: Limits = LIMITS) -> str:
    with pytest.raises(ConversionFailed) as caught:
        convert(path, limits)
    return str(caught.value)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("paper.pdf", "pdf"),
        ("Paper.PDF", "pdf"),
        ("a/b/report.docx", "docx"),
        ("deck.pptx", "pptx"),
        ("book.xlsx", "xlsx"),
        ("page.html", "html"),
        ("page.htm", "html"),
        ("notes.md", None),
        ("readme.txt", None),
        ("photo.png", None),
        ("scan.jpg", None),
        ("archive.zip", None),
        ("no_extension", None),
        ("pdf", None),
    ],
)
def test_converter_lookup_by_extension(name: str, expected: str | None) -> None:
    converter = converter_for(name)
    assert (converter.name if converter else None) == expected
    assert is_document(name) is (expected is not None)


NAMES = st.text(alphabet="a.pdfPDF ", min_size=1, max_size=6).filter(lambda n: n not in (".", ".."))


@given(st.lists(NAMES, min_size=1, max_size=3))
def test_a_workspace_path_is_a_document_as_its_path_object_is(names: list[str]) -> None:
    path = "/".join(names)  # a manifest asks each file in scope: no path object built
    assert is_document(path) is is_document(PurePath(path))
    if is_document(path):  # the first look at a path's end rules out no document
        assert path.lower().endswith(document_suffixes())


def test_every_builtin_converter_is_found_by_each_of_its_extensions() -> None:
    # The registry names each built-in's extensions without importing it (the hook's start-up).
    builtins = registered()
    assert {type(c).__name__ for c in builtins} == {
        "PdfConverter", "DocxConverter", "PptxConverter", "XlsxConverter", "HtmlConverter"}
    for converter in builtins:
        for extension in converter.extensions:
            assert converter_for(f"file{extension.upper()}") is converter


def test_unregistering_a_replacement_brings_the_builtin_back() -> None:
    builtin = converter_for("a.pdf")

    class Mine(type(builtin)):  # type: ignore[misc]
        extensions = (".pdf", ".mine")

    mine = Mine()
    register(mine)
    try:
        assert converter_for("a.pdf") is mine and is_document("b.mine")
    finally:
        unregister(mine)
    assert converter_for("a.pdf") is builtin
    assert not is_document("b.mine") and converter_for("b.mine") is None


def test_pdf_text_per_page(tmp_path: Path) -> None:
    pages = [["Alpha (one)", "back\\slash"], ["Bravo two"], ["Charlie three"], ["Delta four"]]
    text = convert(docgen.write_pdf(tmp_path / "a.pdf", pages))
    headers = re.findall(r"^<!-- page (\d+) -->$", text, re.MULTILINE)
    assert headers == ["1", "2", "3", "4"]
    for number, lines in enumerate(pages, 1):
        section = text.split(f"<!-- page {number} -->\n")[1].split("<!-- page")[0]
        assert all(line in section for line in lines)


def test_docx_heading_paragraph_list_and_table(tmp_path: Path) -> None:
    path = docgen.write_docx(
        tmp_path / "r.docx", "Quarterly Report", ["first item", "second item"],
        [["Name", "Qty"], ["apple", "3"], ["pi|pe", "7"]],
    )
    text = convert(path)
    assert text.startswith("# Quarterly Report\n")
    assert "An opening paragraph." in text
    assert "- first item\n- second item" in text
    assert "| Name | Qty |\n| --- | --- |\n| apple | 3 |\n| pi\\|pe | 7 |" in text


def test_pptx_slides_titles_text_and_notes(tmp_path: Path) -> None:
    path = docgen.write_pptx(
        tmp_path / "d.pptx",
        [("Intro", "Body one", "Say hello"), ("Results", "Body two", "Mention the chart")],
    )
    text = convert(path)
    first, second = text.split("## Slide 2: Results")
    assert first.startswith("## Slide 1: Intro")
    assert "Body one" in first and "Notes: Say hello" in first
    assert "Body two" in second and "Notes: Mention the chart" in second
    assert text.count("Intro") == 1  # the title is not repeated as body text


def test_xlsx_two_sheets_as_tables(tmp_path: Path) -> None:
    path = docgen.write_xlsx(
        tmp_path / "b.xlsx",
        {"Fruit": [["name", "qty"], ["apple", 3], ["pear", 2.5]], "Staff": [["who"], ["Ann"]]},
    )
    text = convert(path)
    assert "## Sheet: Fruit\n\n| name | qty |\n| --- | --- |\n| apple | 3 |\n| pear | 2.5 |" in text
    assert "## Sheet: Staff\n\n| who |\n| --- |\n| Ann |" in text


def test_xlsx_rows_are_capped_with_a_note(tmp_path: Path) -> None:
    rows = [["n", "square"], *([i, i * i] for i in range(1, 31))]
    path = docgen.write_xlsx(tmp_path / "big.xlsx", {"Numbers": rows})
    text = convert(path, Limits(max_rows=10))
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table) == 1 + 1 + 9  # header row, separator, nine data rows
    assert "| 9 | 81 |" in text and "| 10 | 100 |" not in text
    assert "_21 more rows not shown._" in text


def test_html_readable_and_script_free(tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_text(
        "<html><head><title>Hidden title</title><style>p{color:red}</style></head><body>"
        "<h1>Main &amp; heading</h1><p>See <a href='https://example.org/x'>the site</a> now."
        "</p><script>var leaked = 'SECRET';</script><ul><li>one<li>two</ul>"
        "<table><tr><th>k<th>v<tr><td>a<td>1</table><h2>Sub</h2><pre>keep\n  spaces</pre>"
        "</body></html>"
    )
    text = convert(page)
    assert "# Main & heading" in text
    assert "See [the site](https://example.org/x) now." in text
    assert "- one\n- two" in text
    assert "| k | v |\n| --- | --- |\n| a | 1 |" in text
    assert "## Sub" in text
    assert "```\nkeep\n  spaces\n```" in text
    for hidden in ("SECRET", "leaked", "color:red", "Hidden title"):
        assert hidden not in text


def test_html_charset_from_meta(tmp_path: Path) -> None:
    page = tmp_path / "latin.htm"
    page.write_bytes(b'<meta charset="iso-8859-1"><p>caf\xe9 cr\xe8me</p>')
    assert "café crème" in convert(page)


@given(visible=st.text(min_size=1).filter(lambda t: "ZQXJ" not in t), hidden=st.text())
def test_html_script_and_style_never_leak(visible: str, hidden: str) -> None:
    from html import escape

    marker = "ZQXJ" + hidden.replace("<", "")
    html = (
        f"<p>{escape(visible)}</p><script>{marker}</script><style>{marker}</style>"
        f"<div>{escape(visible)}</div>"
    )
    assert "ZQXJ" not in html_to_markdown(html)


def test_truncated_pdf_fails(tmp_path: Path) -> None:
    whole = docgen.pdf_bytes([["some text"]] * 3)
    (tmp_path / "t.pdf").write_bytes(whole[: len(whole) // 3])
    assert failure(tmp_path / "t.pdf").startswith("unreadable PDF (pdfium: ")


def test_random_bytes_named_pdf_fail(tmp_path: Path) -> None:
    (tmp_path / "r.pdf").write_bytes(os.urandom(4096))
    assert failure(tmp_path / "r.pdf").startswith("unreadable PDF")


def test_encrypted_pdf_fails_with_password_reason(tmp_path: Path) -> None:
    path = docgen.write_encrypted_pdf(tmp_path / "e.pdf", [["top secret"]])
    assert failure(path) == "encrypted PDF (password required)"


def test_pdf_without_text_fails(tmp_path: Path) -> None:
    path = docgen.write_pdf(tmp_path / "scan.pdf", [["x"], ["y"]], text=False)
    assert failure(path) == "no extractable text"


def test_zip_bomb_docx_refused_by_declared_size(tmp_path: Path) -> None:
    path = docgen.write_zip_bomb_docx(tmp_path / "bomb.docx", unpacked_mib=300)
    assert failure(path) == "unpacks to 300 MiB, over the 256 MiB limit (zip bomb?)"


@pytest.mark.parametrize("suffix", [".docx", ".pptx", ".xlsx"])
def test_office_file_that_is_not_a_zip_fails(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    assert failure(path).startswith("not a valid office file")


def test_empty_documents_have_no_extractable_text(tmp_path: Path) -> None:
    (tmp_path / "blank.html").write_text("<html><head><title>t</title></head><body> </body>")
    docgen.write_xlsx(tmp_path / "blank.xlsx", {"Empty": []})
    assert failure(tmp_path / "blank.html") == "no extractable text"
    assert failure(tmp_path / "blank.xlsx") == "no extractable text"


@given(st.lists(st.lists(st.text(), min_size=1, max_size=4), min_size=1, max_size=5))
def test_markdown_table_shape(rows: list[list[str]]) -> None:
    width = max(len(row) for row in rows)
    lines = markdown_table(rows).split("\n")
    assert len(lines) == len(rows) + 1
    assert lines[1] == "|" + " --- |" * width
    for line in lines:
        # every line has width cells: width + 1 pipes not escaped by a backslash
        assert len(re.findall(r"(?<!\\)\|", line)) == width + 1


@pytest.mark.parametrize(
    ("html", "markdown"),
    [
        ("<table><tr><td>a<td>b<tr><td>c<td>d</table>", "| a | b |\n| --- | --- |\n| c | d |"),
        ("<head><title>gone</title><body><p>visible</p>", "visible"),
        ("<p><a href='u'>unclosed link", "unclosed link"),
        ("<a href='javascript:go()'>click</a> <a href='#top'>top</a>", "click top"),
        ("<ul><li>one<ul><li>in</ul><li>two</ul><p>end", "- one\n  - in\n- two\n\nend"),
        ("<p>a &lt;b&gt; &amp; c</p>", "a <b> & c"),
        ("<p>line one<br>line two</p>", "line one\nline two"),
        ("<div>x <script>if (a < b) { s = '</div>' }</script> y", "x y"),
        ("<td>cell outside a table</td>", "cell outside a table"),
    ],
)
def test_html_edges(html: str, markdown: str) -> None:
    assert html_to_markdown(html) == markdown


def test_pptx_tables_and_grouped_text(tmp_path: Path) -> None:
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    slide.shapes.title.text = "Numbers"
    grid = slide.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (row, col), value in {(0, 0): "k", (0, 1): "v", (1, 0): "a", (1, 1): "1"}.items():
        grid.cell(row, col).text = value
    group = slide.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(1), Inches(4), Inches(2), Inches(1)).text = "grouped words"
    deck.save(str(tmp_path / "t.pptx"))

    text = convert(tmp_path / "t.pptx")

    assert text.startswith("## Slide 1: Numbers")
    assert "| k | v |\n| --- | --- |\n| a | 1 |" in text
    assert "grouped words" in text and "Notes:" not in text


def test_docx_numbered_list_items(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_heading("Steps", level=2)
    for step in ("mix", "bake"):
        document.add_paragraph(step, style="List Number")
    document.save(str(tmp_path / "s.docx"))

    assert convert(tmp_path / "s.docx") == "## Steps\n\n1. mix\n1. bake\n"


def test_docx_nested_list_keeps_its_levels(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_paragraph("Before the list.")
    for text, style in (("fruit", "List Bullet"), ("apple", "List Bullet 2"),
                        ("pear", "List Bullet 2"), ("bread", "List Bullet")):
        document.add_paragraph(text, style=style)
    document.save(str(tmp_path / "n.docx"))
    assert convert(tmp_path / "n.docx") == (
        "Before the list.\n\n- fruit\n  - apple\n  - pear\n- bread\n"
    )


def test_pptx_body_paragraphs_are_a_nested_list(tmp_path: Path) -> None:
    import pptx

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Plan"
    frame = slide.placeholders[1].text_frame
    frame.text = "first"
    for text, level in (("detail", 1), ("second", 0)):
        paragraph = frame.add_paragraph()
        paragraph.text, paragraph.level = text, level
    deck.save(str(tmp_path / "p.pptx"))
    assert convert(tmp_path / "p.pptx") == "## Slide 1: Plan\n\n- first\n  - detail\n- second\n"


def test_soft_hyphens_leave_no_word_broken_in_any_format(tmp_path: Path) -> None:
    # Issue 45: a marker inside a word (`manip\u00adulation`) made `search` miss it.
    word = "manip\u00adulation"
    paths = [
        docgen.write_docx(tmp_path / "w.docx", word, [word], [[word, "x"]]),
        docgen.write_pptx(tmp_path / "s.pptx", [(word, word, word)]),
        docgen.write_xlsx(tmp_path / "x.xlsx", {"S": [[word]]}),
        tmp_path / "h.html",
    ]
    paths[-1].write_text(f"<p>manip&shy;ulation and {word}</p>", encoding="utf-8")
    for path in paths:
        text = convert(path)
        assert "manipulation" in text and "\u00ad" not in text, path.name


@given(st.text(alphabet="ab./\\ PDFpdf", max_size=12))
def test_documents_are_told_by_the_suffix_a_path_object_finds(path: str) -> None:
    expected = converter_for(PurePath(path)) if path else None
    assert converter_for(path) is expected
