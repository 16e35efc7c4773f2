"""The built-in secret deny list: a table per pattern, opting in, and where it is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from freshline.config import load_config
from freshline.errors import ConfigError
from freshline.interfaces.cli import app
from freshline.scope import FileFacts, Scope
from freshline.sensitive import (
    SECRET_PATTERNS,
    _each,
    check_allowed,
    is_secret,
    secret_pattern,
    secret_patterns,
)

from .conftest import Workspace

# Each pattern: paths it denies, and near misses it must leave alone.
TABLE: dict[str, tuple[list[str], list[str]]] = {
    ".env": ([".env", "app/.env", "A/.ENV"], ["env", ".envrc", "x.env.md", "app/.env/readme"]),
    ".env.*": ([".env.local", "app/.env.production"], [".env", "a.env.local", "env.local"]),
    "*.pem": (["server.pem", "certs/ca.PEM"], ["pem", "server.pem.md", "pem/notes.md"]),
    "*.key": (["tls.key", "a/b/private.KEY"], ["key", "keys.md", "monkey"]),
    "*.p12": (["cert.p12"], ["cert.p12.txt"]),
    "*.pfx": (["cert.pfx"], ["pfx.md"]),
    "*.jks": (["store.jks"], ["jks/readme.md"]),
    "*.keystore": (["release.keystore", "android/debug.keystore"], ["keystore.md"]),
    "*.ppk": (["putty.ppk"], ["ppk.txt"]),
    "id_rsa*": (["id_rsa", "home/.keys/id_rsa.pub", "id_rsa_old"], ["my_id_rsa", "id_rs"]),
    "id_dsa*": (["id_dsa", "id_dsa.pub"], ["id_dsa2/readme.md"]),
    "id_ecdsa*": (["id_ecdsa", "keys/id_ecdsa_sk"], ["ecdsa"]),
    "id_ed25519*": (["id_ed25519", "id_ed25519.pub"], ["ed25519.md"]),
    ".ssh/": ([".ssh", ".ssh/config", "home/.ssh/known_hosts"], ["ssh/config", ".sshrc"]),
    ".gnupg/": ([".gnupg/pubring.kbx", "u/.gnupg"], ["gnupg.md"]),
    ".aws/credentials": ([".aws/credentials", "home/.aws/credentials"],
                         ["credentials", ".aws/config", "aws/credentials"]),
    ".docker/config.json": ([".docker/config.json", "ci/.docker/config.json"],
                            ["config.json", "docker/config.json"]),
    ".netrc": ([".netrc", "home/.NETRC"], ["netrc", ".netrc.md"]),
    ".npmrc": ([".npmrc", "web/.npmrc"], ["npmrc"]),
    ".pypirc": ([".pypirc"], ["pypirc.md"]),
    ".pgpass": ([".pgpass"], ["pgpass"]),
    ".htpasswd": (["site/.htpasswd"], ["htpasswd.md"]),
    ".git-credentials": ([".git-credentials"], ["git-credentials.md"]),
    "credentials.json": (["credentials.json", "gcp/credentials.json"],
                         ["credentials.json.md", "my-credentials.json"]),
    "*secret*.json": (["client_secret.json", "secrets.json", "a/MySecretKeys.json"],
                      ["secret.yaml", "secret/config.json"]),
    "kubeconfig": (["kubeconfig", "ops/kubeconfig"], ["kubeconfig.md", "kubeconfigs"]),
}


def test_the_table_covers_every_pattern_and_the_issue_names() -> None:
    assert set(TABLE) == set(SECRET_PATTERNS)
    named = (".env .env.* *.pem *.key *.p12 *.pfx id_rsa* id_dsa* id_ecdsa* id_ed25519* .ssh/ "
             ".aws/credentials .netrc .npmrc .pypirc .git-credentials credentials.json "
             "*secret*.json *.keystore .docker/config.json kubeconfig").split()
    assert set(named) <= set(SECRET_PATTERNS)


@pytest.mark.parametrize("pattern", SECRET_PATTERNS)
def test_each_pattern_denies_its_paths_and_spares_near_misses(pattern: str) -> None:
    denied, spared = TABLE[pattern]
    for path in denied:
        assert pattern in secret_patterns(path), path
        assert is_secret(path)
        assert not is_secret(path, allowed=secret_patterns(path))  # opting in lifts it
    for path in spared:
        assert pattern not in secret_patterns(path), path


@pytest.mark.parametrize("pattern", SECRET_PATTERNS)
def test_each_pattern_keeps_a_file_out_of_every_scope_unless_named(pattern: str) -> None:
    path = "proj/" + TABLE[pattern][0][0]
    denied = Scope.from_strings(["proj", "**"])
    assert not denied.matches(FileFacts(path))
    allowed = Scope.from_strings(["proj"], allow_secrets=secret_patterns(path))
    assert allowed.matches(FileFacts(path))


def test_a_path_matching_two_patterns_needs_both_allowed() -> None:
    assert secret_patterns(".ssh/id_rsa") == ["id_rsa*", ".ssh/"]
    assert secret_pattern(".ssh/id_rsa", allowed={"id_rsa*"}) == ".ssh/"
    assert secret_pattern(".ssh/id_rsa", allowed={"id_rsa*", ".ssh/"}) is None


def test_allowing_takes_the_exact_pattern_only() -> None:
    assert check_allowed(".env") == ".env"
    for wrong in (".ENV", "*.env", ".env ", "env", "**", "*"):
        with pytest.raises(ValueError, match="not a built-in secret pattern"):
            check_allowed(wrong)


@given(st.lists(st.sampled_from(["a", "b", ".x", "notes", "Ä"]), min_size=1, max_size=4))
def test_ordinary_names_are_never_secrets(parts: list[str]) -> None:
    assert not is_secret("/".join(parts))


FRAGMENTS = [".env", ".ENV.local", "id_rsa", "ID_ED25519.pub", "x.pem", ".ssh", ".SSH",
             ".aws", "credentials", "config.json", ".docker", "a", "my_Secret.json",
             "kubeconfig", ".gnupg", "k.keystore", "secret", ".json", "id_", "pem"]


@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=4))
def test_the_quick_look_never_misses_what_the_patterns_match(parts: list[str]) -> None:
    path = "/".join(parts)
    slow = [text for text, regex in _each() if regex.match(path)]
    assert secret_patterns(path) == slow
    assert secret_pattern(path) == (slow[0] if slow else None)


def test_config_allow_secrets_is_validated_and_signed(ws: Workspace) -> None:
    plain = ws.configure({"p": {"include": ["notes"]}}).project("p")
    opted = ws.configure({"p": {"include": ["notes"], "allow_secrets": [".env"]}}).project("p")
    assert opted.allow_secrets == (".env",) and plain.signature != opted.signature
    toml = '[projects.p]\ninclude = ["n"]\nallow_secrets = ["*"]\n'
    (ws.root / "freshline.toml").write_text(toml)
    with pytest.raises(ConfigError, match=r"projects\.p\.allow_secrets\[0\]: not a built-in"):
        load_config(ws.root)


def test_project_show_says_so_in_words(ws: Workspace) -> None:
    ws.configure({"p": {"include": ["notes"]}, "q": {"include": ["notes"],
                                                     "allow_secrets": [".env", "*.pem"]}})
    runner = CliRunner()
    plain = runner.invoke(app, ["--workspace", str(ws.root), "project", "show", "p"])
    assert "secrets" in plain.stdout and "never" in plain.stdout
    opted = runner.invoke(app, ["--workspace", str(ws.root), "project", "show", "q"])
    assert "OPTS IN to secrets matching .env, *.pem" in opted.stdout


def test_the_readme_lists_every_pattern() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("## Security", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`([^`]+)`", section))
    assert set(SECRET_PATTERNS) <= listed
