"""MCP: freshline as a Model Context Protocol server, over stdio and over HTTP.

    service.py    `FreshlineService`: what each tool does, over the session layer
    surface.py    the MCP surface: tools, resources, the prompt, notifications
    events.py     change notifications, from a watcher running in the server
    documents.py  what `read_document` returns: a file's text or a snapshot's
    stdio.py      `freshline mcp`: the server over stdio (`python -m freshline.interfaces.mcp`)

`interfaces/server/` serves the same surface over streamable HTTP (`freshline serve`).
"""
