"""The settings this issue added: `[model]`, `autowatch` (and `autowatch_idle`, retired:
still read, no longer used); the template."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from freshline.config import (
    CONFIG_NAME,
    ModelSettings,
    ServerSettings,
    WorkspaceSettings,
    init_workspace,
    load_config,
)
from freshline.errors import ConfigError


def load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    (tmp_path / CONFIG_NAME).write_text(text)
    return load_config(tmp_path)


def test_defaults(tmp_path: Path) -> None:
    config = load(tmp_path, "")
    assert config.model == ModelSettings("echo", None, 3, 1.0, 30.0)
    assert config.workspace.autowatch is True


def test_the_template_loads_and_names_every_setting(tmp_path: Path) -> None:
    init_workspace(tmp_path)
    text = (tmp_path / CONFIG_NAME).read_text()
    assert load_config(tmp_path).model == ModelSettings()
    fields = [*WorkspaceSettings.__dataclass_fields__, *ModelSettings.__dataclass_fields__,
              *ServerSettings.__dataclass_fields__]
    for name in fields:
        assert f"# {name} = " in text, name


def test_server_settings_are_read(tmp_path: Path) -> None:
    assert load(tmp_path, "").server == ServerSettings()
    config = load(tmp_path, '[server]\noauth_issuer = "https://auth.example/realms/t"\n'
                            'oauth_audience = "api://freshline"\n'
                            'public_url = "https://fl.example"\n'
                            'trusted_proxies = ["10.0.0.0/8", "::1"]\nheader_timeout_s = 1\n'
                            "body_timeout_s = 2\nkeepalive_timeout_s = 3\n"
                            "max_connections_per_address = 4\njwks_refetch_s = 5\n"
                            "max_connections = 100\n"
                            'oauth_token_types = ["at+jwt", "JWT"]\noauth_scopes = ["mcp:use"]\n')
    assert config.server == ServerSettings(
        "https://auth.example/realms/t", "api://freshline", "https://fl.example",
        ("10.0.0.0/8", "::1"), 1, 2, 3, 4, 5, 100, ("at+jwt", "JWT"), ("mcp:use",))


def test_model_settings_are_read(tmp_path: Path) -> None:
    config = load(tmp_path, '[model]\ndefault = "openai:gpt-4o-mini"\n'
                            'base_url = "http://127.0.0.1:11434/v1"\nretries = 0\n'
                            "retry_wait_s = 2\nretry_max_wait_s = 0.5\n"
                            "[workspace]\nautowatch = false\nautowatch_idle = 60\n")
    assert config.model == ModelSettings("openai:gpt-4o-mini", "http://127.0.0.1:11434/v1",
                                         0, 2.0, 0.5)
    assert config.workspace.autowatch is False  # autowatch_idle: retired, still read


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[model]\ndefault = 3\n", "model.default: expected a string, got an integer"),
        ('[model]\ndefault = ""\n', "model.default: empty model"),
        ('[model]\nbase_url = "localhost:1234"\n', "model.base_url: not an http:// or https://"),
        ("[model]\nretries = -1\n", "model.retries: must be between 0 and 100"),
        ("[model]\nretry_wait_s = true\n", "model.retry_wait_s: expected a number of seconds"),
        ("[model]\nmodel = 'x'\n", "model.model: unknown key (expected one of: default, "),
        ("model = 'x'\n", "model: expected a table, got a string"),
        ("[workspace]\nautowatch = 1\n", "workspace.autowatch: expected a boolean"),
        ("[workspace]\nautowatch_idle = 0\n", "workspace.autowatch_idle: must be between 1 and"),
        ("[server]\nheader_timeout_s = 0\n", "server.header_timeout_s: must be between 1 and 600"),
        ("[server]\nbody_timeout_s = 3601\n", "server.body_timeout_s: must be between 1 and"),
        ("[server]\nkeepalive_timeout_s = 1.5\n", "server.keepalive_timeout_s: expected an int"),
        ("[server]\nmax_connections_per_address = 0\n",
         "server.max_connections_per_address: must be between 1 and 100000, got 0"),
        ("[server]\njwks_refetch_s = 90000\n", "server.jwks_refetch_s: must be between 1 and"),
        ('[server]\noauth_issuer = "auth.example.com"\n',
         "server.oauth_issuer: not an http:// or https:// URL"),
        ('[server]\npublic_url = "https://x.example/?a=b"\n',
         "server.public_url: a URL without query or fragment"),
        ('[server]\noauth_audience = " "\n', "server.oauth_audience: empty"),
        ('[server]\ntrusted_proxies = "10.0.0.0/8"\n',
         "server.trusted_proxies: expected an array of networks"),
        ('[server]\ntrusted_proxies = ["10.0.0.0/33"]\n',
         "server.trusted_proxies[0]: not an IP address or network (CIDR)"),
        ("[server]\nport = 1\n", "server.port: unknown key (expected one of: oauth_issuer, "),
        ("[server]\nmax_connections = 8\n", "server.max_connections: must be between 16 and"),
        ('[server]\noauth_token_types = "at+jwt"\n',
         "server.oauth_token_types: expected an array of strings"),
        ('[server]\noauth_scopes = ["read write"]\n',
         "server.oauth_scopes[0]: not a scope or type (printable, no space"),
        ('[server]\noauth_scopes = [""]\n', "server.oauth_scopes[0]: not a scope or type"),
    ],
)
def test_bad_settings_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match="^freshline.toml: " + re.escape(message)):
        load(tmp_path, text)
