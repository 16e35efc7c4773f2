"""`freshline serve`: the MCP server over streamable HTTP, for a team sharing a workspace.

`http.py` builds the app and runs it under uvicorn (`runner.py`) on the port `listen.py`
bound; `listener.py` accepts only what `occupancy.py` has room for (within the open-files
limit, `files.py`), and `connections.py`'s protocol tells it where each request is. In
front of the MCP app, `auth.py` is the ASGI middleware: `credentials.py` says what a
bearer token is worth (a freshline token, or an OAuth access token checked by `oauth.py`
with the issuer's metadata, `issuer.py`, and keys, `jwks.py`), `limiter.py` and
`addresses.py` limit guesses per client address, and `resource.py` is the protected
resource metadata OAuth clients start from.
"""
