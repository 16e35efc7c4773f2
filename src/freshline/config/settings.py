"""The records of a loaded freshline.toml: one frozen dataclass per table, and `Config`.

Also the defaults that live beside them (channel budgets, durations) and the error for a
project name the config does not hold.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from pathlib import Path

from freshline import scope
from freshline.errors import NotFoundError
from freshline.ignore import IgnoreSettings
from freshline.paths import DATA_DIR as DATA_DIR  # re-exported: its callers import it here
from freshline.paths import shown
from freshline.store.location import ENV_VAR as STORE_ENV
from freshline.store.pool import DEFAULT_SIZE as DEFAULT_POOL_SIZE

CONFIG_NAME = "freshline.toml"


class Mode(StrEnum):
    """How a project's agent sees the workspace (DESIGN section 8)."""

    LIVE = "live"  # reads the live workspace; each turn records what it saw
    ISOLATED = "isolated"  # works in its own worktree; its edits become commits


@dataclass(frozen=True)
class WorkspaceSettings:
    """The `[workspace]` table."""

    debounce_ms: int = 150
    change_log_cap: int = 100_000  # rows: a checkout of a large repository, listed whole
    full_scan_interval: int = 300  # seconds
    ignore: tuple[str, ...] = ()
    materialize_timeout_s: int = 60
    materialize_memory_mb: int = 1024
    workers: int = 2
    respect_gitignore: bool = True
    respect_obsidian: bool = True
    ignore_trash: bool = True
    autowatch: bool = True  # commands have the per-user service watch this workspace

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


# Each delivery channel's budget in characters when freshline.toml sets none.
CHANNEL_BUDGETS = {"hook": 9_000, "mcp": 20_000, "chat": 30_000, "send": 30_000, "acp": 20_000}
# Limits of the clients themselves: `budget_chars` never raises a channel above them, and
# a channel's own key past its ceiling is refused when the config loads (with the why).
CHANNEL_CEILINGS = {"hook": 9_000}
CEILING_REASONS = {"hook": "Claude Code shows hook output whole only up to 10,000"}
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
        return min(self.budget_chars, CHANNEL_CEILINGS.get(channel, self.budget_chars))


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


@dataclass(frozen=True)
class ServerSettings:
    """The `[server]` table: how `freshline serve` signs users in and guards itself."""

    oauth_issuer: str | None = None  # the team's authorization server (OAuth 2.1)
    oauth_audience: str | None = None  # a token's `aud` must hold it (default: the /mcp URL)
    public_url: str | None = None  # where clients reach the server (default: its address)
    trusted_proxies: tuple[str, ...] = ()  # CIDRs whose X-Forwarded-For is believed
    header_timeout_s: int = 10  # a request's headers must arrive within this
    body_timeout_s: int = 30  # and its body within this after them
    # An idle kept-alive connection is closed after this: longer than clients keep theirs
    # (httpx, the MCP SDK's: 5 s), or a request sent as the server closes is lost.
    keepalive_timeout_s: int = 30
    max_connections_per_address: int = 64  # open connections per client key (IPv6: a /64)
    jwks_refetch_s: int = 1  # the issuer's keys are fetched at most this often
    max_connections: int = 4096  # open at once (fewer when the open-files limit is lower)
    # The `typ` an access token's header must name (RFC 9068's; add "JWT" for an issuer
    # that does not type its access tokens, as Keycloak's default does not).
    oauth_token_types: tuple[str, ...] = ("at+jwt",)
    # The scopes clients are told to ask for (RFC 9728 scopes_supported): freshline needs
    # none of its own, and a client told none asks for every scope the issuer has.
    oauth_scopes: tuple[str, ...] = ("openid",)

# The range of each numeric `[server]` setting.
SERVER_RANGES = {
    "header_timeout_s": (1, 600),
    "body_timeout_s": (1, 3_600),
    "keepalive_timeout_s": (1, 3_600),
    "max_connections": (16, 1_000_000),
    "max_connections_per_address": (1, 100_000),
    "jwks_refetch_s": (1, 86_400),
}


def check_url(text: str) -> str:
    """`text` if it is an absolute http:// or https:// URL without query or fragment
    (ValueError saying why not)."""
    from urllib.parse import urlsplit  # only where a URL is set

    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http:// or https:// URL: {text!r}")
    if parts.query or parts.fragment:
        raise ValueError(f"a URL without query or fragment, not {text!r}")
    return text


def check_token_word(text: str) -> str:
    """`text` if it can be a scope or a token type: printable ASCII without spaces, quotes
    or backslashes (RFC 6749's scope-token), else ValueError."""
    if not text or any(not 0x21 <= ord(c) <= 0x7E or c in '"\\' for c in text):
        raise ValueError(f"not a scope or type (printable, no space, quote or backslash): "
                         f"{text!r}")
    return text


def check_network(text: str) -> str:
    """`text` if it names an IP network (CIDR) or address (ValueError saying why not)."""
    import ipaddress  # only where a proxy is trusted

    try:
        ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValueError(f"not an IP address or network (CIDR): {text!r}") from None
    return text.strip()


@dataclass(frozen=True)
class SecuritySettings:
    """The `[security]` table: what confinement and the secret scan let through."""

    allow_hardlinks: bool = False  # read files with more than one hard link
    allow_secrets_in: tuple[str, ...] = ()  # paths whose content is not scanned for secrets


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
    server: ServerSettings = field(default_factory=ServerSettings)
    security: SecuritySettings = field(default_factory=SecuritySettings)

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


def unknown_project(name: str, known: Iterable[str]) -> NotFoundError:
    """The error for a project name not in the config, suggesting the closest one."""
    import difflib  # only on this error path

    close = difflib.get_close_matches(name, [str(k) for k in known], n=1, cutoff=0.6)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return NotFoundError(shown(f"unknown project '{name}'{hint}"))
