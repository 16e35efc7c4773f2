"""The suite's own settings, which keep a loaded machine from failing a right test."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st


def test_hypothesis_has_no_deadline_suite_wide() -> None:
    assert settings.default.deadline is None


@settings(max_examples=5)
@given(st.integers())
def test_a_test_with_its_own_settings_keeps_no_deadline(n: int) -> None:
    assert settings().deadline is None
