"""The public API: a sorted `__all__`, every name importable, and the README example runs."""

from __future__ import annotations

import subprocess
import sys

import freshline

from .conftest import Workspace


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert freshline.__all__ == sorted(freshline.__all__)
    for name in freshline.__all__:
        assert getattr(freshline, name) is not None


def test_importing_freshline_loads_no_model_sdk() -> None:
    code = "import sys, freshline; print('openai' in sys.modules or 'anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_docstring_example_works(ws: Workspace) -> None:
    from freshline import SessionManager, get_backend, load_config, send

    ws.write("notes/a.md", "# A\n")
    ws.configure({"notes": {"include": ["notes"]}})
    manager = SessionManager(load_config(ws.root))
    try:
        session = manager.new("notes")
        result = send(manager, session.id, "what changed?", get_backend("echo"))
        assert result.accepted and "what changed?" in result.response
    finally:
        manager.close()


def test_all_names_exactly_the_lazy_exports() -> None:
    import freshline.tracker

    assert freshline.__all__ == sorted(freshline._EXPORTS)
    assert freshline.tracker.__all__ == sorted(freshline.tracker._EXPORTS)
