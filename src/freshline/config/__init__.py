"""The workspace config `freshline.toml`: find, load and validate it, and edit it safely.

Loading uses the standard library's `tomllib`; edits go through `tomlkit`, which keeps a
user's comments and key order. An edit is validated as a whole before it is written, and
written atomically (temp file + `os.replace`), so a failed edit leaves the file untouched.
Every problem is a ConfigError of one line: `freshline.toml: <key>: <what is wrong>`.

The records live in `settings`, finding and validating the file in `loading`, creating a
workspace and editing the file in `editing`; every public name is re-exported here.
"""

from __future__ import annotations

from freshline.config.editing import (
    add_project,
    enclosing_workspace,
    init_workspace,
    remove_project,
)
from freshline.config.loading import (
    check_project_name,
    config_stamp,
    find_workspace,
    load_config,
)
from freshline.config.settings import (
    BUDGET_RANGE,
    CHANNEL_BUDGETS,
    CONFIG_NAME,
    DATA_DIR,
    MAX_DURATION,
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
    parse_duration,
    unknown_project,
)

__all__ = [
    "BUDGET_RANGE",
    "CHANNEL_BUDGETS",
    "CONFIG_NAME",
    "DATA_DIR",
    "MAX_DURATION",
    "Config",
    "ConversationSettings",
    "DeliverySettings",
    "Mode",
    "ModelSettings",
    "ProjectConfig",
    "ServerSettings",
    "SecuritySettings",
    "SessionSettings",
    "StoreSettings",
    "WorkspaceSettings",
    "add_project",
    "check_project_name",
    "config_stamp",
    "enclosing_workspace",
    "find_workspace",
    "init_workspace",
    "load_config",
    "parse_duration",
    "remove_project",
    "unknown_project",
]
