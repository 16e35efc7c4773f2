"""freshline: keep long-lived AI agent conversations fresh about the files they work on."""

from __future__ import annotations

__version__ = "0.1.0"
