"""One owner per conversation: the channel that opened a session is the only one that
delivers to it (DESIGN section 7).

A session remembers the channel that opened it (`SessionRecord.channel`); preparing a
delivery on another channel is refused, so an MCP client can never take a hook's
deliveries, nor the reverse. chat and send both run freshline's own agent: one owner;
so is a session pulled from another machine (channel `pull`), a chat's or a send's there.

A conversation can also be reached by two channels at once from outside: the ACP proxy
starts an agent whose harness runs hooks too (Claude Code's). The proxy marks the agent it
starts (`OWNER_ENV` in its environment, inherited by the hooks it runs), and a hook that
finds the mark stays silent: the proxy delivers to that conversation.
"""

from __future__ import annotations

from freshline.errors import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: the hook's fast
if TYPE_CHECKING:  # path reads OWNER_ENV before it loads anything else
    from collections.abc import Mapping

    from freshline.store import SessionRecord

OWNER_ENV = "FRESHLINE_OWNER"  # set by the channel that runs an agent: its name
_FRESHLINE_AGENT = "freshline"  # chat and send: the agent freshline runs itself
_OWNERS = {"chat": _FRESHLINE_AGENT, "send": _FRESHLINE_AGENT, "pull": _FRESHLINE_AGENT}


def owner_of(channel: str) -> str:
    """Who owns the conversations a channel opens (chat, send and pull are one owner)."""
    return _OWNERS.get(channel, channel)


def refuse_other_owner(s: SessionRecord, channel: str) -> None:
    """UsageError unless `channel` may deliver to the session `s`."""
    if owner_of(s.channel) != owner_of(channel):
        raise UsageError(
            f"session '{s.id}' was opened by the {s.channel} channel: only that channel "
            f"delivers to it (not {channel}); open a session of your own"
        )


def marked(env: Mapping[str, str], channel: str) -> dict[str, str]:
    """`env` for an agent that `channel` runs: the mark hooks inside it look for."""
    return {**env, OWNER_ENV: channel}


def owned_by(env: Mapping[str, str]) -> str | None:
    """The channel that runs the agent whose environment this is, if any."""
    return env.get(OWNER_ENV) or None
