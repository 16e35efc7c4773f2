"""Checkpoints: another agent's prompts as human events on its session's own conversation.

An agent freshline does not run (Claude Code, Gemini CLI, Codex through their hooks; an
agent behind the ACP proxy) keeps its transcript itself, but each of its prompts is still
a human event here: a commit whose tree is the project's files exactly as the prompt found
them and whose content is the prompt. The chain of those trees is what `log`, `diff` and
`rewind --code` work with, whoever edited the files in between (the agent's Bash as much
as its Write, the user, git).

A checkpoint must not slow the prompt down, so it is worked out incrementally and written
after the prompt is answered. The tree is the previous checkpoint's tree with the changes
since applied (`trees.live_tree_delta`: only the directories on their way are read),
each new blob read from the file as the prompt found it; the new blobs, trees and the
commit are held in memory (`objects.DirectSink`, each blob once: the repository's objects
and packs are asked first) as a `Recording`. `write` then puts them loose in this process
and moves the ref by compare-and-swap through git's own lock file
(`looseobjects.swap_ref`); creating those files is most of a checkpoint's cost, and no
answer waits for it. Until then the recording's `journal` (the store keeps it, in the
transaction that counts the prompt: `session/checkpoints.py`) lets any process write it,
once, should this one die first. The first checkpoint of a conversation writes the whole
project as one pack, as a live conversation's root event does
(`turns.open_conversation`).

A rewind recorded since the previous checkpoint is read back here too (the walk from the
old head stops at the previous human event), for the prompt to tell the agent.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

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
    """A prompt's checkpoint worked out, not yet written: its objects (the commit last) and
    the move of the conversation's ref from `head` to `commit`."""

    conversation: str
    head: str  # the conversation's head the commit is made on
    tree: str  # the project's files as the prompt found them
    commit: str  # the prompt's event
    message: str
    objects: list[tuple[str, bytes]] = field(default_factory=list)  # (kind, content)
    rewinds: tuple[Rewind, ...] = ()  # told with the prompt, not journaled

    def journal(self) -> str:
        """The recording as one line of JSON, to write it from another process."""
        return json.dumps({
            "conversation": self.conversation, "head": self.head, "tree": self.tree,
            "commit": self.commit, "message": self.message,
            "objects": [[kind, base64.b64encode(data).decode()] for kind, data in self.objects],
        })

    @classmethod
    def from_journal(cls, text: str) -> Recording:
        """A recording read back from its `journal` (ValueError: not one)."""
        try:
            raw = json.loads(text)
            objects = [(str(kind), base64.b64decode(data, validate=True))
                       for kind, data in raw["objects"]]
            return cls(str(raw["conversation"]), str(raw["head"]), str(raw["tree"]),
                       str(raw["commit"]), str(raw["message"]), objects)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a checkpoint's journal: {exc}") from exc


def record(
    repo: Repo,
    conversation: str,
    prompt: str,
    delta: LiveDelta | None,
    entries: Entries,
    project: str | None = None,
) -> Recording:
    """Work out a prompt's checkpoint on `conversation` (opened first when it does not
    exist yet): its tree is `delta` applied to its base when that tree is at hand, else
    written from `entries`. Nothing new is written but an opening; `write` does the rest."""
    head = repo.ref_value(conversation)
    opened = head is None
    if head is None:
        head = open_conversation(repo, conversation, Mode.LIVE, None, entries(), project)
    message = encode(screened_event(Event(Author.USER, prompt), repo.screen))
    with repo.writing():
        out = DirectSink(repo.git, repo.loose, repo.max_blob, repo.screen)
        # The root event's tree is the project now: it was written just above.
        tree = _head_tree(repo, head) if opened else _tree(repo, head, delta, entries, out)
        rewinds = () if opened else _rewinds_since(repo, conversation, head)
        commit = batch.commit_chain(repo.git, tree, [head], message, [], out)[0]
        return Recording(conversation, head, tree, commit, message, out.take(), rewinds)


def write(repo: Repo, recording: Recording) -> Checkpoint:
    """Write a recording's objects, then move its conversation's ref to its commit (a
    commit of its tree on the ref's new value when a rewind moved it meanwhile). A
    recording already written (by another process, from its journal) is left as it is.
    ConversationMoved when the ref kept moving."""
    with repo.writing():
        for kind, data in recording.objects:
            repo.loose.write(kind, data)
        head = _commit(repo, recording)
    return Checkpoint(head, recording.tree, recording.rewinds)


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


def _commit(repo: Repo, recording: Recording) -> str:
    """Move the ref to the recording's commit, or to one made again on its new value."""
    head, commit = recording.head, recording.commit
    for _ in range(CAS_TRIES):
        if repo.swap_ref(recording.conversation, commit, head):
            return commit
        moved = repo.ref_value(recording.conversation)
        if moved is None:
            break
        if _holds(repo, moved, recording.commit):
            return recording.commit  # written already
        head = moved
        out = DirectSink(repo.git, repo.loose)
        commit = batch.commit_chain(repo.git, recording.tree, [head], recording.message, [],
                                    out)[0]
        out.close()
    raise ConversationMoved(f"conversation {recording.conversation} kept moving while a "
                            "prompt was recorded: nothing was recorded")


def _holds(repo: Repo, tip: str, commit: str) -> bool:
    """Whether `commit` is `tip` or one of its first parents back to the previous human
    event (read while they are loose)."""
    found: str | None = tip
    while found is not None:
        if found == commit:
            return True
        read = repo.loose.read(found)
        if read is None:
            return False
        header, _, message = read[1].decode("utf-8", "surrogateescape").partition("\n\n")
        event = decode(message.strip())
        if event is not None and event.author is Author.USER and found != tip:
            return False
        found = _first_parent(header)
    return False


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
