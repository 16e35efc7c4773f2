"""Users and grants of `freshline serve`: tokens shown once and stored as hashes (issue 21)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from freshline.interfaces.cli.root import app
from freshline.session import users
from freshline.store import Store

from .conftest import StoreBackend, Workspace

runner = CliRunner()


def run(ws: Workspace, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--workspace", str(ws.root), *args])
    return result.exit_code, result.stdout, result.stderr


def test_add_prints_a_token_once_and_stores_only_its_hash(two_projects: Workspace) -> None:
    code, out, err = run(two_projects, "user", "add", "alice", "--project", "p")
    assert code == 0, err
    token = out.strip()
    assert token.startswith("fl_") and len(token) > 40 and "shown once" in err
    db = (two_projects.root / ".freshline/freshline.db").read_bytes()
    assert token.encode() not in db
    store = Store(two_projects.root / ".freshline")
    try:
        found = users.authenticate(store, token)
        assert found is not None and found.name == "alice" and found.projects == ("p",)
        assert users.authenticate(store, token + "x") is None
        assert users.authenticate(store, "") is None
    finally:
        store.close()


def test_grant_revoke_list_and_rm(two_projects: Workspace, backend: StoreBackend) -> None:
    token = run(two_projects, "user", "add", "bob")[1].strip()
    assert run(two_projects, "user", "grant", "bob", "q")[0] == 0
    assert run(two_projects, "user", "grant", "bob", "p")[0] == 0
    listed = json.loads(run(two_projects, "user", "list", "--json")[1])
    assert listed[0]["user"] == "bob" and listed[0]["projects"] == ["p", "q"]
    assert "bob" in run(two_projects, "user", "list")[1]
    assert run(two_projects, "user", "revoke", "bob", "q")[0] == 0
    store = backend.store(two_projects.root / ".freshline")
    try:
        found = users.authenticate(store, token)
        assert found is not None and users.viewer_of(found).sees("p")
        assert not users.viewer_of(found).sees("q")
        assert run(two_projects, "user", "rm", "bob")[0] == 0
        assert users.authenticate(store, token) is None
    finally:
        store.close()


def test_bad_input_is_a_one_line_usage_error_and_changes_nothing(
    two_projects: Workspace,
) -> None:
    for args, words in [
        (("user", "add", "carol", "--project", "nosuch"), "unknown project"),
        (("user", "add", "bad name"), "invalid user name"),
        (("user", "grant", "nobody", "p"), "unknown user"),
        (("user", "grant", "nobody", "nosuch"), "unknown project"),
        (("user", "rm", "nobody"), "unknown user"),
        (("user", "add", "erin", "--subject", " "), "empty subject"),
    ]:
        code, _, err = run(two_projects, *args)
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1, (args, err)
    assert json.loads(run(two_projects, "user", "list", "--json")[1]) == []
    run(two_projects, "user", "add", "dan")
    code, _, err = run(two_projects, "user", "add", "dan")
    assert code == 2 and "exists already" in err


def test_a_user_given_a_subject_signs_in_through_oauth_only(
    two_projects: Workspace, backend: StoreBackend
) -> None:
    code, out, err = run(two_projects, "user", "add", "alice", "--subject", "248289761001",
                         "--project", "p", "--json")
    assert code == 0, err
    assert json.loads(out) == {"user": "alice", "token": None, "subject": "248289761001",
                               "projects": ["p"]}
    code, out, err = run(two_projects, "user", "add", "bob")  # a script's user: a token
    assert code == 0 and out.startswith("fl_")
    code, _, err = run(two_projects, "user", "add", "carol", "--subject", "248289761001")
    assert code == 2 and "subject '248289761001' is user 'alice' already" in err
    listed = json.loads(run(two_projects, "user", "list", "--json")[1])
    assert [(u["user"], u["subject"]) for u in listed] == [("alice", "248289761001"),
                                                           ("bob", None)]
    assert "248289761001" in run(two_projects, "user", "list")[1]
    store = backend.store(two_projects.root / ".freshline")
    try:
        alice = users.subject_user(store, "248289761001")
        assert alice is not None and alice.name == "alice" and alice.projects == ("p",)
        bob = users.subject_user(store, "bob")  # no subject given: his name is his subject
        assert bob is not None and bob.name == "bob"
        assert users.subject_user(store, "alice") is None  # she has a subject of her own
        assert users.subject_user(store, "nobody") is None
        assert users.authenticate(store, "") is None  # her empty token hash matches nothing
    finally:
        store.close()


@given(st.frozensets(st.sampled_from(["a", "b", "c"])), st.sampled_from(["a", "b", "c"]))
def test_a_viewer_sees_exactly_its_grants_and_the_owner_everything(
    granted: frozenset[str], project: str
) -> None:
    assert users.Viewer("u", granted).sees(project) == (project in granted)
    assert users.OWNER.sees(project)


def test_seen_user_list_header_is_lower_case_like_every_table(two_projects: Workspace) -> None:
    """Seen: `user list` printed `USER  PROJECTS  CREATED`."""
    assert run(two_projects, "user", "add", "alice", "--project", "p")[0] == 0
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert run(two_projects, "user", "list")[1] == (
        f"user   projects  subject  created\nalice  p         -        {today}\n")
