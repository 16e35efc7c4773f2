"""Finding, reading and validating freshline.toml: the standard library's `tomllib` only.

Each table is checked key by key into its record (freshline.config.settings); every
problem is a ConfigError of one line: `freshline.toml: <key>: <what is wrong>`.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import fields
from pathlib import Path
from typing import Any

from freshline import scope, sensitive
from freshline.config.settings import (
    BUDGET_RANGE,
    CEILING_REASONS,
    CHANNEL_CEILINGS,
    CONFIG_NAME,
    SERVER_RANGES,
    Config,
    ConversationSettings,
    DeliverySettings,
    Mode,
    ModelSettings,
    ProjectConfig,
    SecuritySettings,
    ServerSettings,
    SessionSettings,
    StoreSettings,
    WorkspaceSettings,
    check_network,
    check_token_word,
    check_url,
    parse_duration,
)
from freshline.errors import ConfigError, UsageError, WorkspaceError
from freshline.paths import shown
from freshline.store import location
from freshline.store.pool import DEFAULT_SIZE as DEFAULT_POOL_SIZE
from freshline.store.pool import MAX_SIZE as MAX_POOL_SIZE

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_TOP_KEYS = (
    "workspace", "projects", "model", "delivery", "conversations", "sessions", "store",
    "server",
    "security",
)
_PROJECT_KEYS = ("include", "exclude", "mode", "allow_secrets")

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
}
# Keys an older freshline.toml may hold: still checked, no longer used. `autowatch_idle`
# was the idle time of a workspace's own watcher; the service watches until stopped.
_RETIRED = {"autowatch_idle": (1, 30 * 86_400)}
RETRIES_MAX = 100  # [model] retries: past this a send could retry for days
WAIT_MAX_S = 3_600.0  # [model] retry_wait_s and retry_max_wait_s
# Length limits, in characters: far above any real value, far below what costs memory or
# time when a pattern is compiled or a name is sent with every request.
MODEL_NAME_MAX = 200  # [model] default
TEXT_MAX = 4_096  # URLs
PATTERN_MAX = 1_024  # one include, exclude, ignore or allow pattern
PATTERNS_MAX = 10_000  # patterns in one list
NAME_MAX = 100  # a project's name
DURATION_MAX = 32  # a duration's text ("7d")
KEY_SHOWN = 80  # characters of a key an error shows


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
    return validate(root, parse_toml(read_text(root)))


def read_text(root: Path) -> str:
    """The text of `root`'s freshline.toml (WorkspaceError when there is none, ConfigError
    when it cannot be read as UTF-8)."""
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


def parse_toml(text: str) -> dict[str, Any]:
    """The TOML document `text` (ConfigError, in one line, when it is not valid TOML)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{CONFIG_NAME}: invalid TOML: {exc}") from None
    except RecursionError:  # the parser recurses once per level of arrays and inline tables
        raise too_deep() from None


def too_deep() -> ConfigError:
    """The error for a document nested deeper than Python's parsers can follow."""
    return ConfigError(f"{CONFIG_NAME}: invalid TOML: nested far deeper than freshline.toml allows")


def config_error(key: str, what: str) -> ConfigError:
    """The one-line error for `key`: `freshline.toml: <key>: <what is wrong>` (a key past
    KEY_SHOWN characters is shortened)."""
    if len(key) > KEY_SHOWN:
        key = key[:KEY_SHOWN] + "…"
    return ConfigError(shown(f"{CONFIG_NAME}: {key}: {what}"))


def _type_name(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    names.update({list: "an array", dict: "a table"})
    return names.get(type(value), type(value).__name__)


def _expect(key: str, value: Any, kind: type | tuple[type, ...], noun: str) -> None:
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise config_error(key, f"expected {noun}, got {_type_name(value)}")


def _text(key: str, value: Any, limit: int, noun: str = "a string") -> str:
    """`value` checked to be a string of at most `limit` characters, stripped."""
    _expect(key, value, str, noun)
    if len(value) > limit:
        raise config_error(key, f"longer than {limit:,} characters ({len(value):,})")
    return str(value).strip()


def _in_range(key: str, value: Any, low: float, high: float, unit: str = "") -> None:
    """Refuse a number outside [low, high], or not finite (nan, inf)."""
    if not (math.isfinite(value) and low <= value <= high):
        raise config_error(key, f"must be between {low:g} and {high:g}{unit}, got {value!r}")


def _check_keys(prefix: str, table: dict[str, Any], allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    for key in table:
        if key not in allowed:
            where = f"{prefix}.{key}" if prefix else key
            raise config_error(where, f"unknown key (expected one of: {', '.join(allowed)})")


def validate(root: Path, data: dict[str, Any]) -> Config:
    """The Config a parsed freshline.toml describes (ConfigError for the first bad key)."""
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
                  _store(root, data.get("store", {})), _server(data.get("server", {})),
                  _security(data.get("security", {})))


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
        raise config_error(
            "conversations.max_blob_mb", f"must be between 1 and {1 << 20}, got {value}"
        )
    return ConversationSettings(max_blob_mb=value)


def _store(root: Path, raw: Any) -> StoreSettings:
    table = _settings("store", raw, StoreSettings)
    url = _text("store.url", table.get("url", ""), TEXT_MAX,
                "a string (sqlite:PATH or postgresql://…)")
    if "url" in table:
        try:
            location.parse(url, root)
        except UsageError as exc:
            raise config_error("store.url", str(exc)) from None
    size = table.get("pool_size", DEFAULT_POOL_SIZE)
    _expect("store.pool_size", size, int, "an integer (connections)")
    if not 1 <= size <= MAX_POOL_SIZE:
        raise config_error("store.pool_size", f"must be between 1 and {MAX_POOL_SIZE}, got {size}")
    return StoreSettings(url=url, pool_size=size)


def _server(raw: Any) -> ServerSettings:
    table = _settings("server", raw, ServerSettings)
    values: dict[str, Any] = {}
    for name, value in table.items():
        key = f"server.{name}"
        if name == "trusted_proxies":
            values[name] = _words(key, value, check_network, "networks (CIDR)")
        elif name in ("oauth_token_types", "oauth_scopes"):
            values[name] = _words(key, value, check_token_word, "strings")
        elif name in SERVER_RANGES:
            _expect(key, value, int, "an integer")
            _in_range(key, value, *SERVER_RANGES[name])
            values[name] = value
        else:
            values[name] = _text(key, value, TEXT_MAX)
            if not values[name]:
                raise config_error(key, "empty")
            if name != "oauth_audience":
                try:
                    check_url(values[name])
                except ValueError as exc:
                    raise config_error(key, str(exc)) from None
    return ServerSettings(**values)


def _words(key: str, value: Any, check: Callable[[str], str], noun: str) -> tuple[str, ...]:
    _expect(key, value, list, f"an array of {noun}")
    if len(value) > PATTERNS_MAX:
        raise config_error(key, f"more than {PATTERNS_MAX:,} {noun} ({len(value):,})")
    out = []
    for i, item in enumerate(value):
        _expect(f"{key}[{i}]", item, str, "a string")
        try:
            out.append(check(item))
        except ValueError as exc:
            raise config_error(f"{key}[{i}]", str(exc)) from None
    return tuple(out)


def _sessions(raw: Any) -> SessionSettings:
    table = _settings("sessions", raw, SessionSettings)
    if "idle_close" not in table:
        return SessionSettings()
    value = table["idle_close"]
    if isinstance(value, bool) or not isinstance(value, int | str):
        got = _type_name(value)
        raise config_error("sessions.idle_close", f'expected a duration like "7d", got {got}')
    if isinstance(value, str):
        _text("sessions.idle_close", value, DURATION_MAX)
    try:
        seconds = parse_duration(str(value))
    except ValueError as exc:
        raise config_error("sessions.idle_close", str(exc)) from None
    return SessionSettings(idle_close=seconds)


def _delivery(table: dict[str, Any]) -> DeliverySettings:
    _check_keys("delivery", table, (f.name for f in fields(DeliverySettings)))
    low, high = BUDGET_RANGE
    for name, value in table.items():
        key = f"delivery.{name}"
        _expect(key, value, int, "an integer (characters)")
        if not low <= value <= high:
            raise config_error(key, f"must be between {low:,} and {high:,} characters, got {value}")
        ceiling = CHANNEL_CEILINGS.get(name)
        if ceiling is not None and value > ceiling:
            why = CEILING_REASONS[name]
            raise config_error(key, f"at most {ceiling:,} characters ({why}), got {value}")
    return DeliverySettings(**table)


def _workspace(table: dict[str, Any]) -> WorkspaceSettings:
    _check_keys("workspace", table, (*(f.name for f in fields(WorkspaceSettings)), *_RETIRED))
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
        low, high = _RANGES.get(name) or _RETIRED[name]
        if not low <= value <= high:
            raise config_error(key, f"must be between {low} and {high}, got {value}")
        if name not in _RETIRED:
            values[name] = value
    return WorkspaceSettings(**values)


def _model(table: dict[str, Any]) -> ModelSettings:
    _check_keys("model", table, (f.name for f in fields(ModelSettings)))
    values: dict[str, Any] = {}
    for name, limit in (("default", MODEL_NAME_MAX), ("base_url", TEXT_MAX)):
        if name in table:
            values[name] = _text(f"model.{name}", table[name], limit)
    if not values.get("default", "echo"):
        raise config_error("model.default", "empty model (expected e.g. \"openai:gpt-4o-mini\")")
    base_url = values.get("base_url")
    if base_url is not None and not re.match(r"https?://[^/\s]+", base_url):
        raise config_error("model.base_url", f"not an http:// or https:// URL: {base_url!r}")
    if "retries" in table:
        _expect("model.retries", table["retries"], int, "an integer")
        _in_range("model.retries", table["retries"], 0, RETRIES_MAX)
        values["retries"] = table["retries"]
    for name in ("retry_wait_s", "retry_max_wait_s"):
        if name in table:
            value = table[name]
            _expect(f"model.{name}", value, (int, float), "a number of seconds")
            _in_range(f"model.{name}", value, 0, WAIT_MAX_S, " seconds")
            values[name] = float(value)
    return ModelSettings(**values)


def _security(raw: Any) -> SecuritySettings:
    table = _settings("security", raw, SecuritySettings)
    hardlinks = table.get("allow_hardlinks", False)
    _expect("security.allow_hardlinks", hardlinks, bool, "a boolean")
    allowed = _patterns("security.allow_secrets_in", table.get("allow_secrets_in", []),
                        _check_ignore)
    return SecuritySettings(allow_hardlinks=hardlinks, allow_secrets_in=allowed)


def _check_ignore(text: str) -> None:
    # Ignore patterns are paths only: tags and properties are not known before a scan.
    kind = scope.parse_pattern(text).kind
    if kind not in (scope.PatternKind.FOLDER, scope.PatternKind.GLOB, scope.PatternKind.EXTENSION):
        raise ValueError(f"ignore takes folders and globs, not a {kind.value} pattern")


def _patterns(key: str, value: Any, check: Callable[[str], Any]) -> tuple[str, ...]:
    _expect(key, value, list, "an array of patterns")
    if len(value) > PATTERNS_MAX:
        raise config_error(key, f"more than {PATTERNS_MAX:,} patterns ({len(value):,})")
    out = []
    for i, item in enumerate(value):
        _text(f"{key}[{i}]", item, PATTERN_MAX)
        try:
            check(item)
        except ValueError as exc:
            quoted = f" (pattern {item.strip()!r})" if item.strip() else ""
            raise config_error(f"{key}[{i}]", f"{exc}{quoted}") from None
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
        raise config_error(key, f"unknown mode '{value}' (expected live or isolated)") from None


def check_project_name(name: str, key: str | None = None) -> None:
    """Raise ConfigError unless `name` is a simple identifier (`[A-Za-z_][A-Za-z0-9_-]*`)
    of at most NAME_MAX characters."""
    if len(name) > NAME_MAX:
        raise config_error(key or f"projects.{name}",
                           f"a project name longer than {NAME_MAX} characters ({len(name):,})")
    if not _NAME.fullmatch(name):
        raise config_error(
            key or f"projects.{name}",
            f"invalid project name '{name}' (use letters, digits, '_' and '-', "
            "starting with a letter or '_')",
        )


def config_stamp(path: Path) -> tuple[int, int, int] | None:
    """(mtime_ns, size, inode) of a config file: changes whenever the file is rewritten."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino
