"""Conversations through any git remote: push, pull and fork, history never rewritten.

A remote holds conversations where a workspace does, `refs/freshline/conversations/<id>`,
so any git server (a bare repository on disk, `git daemon`, a forge over ssh or https)
can carry them. Both directions only ever move a ref forward:

    push   the remote's ref is read (`ls-remote`); a ref the local head descends from (or
           none) is updated with `push --atomic --force-with-lease=<ref>:<expected>`, so a
           push that raced another one fails whole and changes nothing; a remote ref the
           local head does not descend from is refused ("pull first").
    pull   the remote's refs are fetched into a namespace of their own, then compared with
           each local head (`relation`, pure): absent here → created; behind → moved
           forward by compare-and-swap under the conversation's turn lock; ahead or equal →
           left; both appended → the remote's head is kept as
           `refs/freshline/remotes/<remote>/<id>` and reported, for `fork` to make it a
           conversation of its own.

Live conversations live in freshline's own repository, isolated ones in the checkout's
(repository.py): each is pushed from where it lives (git sends every object the remote
lacks, also the ones freshline's repository borrows from the checkout through its
alternates), and a pulled one lands where its root event's mode says.

A remote is named (`origin`: a remote of the checkout) or given as a URL or path; with
none, the checkout's `origin` (else its only remote). Network commands run with the
user's git configuration (credential helpers, ssh settings), which plumbing otherwise
ignores.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from freshline.conversation.events import Mode
from freshline.conversation.git import ZERO, Git
from freshline.conversation.repository import REF_PREFIX, Repo, check_id, is_checkout
from freshline.errors import GitError, NotFoundError, UsageError

REMOTES_PREFIX = "refs/freshline/remotes/"  # a remote's head kept aside: <remote>/<id>
FETCH_PREFIX = "refs/freshline/fetch/"  # one pull's fetched heads, removed after it
RACED = "the remote's ref moved while pushing (another push won): pull, then push again"
BEHIND = "the remote has events this workspace lacks: pull first"


class Relation(StrEnum):
    """How a local conversation head stands to the remote's."""

    ABSENT = "absent"  # only one side has the conversation
    SAME = "same"  # both heads are one commit
    BEHIND = "behind"  # the other side appended: ours is an ancestor of theirs
    AHEAD = "ahead"  # we appended: theirs is an ancestor of ours
    DIVERGED = "diverged"  # both appended since they last agreed


def relation(ours: str | None, theirs: str | None, ours_in_theirs: bool,
             theirs_in_ours: bool) -> Relation:
    """Classify two heads given the two ancestry answers (pure)."""
    if ours is None or theirs is None:
        return Relation.ABSENT
    if ours == theirs:
        return Relation.SAME
    if ours_in_theirs:
        return Relation.BEHIND
    if theirs_in_ours:
        return Relation.AHEAD
    return Relation.DIVERGED


@dataclass(frozen=True)
class Remote:
    """Where conversations go: `name` keys `refs/freshline/remotes/<name>/`, `url` is what
    git is given."""

    name: str
    url: str


@dataclass
class PushReport:
    """What one push did, per conversation id."""

    remote: str
    pushed: list[str] = field(default_factory=list)
    up_to_date: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)  # id -> why


@dataclass
class PullReport:
    """What one pull did, per conversation id."""

    remote: str
    created: list[str] = field(default_factory=list)
    forwarded: list[str] = field(default_factory=list)
    up_to_date: list[str] = field(default_factory=list)  # the same, or ours is ahead
    diverged: dict[str, str] = field(default_factory=dict)  # id -> the ref kept aside
    busy: list[str] = field(default_factory=list)  # a turn held it: kept aside too


def network_git(git_dir: Path) -> Git:
    """A Git for one repository that talks to remotes with the user's own configuration
    (credentials, ssh, proxies); hooks stay off."""
    git = Git(git_dir)
    git.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    git.env["LC_ALL"] = "C"
    return git


def resolve(workspace: Path, remote: str | None) -> Remote:
    """The remote `remote` names: a remote of the checkout, else a URL or a path; none
    given: the checkout's `origin`, else its only remote (UsageError if that is unclear)."""
    names = _checkout_remotes(workspace)
    if remote is None:
        if "origin" in names:
            remote = "origin"
        elif len(names) == 1:
            remote = next(iter(names))
        else:
            where = "this checkout has " + ", ".join(sorted(names)) if names else \
                "this workspace has no git remote"
            raise UsageError(f"name the remote to use ({where})")
    if remote in names:
        return Remote(remote, names[remote])
    if not remote or remote.startswith("-"):
        raise UsageError(f"invalid remote {remote!r}: a remote's name, a URL or a path")
    local = Path(remote).expanduser()
    url = str(local.resolve()) if local.exists() else remote
    if "://" not in url and ":" not in url and not local.exists():
        raise NotFoundError(f"no remote named {remote!r} and no repository at {remote}")
    return Remote(_slug(url), url)


def _checkout_remotes(workspace: Path) -> dict[str, str]:
    if not is_checkout(workspace):
        return {}
    code, out, _ = Git(cwd=workspace).run_status(
        "config", "--get-regexp", r"^remote\..*\.url$")
    found = {}
    for line in out.decode("utf-8", "surrogateescape").splitlines() if code == 0 else ():
        key, _, url = line.partition(" ")
        found[key.removeprefix("remote.").removesuffix(".url")] = url
    return found


def _slug(url: str) -> str:
    """A ref component standing for a URL: its last word and a short hash."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", url.rstrip("/").rsplit("/", 1)[-1]).strip("-.")
    digest = hashlib.sha1(url.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{stem[:40] or 'remote'}-{digest}"


def remote_ref(remote: str, conversation: str) -> str:
    """Where a remote's diverged head of `conversation` is kept."""
    return f"{REMOTES_PREFIX}{check_id(remote)}/{check_id(conversation)}"


# --- push -----------------------------------------------------------------------------------


def remote_heads(repo: Repo, remote: Remote) -> dict[str, str]:
    """The remote's conversations: id -> head (one `ls-remote`)."""
    out = network_git(repo.git_dir).text("ls-remote", remote.url, REF_PREFIX + "*")
    heads = {}
    for line in out.splitlines():
        oid, _, ref = line.partition("\t")
        heads[ref.removeprefix(REF_PREFIX)] = oid
    return heads


def push(repo: Repo, remote: Remote, conversations: Sequence[str], report: PushReport) -> None:
    """Push the conversations of one repository to `remote` (see the module docstring);
    adds to `report`."""
    if not conversations:
        return
    theirs = remote_heads(repo, remote)
    ours = repo.git.refs(REF_PREFIX)
    leases: list[tuple[str, str, str]] = []  # (ref, ours, expected on the remote)
    for conversation in conversations:
        ref = repo.ref(conversation)
        head, their_head = ours[ref], theirs.get(conversation)
        if their_head == head:
            report.up_to_date.append(conversation)
        elif their_head is None or _descends(repo.git, head, their_head):
            leases.append((ref, head, their_head or ""))
        else:
            report.rejected[conversation] = BEHIND
    if not leases:
        return
    args = ["push", "--atomic", "--porcelain", "--no-verify"]
    args += [f"--force-with-lease={ref}:{expected}" for ref, _, expected in leases]
    args += [remote.url, *(f"{head}:{ref}" for ref, head, _ in leases)]
    code, out, err = network_git(repo.git_dir).run_status(*args)
    names = [ref.removeprefix(REF_PREFIX) for ref, _, _ in leases]
    if code == 0:
        report.pushed += names
    elif any(line.startswith(b"!") for line in out.splitlines()):
        # The remote refused a ref (its lease went stale, its update lost a race): the
        # push is atomic, so none of these moved.
        report.rejected.update(dict.fromkeys(names, RACED))
    else:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git push {remote.url}: {lines[-1] if lines else 'failed'}")


def _descends(git: Git, head: str, ancestor: str) -> bool:
    """Whether `head` descends from `ancestor` (False when we lack `ancestor`: the remote
    then holds events we never saw)."""
    if git.missing_objects([ancestor]):
        return False
    return git.is_ancestor(ancestor, head)


# --- pull -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fetched:
    """One pull's fetched heads in a repository, under a namespace of its own."""

    repo: Repo
    namespace: str  # refs/freshline/fetch/<nonce>/
    heads: dict[str, str]  # id -> head

    def ref(self, conversation: str) -> str:
        """The fetched head's ref."""
        return self.namespace + conversation

    def drop(self) -> None:
        """Remove the namespace's refs."""
        refs = self.repo.git.refs(self.namespace)
        if refs:
            feed = "".join(f"delete {ref}\n" for ref in refs).encode()
            self.repo.git.run("update-ref", "--stdin", input=feed)


def fetch(repo: Repo, source: str) -> Fetched:
    """Fetch every conversation of `source` (a URL, or another repository's path) into a
    new namespace of `repo`."""
    namespace = f"{FETCH_PREFIX}{secrets.token_hex(6)}/"
    spec = f"+{REF_PREFIX}*:{namespace}*"
    git = network_git(repo.git_dir)
    git.run("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", source, spec)
    heads = {ref.removeprefix(namespace): oid for ref, oid in repo.git.refs(namespace).items()}
    return Fetched(repo, namespace, heads)


def move_to(fetched: Fetched, target: Repo, conversations: Iterable[str]) -> Fetched:
    """The fetched heads of `conversations`, fetched on into `target` (isolated
    conversations go to the checkout's repository)."""
    wanted = list(conversations)
    if not wanted:
        return Fetched(target, fetched.namespace, {})
    specs = [f"+{fetched.ref(c)}:{fetched.ref(c)}" for c in wanted]
    target.git.run("fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                   str(fetched.repo.git_dir), *specs)
    return Fetched(target, fetched.namespace, {c: fetched.heads[c] for c in wanted})


def mode_of(repo: Repo, head: str, conversation: str) -> Mode:
    """The mode a fetched conversation's root event records."""
    return repo.chain(conversation, head).root.mode


def compare(repo: Repo, conversation: str, theirs: str) -> tuple[Relation, str | None]:
    """How the local head of `conversation` in `repo` stands to `theirs`, and that head."""
    ours = repo.git.rev_parse(repo.ref(conversation))
    if ours is None or ours == theirs:
        return relation(ours, theirs, False, False), ours
    return relation(ours, theirs, repo.git.is_ancestor(ours, theirs),
                    repo.git.is_ancestor(theirs, ours)), ours


def create(repo: Repo, conversation: str, head: str) -> bool:
    """Make `conversation` start at `head` if nobody created it meanwhile."""
    return repo.git.update_ref_cas(repo.ref(conversation), head, ZERO)


def forward(repo: Repo, conversation: str, ours: str, theirs: str) -> bool:
    """Move `conversation` from `ours` to `theirs` by compare-and-swap; False when it moved."""
    return repo.git.update_ref_cas(repo.ref(conversation), theirs, ours)


def keep_aside(repo: Repo, remote: str, conversation: str, head: str) -> str:
    """Keep a remote's head of `conversation` as `refs/freshline/remotes/<remote>/<id>`."""
    ref = remote_ref(remote, conversation)
    repo.git.update_refs_cas([(ref, head, None)])
    return ref


def forget_aside(repo: Repo, remote: str, conversation: str) -> None:
    """Drop a kept-aside head the local conversation has caught up with."""
    ref = remote_ref(remote, conversation)
    if repo.git.rev_parse(ref) is not None:
        repo.git.run("update-ref", "-d", ref)


def aside(repo: Repo, remote: str, conversation: str) -> str | None:
    """The kept-aside head of `conversation` from `remote`, if any."""
    return repo.git.rev_parse(remote_ref(remote, conversation))
