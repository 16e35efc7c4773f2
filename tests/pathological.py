"""Lines that once made note parsing quadratic, shared by the linearity test and the bench."""

from __future__ import annotations

import base64
import random
from collections.abc import Callable

Line = Callable[[int, random.Random], str]  # (length, random source) → a line of that length


def url_like(n: int, rng: random.Random) -> str:
    """Random characters URLs are made of."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%"
    return "".join(rng.choice(alphabet) for _ in range(n))


def base64_line(n: int, rng: random.Random) -> str:
    """Random base64 text, as embedded images carry it."""
    return base64.b64encode(rng.randbytes(n)).decode()[:n]


def hex_line(n: int, rng: random.Random) -> str:
    """Random hex digits."""
    return rng.randbytes(n // 2 + 1).hex()[:n]


KINDS: dict[str, Line] = {"URL-like": url_like, "base64": base64_line, "hex": hex_line}
