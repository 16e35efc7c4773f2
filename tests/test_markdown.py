"""Markdown facts: tags from front matter and body, properties, and hostile input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.markdown import NoteFacts, parse_note, parse_tag


def tags(text: str | bytes) -> set[str]:
    return set(parse_note(text).tags)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("#paper", {"paper"}),
        ("see #paper and #ML.", {"paper", "ml"}),
        ("#Paper #PAPER #paper", {"paper"}),
        ("nested #a/b/c here", {"a/b/c"}),
        ("trailing #a/ slash", {"a"}),
        ("#with-dash_and_under", {"with-dash_and_under"}),
        ("#日本語 #café #🚀", {"日本語", "café", "🚀"}),
        ("end of sentence #tag, #other; #third!", {"tag", "other", "third"}),
        ("#123 #2024 #1/2", {"1/2"}),
        ("#y1984", {"y1984"}),
        ("# Heading\n## Sub heading\n###### Deep", set()),
        ("#NoSpaceIsATag", {"nospaceisatag"}),
        ("##notatag", set()),
        ("x#y mid-word and \\#escaped and &#39;entity", set()),
        ("http://example.com/#anchor and https://x.org/p#frag", set()),
        ("[link](page#frag) and [link](other.md #frag)", set()),
        ("[[Note#Heading]] and [[Note# Heading]]", set()),
        ("<https://x.org/#nope> <a href='#x'>", set()),
        ("`#code` and ``#double ` tick`` but #real", {"real"}),
        ("unclosed `tick #real", {"real"}),
        ("%% hidden #comment %% and <!-- #html --> #shown", {"shown"}),
        ("tab\t#tabbed", {"tabbed"}),
        ("- [ ] task #todo", {"todo"}),
        ("> quote #quoted", {"quoted"}),
    ],
)
def test_inline_tags(body: str, expected: set[str]) -> None:
    assert tags(body) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("```\n#fenced\n```\n#after", {"after"}),
        ("```python\n# comment\nx = '#str'\n```\n#after", {"after"}),
        ("~~~\n#fenced\n~~~\n#after", {"after"}),
        ("````\n```\n#still\n````\n#after", {"after"}),
        ("~~~~\n#fenced\n~~~\n#still\n~~~~\n#after", {"after"}),
        ("   ```\n#fenced\n   ```\n#after", {"after"}),
        ("```\n#never closed\n#still code", set()),
        ("``` inline ` backtick\n#not a fence", {"not"}),
        ("#before\n```\n#in\n```\n#between\n~~~\n#in2\n~~~", {"before", "between"}),
    ],
)
def test_code_fences(body: str, expected: set[str]) -> None:
    assert tags(body) == expected


@pytest.mark.parametrize(
    ("text", "expected_tags", "expected_props"),
    [
        ("---\ntags: [a, b]\n---\n", {"a", "b"}, {"tags": ["a", "b"]}),
        ("---\ntags: ['#A', \"#b c\"]\n---\n", {"a", "b", "c"}, {"tags": ["#A", "#b c"]}),
        ("---\ntags:\n  - one\n  - '#two'\n---\n", {"one", "two"}, {"tags": ["one", "#two"]}),
        ("---\ntags:\n- one\n- two # comment\n---\n", {"one", "two"}, {"tags": ["one", "two"]}),
        ("---\ntags: a b\n---\n", {"a", "b"}, {"tags": "a b"}),
        ("---\ntags: a, b/c\n---\n", {"a", "b/c"}, {"tags": "a, b/c"}),
        ("---\ntags: #a #b\n---\n", {"a", "b"}, {"tags": "#a #b"}),
        ("---\nTags: X\n---\n", {"x"}, {"Tags": "X"}),
        ("---\ntag: single\n---\n", {"single"}, {"tag": "single"}),
        ("---\ntags: [123, ok, 'bad tag!']\n---\n", {"ok", "bad"}, None),
        ("---\ntags:\n---\n#body", {"body"}, {"tags": None}),
        ("---\ntags: # nothing here\n---\n", set(), {"tags": None}),
        ("---\ntags: []\n---\n", set(), {"tags": []}),
        ("---\n---\n#body", {"body"}, {}),
    ],
)
def test_front_matter_tags(text: str, expected_tags: set[str], expected_props: object) -> None:
    facts = parse_note(text)
    assert set(facts.tags) == expected_tags
    if expected_props is not None:
        assert facts.properties == expected_props


def test_front_matter_properties() -> None:
    text = (
        "---\n"
        "# a comment line\n"
        'title: "Quoted: with colon"\n'
        "alias: 'it''s'\n"
        "status: active  # trailing comment\n"
        "year: 2024\n"
        "empty:\n"
        "nothing: ~\n"
        "url: https://example.com/a#b\n"
        '"spaced key": v\n'
        "list: [x, \"y, z\", 'w']\n"
        'escaped: "a\\nb\\"c"\n'
        "block: |\n"
        "  line one\n"
        "  line two\n"
        "folded: >\n"
        "  one\n"
        "  two\n"
        "\n"
        "after: blank\n"
        "---\n"
        "body\n"
    )
    assert parse_note(text).properties == {
        "title": "Quoted: with colon",
        "alias": "it's",
        "status": "active",
        "year": "2024",
        "empty": None,
        "nothing": None,
        "url": "https://example.com/a#b",
        "spaced key": "v",
        "list": ["x", "y, z", "w"],
        "escaped": 'a\nb"c',
        "block": "line one\nline two",
        "folded": "one two",
        "after": "blank",
    }


@pytest.mark.parametrize(
    "front",
    [
        "nested:\n  a: b",
        "key:value",
        "title: Note: thoughts",
        "- just\n- a list",
        "plain text line",
        "list: [a, [b]]",
        "map: {a: 1}",
        "list: [a, b",
        "anchor: &x value",
        "alias: *x",
        'quoted: "unclosed',
        'quoted: "a" trailing',
        "items:\n  - a: b",
        "items:\n  - - nested",
        "key: value\n  continued",
        "  indented: key",
        "block: |\nnot indented",
    ],
)
def test_front_matter_that_is_not_our_yaml_means_none(front: str) -> None:
    facts = parse_note(f"---\n{front}\n#tagged: x\n---\n#body\n")
    assert facts.properties == {}
    # The whole text is body then: its tags still count, and nothing crashes.
    assert "body" in facts.tags


def test_unclosed_front_matter_is_body() -> None:
    facts = parse_note("---\ntags: [a]\n#inbody\n")
    assert facts.properties == {}
    assert set(facts.tags) == {"inbody"}


def test_front_matter_must_start_the_file() -> None:
    facts = parse_note("\n---\ntags: [a]\n---\n")
    assert facts.properties == {} and set(facts.tags) == set()


def test_crlf_and_bom() -> None:
    text = "\ufeff---\r\ntags: [a]\r\nstatus: done\r\n---\r\n```\r\n#code\r\n```\r\n#b\r\n"
    facts = parse_note(text.encode("utf-8"))
    assert facts.properties == {"tags": ["a"], "status": "done"}
    assert set(facts.tags) == {"a", "b"}
    assert parse_note(text) == facts
    assert parse_note(text.replace("\r\n", "\r")) == facts


def test_invalid_utf8_bytes() -> None:
    data = b"---\ntags: [ok]\n---\n\xff\xfe #caf\xc3\xa9 #bro\xffken #\xff #good\n"
    facts = parse_note(data)
    assert set(facts.tags) == {"ok", "café", "bro", "good"}


def test_empty_inputs() -> None:
    assert parse_note("") == NoteFacts()
    assert parse_note(b"") == NoteFacts()
    assert parse_note("---") == NoteFacts()
    assert parse_note("---\n") == NoteFacts()


@pytest.mark.parametrize(
    ("text", "expected"),
    [("#Paper", "paper"), ("paper", "paper"), ("a/b/", "a/b"), ("#日本", "日本"), ("x1", "x1")],
)
def test_parse_tag(text: str, expected: str) -> None:
    assert parse_tag(text) == expected


@pytest.mark.parametrize("text", ["", "#", "123", "#12", "a b", "a.b", "a#b", "\ufffd"])
def test_parse_tag_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_tag(text)


_markdownish = st.lists(
    st.sampled_from(list("#`~-:[]{}|>'\"\n\r\t /\\aB1_é🚀*&!%") + ["---\n", "```", "tags:", "- "]),
    max_size=60,
).map("".join)


@given(st.one_of(st.binary(max_size=200), _markdownish, _markdownish.map(lambda s: "---\n" + s)))
def test_never_crashes_and_tags_are_clean(data: bytes | str) -> None:
    facts = parse_note(data)
    for tag in facts.tags:
        assert tag == parse_tag(tag)  # lowercase, valid, no '#', not all digits
    assert isinstance(facts.properties, dict)


@given(st.lists(st.sampled_from(["paper", "a/b", "Draft", "日本"]), max_size=4), st.booleans())
def test_front_matter_list_round_trip(items: list[str], block: bool) -> None:
    if block:
        listing = "tags:\n" + "".join(f"  - {t}\n" for t in items)
    else:
        listing = f"tags: [{', '.join(items)}]\n"
    facts = parse_note(f"---\n{listing}---\ntext\n")
    assert set(facts.tags) == {t.lower() for t in items}
