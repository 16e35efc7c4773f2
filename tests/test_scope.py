"""Scope patterns, matching, signatures, and the path helpers they stand on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from freshline.errors import WorkspaceError
from freshline.paths import confine, is_internal, normalize_rel, shown, to_abs
from freshline.scope import (
    FileFacts,
    PatternKind,
    Scope,
    describe,
    parse_pattern,
    pattern_matches,
    signature,
)

# --- parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "canonical"),
    [
        ("Research/Papers", PatternKind.FOLDER, "Research/Papers"),
        ("Research/Papers/", PatternKind.FOLDER, "Research/Papers"),
        ("./Research//Papers/", PatternKind.FOLDER, "Research/Papers"),
        ("  Research/Papers  ", PatternKind.FOLDER, "Research/Papers"),
        ("Research\\Papers\\", PatternKind.FOLDER, "Research/Papers"),
        ("a/./b/../c", PatternKind.FOLDER, "a/c"),
        ("notes/todo.md", PatternKind.FOLDER, "notes/todo.md"),
        ("Mes Notes/été", PatternKind.FOLDER, "Mes Notes/été"),
        ("notes/**/*.md", PatternKind.GLOB, "notes/**/*.md"),
        ("notes\\**\\*.md", PatternKind.GLOB, "notes/**/*.md"),
        ("draft?.md", PatternKind.GLOB, "draft?.md"),
        ("[ab].md", PatternKind.GLOB, "[ab].md"),
        ("*.pdf", PatternKind.EXTENSION, "*.pdf"),
        ("*.PDF", PatternKind.EXTENSION, "*.pdf"),
        ("*.tar.gz", PatternKind.EXTENSION, "*.tar.gz"),
        ("docs/*.pdf", PatternKind.GLOB, "docs/*.pdf"),
        ("#paper", PatternKind.TAG, "#paper"),
        ("#Paper/ML/", PatternKind.TAG, "#paper/ml"),
        ("#日本語", PatternKind.TAG, "#日本語"),
        ("[[Reading List]]", PatternKind.NOTE, "[[Reading List]]"),
        ("[[ v1.2 Notes ]]", PatternKind.NOTE, "[[v1.2 Notes]]"),
        ("[status:active]", PatternKind.PROPERTY, "[status:active]"),
        ("[ status : in progress ]", PatternKind.PROPERTY, "[status:in progress]"),
        ("[url:http://x]", PatternKind.PROPERTY, "[url:http://x]"),
    ],
)
def test_parse_pattern(text: str, kind: PatternKind, canonical: str) -> None:
    pattern = parse_pattern(text)
    assert (pattern.kind, pattern.text, pattern.raw) == (kind, canonical, text)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty pattern"),
        ("   ", "empty pattern"),
        ("[[]]", "empty note title"),
        ("[[  ]]", "empty note title"),
        ("[[Title", "malformed note pattern"),
        ("[[a]b]]", "malformed note pattern"),
        ("[key:]", "needs a value"),
        ("[:value]", "needs a key"),
        ("#", "empty tag"),
        ("#123", "all digits"),
        ("#a b", "only letters"),
        ("#a.b", "only letters"),
        ("../x", "escapes the workspace"),
        ("a/../../x", "escapes the workspace"),
        ("/etc", "absolute path"),
        ("\\\\server\\share", "absolute path"),
        ("C:\\Users\\me", "absolute path"),
        (".", "whole workspace"),
        ("./", "whole workspace"),
        ("a/[b", "unclosed"),
    ],
)
def test_parse_pattern_rejects(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason.replace("[", r"\[")):
        parse_pattern(text)


@pytest.mark.parametrize(
    ("text", "description"),
    [
        ("Research/Papers/", "folder Research/Papers"),
        ("notes/**/*.md", "glob notes/**/*.md"),
        ("*.PDF", "extension *.pdf"),
        ("#Paper", "tag #paper"),
        ("[[Reading List]]", "note [[Reading List]]"),
        ("[status:active]", "property status = active"),
    ],
)
def test_describe(text: str, description: str) -> None:
    assert describe(parse_pattern(text)) == description


# --- matching -----------------------------------------------------------------------------


def facts(path: str, tags: tuple[str, ...] = (), **properties: object) -> FileFacts:
    return FileFacts(path, frozenset(tags), properties)


def matches(pattern: str, file: FileFacts) -> bool:
    return pattern_matches(parse_pattern(pattern), file)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("A/B", "A/B", True),
        ("A/B", "A/B/c.md", True),
        ("A/B", "A/B/C/d.pdf", True),
        ("A/B", "A/BC", False),
        ("A/B", "A/BC/x.md", False),
        ("A/B", "A", False),
        ("A/B", "a/b/x.md", False),
        ("A/B/", "A/B/x.md", True),
        ("./A/B", "A/B/x.md", True),
        ("A\\B", "A/B/x.md", True),
        ("notes/todo.md", "notes/todo.md", True),
        ("Mes Notes/été", "Mes Notes/été/idée 1.md", True),
        ("Mes Notes/été", "Mes Notes/étés/x.md", False),
        ("notes/**/*.md", "notes/a.md", True),
        ("notes/**/*.md", "notes/x/y/z/a.md", True),
        ("notes/**/*.md", "notes/x/a.pdf", False),
        ("notes/**/*.md", "other/notes/a.md", False),
        ("notes/*.md", "notes/a.md", True),
        ("notes/*.md", "notes/x/a.md", False),
        ("*/a.md", "x/a.md", True),
        ("*/a.md", "x/y/a.md", False),
        ("**/a.md", "a.md", True),
        ("**/a.md", "x/y/a.md", True),
        ("**/a.md", "x/ya.md", False),
        ("notes/**", "notes/x/y.md", True),
        ("**", "anything/at/all.txt", True),
        ("draft?.md", "draft1.md", True),
        ("draft?.md", "draft12.md", False),
        ("draft?.md", "notes/draft1.md", False),
        ("[ab].md", "a.md", True),
        ("[ab].md", "c.md", False),
        ("[!ab].md", "c.md", True),
        ("[!ab].md", "a.md", False),
        ("my notes/*.md", "my notes/a b.md", True),
        ("docs\\**\\*.pdf", "docs/x/y.pdf", True),
        ("*.pdf", "a.pdf", True),
        ("*.pdf", "deep/down/a.PDF", True),
        ("*.PDF", "deep/down/a.pdf", True),
        ("*.pdf", "a.pdf.md", False),
        ("*.pdf", "apdf", False),
        ("*.pdf", "notes.pdf/x.md", False),
        ("*.tar.gz", "x/b.tar.gz", True),
        ("*.md", "x/b.markdown", False),
    ],
)
def test_path_patterns(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern, facts(path)) is expected


@pytest.mark.parametrize(
    ("pattern", "file", "expected"),
    [
        ("#paper", facts("n.md", ("paper",)), True),
        ("#Paper", facts("n.md", ("paper",)), True),
        ("#a", facts("n.md", ("a/b",)), True),
        ("#a", facts("n.md", ("a/b/c",)), True),
        ("#a", facts("n.md", ("ab",)), False),
        ("#a/b", facts("n.md", ("a",)), False),
        ("#a/b", facts("n.md", ("a/b",)), True),
        ("#a/b", facts("n.md", ("a/bc",)), False),
        ("#paper", facts("n.markdown", ("paper",)), True),
        ("#paper", facts("N.MD", ("paper",)), True),
        ("#paper", facts("n.txt", ("paper",)), False),
        ("#paper", facts("n.md"), False),
        ("[[Reading List]]", facts("lists/Reading List.md"), True),
        ("[[reading list]]", facts("Reading List.md"), True),
        ("[[Reading List]]", facts("Reading List.pdf"), False),
        ("[[Reading List]]", facts("Reading List 2.md"), False),
        ("[[Reading List]]", facts("Reading List"), False),
        ("[[v1.2 Release]]", facts("notes/v1.2 Release.md"), True),
        ("[[v1.2 Release]]", facts("notes/v1.md"), False),
        ("[[v1.2]]", facts("v1.2.md"), True),
        ("[[lists/Reading List]]", facts("lists/Reading List.md"), True),
        ("[[lists/Reading List]]", facts("other/Reading List.md"), False),
        ("[status:active]", facts("n.md", status="active"), True),
        ("[status:active]", facts("n.md", Status="active"), True),
        ("[status:active]", facts("n.md", status="Active"), True),
        ("[Status:ACTIVE]", facts("n.md", status="active"), True),
        ("[review.next:2025-12-23]", facts("n.md", review={"next": "2025-12-23"}), True),
        ("[REVIEW.Next:2025-12-23]", facts("n.md", review={"next": "2025-12-23"}), True),
        ("[review:2025-12-23]", facts("n.md", review={"next": "2025-12-23"}), False),
        ("[review.next:x]", facts("n.md", review="x"), False),
        ("[a.b:x]", facts("n.md", **{"a.b": "x"}), True),
        ("[a.b.c:x]", facts("n.md", a={"b": {"c": ["y", "X"]}}), True),
        ("[a.b.c:x]", facts("n.md", **{"a.b": {"c": "x"}}), True),
        ("[a.b:x]", facts("n.md", a=[{"b": "z"}, {"b": "x"}]), True),
        ("[a:x]", facts("n.md", a=[["y", ["x"]]]), True),
        ("[a:x]", facts("n.md", a={"x": "y"}), False),
        ("[done:true]", facts("n.md", done=True), True),
        ("[done:TRUE]", facts("n.md", done=True), True),
        ("[done:false]", facts("n.md", done=True), False),
        ("[year:2024]", facts("n.md", year="2024"), True),
        ("[v:1.5]", facts("n.md", v="1.50"), False),
        ("[related:Some Note]", facts("n.md", related=["[[Some Note]]"]), True),
        ("[related:[[some note]]]", facts("n.md", related="[[Some Note]]"), True),
        ("[related:Some]", facts("n.md", related="[[Some Note]]"), False),
        ("[status:active]", facts("n.md", status="inactive"), False),
        ("[status:active]", facts("n.md", state="active"), False),
        ("[status:active]", facts("n.pdf", status="active"), False),
        ("[status:active]", facts("n.md", status=None), False),
        ("[status:active]", facts("n.md", status=["draft", "active"]), True),
        ("[status:active]", facts("n.md", status=["draft", None]), False),
        ("[year:2024]", facts("n.md", year=2024), True),
        ("[year:2024]", facts("n.md", year="2024"), True),
        ("[done:true]", facts("n.md", done=True), True),
    ],
)
def test_note_patterns(pattern: str, file: FileFacts, expected: bool) -> None:
    assert matches(pattern, file) is expected


def test_scope_rules() -> None:
    scope = Scope.from_strings(["Research", "#paper"], ["Research/old", "#draft"])
    assert scope.matches(facts("Research/a.pdf"))
    assert scope.matches(facts("elsewhere/n.md", ("paper",)))
    assert not scope.matches(facts("Research/old/a.pdf"))
    assert not scope.matches(facts("Research/n.md", ("draft",)))
    assert not scope.matches(facts("elsewhere/n.md", ("paper", "draft/wip")))
    assert not scope.matches(facts("elsewhere/x.pdf"))


def test_no_inclusions_means_nothing() -> None:
    assert not Scope.from_strings([], ["x"]).matches(facts("anything.md"))
    assert not Scope((), ()).matches(facts("a.md"))


@pytest.mark.parametrize(
    "path",
    [
        ".freshline/index.sqlite",
        ".freshline",
        ".git/config",
        "sub/repo/.git/HEAD",
        "freshline.toml",
        "sub/freshline.toml",  # a nested workspace's own files
        "sub/.freshline/freshline.db",
        "build/out.pdf",
        "x/node_modules/y/z.md",
        "notes/a.tmp",
        "notes/A.TMP",
        "cache.tmp/inner.md",
        "out-build/x/y.md",
        "deep/out-old/z.md",
    ],
)
def test_internal_paths_are_never_in_scope(path: str) -> None:
    ignore = ("build", "**/node_modules", "*.tmp", "**/out-*")
    scope = Scope.from_strings(["**", "*.md", "*.pdf", "*.tmp", "build", ".git"], [], ignore)
    assert is_internal(path, ignore)
    assert not scope.matches(facts(path))


@pytest.mark.parametrize(
    "path",
    [
        "",
        "a.md",
        ".freshlinex/a.md",
        "freshline.toml.bak",
        "sub/freshline.toml.bak",
        "sub/.freshlinex/a",
        "x.git/a",
        "a/.github/x.yml",
        "built/x",
        "a/build/x",
        "node_modules_x/y",
        ".tmp",
        "tmp/x.tmpl",
        "outbuild/x",
    ],
)
def test_not_internal(path: str) -> None:
    assert not is_internal(path, ("build", "**/node_modules", "*.tmp", "**/out-*"))


# --- properties (hypothesis) --------------------------------------------------------------

_segment = st.text(st.sampled_from("abcAB é_-. 1"), min_size=1, max_size=5).filter(
    lambda s: s.strip(" ") == s and s not in (".", "..")
)
_rel_path = st.lists(_segment, min_size=1, max_size=4).map("/".join)
_tags = st.frozensets(st.sampled_from(["paper", "draft", "a/b", "a", "ab"]), max_size=3)
_files = st.builds(
    FileFacts,
    _rel_path.map(lambda p: p + ".md"),
    _tags,
    st.fixed_dictionaries({"status": st.sampled_from(["active", "done", None])}),
)
_patterns = st.one_of(
    _rel_path,
    _rel_path.map(lambda p: p + "/**"),
    st.sampled_from(["*.md", "*.pdf", "**/*.md", "#paper", "#a", "[status:active]", "[[b]]"]),
)


@given(_files, st.lists(_patterns, max_size=4), st.lists(_patterns, min_size=1, max_size=4))
def test_exclusion_beats_inclusion(file: FileFacts, include: list[str], exclude: list[str]) -> None:
    scope = Scope.from_strings(include + exclude, exclude)
    excluded = any(pattern_matches(parse_pattern(p), file) for p in exclude)
    if excluded:
        assert not scope.matches(file)
    assert scope.matches(file) == (
        not excluded and any(pattern_matches(parse_pattern(p), file) for p in include)
    )


@given(
    st.sampled_from([".freshline", ".git", "freshline.toml", "sub/.git"]),
    st.lists(_segment, max_size=3).map("/".join),
    st.lists(_patterns, max_size=4),
)
def test_internal_never_in_scope(prefix: str, rest: str, include: list[str]) -> None:
    path = f"{prefix}/{rest}" if rest else prefix
    scope = Scope.from_strings(["**", prefix, *include])
    assert not scope.matches(FileFacts(path, frozenset({"paper", "a"}), {"status": "active"}))


_path_patterns = st.one_of(
    _rel_path,
    _rel_path.map(lambda p: p + "/**"),
    _rel_path.map(lambda p: p.replace("a", "*", 1)),
    st.sampled_from(["*.md", "*.PDF", "*.é", "**/*.md", "**", "a?/*", "[ab]*/**", "x/**/y"]),
)
_any_path = st.one_of(
    _rel_path,
    _rel_path.map(lambda p: p + ".MD"),
    st.sampled_from([".env", "a/.ssh/k", "id_rsa.pub", ".git/x", "a/freshline.toml", ".md"]),
)


@given(_any_path, st.lists(_path_patterns, max_size=4), st.lists(_path_patterns, max_size=3),
       st.lists(st.sampled_from(["a", "*.md", "b/**"]), max_size=2))
def test_a_path_is_judged_as_its_facts_are(
    path: str, include: list[str], exclude: list[str], ignore: list[str]
) -> None:
    """`matches_path` compiles the path patterns into one regex per side; it answers as
    the generic match of the path's facts does."""
    scope = Scope.from_strings(include, exclude, ignore)
    assert scope.matches_path(path) == scope.matches(FileFacts(path))


@pytest.mark.parametrize(("include", "path", "expected"), [
    (["*.md"], "a/b.MD", True),
    (["*.md"], ".md", False),  # a name that is only the suffix has no extension
    (["notes"], "notes2/a", False),
    (["notes"], "notes", True),
    (["a/**"], "a/b\nc", True),  # a newline in a name is a character like any
    (["#paper"], "a.md", False),  # a tag never matches a bare path
    (["[[a]]"], "x/A.md", True),  # a note title is matched apart from the regex
])
def test_matches_path_table(include: list[str], path: str, expected: bool) -> None:
    assert Scope.from_strings(include).matches_path(path) is expected


_pattern_lists = st.lists(_patterns, max_size=5)


@given(_pattern_lists, _pattern_lists, st.randoms(), st.sampled_from(["live", "isolated"]))
def test_signature_ignores_order_and_whitespace(include, exclude, rnd, mode) -> None:
    shuffled_in, shuffled_ex = include[:], exclude[:]
    rnd.shuffle(shuffled_in)
    rnd.shuffle(shuffled_ex)
    padded_in = [f"  {p}\t" for p in shuffled_in]
    assert signature(include, exclude, mode) == signature(padded_in, shuffled_ex, mode)


@given(_pattern_lists, _pattern_lists, _patterns, st.sampled_from(["include", "exclude"]))
def test_signature_changes_with_any_pattern(include, exclude, extra, side) -> None:
    canonical = {parse_pattern(p).text for p in (include if side == "include" else exclude)}
    assume(parse_pattern(extra).text not in canonical)
    before = signature(include, exclude, "live")
    if side == "include":
        assert signature([*include, extra], exclude, "live") != before
    else:
        assert signature(include, [*exclude, extra], "live") != before
    assert signature(include, exclude, "isolated") != before


def test_signature_is_stable_and_short() -> None:
    sig = signature(["Research/", "*.PDF"], ["#Draft"], "live")
    assert sig == signature(["*.pdf", "./Research"], ["#draft"], "live")
    assert len(sig) == 16 and int(sig, 16) >= 0
    assert signature(["a"], [], "live") != signature(["a/b"], [], "live")
    assert signature(["a"], ["b"], "live") != signature(["b"], ["a"], "live")
    assert signature(["a"], [], "live") != signature(["a"], [], "isolated")


# --- path helpers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a/b", "a/b"),
        ("./a//b/", "a/b"),
        ("a\\b\\c", "a/b/c"),
        ("a/../b", "b"),
        (".", ""),
        ("", ""),
        ("caf\udce9/x", "caf\udce9/x"),
    ],
)
def test_normalize_rel(path: str, expected: str) -> None:
    assert normalize_rel(path) == expected


@pytest.mark.parametrize("path", ["..", "../a", "a/../../b", "/abs", "C:/x"])
def test_normalize_rel_refuses(path: str) -> None:
    with pytest.raises(WorkspaceError):
        normalize_rel(path)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("# a\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    return root


def test_confine_accepts_inside(workspace: Path) -> None:
    assert confine(workspace, "notes/a.md") == "notes/a.md"
    assert confine(workspace, "./notes//a.md") == "notes/a.md"
    assert confine(workspace, "notes/new.md") == "notes/new.md"
    assert confine(workspace, str(workspace / "notes" / "a.md")) == "notes/a.md"
    assert confine(workspace, str(workspace)) == ""
    assert confine(workspace, "notes/../notes/a.md") == "notes/a.md"
    os.symlink("notes/a.md", workspace / "link.md")
    assert confine(workspace, "link.md") == "link.md"
    assert to_abs(workspace, "notes/a.md") == workspace / "notes" / "a.md"
    assert to_abs(workspace, "") == workspace


def test_confine_through_symlinked_root(workspace: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    os.symlink(workspace, alias)
    assert confine(alias, str(workspace / "notes" / "a.md")) == "notes/a.md"
    assert confine(workspace, str(alias / "notes" / "a.md")) == "notes/a.md"


@pytest.mark.parametrize("user_path", ["../outside.txt", "notes/../../outside.txt", ".."])
def test_confine_refuses_dotdot(workspace: Path, user_path: str) -> None:
    with pytest.raises(WorkspaceError, match="escapes the workspace"):
        confine(workspace, user_path)


def test_confine_refuses_absolute_outside(workspace: Path, tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        confine(workspace, str(tmp_path / "outside.txt"))
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        confine(workspace, "/etc/passwd")


def test_confine_refuses_symlink_escape(workspace: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path / "outside.txt", workspace / "leak.txt")
    os.symlink(tmp_path, workspace / "notes" / "up")
    for user_path in ("leak.txt", "notes/up/outside.txt", "notes/up"):
        with pytest.raises(WorkspaceError, match="resolves outside the workspace"):
            confine(workspace, user_path)


def test_surrogate_names_pass_through(workspace: Path) -> None:
    name = os.fsdecode(b"caf\xe9.md")
    (workspace / name).write_bytes(b"x")
    assert confine(workspace, name) == name
    scope = Scope.from_strings(["*.md"])
    assert scope.matches(FileFacts(name))
    assert signature([name], [], "live") == signature([f" {name} "], [], "live")


def test_confine_refuses_loops_and_nul(workspace: Path) -> None:
    os.symlink("loop_b", workspace / "loop_a")
    os.symlink("loop_a", workspace / "loop_b")
    with pytest.raises(WorkspaceError, match="cannot resolve"):
        confine(workspace, "loop_a/x.md")
    with pytest.raises(WorkspaceError, match="NUL byte"):
        confine(workspace, "a\0b")


def test_error_messages_are_printable() -> None:
    with pytest.raises(WorkspaceError) as info:
        normalize_rel(os.fsdecode(b"../caf\xe9\n"))
    assert str(info.value) == "../caf\\xe9\\n: '..' escapes the workspace"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("plain/name.md", "plain/name.md"), ("back\\slash", "back\\slash"),
     ("a\\b\n", "a\\\\b\\n"), (os.fsdecode(b"\xff\tx"), "\\xff\\tx")],
)
def test_shown_escapes_only_what_needs_it_and_unambiguously(text: str, expected: str) -> None:
    assert shown(text) == expected
