"""The isolated mode's tools that change files: write, edit, delete and chmod.

A path is confined as a read is (`Confinement.resolve`), then changed through its folder's
descriptor, entered from the root through no link (`beneath.folder_fd`): a folder swapped
for a symlink after the check makes the change fail, never land outside the worktree.
A file is replaced, never written in place (a new file renamed over it), so a hard link
to it (perhaps from outside) keeps its old content; on failure nothing partial is left.
`write` and `edit` refuse to replace a file whose content is not what the agent last read
or wrote (the witness's guard), and a write that would put `[secret withheld: …]` where a
secret stands.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from freshline.agent.calls import Means, Outcome, arg, encodable
from freshline.agent.confine import Confined, ToolError
from freshline.agent.textview import SNIFF, is_binary
from freshline.beneath import Kind, folder_fd, open_beneath, open_entry
from freshline.errors import WorkspaceError
from freshline.secretscan import WITHHELD_PREFIX

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def write(means: Means, args: dict[str, Any]) -> Outcome:
    """Create or replace a file with the given content."""
    target = _writable(means, args)
    content = arg(args, "content", str)
    means.witness.guard(target)
    existed = _replace(means, target, content, create=True)
    what = "replaced" if existed else "created"
    return Outcome(f"{what} {target.shown} ({len(content.encode())} bytes)",
                   changed=(target.rel,))


def edit(means: Means, args: dict[str, Any]) -> Outcome:
    """Replace the one occurrence of `old` in a text file by `new`."""
    target = _writable(means, args, reads=True)
    old, new = arg(args, "old", str), arg(args, "new", str)
    data = _current(means, target)
    if data is None:
        raise ToolError(f"{target.shown}: no such file; use write to create it")
    if not old:
        raise ToolError("old must not be empty")
    if is_binary(data[:SNIFF]):
        raise ToolError(f"{target.shown}: binary file, {len(data)} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{target.shown}: not UTF-8 text; use write") from exc
    means.witness.guard(target)
    count = text.count(old)
    if count != 1:
        where = "not found" if count == 0 else f"found {count} times"
        raise ToolError(f"{target.shown}: old text {where}; it must match exactly once "
                        "(include more surrounding text)")
    _replace(means, target, text.replace(old, new, 1))
    return Outcome(f"edited {target.shown}", changed=(target.rel,))


def delete(means: Means, args: dict[str, Any]) -> Outcome:
    """Delete a regular file (never a link: that would delete what it points at)."""
    target = _writable(means, args)
    root = means.confinement.root
    if Path(os.path.normpath(root / arg(args, "path", str))).is_symlink():
        raise ToolError(f"{target.shown}: a symbolic link; delete refuses links")
    with _folder(means, target) as (fd, name):
        if not _regular(fd, name):
            raise ToolError(f"{target.shown}: no such file")
        os.unlink(name, dir_fd=fd)  # the entry itself: a link swapped in is what goes
    means.witness.deleted(target.rel)
    return Outcome(f"deleted {target.shown}", changed=(target.rel,))


def chmod(means: Means, args: dict[str, Any]) -> Outcome:
    """Make a file executable or not; its execute bits follow its read bits."""
    target = _writable(means, args)
    executable = arg(args, "executable", bool)
    with _folder(means, target) as (fd, name), open_entry(fd, name, target.rel) as opened:
        if opened.kind is not Kind.FILE or opened.info is None:
            raise ToolError(f"{target.shown}: no such file")
        if opened.info.st_nlink > 1:
            raise ToolError(f"{target.shown}: has {opened.info.st_nlink} hard links, and a "
                            "mode belongs to all of them; refused")
        mode = stat.S_IMODE(opened.info.st_mode)
        # execute bits follow the read bits, as git's 755/644 do
        mode = mode | ((mode & 0o444) >> 2) if executable else mode & ~0o111
        os.fchmod(opened.fd, mode)
    git_mode = "100755" if executable else "100644"
    return Outcome(f"{target.shown}: mode {mode:o}", changed=(target.rel,),
                   mode_changes={target.rel: git_mode})


def _writable(means: Means, args: dict[str, Any], reads: bool = False) -> Confined:
    """The path a change names. A file with more than one hard link may be replaced or
    deleted (its other names keep their content), not edited, which reads it."""
    raw = arg(args, "path", str)
    if encodable(raw) != raw:
        raise ToolError("the path is not valid Unicode (it holds a lone surrogate); refused")
    target = means.confinement.resolve(raw, hardlinks=not reads)
    if target.is_dir:
        raise ToolError(f"{target.shown}: a directory")
    return target


@contextmanager
def _folder(
    means: Means, target: Confined, create: bool = False
) -> Iterator[tuple[int, str]]:
    """The descriptor of `target`'s folder, entered through no link, and its name there."""
    parent, _, name = target.rel.rpartition("/")
    try:
        fd = folder_fd(means.confinement.root, parent, create)
    except FileNotFoundError:
        raise ToolError(f"{target.shown}: no such file") from None
    except WorkspaceError as exc:
        raise ToolError(f"{target.shown}: {exc}; refused") from None
    try:
        yield fd, name
    finally:
        os.close(fd)


def _regular(fd: int, name: str) -> os.stat_result | None:
    """The stat of `name` in the folder `fd` when it is a regular file (links not followed)."""
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return info if stat.S_ISREG(info.st_mode) else None


def _replace(means: Means, target: Confined, text: str, create: bool = False) -> bool:
    """Write `text` over `target` (a new file renamed over it, keeping the old one's mode)
    and record it as the agent's own write; True if a file was there."""
    _keep_secrets(means, target, text)
    with _folder(means, target, create) as (fd, name):
        old = _regular(fd, name)
        temp = f".{name}.{os.urandom(4).hex()}.freshline-tmp"
        out = os.open(temp, _NEW, 0o666, dir_fd=fd)
        try:
            with open(out, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
                if old is not None:
                    os.fchmod(handle.fileno(), stat.S_IMODE(old.st_mode))
            os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=fd)
            raise
    means.witness.wrote(target.rel, text)
    return old is not None


def _keep_secrets(means: Means, target: Confined, text: str) -> None:
    """Refuse to write more `[secret withheld: …]` markers into a file than it holds, when
    it holds secrets: the agent was shown the markers, and writing them back would destroy
    what they stand for."""
    if WITHHELD_PREFIX not in text:
        return
    data = _current(means, target)
    if data is None:
        return
    old = data.decode("utf-8", "replace")
    if text.count(WITHHELD_PREFIX) > old.count(WITHHELD_PREFIX) and \
            means.withholder.text(old, target.rel).count:
        raise ToolError(f"{target.shown}: holds secrets withheld from you; writing "
                        "'[secret withheld: …]' over them would destroy them. Change the "
                        "file with edit, around them; refused")


def _current(means: Means, target: Confined) -> bytes | None:
    """What the file a change names holds now (None: no file), read beneath the root
    through no link: the name checked is the file read."""
    try:
        with open_beneath(means.confinement.root, target.rel, follow=False) as opened:
            return opened.read() if opened.kind is Kind.FILE else None
    except WorkspaceError as exc:
        raise ToolError(f"{target.shown}: {exc}; refused") from None
