"""Model backends, chosen by a spec string: `echo`, `scripted:FILE`, `openai:MODEL`,
`anthropic:MODEL`.

    backend = get_backend("openai:llama3.2", base_url="http://127.0.0.1:11434/v1")

The SDK-backed modules are imported only when asked for, so `echo` starts instantly.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from freshline.agent.backends.base import Backend
from freshline.agent.backends.retry import RetryPolicy
from freshline.errors import UsageError

if TYPE_CHECKING:
    from freshline.config import ModelSettings

Factory = Callable[..., Backend]
"""A backend class (or function): called as `factory(arg, **options)`, or `factory(**options)`
for a spec that takes no argument."""

_REGISTRY: dict[str, tuple[str | Factory, str | None]] = {
    # name: (factory or "module:attr" to import lazily, what follows the colon or None)
    "echo": ("freshline.agent.backends.echo:EchoBackend", None),
    "scripted": ("freshline.agent.backends.scripted:ScriptedBackend", "FILE"),
    "openai": ("freshline.agent.backends.openai_backend:OpenAIBackend", "MODEL"),
    "anthropic": ("freshline.agent.backends.anthropic_backend:AnthropicBackend", "MODEL"),
}

DEFAULT_BACKEND = "echo"


def register_backend(name: str, factory: Factory, argument: str | None = None) -> None:
    """Add a backend for the spec `name` (or `name:ARGUMENT` when `argument` names one)."""
    _REGISTRY[name] = (factory, argument)


def backend_names() -> list[str]:
    """The known backend specs, as a user would type them."""
    return [name if arg is None else f"{name}:{arg}" for name, (_, arg) in _REGISTRY.items()]


def _load(factory: str | Factory) -> Factory:
    if not isinstance(factory, str):
        return factory
    module, _, attr = factory.partition(":")
    loaded: Factory = getattr(importlib.import_module(module), attr)
    return loaded


def _options(factory: Factory, takes_arg: bool) -> set[str]:
    params = list(inspect.signature(factory).parameters.values())
    return {p.name for p in params[1 if takes_arg else 0 :] if p.kind is not p.VAR_POSITIONAL}


def get_backend(spec: str = DEFAULT_BACKEND, **options: Any) -> Backend:
    """Build the backend a spec names; options set to None are left at their defaults.

    Raises UsageError for an unknown backend, a missing or unexpected argument, or an
    option the backend does not take; BackendAuthError when a required key is missing.
    """
    name, colon, arg = spec.partition(":")
    if name not in _REGISTRY:
        known = ", ".join(backend_names())
        raise UsageError(f"unknown model backend {name!r}; choose one of: {known}")
    target, wants = _REGISTRY[name]
    if wants is not None and not arg:
        raise UsageError(f"model backend {name!r} needs an argument: {name}:{wants}")
    if wants is None and colon:
        raise UsageError(f"model backend {name!r} takes no argument")
    factory = _load(target)
    given = {key: value for key, value in options.items() if value is not None}
    unknown = sorted(set(given) - _options(factory, wants is not None))
    if unknown:
        raise UsageError(f"model backend {name!r} takes no option {', '.join(unknown)}")
    return factory(arg, **given) if wants is not None else factory(**given)


def backend_for(
    settings: ModelSettings, model: str | None = None, base_url: str | None = None
) -> Backend:
    """The backend a command talks to: `model` (a spec), else `[model] default`.

    The base URL is `base_url`, else `[model] base_url` when the model is of the default's
    backend (a URL for an Ollama server means nothing to `echo`). Backends that retry get
    the `[model]` retry settings. Raises as `get_backend` does.
    """
    spec = model or settings.default
    name = spec.partition(":")[0]
    if base_url is None and name == settings.default.partition(":")[0]:
        base_url = settings.base_url
    options: dict[str, Any] = {"base_url": base_url}
    target = _REGISTRY.get(name)
    if target is not None and "retry" in _options(_load(target[0]), target[1] is not None):
        options["retry"] = RetryPolicy(
            settings.retries, settings.retry_wait_s, settings.retry_max_wait_s
        )
    return get_backend(spec, **options)


__all__ = [
    "DEFAULT_BACKEND",
    "Backend",
    "RetryPolicy",
    "backend_for",
    "backend_names",
    "get_backend",
    "register_backend",
]
