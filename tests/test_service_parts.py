"""The service's pure parts: inotify's events, the registry, the units, a request's line
and an http head (none raises anything but its own refusal), where its folder is, and
`service install`."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from freshline.interfaces import serviceclient
from freshline.interfaces.cli import app
from freshline.interfaces.service import registry, units
from freshline.interfaces.service.httphooks import BadHttp, parse_head
from freshline.interfaces.service.requests import BadRequest, parse
from freshline.tracker.inotify import ISDIR, Event
from freshline.tracker.inotify import parse as parse_events

_NAME = st.binary(min_size=0, max_size=40).map(lambda b: b.replace(b"\0", b"x"))
_EVENT = st.builds(Event, st.integers(-1, 2**31 - 1), st.integers(0, 2**32 - 1),
                   st.integers(0, 2**32 - 1), _NAME)


def packed(event: Event, padding: int) -> bytes:
    """An event as the kernel writes it: its name NUL-padded."""
    name = event.name + b"\0" * padding if event.name or padding else b""
    return struct.pack("iIII", event.wd, event.mask, event.cookie, len(name)) + name


@given(st.lists(st.tuples(_EVENT, st.integers(0, 16)), max_size=20))
def test_events_read_as_the_kernel_wrote_them(events: list[tuple[Event, int]]) -> None:
    buffer = b"".join(packed(e, pad if e.name else 0) for e, pad in events)
    assert parse_events(buffer) == [e for e, _pad in events]


def test_an_event_says_whether_it_is_a_folders() -> None:
    assert Event(1, ISDIR | 0x100, 0, b"d").is_dir and not Event(1, 0x100, 0, b"f").is_dir
    assert parse_events(b"\x01\x00") == []  # a read never cuts an event: nothing whole here


@given(st.lists(st.text(min_size=1, max_size=20).map(lambda t: "/" + t), max_size=8))
def test_the_registry_reads_what_it_wrote(roots: list[str]) -> None:
    assert registry.parse(registry.render(roots)) == list(dict.fromkeys(roots))


@pytest.mark.parametrize(
    "text", ["", "not json", "[]", '{"workspaces": "/a"}', '{"workspaces": [1, "relative"]}'])
def test_a_registry_that_is_not_one_lists_nothing(text: str) -> None:
    assert registry.parse(text) == []


def test_a_registry_keeps_its_workspaces_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "state" / "workspaces.json"
    kept = registry.Registry(path)
    kept.add("/a")
    kept.add("/b")
    kept.add("/a")
    kept.drop("/b")
    assert registry.Registry(path).roots() == ["/a"]
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("command", "exec_start"),
    [
        (["/usr/bin/freshline", "service", "run"], "/usr/bin/freshline service run"),
        (["/my env/python", "-m", "freshline", "service", "run"],
         '"/my env/python" -m freshline service run'),
        (["/opt/100%/freshline", "service", "run"], "/opt/100%%/freshline service run"),
    ],
)
def test_the_systemd_unit_runs_the_command_as_given(command: list[str], exec_start: str) -> None:
    text = units.render_systemd(command)
    assert f"\nExecStart={exec_start}\n" in text
    assert "Restart=on-failure\nRestartPreventExitStatus=2\n" in text
    assert text.endswith("[Install]\nWantedBy=default.target\n")


def test_the_launchd_agent_runs_the_command_and_keeps_it_alive_on_failure() -> None:
    text = units.render_launchd(["/a&b/freshline", "service", "run"])
    assert "<string>/a&amp;b/freshline</string>" in text
    assert "<key>SuccessfulExit</key>\n    <false/>" in text
    assert units.unit(["x"], "darwin").enable.startswith("launchctl load -w ")
    assert units.unit(["x"], "linux").enable == "systemctl --user enable --now freshline.service"


def test_service_install_writes_the_unit_and_uninstall_removes_it() -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["service", "install", "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    path = Path(report["path"])
    assert path.name == "freshline.service" and "ExecStart=" in path.read_text()
    assert report["enable"] == "systemctl --user enable --now freshline.service"
    again = runner.invoke(app, ["service", "install", "--uninstall"])
    assert again.stdout == f"removed {path}\n" and not path.exists()


@given(st.binary(max_size=200))
def test_a_line_of_anything_is_a_request_or_refused_in_one_line(line: bytes) -> None:
    try:
        parse(line, "1.0")
    except BadRequest as exc:
        assert "\n" not in str(exc)


@given(st.binary(max_size=300))
def test_a_head_of_anything_is_a_head_or_refused_with_a_status(raw: bytes) -> None:
    try:
        parse_head(raw)
    except BadHttp as exc:
        assert exc.status == 400


@pytest.mark.parametrize(("env", "folders", "found"), [
    ({"XDG_RUNTIME_DIR": "/run/user/4242"}, {"/run/user/4242"}, "/run/user/4242/freshline"),
    ({}, {"/run/user/4242"}, "/run/user/4242/freshline"),  # a cleared environment: the same
    ({"XDG_RUNTIME_DIR": "/run/gone"}, set(), "/tmp/freshline-4242"),
    ({"TMPDIR": "/var/t"}, set(), "/tmp/freshline-4242"),  # a cleared one has no TMPDIR
    ({"FRESHLINE_RUNTIME_DIR": "/x/freshline", "XDG_RUNTIME_DIR": "/run/user/4242"},
     {"/run/user/4242"}, "/x/freshline"),  # the folder its starter found
])
def test_the_runtime_folder_is_the_same_whatever_the_environment_lost(
    env: dict[str, str], folders: set[str], found: str
) -> None:
    """Seen: an MCP server, started by its client with HOME and PATH alone, started a
    second service in /tmp/freshline-UID beside the one in $XDG_RUNTIME_DIR."""
    with pytest.MonkeyPatch.context() as system:  # undone before the test's teardown
        for key in ("XDG_RUNTIME_DIR", "TMPDIR", "FRESHLINE_RUNTIME_DIR"):
            system.delenv(key, raising=False)
        for key, value in env.items():
            system.setenv(key, value)
        system.setattr(serviceclient.os, "getuid", lambda: 4242)
        system.setattr(serviceclient.os.path, "isdir", lambda path: path in folders)
        assert serviceclient.runtime_dir() == found
