"""The http hooks' address: a loopback port and a secret of this user's, kept 0600.

Claude Code posts each hook event to `http://127.0.0.1:<port>/freshline/<secret>/hook/
<agent>?workspace=…`: the secret in the path is what tells this user's hooks from any
other local process's requests (the port is reachable by every user of the machine). It
is made once (32 random bytes) with the port the service first bound, and kept in
`hooks.json` in the user's config folder, readable by this user alone; a file others
could read is not trusted and made anew (the hooks are installed again with it).
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

from freshline.interfaces.service.places import hooks_path, write_private

HOST = "127.0.0.1"
PREFIX = "/freshline/"  # every hook path starts so: `hook install` knows its own entries


@dataclass(frozen=True)
class HookAddress:
    """Where the service answers http hooks, and the secret they carry."""

    port: int
    secret: str

    def path(self, agent: str) -> str:
        """The request path of `agent`'s hooks."""
        return f"{PREFIX}{self.secret}/hook/{quote(agent)}"

    def url(self, agent: str, root: Path, project: str | None = None) -> str:
        """The URL `agent`'s hooks for the workspace at `root` post to."""
        query = {"workspace": str(root)} | ({"project": project} if project else {})
        return f"http://{HOST}:{self.port}{self.path(agent)}?{urlencode(query)}"


def parse(text: str) -> HookAddress | None:
    """The address a file's text holds, or None when it holds none."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    port, secret = data.get("port"), data.get("secret")
    if not (isinstance(port, int) and 0 < port < 65536 and isinstance(secret, str)
            and len(secret) == 64 and all(c in "0123456789abcdef" for c in secret)):
        return None
    return HookAddress(port, secret)


def load(path: Path | None = None) -> HookAddress | None:
    """The address kept, if any, and if nobody else can read it."""
    path = path or hooks_path()
    try:
        st = path.stat()
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return parse(text)


def ensure(path: Path | None = None) -> HookAddress:
    """The address kept, or a new one (a free port now, a new secret), kept."""
    path = path or hooks_path()
    found = load(path)
    if found is not None:
        return found
    made = HookAddress(free_port(), os.urandom(32).hex())
    write_private(path, json.dumps({"port": made.port, "secret": made.secret}) + "\n")
    return made


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port
