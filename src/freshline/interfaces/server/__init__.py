"""`freshline serve`: the MCP server over streamable HTTP, for a team sharing a workspace.

`http.py` builds the app and runs it under uvicorn; `connections.py` holds its
connections to time limits and a count per address. In front of the MCP app, `auth.py`
is the ASGI middleware: `credentials.py` says what a bearer token is worth (a freshline
token, or an OAuth access token checked by `oauth.py`), `limiter.py` and `addresses.py`
limit guesses per client address, and `resource.py` is the protected resource metadata
OAuth clients start from.
"""
