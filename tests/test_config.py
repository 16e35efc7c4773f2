"""freshline.toml: discovery, loading, validation errors, and comment-keeping edits."""

from __future__ import annotations

import os
import re
from dataclasses import fields
from pathlib import Path

import pytest

from freshline.config import (
    CONFIG_NAME,
    DATA_DIR,
    Config,
    Mode,
    ProjectConfig,
    WorkspaceSettings,
    add_project,
    find_workspace,
    init_workspace,
    load_config,
    remove_project,
)
from freshline.errors import ConfigError, NotFoundError, WorkspaceError
from freshline.ignore import IgnoreSettings
from freshline.scope import FileFacts, signature

DESIGN_EXAMPLE = """\
[workspace]
debounce_ms = 150          # watcher settle time
change_log_cap = 1000      # per project

[projects.research]
include = ["Research/Papers", "*.pdf", "#paper", "[[Reading List]]", "[status:active]",
           "notes/**/*.md"]
exclude = ["Research/Papers/old", "#draft"]
mode = "live"              # or "isolated" (section 8)
"""

COMMENTED = """\
# My vault. Keep this comment.
[workspace]
debounce_ms = 250  # slower disk
ignore = ["Archive", "*.tmp"]

# The reading project, hand-written.
[projects.reading]
include = ["Reading"]  # keep me
mode = "live"

# trailing comment
"""


def write(root: Path, text: str) -> Path:
    path = root / CONFIG_NAME
    path.write_text(text, encoding="utf-8")
    return path


# --- init and discovery -------------------------------------------------------------------


def test_init_creates_and_is_idempotent(tmp_path: Path) -> None:
    assert init_workspace(tmp_path) == ["created freshline.toml", "created .freshline/"]
    text = (tmp_path / CONFIG_NAME).read_text()
    assert (tmp_path / DATA_DIR).is_dir()
    assert (tmp_path / DATA_DIR / ".gitignore").read_text() == "*\n"
    assert init_workspace(tmp_path) == []
    assert (tmp_path / CONFIG_NAME).read_text() == text
    config = load_config(tmp_path)
    assert config == Config(tmp_path.resolve(), WorkspaceSettings(), {})
    assert "[workspace]" in text and "# debounce_ms = 150" in text


def test_init_completes_a_partial_workspace(tmp_path: Path) -> None:
    write(tmp_path, "# mine\n")
    assert init_workspace(tmp_path) == ["created .freshline/"]
    assert (tmp_path / CONFIG_NAME).read_text() == "# mine\n"
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / DATA_DIR).mkdir()
    assert init_workspace(tmp_path / "new", nested=True) == ["created freshline.toml"]


def test_init_creates_missing_directory(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    assert init_workspace(target) == [
        f"created {target}/",
        "created freshline.toml",
        "created .freshline/",
    ]
    assert (target / CONFIG_NAME).stat().st_mode & 0o777 == 0o644


def test_init_refuses_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(WorkspaceError, match="not a directory"):
        init_workspace(tmp_path / "f")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / DATA_DIR).write_text("x")
    with pytest.raises(WorkspaceError, match="not a directory"):
        init_workspace(tmp_path / "w")


def test_find_workspace_walks_up(tmp_path: Path) -> None:
    init_workspace(tmp_path)
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_workspace(deep) == tmp_path.resolve()
    assert find_workspace(tmp_path) == tmp_path.resolve()
    assert find_workspace(Path("/"), explicit=tmp_path) == tmp_path.resolve()


def test_find_workspace_errors(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError) as info:
        find_workspace(Path("/"), explicit=tmp_path)
    assert str(info.value) == f"no freshline.toml in {tmp_path.resolve()}; " + (
        f"run `freshline init {tmp_path.resolve()}`"
    )
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    if any((p / CONFIG_NAME).exists() for p in lonely.resolve().parents):
        pytest.skip("a freshline.toml above the temp dir")
    with pytest.raises(WorkspaceError) as info:
        find_workspace(lonely)
    assert str(info.value) == (
        f"no freshline.toml in {lonely.resolve()} or any parent; run `freshline init`"
    )


def test_load_without_config(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="no freshline.toml in"):
        load_config(tmp_path)


# --- loading ------------------------------------------------------------------------------


def test_load_design_example(tmp_path: Path) -> None:
    write(tmp_path, DESIGN_EXAMPLE)
    config = load_config(tmp_path)
    research = config.project("research")
    assert research.mode is Mode.LIVE
    assert research.include[-1] == "notes/**/*.md"
    assert research.exclude == ("Research/Papers/old", "#draft")
    assert config.workspace == WorkspaceSettings(debounce_ms=150, change_log_cap=1000)
    assert config.path == tmp_path.resolve() / CONFIG_NAME
    assert research.signature == signature(research.include, research.exclude, "live")
    assert research.scope.matches(FileFacts("Research/Papers/x.md"))
    assert not research.scope.matches(FileFacts("Research/Papers/old/x.md"))
    assert research.scope.matches(FileFacts("any/n.md", frozenset({"paper"})))


def test_project_scope_honours_workspace_ignore(tmp_path: Path) -> None:
    write(tmp_path, COMMENTED)
    config = load_config(tmp_path)
    reading = config.project("reading")
    assert config.workspace.ignore == ("Archive", "*.tmp")
    assert reading.ignore == ("Archive", "*.tmp")
    assert reading.scope.matches(FileFacts("Reading/a.md"))
    assert not reading.scope.matches(FileFacts("Reading/a.tmp"))


def test_unknown_project(tmp_path: Path) -> None:
    write(tmp_path, DESIGN_EXAMPLE)
    with pytest.raises(NotFoundError) as info:
        load_config(tmp_path).project("nope")
    assert str(info.value) == "unknown project 'nope'"


def test_all_workspace_settings(tmp_path: Path) -> None:
    write(
        tmp_path,
        "[workspace]\ndebounce_ms = 0\nchange_log_cap = 5\nfull_scan_interval = 60\n"
        "ignore = ['build/']\nmaterialize_timeout_s = 5\nmaterialize_memory_mb = 256\n"
        "workers = 4\nrespect_gitignore = false\nrespect_obsidian = false\nignore_trash = false\n",
    )
    settings = WorkspaceSettings(0, 5, 60, ("build/",), 5, 256, 4, False, False, False)
    assert load_config(tmp_path).workspace == settings
    assert settings.ignore_settings == IgnoreSettings(("build/",), False, False, False)


def test_the_template_lists_every_workspace_setting(tmp_path: Path) -> None:
    init_workspace(tmp_path)
    text = (tmp_path / "freshline.toml").read_text()
    table = text.partition("[workspace]\n")[2].partition("\n[")[0]
    settings = [line[2:] for line in table.splitlines() if re.match(r"# \w+ = ", line)]
    assert len(settings) == len(fields(WorkspaceSettings))
    (tmp_path / "freshline.toml").write_text("[workspace]\n" + "\n".join(settings) + "\n")
    assert load_config(tmp_path).workspace == WorkspaceSettings()


ERRORS = [
    (
        "[workspace\n",
        "invalid TOML: Expected ']' at the end of a table declaration (at line 1, column 11)",
    ),
    (
        "[projects.x]\ninclude = ['a']\n[projects.x]\ninclude = ['b']\n",
        "invalid TOML: Cannot declare ('projects', 'x') twice (at line 3, column 12)",
    ),
    (
        "colour = 'red'\n",
        "colour: unknown key (expected one of: workspace, projects, model, delivery,"
        " conversations, sessions, store, server, security)",
    ),
    (
        "[workspace]\ndebounce = 1\n",
        "workspace.debounce: unknown key (expected one of: debounce_ms, change_log_cap, "
        "full_scan_interval, ignore, materialize_timeout_s, materialize_memory_mb, workers, "
        "respect_gitignore, respect_obsidian, ignore_trash, autowatch, autowatch_idle)",
    ),
    (
        "[workspace]\nrespect_gitignore = 'no'\n",
        "workspace.respect_gitignore: expected a boolean, got a string",
    ),
    (
        "[workspace]\nignore_trash = 0\n",
        "workspace.ignore_trash: expected a boolean, got an integer",
    ),
    (
        "[projects.x]\ninclude = ['a']\nexclud = ['b']\n",
        "projects.x.exclud: unknown key (expected one of: include, exclude, mode, allow_secrets)",
    ),
    ("workspace = 3\n", "workspace: expected a table, got an integer"),
    ("projects = 'x'\n", "projects: expected a table, got a string"),
    (
        "[workspace]\ndebounce_ms = 'fast'\n",
        "workspace.debounce_ms: expected an integer, got a string",
    ),
    ("[workspace]\nworkers = true\n", "workspace.workers: expected an integer, got a boolean"),
    ("[workspace]\nworkers = 0\n", "workspace.workers: must be between 1 and 64, got 0"),
    (
        "[workspace]\ndebounce_ms = -1\n",
        "workspace.debounce_ms: must be between 0 and 60000, got -1",
    ),
    (
        "[workspace]\nignore = 'build'\n",
        "workspace.ignore: expected an array of patterns, got a string",
    ),
    (
        "[workspace]\nignore = ['#tag']\n",
        "workspace.ignore[0]: ignore takes folders and globs, not a tag pattern (pattern '#tag')",
    ),
    (
        "[projects.x]\ninclude = 'a'\n",
        "projects.x.include: expected an array of patterns, got a string",
    ),
    (
        "[projects.x]\ninclude = ['a', 1]\n",
        "projects.x.include[1]: expected a string, got an integer",
    ),
    ("[projects.x]\ninclude = ['a', 'b', '']\n", "projects.x.include[2]: empty pattern"),
    ("[projects.x]\ninclude = ['a', '  ']\n", "projects.x.include[1]: empty pattern"),
    (
        "[projects.x]\ninclude = ['[[]]']\n",
        "projects.x.include[0]: empty note title (pattern '[[]]')",
    ),
    (
        "[projects.x]\ninclude = ['a']\nexclude = ['[key:]']\n",
        "projects.x.exclude[0]: property pattern needs a value (expected [key:value]) "
        "(pattern '[key:]')",
    ),
    (
        "[projects.x]\ninclude = ['../up']\n",
        "projects.x.include[0]: '..' escapes the workspace (pattern '../up')",
    ),
    (
        "[projects.research]\ninclude = ['a']\nmode = 'fast'\n",
        "projects.research.mode: unknown mode 'fast' (expected live or isolated)",
    ),
    ("[projects.x]\nmode = 2\n", "projects.x.mode: expected a string, got an integer"),
    ("[projects]\nx = 1\n", "projects.x: expected a table, got an integer"),
    (
        '[projects."my project"]\ninclude = ["a"]\n',
        "projects.my project: invalid project name 'my project' "
        "(use letters, digits, '_' and '-', starting with a letter or '_')",
    ),
    (
        # Seen: accepted without warning, and Claude Code then showed the model a 2 KB
        # preview of the 16.5 KB block (issue 27).
        "[delivery]\nhook = 20000\n",
        "delivery.hook: at most 9,000 characters (Claude Code shows hook output whole only "
        "up to 10,000), got 20000",
    ),
    (
        "[projects.1st]\ninclude = ['a']\n",
        "projects.1st: invalid project name '1st' "
        "(use letters, digits, '_' and '-', starting with a letter or '_')",
    ),
]


@pytest.mark.parametrize(("text", "message"), ERRORS)
def test_load_errors(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value) == f"freshline.toml: {message}"
    assert info.value.exit_code == 2
    assert path.read_text() == text


@pytest.mark.parametrize(("text", "message"), ERRORS)
def test_edits_refuse_a_broken_file(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        add_project(tmp_path, "fresh", ["a"])
    assert str(info.value) == f"freshline.toml: {message}"
    assert path.read_text() == text
    assert sorted(os.listdir(tmp_path)) == [CONFIG_NAME]


def test_not_utf8(tmp_path: Path) -> None:
    (tmp_path / CONFIG_NAME).write_bytes(b"[workspace]\n# caf\xe9\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value) == "freshline.toml: invalid TOML: not UTF-8 text"


# --- edits --------------------------------------------------------------------------------


def test_add_project_keeps_comments_and_order(tmp_path: Path) -> None:
    path = write(tmp_path, COMMENTED)
    project = add_project(tmp_path, "papers", ["Papers/", "*.pdf"], ["#draft"], "isolated")
    assert project == ProjectConfig(
        "papers", ("Papers/", "*.pdf"), ("#draft",), Mode.ISOLATED, ("Archive", "*.tmp")
    )
    text = path.read_text()
    assert text.startswith(COMMENTED)
    assert text[len(COMMENTED) :].strip() == (
        '[projects.papers]\ninclude = ["Papers/", "*.pdf"]\nexclude = ["#draft"]\nmode = "isolated"'
    )
    config = load_config(tmp_path)
    assert list(config.projects) == ["reading", "papers"]
    assert config.project("papers") == project


def test_add_project_to_a_fresh_workspace(tmp_path: Path) -> None:
    init_workspace(tmp_path)
    before = (tmp_path / CONFIG_NAME).read_text()
    add_project(tmp_path, "notes", ["notes"])
    add_project(tmp_path, "code_2", ["src"], mode=Mode.ISOLATED)
    text = (tmp_path / CONFIG_NAME).read_text()
    assert text.startswith(before)
    config = load_config(tmp_path)
    assert list(config.projects) == ["notes", "code_2"]
    assert config.project("notes").mode is Mode.LIVE
    assert config.project("notes").exclude == ()
    assert config.project("code_2").mode is Mode.ISOLATED


@pytest.mark.parametrize(
    ("name", "include", "exclude", "mode", "message"),
    [
        ("reading", ["x"], [], "live", "projects.reading: project 'reading' already exists"),
        ("x", ["ok", ""], [], "live", "projects.x.include[1]: empty pattern"),
        ("x", ["ok"], ["#"], "live", "projects.x.exclude[0]: empty tag (pattern '#')"),
        (
            "x",
            ["/abs"],
            [],
            "live",
            "projects.x.include[0]: absolute path; use a path "
            "relative to the workspace (pattern '/abs')",
        ),
        (
            "x",
            ["ok"],
            [],
            "fast",
            "projects.x.mode: unknown mode 'fast' (expected live or isolated)",
        ),
        (
            "a.b",
            ["ok"],
            [],
            "live",
            "projects.a.b: invalid project name 'a.b' "
            "(use letters, digits, '_' and '-', starting with a letter or '_')",
        ),
        (
            "",
            ["ok"],
            [],
            "live",
            "projects.: invalid project name '' "
            "(use letters, digits, '_' and '-', starting with a letter or '_')",
        ),
    ],
)
def test_add_project_errors_leave_the_file_untouched(
    tmp_path: Path, name: str, include: list[str], exclude: list[str], mode: str, message: str
) -> None:
    path = write(tmp_path, COMMENTED)
    with pytest.raises(ConfigError) as info:
        add_project(tmp_path, name, include, exclude, mode)
    assert str(info.value) == f"freshline.toml: {message}"
    assert "\n" not in str(info.value)
    assert path.read_text() == COMMENTED
    assert sorted(os.listdir(tmp_path)) == [CONFIG_NAME]


def test_remove_project(tmp_path: Path) -> None:
    path = write(tmp_path, COMMENTED)
    add_project(tmp_path, "papers", ["Papers"])
    remove_project(tmp_path, "papers")
    assert load_config(tmp_path).projects.keys() == {"reading"}
    assert path.read_text().startswith(COMMENTED.split("# trailing")[0])
    remove_project(tmp_path, "reading")
    text = path.read_text()
    assert "[projects" not in text
    assert "# My vault. Keep this comment." in text and "debounce_ms = 250  # slower disk" in text
    assert load_config(tmp_path).projects == {}


def test_remove_unknown_project(tmp_path: Path) -> None:
    path = write(tmp_path, COMMENTED)
    with pytest.raises(NotFoundError) as info:
        remove_project(tmp_path, "nope")
    assert str(info.value) == "unknown project 'nope'"
    assert path.read_text() == COMMENTED


def test_edits_keep_the_file_mode(tmp_path: Path) -> None:
    path = write(tmp_path, COMMENTED)
    path.chmod(0o600)
    add_project(tmp_path, "p", ["x"])
    assert path.stat().st_mode & 0o777 == 0o600


def test_signature_follows_config_changes(tmp_path: Path) -> None:
    write(tmp_path, COMMENTED)
    add_project(tmp_path, "p", ["b", "a"])
    first = load_config(tmp_path).project("p").signature
    remove_project(tmp_path, "p")
    add_project(tmp_path, "p", [" a ", "b/"])
    assert load_config(tmp_path).project("p").signature == first
    remove_project(tmp_path, "p")
    add_project(tmp_path, "p", ["a", "b"], mode="isolated")
    assert load_config(tmp_path).project("p").signature != first


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[projects."a\\nb"]\ninclude = ["x"]\n',
            "projects.a\\nb: invalid project name 'a\\nb' "
            "(use letters, digits, '_' and '-', starting with a letter or '_')",
        ),
        ('[workspace]\n"x\\ty" = 1\n', "workspace.x\\ty: unknown key"),
        (
            '[projects.p]\nmode = "fa\\nst"\n',
            "projects.p.mode: unknown mode 'fa\\nst' (expected live or isolated)",
        ),
        (
            '[projects.p]\ninclude = ["../a\\nb"]\n',
            "projects.p.include[0]: '..' escapes the workspace (pattern '../a\\nb')",
        ),
    ],
)
def test_messages_stay_on_one_line(tmp_path: Path, text: str, message: str) -> None:
    write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value).startswith(f"freshline.toml: {message}")
    assert str(info.value).isprintable()


def test_unknown_project_name_is_shown_safely(tmp_path: Path) -> None:
    write(tmp_path, COMMENTED)
    with pytest.raises(NotFoundError) as info:
        load_config(tmp_path).project("x\ny")
    assert str(info.value) == "unknown project 'x\\ny'"
