"""The service as commands start it: the one place a command has it watch its workspace
(`interfaces.autostart.ensure`, which starts the service when none runs) and tells
people, the first time one starts for them, that a process now runs for their
workspaces. The typer commands and the fast path both come here."""

from __future__ import annotations

from freshline.interfaces.cli.output import note

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from freshline.config import Config

STARTED = ("freshline now watches your workspaces in a background service, so later "
           "commands are fast (`freshline service status` shows it, `freshline service "
           "stop` stops it; `autowatch = false` under [workspace] in freshline.toml keeps "
           "a workspace out of it)")


def watch(cfg: Config) -> None:
    """Have the service watch the workspace (starting it when none runs); the first time
    one starts for this user (it has no log yet), say so on stderr."""
    from freshline.interfaces.autostart import ensure
    from freshline.interfaces.service.places import log_path

    first = not log_path().exists()
    if ensure(cfg) and first:
        note(STARTED)
