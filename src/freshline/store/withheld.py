"""The files something was withheld from: a path, the content it was found in, the kinds.

`freshline status` flags a file while its indexed content is still the one noted (an edit
that removed the secret clears the flag by itself; the next read notes it again if not).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from freshline.store.db import Database, decode_path, encode_path, upsert

_PUT = upsert("withheld", ["path", "blob", "kinds", "at"], ["path"])


@dataclass(frozen=True)
class WithheldRow:
    """Secrets withheld from one file's content."""

    path: str
    blob: str  # the content they were found in (git blob id)
    kinds: tuple[str, ...]  # one per secret, e.g. ("openai-key", "jwt")


class WithheldTable:
    """Reads and writes of the `withheld` table."""

    db: Database

    def withheld_note(self, rows: Iterable[WithheldRow]) -> None:
        """Note what was withheld (joins the current transaction if there is one)."""
        now = time.time()
        for row in rows:
            self.db.execute_write(_PUT, (encode_path(row.path), row.blob, ",".join(row.kinds),
                                         now))

    def withheld_current(self) -> list[WithheldRow]:
        """The noted files whose indexed content is still the one noted, by path."""
        rows = self.db.conn.execute(
            "SELECT w.path, w.blob, w.kinds FROM withheld w JOIN files f"
            " ON f.path = w.path AND f.blob = w.blob ORDER BY w.path"
        ).fetchall()
        return [WithheldRow(decode_path(p), b, tuple(k.split(",")) if k else ())
                for p, b, k in rows]
