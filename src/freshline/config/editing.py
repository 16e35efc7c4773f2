"""Creating a workspace and editing its freshline.toml safely.

Edits go through `tomlkit`, imported only by the edits themselves, which keeps a user's
comments and key order. An edit is validated as a whole before it is written, and written
atomically (temp file + `os.replace`), so a failed edit leaves the file untouched.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from freshline.config.loading import (
    check_project_name,
    config_error,
    parse_toml,
    read_text,
    too_deep,
    validate,
)
from freshline.config.settings import (
    CONFIG_NAME,
    DATA_DIR,
    Config,
    Mode,
    ProjectConfig,
    unknown_project,
)
from freshline.errors import ConfigError, WorkspaceError, os_failure
from freshline.paths import shown

if TYPE_CHECKING:  # tomlkit is imported by the edits that use it: reading needs only tomllib
    import tomlkit
    import tomlkit.items

_TEMPLATE = """\
# freshline workspace. Projects are named scopes of this folder; add one with
#   freshline project add NAME --include PATTERN [--exclude PATTERN] [--mode live|isolated]

[workspace]
# debounce_ms = 150            # watcher settle time, milliseconds
# change_log_cap = 100000      # change-log rows kept per project; older ones are counted
# full_scan_interval = 300     # seconds between full rescans (where inotify is not)
# ignore = []                  # folders or globs that are never in any project
# respect_gitignore = true     # .gitignore files and .git/info/exclude ignore paths too
# respect_obsidian = true      # so do Obsidian's "Excluded files" (.obsidian/app.json)
# ignore_trash = true          # and Obsidian's trash, .trash/
# materialize_timeout_s = 60   # time limit for converting one document, seconds
# materialize_memory_mb = 1024 # memory limit of a conversion worker
# workers = 2                  # conversion worker processes
# autowatch = true             # commands have the per-user service watch this workspace
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

[server]
# `freshline serve`: sign-in through the team's OAuth 2.1 authorization server, and limits
# oauth_issuer = "https://auth.example.com/realms/team"
# oauth_audience = "https://freshline.example.com/mcp"   # default: public_url + /mcp
# public_url = "https://freshline.example.com"   # default: the address served
# trusted_proxies = ["10.0.0.0/8"]   # whose X-Forwarded-For names the client
# header_timeout_s = 10        # a request's headers must arrive within this
# body_timeout_s = 30          # and its body within this
# keepalive_timeout_s = 30     # an idle connection is closed after this
# max_connections = 4096       # open at once (fewer if the open-files limit leaves less)
# max_connections_per_address = 64   # an IPv6 client counts by its /64
# jwks_refetch_s = 1           # the issuer's keys are fetched at most this often
# oauth_token_types = ["at+jwt"]   # the access tokens' typ (add "JWT" for Keycloak's)
# oauth_scopes = ["openid"]    # the scopes clients are told to ask for

[security]
# allow_hardlinks = false      # files with more than one hard link are read by nothing
# allow_secrets_in = []        # folders or globs whose content is not scanned for secrets

[store]
# url = "postgresql://me@db.example/notes"   # a team's store (default: SQLite in .freshline/)
# pool_size = 8                # PostgreSQL connections per freshline process
"""


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
            raise config_error(f"projects.{name}", f"project '{name}' already exists")
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

    text = read_text(root)
    validate(root, parse_toml(text))  # refuse to edit a file that is already broken
    try:
        doc = tomlkit.parse(text if text.endswith("\n") or not text else text + "\n")
        mutate(doc)
        new_text = tomlkit.dumps(doc)
    except tomlkit.exceptions.TOMLKitError as exc:
        raise ConfigError(f"{CONFIG_NAME}: cannot edit: {exc}") from None
    except RecursionError:
        raise too_deep() from None
    config = validate(root, parse_toml(new_text))
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
