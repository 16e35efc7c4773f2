"""The per-user service: one process that watches every workspace the user has used and
answers the hot commands and every hook call, warm.

    daemon.py      the process: its lock, record, sockets, signals, shutdown
    acceptor.py    its listening sockets, accepted from one thread with no timeout
    requests.py    the socket's protocol: the commands' questions, one JSON line each way
    httphooks.py   Claude Code's http hooks on 127.0.0.1, behind this user's secret
    hooks.py       hook calls answered in order, per workspace, over warm state
    workspaces.py  the workspaces it watches, each on its own
    registry.py    the list it watches again when it starts
    secret.py      the http hooks' port and secret (0600)
    places.py      its folders: state, config
    units.py       `service install`: a systemd user unit, a launchd agent

Its client half (`interfaces/serviceclient.py`) imports nothing beyond the standard
library; `interfaces/autostart.py` starts it.
"""
