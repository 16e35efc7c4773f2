"""Checkpoints: another agent's prompts as human events on its session's own conversation.

An agent freshline does not run (Claude Code, Gemini CLI, Codex through their hooks; an
agent behind the ACP proxy) keeps its transcript itself, but each of its prompts is still
a human event here: a commit whose tree is the project's files exactly as the prompt found
them and whose content is the prompt. The chain of those trees is what `log`, `diff` and
`rewind --code` work with, whoever edited the files in between (the agent's Bash as much
as its Write, the user, git).

A checkpoint must not slow the prompt down, so it is written incrementally and without a
git process on its common path: the tree is the previous checkpoint's tree with the
changes since applied (`trees.live_tree_delta`: only the directories on their way are
read and written), each new blob, tree and the commit are written loose in this process
(`objects.DirectSink`), each blob once (the repository's objects and packs are asked
first), and the ref moves by compare-and-swap through git's own lock file
(`looseobjects.swap_ref`). The first
checkpoint of a conversation writes the whole project as one pack, as a live
conversation's root event does (`turns.open_conversation`).

A rewind recorded since the previous checkpoint is read back here too (the walk from the
old head stops at the previous human event), for the prompt to tell the agent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from freshline.conversation import batch, views
from freshline.conversation.events import Author, Event, Mode, Rewind, decode, encode
from freshline.conversation.objects import DirectSink
from freshline.conversation.repository import Repo
from freshline.conversation.trees import LiveDelta, live_tree, live_tree_delta
from freshline.conversation.turns import open_conversation, screened_event
from freshline.errors import ConversationMoved
from freshline.store.records import IndexEntry

CAS_TRIES = 5  # moves of the ref (a rewind recorded meanwhile) a checkpoint outwaits
Entries = Callable[[], Iterable[IndexEntry]]  # the project's in-scope files, listed on demand


@dataclass(frozen=True)
class Checkpoint:
    """A prompt recorded: its event, the tree it saw, and what was rewound before it."""

    head: str  # the prompt's event: the conversation's new head
    tree: str  # the project's files as the prompt found them
    rewinds: tuple[Rewind, ...] = ()  # rewinds recorded since the previous prompt


@dataclass
class Recording:
    """A prompt being recorded: its tree and the rewinds before it are known; its objects
    and its ref are written by a thread of its own (`done` waits for it)."""

    tree: str
    rewinds: tuple[Rewind, ...]
    head: str = ""  # the prompt's event, once written
    error: BaseException | None = None
    thread: threading.Thread | None = None

    def done(self) -> Checkpoint:
        """The checkpoint, once written (what the writing raised, raised here)."""
        if self.thread is not None:
            self.thread.join()
        if self.error is not None:
            raise self.error
        return Checkpoint(self.head, self.tree, self.rewinds)


def record(
    repo: Repo,
    conversation: str,
    prompt: str,
    delta: LiveDelta | None,
    entries: Entries,
    project: str | None = None,
) -> Recording:
    """Record a prompt on `conversation` (opened first when it does not exist yet): its
    tree is `delta` applied to its base when that tree is at hand, else written from
    `entries`. The tree is worked out here; the few objects a delta makes and the ref
    are written by a thread while the caller goes on (the answer is prepared meanwhile:
    a new file costs a few hundred microseconds of some file systems' time), and the
    objects lock is held until the ref names them. `Recording.done` raises
    ConversationMoved when the ref kept moving under it."""
    head = repo.ref_value(conversation)
    opened = head is None
    if head is None:
        head = open_conversation(repo, conversation, Mode.LIVE, None, entries(), project)
    message = encode(screened_event(Event(Author.USER, prompt), repo.screen))
    with repo.writing():
        out = DirectSink(repo.git, repo.loose, repo.max_blob, repo.screen)
        # The root event's tree is the project now: it was written just above.
        tree = _head_tree(repo, head) if opened else _tree(repo, head, delta, entries, out)
        done = Recording(tree, () if opened else _rewinds_since(repo, conversation, head))
        locked = threading.Event()
        done.thread = threading.Thread(target=_write, name="freshline-checkpoint", args=(
            repo, conversation, head, message, out, done, locked), daemon=True)
        done.thread.start()
        locked.wait()  # the thread holds the objects lock before this call lets it go
    return done


def _write(
    repo: Repo, conversation: str, head: str, message: str, out: DirectSink, done: Recording,
    locked: threading.Event,
) -> None:
    """The recording's objects, then its commit and the ref (a thread's work)."""
    try:
        with repo.writing():
            locked.set()
            out.close()
            done.head = _commit(repo, conversation, head, done.tree, message, out)
    except BaseException as exc:  # handed to `done()`, in the caller's thread
        done.error = exc
    finally:
        locked.set()


def files_now(
    repo: Repo, conversation: str, delta: LiveDelta | None, entries: Entries
) -> str:
    """The tree a checkpoint of the conversation would record now (its objects written,
    nothing committed): what a rewind compares a turn's tree with."""
    head = repo.head(conversation)
    with repo.writing():
        out = DirectSink(repo.git, repo.loose, repo.max_blob, repo.screen)
        tree = _tree(repo, head, delta, entries, out)
        out.close()
        return tree


def _tree(
    repo: Repo, head: str, delta: LiveDelta | None, entries: Entries, out: DirectSink
) -> str:
    """The project's files now as a tree: `delta` applied to its base when that tree is
    at hand, else written from `entries` over the head's tree (one pack). Call inside
    `repo.writing()`."""
    if delta is not None and delta.base is not None and not out.missing([delta.base]):
        return live_tree_delta(repo.git, delta.base, delta, repo.workspace, out)
    with repo.sink() as packed:  # a whole listing: one pack, not loose objects
        return live_tree(repo.git, entries(), repo.workspace, _head_tree(repo, head), packed)


def _commit(
    repo: Repo, conversation: str, head: str, tree: str, message: str, out: DirectSink
) -> str:
    """Write the event's commit on `head` and move the ref to it (on the ref's new value
    when a rewind moved it meanwhile); the commit."""
    for _ in range(CAS_TRIES):
        commit = batch.commit_chain(repo.git, tree, [head], message, [], out)[0]
        out.close()
        if repo.swap_ref(conversation, commit, head):
            return commit
        moved = repo.ref_value(conversation)
        if moved is None:
            break
        head = moved
    raise ConversationMoved(f"conversation {conversation} kept moving while a prompt was "
                            "recorded: nothing was recorded")


def _head_tree(repo: Repo, head: str) -> str:
    """The tree of commit `head` (read here when it is loose, else by git)."""
    found = repo.loose.read(head)
    if found is None:
        return repo.git.tree_of(head)
    return found[1].split(b"\n", 1)[0].decode().removeprefix("tree ")


def _rewinds_since(repo: Repo, conversation: str, head: str) -> tuple[Rewind, ...]:
    """The rewinds recorded between the previous human event and `head` (its events read
    here while they are loose: a prompt after none reads one commit)."""
    found: list[Rewind] = []
    commit: str | None = head
    while commit is not None:
        read = repo.loose.read(commit)
        if read is None:  # packed by `gc`: the whole chain through git, once
            return views.rewinds_since_last_turn(repo.chain(conversation, head).events)
        header, _, message = read[1].decode("utf-8", "surrogateescape").partition("\n\n")
        event = decode(message.strip())
        if event is None or event.author is Author.USER or event.root is not None:
            break
        if event.rewind is not None:
            found.append(event.rewind)
        commit = _first_parent(header)
    return tuple(reversed(found))


def _first_parent(header: str) -> str | None:
    for line in header.splitlines():
        if line.startswith("parent "):
            return line.removeprefix("parent ")
    return None
