"""`freshline serve`: the MCP server over streamable HTTP, for a team sharing a workspace.

`auth.py` is the ASGI middleware in front of the protocol app (bearer tokens, the
per-address limit on failures); `http.py` builds the app and runs it under uvicorn.
"""
