"""Content identity: git blob ids, computed streaming so big files never sit in memory."""

from __future__ import annotations

import hashlib
import os
import stat

CHUNK = 1 << 20

MODE_FILE = 0o100644
MODE_EXEC = 0o100755
MODE_LINK = 0o120000


def blob_id_bytes(data: bytes) -> str:
    """The git blob id of `data`: sha1 of `blob <len>\\0` + data."""
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def blob_id_file(path: str | bytes | os.PathLike[str], size: int) -> tuple[str, bytes]:
    """The git blob id of a file of the given size, and its first `CHUNK` bytes.

    Raises OSError if the file cannot be read or changed size while being read.
    """
    h = hashlib.sha1(b"blob %d\0" % size)
    # Plain os.read: a file object costs more than the hashing of a small file. O_NONBLOCK
    # is a no-op for files, but a FIFO swapped in after the lstat fails instead of hanging;
    # O_NOFOLLOW: a link swapped in after it is not followed.
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        head = chunk = os.read(fd, min(size + 1, CHUNK))  # whole small file in one read
        read = 0
        while chunk:
            read += len(chunk)
            h.update(chunk)
            chunk = os.read(fd, CHUNK)
    finally:
        os.close(fd)
    if read != size:
        raise OSError(f"file changed size while being read ({size} → {read} bytes)")
    return h.hexdigest(), head


def blob_id_fd(fd: int) -> str:
    """The git blob id of the open file `fd`, read from offset 0 (`pread`). Raises
    OSError if it changed size while being read."""
    size = os.fstat(fd).st_size
    h = hashlib.sha1(b"blob %d\0" % size)
    read = 0
    while chunk := os.pread(fd, CHUNK, read):
        h.update(chunk)
        read += len(chunk)
    if read != size:
        raise OSError(f"file changed size while being read ({size} → {read} bytes)")
    return h.hexdigest()


def blob_id_link(path: str | bytes) -> str:
    """The git blob id of a symbolic link: the id of its target string."""
    return blob_id_bytes(os.fsencode(os.readlink(os.fsdecode(path))))


def git_mode(st: os.stat_result) -> int:
    """The mode git would record for this stat: link, executable or plain file."""
    if stat.S_ISLNK(st.st_mode):
        return MODE_LINK
    return MODE_EXEC if st.st_mode & 0o111 else MODE_FILE


def blob_of(path: str | os.PathLike[str]) -> str | None:
    """The git blob id of what `path` holds now: a regular file's content or a link's
    target; None when there is nothing there (or something else, such as a folder).

    A file that changes size while it is hashed is hashed again, a few times at most;
    OSError if it never holds still.
    """
    tries = 0
    while True:
        try:
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                return blob_id_link(os.fspath(path))
            if not stat.S_ISREG(st.st_mode):
                return None
            return blob_id_file(path, st.st_size)[0]
        except FileNotFoundError:
            return None
        except OSError:
            tries += 1
            if tries == 3:
                raise
