"""`freshline serve` as a real process on 127.0.0.1, and the MCP SDK's streamable-HTTP
client of it: shared by tests/test_serve.py and bench/serve.py."""

from __future__ import annotations

import os
import resource
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def self_signed(where: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (openssl), for serving HTTPS."""
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def start_server(root: Path, port: int, *options: str,
                 files: int | None = None) -> subprocess.Popen[bytes]:
    """`freshline serve` on `port` with `options`, once it serves (its log:
    serve-PORT.log beside the workspace, a file so a chatty server never blocks on a full
    pipe); `files`: its open-files limit, soft and hard."""
    return start_servers(root, (port, *options), files=files)[0]


def start_servers(root: Path, *runs: tuple[int | str, ...],
                  files: int | None = None) -> list[subprocess.Popen[bytes]]:
    """A `freshline serve` per run (its port, then its options), started at once (their
    start-ups overlap), once each serves."""
    procs: list[subprocess.Popen[bytes]] = []
    for port, *options in runs:
        with (root.parent / f"serve-{port}.log").open("wb") as log:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "freshline", "--workspace", str(root), "serve",
                 "--port", str(port), *map(str, options)],
                stdout=subprocess.DEVNULL, stderr=log, env={**os.environ},
                preexec_fn=None if files is None else lambda: _limit_files(files),
            ))
    try:
        for proc, (port, *_options) in zip(procs, runs, strict=True):
            _await_serving(proc, root.parent / f"serve-{port}.log")
    except BaseException:
        for proc in procs:
            proc.kill()
            proc.wait()
        raise
    return procs


def _limit_files(files: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))


def _await_serving(proc: subprocess.Popen[bytes], log_path: Path) -> None:
    """Wait for its `serving …` line (the port is bound earlier: a client that connects
    before waits for the server in the port's backlog)."""
    deadline = time.monotonic() + 60
    while b"serving " not in log_path.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"serve did not start: {log_path.read_text()}")
        time.sleep(0.05)


def stop_server(*procs: subprocess.Popen[bytes]) -> None:
    """Stop servers as Ctrl-C does (their watchers and announcers shut down), and wait:
    all asked at once, so they shut down side by side."""
    for proc in procs:
        proc.send_signal(signal.SIGINT)
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@asynccontextmanager
async def connect(
    url: str, token: str | None, mode: str = "auto", ca: Path | None = None
) -> AsyncIterator[Client]:
    """The SDK's client of the server at `url`, sending `token` as a bearer token (an
    https server's certificate checked against `ca`)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    verify = ssl.create_default_context(cafile=str(ca)) if ca else True
    async with httpx2.AsyncClient(headers=headers, timeout=120, verify=verify) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, cache=None) as client:  # type: ignore[arg-type]
            yield client
