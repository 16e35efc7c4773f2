"""Every number in freshline.toml is finite and in range, every string and pattern has a
length limit, each checked on load with one line naming the key (issue 31, item 3)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.agent.backends.retry import RetryPolicy
from freshline.config import CONFIG_NAME, load_config
from freshline.config.loading import MODEL_NAME_MAX
from freshline.errors import ConfigError


def load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    (tmp_path / CONFIG_NAME).write_text(text)
    return load_config(tmp_path)


def refused(tmp_path: Path, text: str, key: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    message = str(caught.value)
    assert message.startswith(f"freshline.toml: {key}: "), message
    assert "\n" not in message and len(message) < 300, message
    return message


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1.0", "1e308", "3601"])
@pytest.mark.parametrize("key", ["retry_wait_s", "retry_max_wait_s"])
def test_a_wait_is_a_finite_number_of_seconds_in_range(
    tmp_path: Path, key: str, value: str
) -> None:
    message = refused(tmp_path, f"[model]\n{key} = {value}\n", f"model.{key}")
    assert "between 0 and 3600" in message


@pytest.mark.parametrize("value", ["-1", "101", "100000000000"])
def test_retries_are_bounded(tmp_path: Path, value: str) -> None:
    assert "between 0 and 100" in refused(tmp_path, f"[model]\nretries = {value}\n",
                                          "model.retries")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[workspace]\ndebounce_ms = -1\n", "workspace.debounce_ms"),
        ("[workspace]\nworkers = 100000000000\n", "workspace.workers"),
        ("[delivery]\nmcp = 100000000000\n", "delivery.mcp"),
        ("[conversations]\nmax_blob_mb = -5\n", "conversations.max_blob_mb"),
        ("[store]\npool_size = 100000000000\n", "store.pool_size"),
        ("[workspace]\ndebounce_ms = nan\n", "workspace.debounce_ms"),
        ("[delivery]\nhook = inf\n", "delivery.hook"),
    ],
)
def test_other_numbers_are_checked_too(tmp_path: Path, text: str, key: str) -> None:
    refused(tmp_path, text, key)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[model]\ndefault = "openai:{long}"\n', "model.default"),
        ('[model]\nbase_url = "http://h/{long}"\n', "model.base_url"),
        ('[store]\nurl = "sqlite:{long}"\n', "store.url"),
        ('[sessions]\nidle_close = "{digits}"\n', "sessions.idle_close"),
        ('[workspace]\nignore = ["{long}"]\n', "workspace.ignore[0]"),
        ('[projects.p]\ninclude = ["a", "{long}"]\n', "projects.p.include[1]"),
        ('[projects.p]\nexclude = ["{long}*"]\n', "projects.p.exclude[0]"),
        ('[security]\nallow_secrets_in = ["{long}"]\n', "security.allow_secrets_in[0]"),
    ],
)
def test_strings_and_patterns_have_a_length_limit(tmp_path: Path, text: str, key: str) -> None:
    text = text.format(long="x" * 200_000, digits="9" * 10_000)
    message = refused(tmp_path, text, key)
    assert "characters" in message


def test_a_5_mb_model_name_is_refused(tmp_path: Path) -> None:
    refused(tmp_path, f'[model]\ndefault = "openai:{"m" * 5_000_000}"\n', "model.default")


def test_a_project_name_has_a_length_limit(tmp_path: Path) -> None:
    message = refused(tmp_path, f'[projects.{"p" * 1000}]\ninclude = ["a"]\n',
                      f"projects.{'p' * 71}…")
    assert "longer than 100 characters" in message


def test_a_list_of_patterns_has_a_length_limit(tmp_path: Path) -> None:
    many = ", ".join('"a"' for _ in range(20_000))
    assert "patterns" in refused(tmp_path, f"[projects.p]\ninclude = [{many}]\n",
                                 "projects.p.include")


def test_values_at_the_limits_load(tmp_path: Path) -> None:
    config = load(tmp_path, f'[model]\ndefault = "openai:{"m" * (MODEL_NAME_MAX - 7)}"\n'
                            "retries = 100\nretry_wait_s = 3600\nretry_max_wait_s = 0\n"
                            '[security]\nallow_hardlinks = true\nallow_secrets_in = ["fx/"]\n')
    assert config.model.retries == 100 and config.model.retry_wait_s == 3600.0
    assert config.security.allow_hardlinks and config.security.allow_secrets_in == ("fx/",)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_any_float_loads_finite_or_is_refused_naming_the_key(value: float) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        literal = "nan" if math.isnan(value) else repr(value)
        try:
            config = load(Path(tmp), f"[model]\nretry_wait_s = {literal}\n")
        except ConfigError as exc:
            assert str(exc).startswith("freshline.toml: model.retry_wait_s: ")
            return
        assert math.isfinite(config.model.retry_wait_s)
        assert 0 <= config.model.retry_wait_s <= 3600


def test_the_retry_policy_refuses_what_the_config_refuses() -> None:
    for bad in ({"retries": 10**11}, {"wait_s": math.nan}, {"max_wait_s": math.inf},
                {"wait_s": -1.0}):
        with pytest.raises(ValueError):
            RetryPolicy(**bad)  # type: ignore[arg-type]


def test_delays_stay_finite_at_the_limits() -> None:
    delays = RetryPolicy(retries=100, wait_s=3600.0, max_wait_s=3600.0).delays(random.Random(1))
    assert len(delays) == 100 and all(1800.0 <= d <= 3600.0 for d in delays)
