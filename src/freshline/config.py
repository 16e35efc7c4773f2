"""The workspace config `freshline.toml`: find, load and validate it, and edit it safely.

Loading uses the standard library's `tomllib`; edits go through `tomlkit`, which keeps a
user's comments and key order. An edit is validated as a whole before it is written, and
written atomically (temp file + `os.replace`), so a failed edit leaves the file untouched.
Every problem is a ConfigError of one line: `freshline.toml: <key>: <what is wrong>`.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from freshline import scope, sensitive
from freshline.errors import ConfigError, NotFoundError, UsageError, WorkspaceError, os_failure
from freshline.ignore import IgnoreSettings
from freshline.paths import shown
from freshline.store import location
from freshline.store.location import ENV_VAR as STORE_ENV
from freshline.store.pool import DEFAULT_SIZE as DEFAULT_POOL_SIZE
from freshline.store.pool import MAX_SIZE as MAX_POOL_SIZE

if TYPE_CHECKING:  # tomlkit is imported by the edits that use it: reading needs only tomllib
    import tomlkit
    import tomlkit.items

CONFIG_NAME = "freshline.toml"
DATA_DIR = ".freshline"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_TOP_KEYS = (
    "workspace", "projects", "model", "delivery", "conversations", "sessions", "store"
)
_PROJECT_KEYS = ("include", "exclude", "mode", "allow_secrets")

_TEMPLATE = """\
# freshline workspace. Projects are named scopes of this folder; add one with
#   freshline project add NAME --include PATTERN [--exclude PATTERN] [--mode live|isolated]

[workspace]
# debounce_ms = 150            # watcher settle time, milliseconds
# change_log_cap = 1000        # change-log rows kept per project
# full_scan_interval = 300     # seconds between full rescans while watching
# ignore = []                  # folders or globs that are never in any project
# respect_gitignore = true     # .gitignore files and .git/info/exclude ignore paths too
# respect_obsidian = true      # so do Obsidian's "Excluded files" (.obsidian/app.json)
# ignore_trash = true          # and Obsidian's trash, .trash/
# materialize_timeout_s = 60   # time limit for converting one document, seconds
# materialize_memory_mb = 1024 # memory limit of a conversion worker
# workers = 2                  # conversion worker processes
# autowatch = true             # the first command that flushes starts `freshline watch`
# autowatch_idle = 3600        # seconds without requests before that watcher exits
#
# Secrets (.env, *.pem, id_rsa*, .ssh/, ... see the README) are never in any project. A
# project reads one kind only if it names the exact pattern: allow_secrets = [".env"]

[model]
# default = "echo"             # e.g. "openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5"
# base_url = "http://127.0.0.1:11434/v1"   # a server for the default model's backend
# retries = 3                  # retries of a request answered 429 or 5xx
# retry_wait_s = 1.0           # the first wait before a retry (doubles, with jitter)
# retry_max_wait_s = 30.0      # the longest single wait

[delivery]
# the most characters the blocks may take per delivery channel; past that they roll up
# budget_chars = 20000         # every channel without its own key (the hook stays <= 9000)
# hook = 9000                  # Claude Code hook (Claude Code cuts at 10,000)
# mcp = 20000                  # MCP tool results
# chat = 30000                 # freshline chat
# send = 30000                 # freshline send
# acp = 20000                  # ACP proxy

[conversations]
# max_blob_mb = 20             # a larger file is recorded as a pointer (its blob id, size)

[sessions]
# idle_close = "7d"            # hook, MCP and ACP sessions unused this long close ("0": never)

[store]
# url = "postgresql://me@db.example/notes"   # a team's store (default: SQLite in .freshline/)
# pool_size = 8                # PostgreSQL connections per freshline process
"""


class Mode(StrEnum):
    """How a project's agent sees the workspace (DESIGN section 8)."""

    LIVE = "live"  # reads the live workspace; each turn records what it saw
    ISOLATED = "isolated"  # works in its own worktree; its edits become commits


@dataclass(frozen=True)
class WorkspaceSettings:
    """The `[workspace]` table."""

    debounce_ms: int = 150
    change_log_cap: int = 1000
    full_scan_interval: int = 300  # seconds
    ignore: tuple[str, ...] = ()
    materialize_timeout_s: int = 60
    materialize_memory_mb: int = 1024
    workers: int = 2
    respect_gitignore: bool = True
    respect_obsidian: bool = True
    ignore_trash: bool = True
    autowatch: bool = True  # the first command that flushes starts a background watcher
    autowatch_idle: int = 3600  # seconds without requests before that watcher exits

    @property
    def ignore_settings(self) -> IgnoreSettings:
        """Which ignore sources apply (freshline.ignore)."""
        return IgnoreSettings(
            self.ignore, self.respect_gitignore, self.respect_obsidian, self.ignore_trash
        )


@dataclass(frozen=True)
class ModelSettings:
    """The `[model]` table: which model commands use when `--model` is not given."""

    default: str = "echo"  # a backend spec: echo, scripted:FILE, openai:MODEL, anthropic:MODEL
    base_url: str | None = None  # the server for the default model's backend
    retries: int = 3  # retries of a request the server answered 429 or 5xx
    retry_wait_s: float = 1.0  # the first wait before a retry; doubles each time, jittered
    retry_max_wait_s: float = 30.0  # the longest single wait


_SWITCHES = ("respect_gitignore", "respect_obsidian", "ignore_trash", "autowatch")
# The range each numeric setting accepts: past these, a value that parses would overflow
# a timer or a resource limit later, or start more workers than any machine has cores.
_RANGES = {
    "debounce_ms": (0, 60_000),
    "change_log_cap": (1, 10_000_000),
    "full_scan_interval": (1, 7 * 86_400),
    "materialize_timeout_s": (1, 86_400),
    "materialize_memory_mb": (16, 1 << 20),
    "workers": (1, 64),
    "autowatch_idle": (1, 30 * 86_400),
}


# Each delivery channel's budget in characters when freshline.toml sets none.
CHANNEL_BUDGETS = {"hook": 9_000, "mcp": 20_000, "chat": 30_000, "send": 30_000, "acp": 20_000}
# Limits of the clients themselves: `budget_chars` never raises a channel above them
# (Claude Code shows a hook's output whole only up to 10,000 characters).
_CHANNEL_CEILINGS = {"hook": 9_000}
BUDGET_RANGE = (2_000, 10_000_000)  # both blocks at their smallest take about 1,300


@dataclass(frozen=True)
class DeliverySettings:
    """The `[delivery]` table: budgets in characters, for all channels and per channel."""

    budget_chars: int | None = None
    hook: int | None = None
    mcp: int | None = None
    chat: int | None = None
    send: int | None = None
    acp: int | None = None

    def budget(self, channel: str) -> int:
        """The channel's budget: its own key, else `budget_chars` (never above the
        channel's ceiling), else the channel's default."""
        own = getattr(self, channel)
        if own is not None:
            return int(own)
        default = CHANNEL_BUDGETS[channel]
        if self.budget_chars is None:
            return default
        return min(self.budget_chars, _CHANNEL_CEILINGS.get(channel, self.budget_chars))


@dataclass(frozen=True)
class ConversationSettings:
    """The `[conversations]` table: how conversations store the trees they record."""

    max_blob_mb: int = 20  # a file larger than this is recorded as a pointer blob

    @property
    def max_blob_bytes(self) -> int:
        """The cap in bytes."""
        return self.max_blob_mb * 1024 * 1024


@dataclass(frozen=True)
class SessionSettings:
    """The `[sessions]` table: sessions' life."""

    idle_close: int = 7 * 86_400  # seconds a hook/MCP/ACP session may stay unused (0: never)


@dataclass(frozen=True)
class StoreSettings:
    """The `[store]` table: where the store lives ("" = SQLite under `.freshline/`)."""

    url: str = ""  # sqlite:PATH or postgresql://… (FRESHLINE_STORE_URL overrides it)
    pool_size: int = DEFAULT_POOL_SIZE  # PostgreSQL connections a process keeps at most


_DURATION = re.compile(r"(\d+)\s*([smhdw]?)")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 7 * 86_400}
MAX_DURATION = 3_650 * 86_400  # ten years: anything longer is a typo


def parse_duration(text: str) -> int:
    """Seconds in a duration such as `30d`, `12h`, `90m`, `45s`, `2w` or a bare number of
    seconds; raises ValueError saying what is accepted."""
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        raise ValueError(f"not a duration: {text!r} (e.g. 30d, 12h, 90m, 45s, 2w)")
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if seconds > MAX_DURATION:
        raise ValueError(f"duration {text!r} is longer than {MAX_DURATION // 86_400} days")
    return seconds


@dataclass(frozen=True)
class ProjectConfig:
    """One `[projects.NAME]` table; `ignore` is the workspace's, so `scope` is complete."""

    name: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    mode: Mode = Mode.LIVE
    ignore: tuple[str, ...] = ()
    allow_secrets: tuple[str, ...] = ()  # built-in secret patterns this project may read

    @cached_property
    def scope(self) -> scope.Scope:
        """The project's parsed scope, ready for matching."""
        return scope.Scope.from_strings(
            self.include, self.exclude, self.ignore, self.allow_secrets
        )

    @property
    def signature(self) -> str:
        """A stable hash of the normalized patterns, mode and allowed secret patterns."""
        return scope.signature(self.include, self.exclude, self.mode, self.allow_secrets)


@dataclass(frozen=True)
class Config:
    """A loaded, validated workspace config."""

    root: Path
    workspace: WorkspaceSettings = field(default_factory=WorkspaceSettings)
    projects: dict[str, ProjectConfig] = field(default_factory=dict)
    model: ModelSettings = field(default_factory=ModelSettings)
    delivery: DeliverySettings = field(default_factory=DeliverySettings)
    conversations: ConversationSettings = field(default_factory=ConversationSettings)
    sessions: SessionSettings = field(default_factory=SessionSettings)
    store: StoreSettings = field(default_factory=StoreSettings)

    @property
    def path(self) -> Path:
        """The config file."""
        return self.root / CONFIG_NAME

    @property
    def data_dir(self) -> Path:
        """freshline's private data dir."""
        return self.root / DATA_DIR

    @property
    def store_url(self) -> str | None:
        """The store's URL: FRESHLINE_STORE_URL, else `[store] url`, else None (SQLite
        under the data dir). Checked when the store opens."""
        return os.environ.get(STORE_ENV) or self.store.url or None

    def project(self, name: str) -> ProjectConfig:
        """The named project; raises NotFoundError if there is none."""
        try:
            return self.projects[name]
        except KeyError:
            raise unknown_project(name, self.projects) from None


# --- discovery and loading ------------------------------------------------------------------


def find_workspace(start: Path, explicit: Path | None = None) -> Path:
    """The workspace root: `explicit` if given (it must hold freshline.toml), else the
    nearest of `start` and its parents that holds one. Raises WorkspaceError."""
    if explicit is not None:
        root = Path(explicit).resolve()
        if not (root / CONFIG_NAME).is_file():
            raise WorkspaceError(shown(f"no {CONFIG_NAME} in {root}; run `freshline init {root}`"))
        return root
    start = Path(start).resolve()
    for candidate in (start, *start.parents):
        if (candidate / CONFIG_NAME).is_file():
            return candidate
    raise WorkspaceError(shown(f"no {CONFIG_NAME} in {start} or any parent; run `freshline init`"))


def load_config(root: Path) -> Config:
    """Read and validate `root/freshline.toml`; raises ConfigError or WorkspaceError."""
    root = Path(root).resolve()
    return _validate(root, _parse_toml(_read(root)))


def _read(root: Path) -> str:
    path = root / CONFIG_NAME
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise WorkspaceError(shown(f"no {CONFIG_NAME} in {root}; run `freshline init`")) from None
    except OSError as exc:
        raise ConfigError(f"{CONFIG_NAME}: cannot read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{CONFIG_NAME}: invalid TOML: not UTF-8 text") from None


def _parse_toml(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{CONFIG_NAME}: invalid TOML: {exc}") from None
    except RecursionError:  # the parser recurses once per level of arrays and inline tables
        raise _too_deep() from None


def _too_deep() -> ConfigError:
    return ConfigError(f"{CONFIG_NAME}: invalid TOML: nested far deeper than freshline.toml allows")


def _error(key: str, what: str) -> ConfigError:
    return ConfigError(shown(f"{CONFIG_NAME}: {key}: {what}"))


def _type_name(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    names.update({list: "an array", dict: "a table"})
    return names.get(type(value), type(value).__name__)


def _expect(key: str, value: Any, kind: type, noun: str) -> None:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _error(key, f"expected {noun}, got {_type_name(value)}")


def _check_keys(prefix: str, table: dict[str, Any], allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    for key in table:
        if key not in allowed:
            where = f"{prefix}.{key}" if prefix else key
            raise _error(where, f"unknown key (expected one of: {', '.join(allowed)})")


def _validate(root: Path, data: dict[str, Any]) -> Config:
    _check_keys("", data, _TOP_KEYS)
    raw_ws = data.get("workspace", {})
    _expect("workspace", raw_ws, dict, "a table")
    workspace = _workspace(raw_ws)
    raw_projects = data.get("projects", {})
    _expect("projects", raw_projects, dict, "a table")
    projects = {
        name: _project(name, table, workspace.ignore) for name, table in raw_projects.items()
    }
    raw_model = data.get("model", {})
    _expect("model", raw_model, dict, "a table")
    raw_delivery = data.get("delivery", {})
    _expect("delivery", raw_delivery, dict, "a table")
    conversations = _conversations(data.get("conversations", {}))
    return Config(root, workspace, projects, _model(raw_model), _delivery(raw_delivery),
                  conversations, _sessions(data.get("sessions", {})),
                  _store(root, data.get("store", {})))


def _settings(name: str, table: Any, kind: type) -> dict[str, Any]:
    """A settings table checked to be one, with only `kind`'s fields as keys."""
    _expect(name, table, dict, "a table")
    _check_keys(name, table, (f.name for f in fields(kind)))
    return dict(table)


def _conversations(raw: Any) -> ConversationSettings:
    table = _settings("conversations", raw, ConversationSettings)
    if "max_blob_mb" not in table:
        return ConversationSettings()
    value = table["max_blob_mb"]
    _expect("conversations.max_blob_mb", value, int, "an integer (MiB)")
    if not 1 <= value <= 1 << 20:
        raise _error("conversations.max_blob_mb", f"must be between 1 and {1 << 20}, got {value}")
    return ConversationSettings(max_blob_mb=value)


def _store(root: Path, raw: Any) -> StoreSettings:
    table = _settings("store", raw, StoreSettings)
    url = table.get("url", "")
    _expect("store.url", url, str, "a string (sqlite:PATH or postgresql://…)")
    if "url" in table:
        try:
            location.parse(url, root)
        except UsageError as exc:
            raise _error("store.url", str(exc)) from None
    size = table.get("pool_size", DEFAULT_POOL_SIZE)
    _expect("store.pool_size", size, int, "an integer (connections)")
    if not 1 <= size <= MAX_POOL_SIZE:
        raise _error("store.pool_size", f"must be between 1 and {MAX_POOL_SIZE}, got {size}")
    return StoreSettings(url=url, pool_size=size)


def _sessions(raw: Any) -> SessionSettings:
    table = _settings("sessions", raw, SessionSettings)
    if "idle_close" not in table:
        return SessionSettings()
    value = table["idle_close"]
    if isinstance(value, bool) or not isinstance(value, int | str):
        got = _type_name(value)
        raise _error("sessions.idle_close", f'expected a duration like "7d", got {got}')
    try:
        seconds = parse_duration(str(value))
    except ValueError as exc:
        raise _error("sessions.idle_close", str(exc)) from None
    return SessionSettings(idle_close=seconds)


def _delivery(table: dict[str, Any]) -> DeliverySettings:
    _check_keys("delivery", table, (f.name for f in fields(DeliverySettings)))
    low, high = BUDGET_RANGE
    for name, value in table.items():
        key = f"delivery.{name}"
        _expect(key, value, int, "an integer (characters)")
        if not low <= value <= high:
            raise _error(key, f"must be between {low:,} and {high:,} characters, got {value}")
    return DeliverySettings(**table)


def _workspace(table: dict[str, Any]) -> WorkspaceSettings:
    _check_keys("workspace", table, (f.name for f in fields(WorkspaceSettings)))
    values: dict[str, Any] = {}
    for name, value in table.items():
        key = f"workspace.{name}"
        if name == "ignore":
            values[name] = _patterns(key, value, _check_ignore)
            continue
        if name in _SWITCHES:
            _expect(key, value, bool, "a boolean")
            values[name] = value
            continue
        _expect(key, value, int, "an integer")
        low, high = _RANGES[name]
        if not low <= value <= high:
            raise _error(key, f"must be between {low} and {high}, got {value}")
        values[name] = value
    return WorkspaceSettings(**values)


def _model(table: dict[str, Any]) -> ModelSettings:
    _check_keys("model", table, (f.name for f in fields(ModelSettings)))
    values: dict[str, Any] = {}
    for name in ("default", "base_url"):
        if name in table:
            _expect(f"model.{name}", table[name], str, "a string")
            values[name] = table[name].strip()
    if not values.get("default", "echo"):
        raise _error("model.default", "empty model (expected e.g. \"openai:gpt-4o-mini\")")
    base_url = values.get("base_url")
    if base_url is not None and not re.match(r"https?://[^/\s]+", base_url):
        raise _error("model.base_url", f"not an http:// or https:// URL: {base_url!r}")
    if "retries" in table:
        _expect("model.retries", table["retries"], int, "an integer")
        if table["retries"] < 0:
            raise _error("model.retries", f"must be at least 0, got {table['retries']}")
        values["retries"] = table["retries"]
    for name in ("retry_wait_s", "retry_max_wait_s"):
        if name in table:
            value = table[name]
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise _error(f"model.{name}", f"expected a number of seconds ≥ 0, got {value!r}")
            values[name] = float(value)
    return ModelSettings(**values)


def _check_ignore(text: str) -> None:
    # Ignore patterns are paths only: tags and properties are not known before a scan.
    kind = scope.parse_pattern(text).kind
    if kind not in (scope.PatternKind.FOLDER, scope.PatternKind.GLOB, scope.PatternKind.EXTENSION):
        raise ValueError(f"ignore takes folders and globs, not a {kind.value} pattern")


def _patterns(key: str, value: Any, check: Callable[[str], Any]) -> tuple[str, ...]:
    _expect(key, value, list, "an array of patterns")
    out = []
    for i, item in enumerate(value):
        _expect(f"{key}[{i}]", item, str, "a string")
        try:
            check(item)
        except ValueError as exc:
            quoted = f" (pattern {item.strip()!r})" if item.strip() else ""
            raise _error(f"{key}[{i}]", f"{exc}{quoted}") from None
        out.append(item.strip())
    return tuple(out)


def _project(name: str, table: Any, ignore: tuple[str, ...]) -> ProjectConfig:
    key = f"projects.{name}"
    check_project_name(name, key)
    _expect(key, table, dict, "a table")
    _check_keys(key, table, _PROJECT_KEYS)
    include = _patterns(f"{key}.include", table.get("include", []), scope.parse_pattern)
    exclude = _patterns(f"{key}.exclude", table.get("exclude", []), scope.parse_pattern)
    allowed = _patterns(
        f"{key}.allow_secrets", table.get("allow_secrets", []), sensitive.check_allowed
    )
    mode = _mode(f"{key}.mode", table)
    return ProjectConfig(name, include, exclude, mode, ignore, allowed)


def _mode(key: str, table: dict[str, Any]) -> Mode:
    value = table.get("mode", Mode.LIVE.value)
    _expect(key, value, str, "a string")
    try:
        return Mode(value)
    except ValueError:
        raise _error(key, f"unknown mode '{value}' (expected live or isolated)") from None


def unknown_project(name: str, known: Iterable[str]) -> NotFoundError:
    """The error for a project name not in the config, suggesting the closest one."""
    import difflib  # only on this error path

    close = difflib.get_close_matches(name, [str(k) for k in known], n=1, cutoff=0.6)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return NotFoundError(shown(f"unknown project '{name}'{hint}"))


def check_project_name(name: str, key: str | None = None) -> None:
    """Raise ConfigError unless `name` is a simple identifier (`[A-Za-z_][A-Za-z0-9_-]*`)."""
    if not _NAME.fullmatch(name):
        raise _error(
            key or f"projects.{name}",
            f"invalid project name '{name}' (use letters, digits, '_' and '-', "
            "starting with a letter or '_')",
        )


# --- creating and editing -------------------------------------------------------------------


def enclosing_workspace(directory: Path) -> Path | None:
    """The workspace `directory` lies inside (a parent holding freshline.toml), if any."""
    for parent in Path(directory).resolve().parents:
        if (parent / CONFIG_NAME).is_file():
            return parent
    return None


def init_workspace(directory: Path, nested: bool = False) -> list[str]:
    """Create freshline.toml and .freshline/ in `directory` where missing.

    Idempotent; returns what it did, e.g. ["created freshline.toml", "created .freshline/"].
    Raises WorkspaceError when `directory` lies inside another workspace, unless `nested`
    (the outer workspace then never tracks the inner one's freshline.toml and .freshline/).
    """
    directory = Path(directory)
    outer = None if nested else enclosing_workspace(directory)
    if outer is not None and not (directory / CONFIG_NAME).is_file():
        raise WorkspaceError(shown(
            f"{directory.resolve()} is inside the workspace {outer}; use --nested to make "
            "a workspace inside it anyway"))
    done: list[str] = []
    if not directory.is_dir():
        if directory.exists():
            raise WorkspaceError(shown(f"{directory}: not a directory"))
        directory.mkdir(parents=True)
        done.append(f"created {directory}/")
    if not (directory / CONFIG_NAME).exists():
        _write_atomic(directory / CONFIG_NAME, _TEMPLATE)
        done.append(f"created {CONFIG_NAME}")
    data_dir = directory / DATA_DIR
    if not data_dir.is_dir():
        if data_dir.exists():
            raise WorkspaceError(shown(f"{data_dir}: exists and is not a directory"))
        data_dir.mkdir()
        # Keeps freshline's private data out of `git status` in a checkout.
        (data_dir / ".gitignore").write_text("*\n", encoding="utf-8")
        done.append(f"created {DATA_DIR}/")
    return done


def add_project(
    root: Path,
    name: str,
    include: Iterable[str],
    exclude: Iterable[str] = (),
    mode: str | Mode = Mode.LIVE,
) -> ProjectConfig:
    """Add `[projects.NAME]` to the config, keeping comments and order; returns it.

    Raises ConfigError (invalid name or pattern, unknown mode, existing project).
    """
    import tomlkit

    check_project_name(name)
    include, exclude = list(include), list(exclude)
    mode_value = mode.value if isinstance(mode, Mode) else mode

    def edit(doc: tomlkit.TOMLDocument) -> None:
        projects = doc.get("projects")
        if projects is None:
            projects = tomlkit.table(is_super_table=True)
            doc.append("projects", projects)
        if name in projects:
            raise _error(f"projects.{name}", f"project '{name}' already exists")
        table = tomlkit.table()
        table.append("include", _array(include))
        if exclude:
            table.append("exclude", _array(exclude))
        table.append("mode", mode_value)
        if list(doc)[-1] != "projects":
            table.add(tomlkit.nl())  # keep a blank line before the table that follows
        projects.append(name, table)

    return _edit(Path(root).resolve(), edit).project(name)


def remove_project(root: Path, name: str) -> None:
    """Remove `[projects.NAME]` and the comment lines right above its header; every other
    comment stays. Raises NotFoundError if there is no such project."""

    def edit(doc: tomlkit.TOMLDocument) -> None:
        projects = doc.get("projects")
        if projects is None or name not in projects:
            raise unknown_project(name, projects or {})
        _keep_neighbours_comments(doc, projects, name)
        del projects[name]
        if not projects:
            del doc["projects"]

    _edit(Path(root), edit)


def _keep_neighbours_comments(doc: Any, projects: Any, name: str) -> None:
    """tomlkit stores the comments above a table header at the end of the table rendered
    before it. Before `name`'s table goes: drop the comment block glued to its header (the
    end of the previous table), and move its own trailing comments, which sit above the
    next header, to the previous table, so they stay where they were."""
    import tomlkit.items

    keys = [key.key for key, _item in projects.value.body if key is not None]
    if not projects.is_super_table() or name not in keys:
        return
    at = keys.index(name)
    if at:
        previous = projects[keys[at - 1]].value
    else:
        before = [item for key, item in doc.body[: _index(doc.body, "projects")] if key]
        previous = before[-1].value if before and isinstance(before[-1], tomlkit.items.Table) \
            else doc
    body = previous.body
    cut = len(body)
    while cut and body[cut - 1][0] is None and isinstance(body[cut - 1][1], tomlkit.items.Comment):
        cut -= 1
    while cut and body[cut - 1][0] is None and isinstance(body[cut - 1][1],
                                                          tomlkit.items.Whitespace):
        cut -= 1  # the blank line before that block: the moved block brings its own
    del body[cut:]
    own = projects[name].value.body
    last_key = max((i for i, (key, _item) in enumerate(own) if key is not None), default=-1)
    moved = [item for _key, item in own[last_key + 1 :]] or [tomlkit.items.Whitespace("\n")]
    body.extend((None, item) for item in moved)


def _index(body: list[tuple[Any, Any]], name: str) -> int:
    return next(i for i, (key, _item) in enumerate(body) if key is not None and key.key == name)


def _array(items: list[str]) -> tomlkit.items.Array:
    import tomlkit

    array = tomlkit.array()
    array.extend(items)
    return array


def _edit(root: Path, mutate: Callable[[tomlkit.TOMLDocument], None]) -> Config:
    """Apply `mutate` to the current file, validate the result, write it atomically."""
    import tomlkit
    import tomlkit.exceptions

    text = _read(root)
    _validate(root, _parse_toml(text))  # refuse to edit a file that is already broken
    try:
        doc = tomlkit.parse(text if text.endswith("\n") or not text else text + "\n")
        mutate(doc)
        new_text = tomlkit.dumps(doc)
    except tomlkit.exceptions.TOMLKitError as exc:
        raise ConfigError(f"{CONFIG_NAME}: cannot edit: {exc}") from None
    except RecursionError:
        raise _too_deep() from None
    config = _validate(root, _parse_toml(new_text))
    _write_atomic(root / CONFIG_NAME, new_text)
    return config


def _write_atomic(path: Path, text: str) -> None:
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise os_failure(exc, f"writing {path}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp makes the file private; keep the old file's mode, or the usual 0644.
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise os_failure(exc, f"writing {path}") from exc
        raise


def config_stamp(path: Path) -> tuple[int, int, int] | None:
    """(mtime_ns, size, inode) of a config file: changes whenever the file is rewritten."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino
