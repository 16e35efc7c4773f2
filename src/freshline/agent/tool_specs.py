"""The JSON-schema definitions of the tools offered to the model."""

from __future__ import annotations

from typing import Any

from freshline.agent.messages import ToolSpec

_PATH = {"type": "string", "description": "absolute path, or relative to the workspace root"}


def _spec(name: str, description: str, required: list[str], **props: Any) -> ToolSpec:
    parameters = {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }
    return ToolSpec(name, description, parameters)


LIST = _spec(
    "list",
    "List a directory of the workspace: subdirectories end with '/', files show their size.",
    [],
    path={**_PATH, "description": "directory to list (default: the workspace root)"},
)
READ = _spec(
    "read",
    "Read a text file, or the text snapshot of a converted document (PDF, DOCX, ...). "
    "Long files are capped: read a line range with start and end.",
    ["path"],
    path=_PATH,
    start={"type": "integer", "minimum": 1, "description": "first line to read (1-based)"},
    end={"type": "integer", "minimum": 1, "description": "last line to read (inclusive)"},
)
SEARCH = _spec(
    "search",
    "Search the project's files (and document snapshots) for a regular expression; "
    "prints path:line: text for each match.",
    ["pattern"],
    pattern={"type": "string", "description": "a Python regular expression"},
    path={**_PATH, "description": "file or directory to search (default: the workspace root)"},
    ignore_case={"type": "boolean", "description": "match case-insensitively"},
)
WRITE = _spec(
    "write",
    "Create a file or replace its whole content (an existing file keeps its mode).",
    ["path", "content"],
    path=_PATH,
    content={"type": "string", "description": "the complete new content"},
)
EDIT = _spec(
    "edit",
    "Replace an exact piece of text in a file; it must occur exactly once.",
    ["path", "old", "new"],
    path=_PATH,
    old={"type": "string", "description": "the exact text to replace, with enough context"},
    new={"type": "string", "description": "the replacement text"},
)
DELETE = _spec(
    "delete",
    "Delete a file (e.g. to take the deleting side of a modify/delete conflict).",
    ["path"],
    path=_PATH,
)
CHMOD = _spec(
    "chmod",
    "Make a file executable or not (a deliberate mode change).",
    ["path", "executable"],
    path=_PATH,
    executable={"type": "boolean", "description": "true for 755, false for 644"},
)
CHANGES = _spec(
    "changes",
    "Page the full list of changes to the project after an epoch: what a "
    "<project_context_updates> block grouped by folder or by git operation. Lists paths, "
    "never contents; moves nothing.",
    [],
    since={"type": "integer", "minimum": 0,
           "description": "list changes after this epoch (the block names it; default: "
                          "the epoch your last updates block started from)"},
    page={"type": "integer", "minimum": 1, "description": "the page, from 1 (default 1)"},
)
