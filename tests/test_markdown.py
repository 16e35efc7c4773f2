"""Markdown facts: tags from front matter and body, properties, and hostile input."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from freshline.markdown import LIST_KEYS, NoteFacts, frontmatter, parse_note, parse_tag


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
    ("body", "expected"),
    [
        # fences inside list items, blockquotes and callouts
        ("- step:\n\n    ```yaml\n    color: #no\n\n    x: 1\n    ```\n    #yes", {"yes"}),
        ("1. item\n   ~~~\n   #no\n   ~~~\n#yes", {"yes"}),
        ("> ```\n> #no\n> ```\n> #yes", {"yes"}),
        ("> > ```\n> > #no\n> > ```\n> > #yes", {"yes"}),
        ("> [!note]\n> ```md\n> ```tasks\n> #no\n> ```\n> #yes\n> ```\n> #no2", {"yes"}),
        ("> ```\n> #no\n#yes (the quote ended, and its fence with it)", {"yes"}),
        # an escaped backtick is text, not a code delimiter
        ("\\```\n#yes\n\\```", {"yes"}),
        ("\\` #yes `", {"yes"}),
        ("`a\\` #no`", set()),
        # inline code: runs of the same length pair up, within a paragraph
        ("``a ` #no`` #yes", {"yes"}),
        ("`a\n#no`", set()),
        ("`a\n\n#yes`", {"yes"}),
        ("`code`#no", set()),
        # math
        ("$x #no$ and #yes", {"yes"}),
        ("$$\n#no\n$$\n#yes", {"yes"}),
        ("$$ #no $$ #yes", {"yes"}),
        ("costs $5 and $10 #yes", {"yes"}),
        ("$5 #yes and $10", {"yes"}),
        ("$ #yes $", {"yes"}),
        ("\\$x #yes$", {"yes"}),
        ("$x\n\n#yes$", {"yes"}),
        # comments, also across lines; an unclosed one runs to the end
        ("%% #no\n\n#no2 %% #yes", {"yes"}),
        ("#yes %% unclosed #no", {"yes"}),
        ("<!-- #no\n--> #yes <!-- unclosed #no", {"yes"}),
        ("`%%` #yes", {"yes"}),
        # links
        ("[[Note #no]] #yes", {"yes"}),
        ("[[Note\n#yes]]", {"yes"}),
        ("[text](a.md #no) #yes", {"yes"}),
        ("[[[[[[ #yes ]( #yes2", {"yes", "yes2"}),
    ],
)
def test_what_is_not_text_has_no_tags(body: str, expected: set[str]) -> None:
    assert tags(body) == expected


@pytest.mark.parametrize(
    ("text", "expected_tags", "expected_props"),
    [
        ("---\ntags: [a, b]\n---\n", {"a", "b"}, {"tags": ["a", "b"]}),
        ("---\ntags: ['#A', \"#b c\"]\n---\n", {"a"}, {"tags": ["#A", "#b c"]}),
        ("---\ntags:\n  - one\n  - '#two'\n---\n", {"one", "two"}, {"tags": ["one", "#two"]}),
        ("---\ntags:\n- one\n- two # comment\n---\n", {"one", "two"}, {"tags": ["one", "two"]}),
        # a text value is split on commas only: an item with a blank is not a tag
        ("---\ntags: a b\n---\n", set(), {"tags": ["a b"]}),
        ("---\ntags: a, b/c\n---\n", {"a", "b/c"}, {"tags": ["a", "b/c"]}),
        ("---\ntags: '#a, #b'\n---\n", {"a", "b"}, {"tags": ["#a", "#b"]}),
        # `#` after a blank starts a YAML comment: the value is null
        ("---\ntags: #a #b\n---\n", set(), {"tags": None}),
        ("---\nTags: X\n---\n", {"x"}, {"Tags": ["X"]}),
        ("---\ntag: single\n---\n", set(), {"tag": "single"}),
        ("---\ntags: [123, ok, 'bad tag!', true, [x], {a: b}]\n---\n", {"ok"}, None),
        ("---\ntags:\n---\n#body", {"body"}, {"tags": None}),
        ("---\ntags: # nothing here\n---\n", set(), {"tags": None}),
        ("---\ntags: []\n---\n", set(), {"tags": []}),
        ("---\n---\n#body", {"body"}, {}),
        ("---\n# only a comment\n---\n#body", {"body"}, {}),
        ("---\ntags: [a,\n  b]\n---\n", {"a", "b"}, {"tags": ["a", "b"]}),
        ("---\naliases: x, y\ncssclasses: wide\n---\n", set(), None),
    ],
)
def test_front_matter_tags(text: str, expected_tags: set[str], expected_props: object) -> None:
    facts = parse_note(text)
    assert set(facts.tags) == expected_tags
    if expected_props is not None:
        assert facts.properties == expected_props


def test_list_properties_split_on_commas() -> None:
    facts = parse_note("---\naliases: x, y\ncssclasses: wide\nother: a, b\n---\n")
    assert facts.properties == {"aliases": ["x", "y"], "cssclasses": ["wide"], "other": "a, b"}


def test_front_matter_properties() -> None:
    text = (
        "---\n"
        "# a comment line\n"
        'title: "Quoted: with colon"\n'
        "alias: 'it''s'\n"
        "status: active  # trailing comment\n"
        "year: 2024\n"
        "version: 1.50\n"
        "due: 2025-12-23\n"
        "when: 2025-12-23T10:00:00Z\n"
        "done: true\n"
        "shout: FALSE\n"
        "answer: yes\n"
        "switch: off\n"
        "empty:\n"
        "nothing: ~\n"
        "url: https://example.com/a#b\n"
        '"spaced key": v\n'
        "list: [x, \"y, z\", 'w']\n"
        'escaped: "a\\nb\\"c\\u00e9\\_"\n'
        "block: |\n"
        "  line one\n"
        "  line two\n"
        "folded: >-\n"
        "  one\n"
        "  two\n"
        "\n"
        "review:\n"
        "  next: 2025-12-23\n"
        "  by: [me]\n"
        "target: [[Some Note]]\n"
        "related:\n"
        "  - [[A]]\n"
        "  - '[[B]]'\n"
        "  - [ [c] ]\n"
        "multi: first\n"
        "  continued\n"
        "true: key\n"
        "tagged: !!int 0x10\n"
        "anchor: &a [p, q]\n"
        "again: *a\n"
        "---\n"
        "body\n"
    )
    assert parse_note(text).properties == {
        "title": "Quoted: with colon",
        "alias": "it's",
        "status": "active",
        "year": "2024",
        "version": "1.50",
        "due": "2025-12-23",
        "when": "2025-12-23T10:00:00Z",
        "done": True,
        "shout": False,
        "answer": "yes",
        "switch": "off",
        "empty": None,
        "nothing": None,
        "url": "https://example.com/a#b",
        "spaced key": "v",
        "list": ["x", "y, z", "w"],
        "escaped": 'a\nb"c\u00e9\u00a0',
        "block": "line one\nline two\n",
        "folded": "one two",
        "review": {"next": "2025-12-23", "by": ["me"]},
        "target": "[[Some Note]]",
        "related": ["[[A]]", "[[B]]", [["c"]]],
        "multi": "first continued",
        "true": "key",
        "tagged": "0x10",
        "anchor": ["p", "q"],
        "again": ["p", "q"],
    }


@pytest.mark.parametrize(
    "front",
    [
        "tags: [#a, #b]",  # `#` cannot start a plain scalar: invalid YAML
        "key:value",  # a plain scalar, not a mapping
        "title: Note: thoughts",
        "- just\n- a list",
        "plain text line",
        "list: [a, b",
        "alias: *undefined",
        'quoted: "unclosed',
        'quoted: "a" trailing',
        "block: |\nnot indented",
        "key: a\nkey2:\tb: c",
        "x: !custom tag",
        "\tindented: with a tab",
        "loop: &a [*a]",
        "bomb: &a [x, x]\nb: &b [*a, *a, *a, *a]\nc: &c [*b, *b, *b, *b]\nd: [*c, *c, *c, *c]",
        "deep: " + "[" * 80 + "]" * 80,
    ],
)
def test_invalid_front_matter_means_no_properties_and_no_tags(front: str) -> None:
    facts = parse_note(f"---\ntags: [fm]\n{front}\n#tagged: x\n---\n#body\n")
    assert facts.properties == {}
    # The block is still front matter, not body: only the body's tag counts.
    assert facts.tags == {"body"}


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
    st.sampled_from(
        list("#`~-:[]{}|>'\"\n\r\t /\\aB1_é🚀*&!%$<") + ["---\n", "```", "tags:", "- ", "<!--"]
    ),
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


# --- front matter written by a YAML emitter reads back as the same properties ---------------

# PyYAML's emitter writes the YAML line breaks NEL, LS and PS unescaped inside quotes when
# allow_unicode is on, and YAML (PyYAML's own loader too) reads them back as line breaks.
# Surrogates never reach the parser: notes are decoded from UTF-8.
_chars = st.characters(exclude_categories=("Cs",), exclude_characters="\x85\u2028\u2029")
_text = st.text(_chars, max_size=30)
_scalars = st.one_of(
    _text,
    st.sampled_from(["true", "no", "2025-12-23", "1.50", "[[Note]]", "#x", "null", "a: b", "---"]),
    st.booleans(),
    st.none(),
    st.integers(),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)
# Obsidian's list keys turn text into lists: they are the one deliberate difference.
_keys = _text.filter(lambda k: k.casefold() not in LIST_KEYS)


def _link_shaped(value: object) -> bool:
    """A list holding only a list holding one scalar: YAML's reading of `[[Note]]`, which is
    read as the link text on purpose (the one other deliberate difference)."""
    if isinstance(value, dict):
        return any(_link_shaped(v) for v in value.values())
    if not isinstance(value, list):
        return False
    if len(value) == 1 and isinstance(value[0], list) and len(value[0]) == 1:
        return not isinstance(value[0][0], list | dict)
    return any(_link_shaped(v) for v in value)


def _as_written(value: object) -> object:
    """What a value reads back as: integers as the text written, everything else itself."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return [_as_written(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_written(v) for k, v in value.items()}
    return value


@settings(max_examples=300)
@given(
    st.dictionaries(_keys, _values, max_size=6),
    st.booleans(),
    st.sampled_from([None, True, False]),
    st.sampled_from([20, 80]),
    _markdownish,
)
def test_emitted_front_matter_round_trips(
    properties: dict[str, object], unicode: bool, flow: bool | None, width: int, body: str
) -> None:
    assume(not _link_shaped(properties))
    source = yaml.safe_dump(
        properties, allow_unicode=unicode, default_flow_style=flow, sort_keys=False, width=width
    )
    facts = parse_note(f"---\n{source}---\n{body}")
    assert facts.properties == _as_written(properties)


def test_the_pure_python_parser_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where PyYAML was built without libyaml, its own Python parser does the work."""
    text = (
        "---\ntags: [a, '#b']\nreview:\n  next: 2025-12-23\nrelated:\n  - [[Some Note]]\n"
        "done: true\nanswer: yes\nn: 1.50\n---\n#c\n"
    )
    with_c = parse_note(text)
    pure = type("PureComposer", (yaml.SafeLoader,), {"resolve": frontmatter._Composer.resolve})
    monkeypatch.setattr(frontmatter, "_Composer", pure)
    assert parse_note(text) == with_c
    assert with_c.properties["related"] == ["[[Some Note]]"] and with_c.tags == {"a", "b", "c"}
