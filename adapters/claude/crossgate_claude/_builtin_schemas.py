"""The argument schemas of the Claude CLI's built-in tools, so a reviewer's edit of their calls is checked.

Read from what the bundled CLI (2.1.332) sends the Messages API as each tool's ``input_schema``, with the
descriptions left out; ``tests/adapters/claude/test_real_cli_schemas.py`` checks them against the CLI, so an
upgrade that changes a tool's arguments is caught. MCP tools bring their own schemas (``_mcp_schemas``).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from crossgate.model import JsonObject

_SCHEMAS: dict[str, Any] = {
    "Agent": {
        "additionalProperties": False,
        "properties": {
            "description": {"type": "string"},
            "effort": {"enum": ["low", "medium", "high", "xhigh", "max"], "type": "string"},
            "isolation": {"enum": ["worktree", "remote"], "type": "string"},
            "model": {"enum": ["sonnet", "opus", "haiku", "fable"], "type": "string"},
            "prompt": {"type": "string"},
            "run_in_background": {"type": "boolean"},
            "subagent_type": {"type": "string"},
        },
        "required": ["description", "prompt"],
        "type": "object",
    },
    "Bash": {
        "additionalProperties": False,
        "properties": {
            "command": {"type": "string"},
            "dangerouslyDisableSandbox": {"type": "boolean"},
            "description": {"type": "string"},
            "run_in_background": {"type": "boolean"},
            "timeout": {"type": "number"},
        },
        "required": ["command"],
        "type": "object",
    },
    "Edit": {
        "additionalProperties": False,
        "properties": {
            "file_path": {"type": "string"},
            "new_string": {"type": "string"},
            "old_string": {"type": "string"},
            "replace_all": {"default": False, "type": "boolean"},
        },
        "required": ["file_path", "old_string", "new_string"],
        "type": "object",
    },
    "Glob": {
        "additionalProperties": False,
        "properties": {"path": {"type": "string"}, "pattern": {"type": "string"}},
        "required": ["pattern"],
        "type": "object",
    },
    "Grep": {
        "additionalProperties": False,
        "properties": {
            "-A": {"type": "number"},
            "-B": {"type": "number"},
            "-C": {"type": "number"},
            "-i": {"type": "boolean"},
            "-n": {"type": "boolean"},
            "-o": {"type": "boolean"},
            "context": {"type": "number"},
            "glob": {"type": "string"},
            "head_limit": {"type": "number"},
            "multiline": {"type": "boolean"},
            "offset": {"type": "number"},
            "output_mode": {"enum": ["content", "files_with_matches", "count"], "type": "string"},
            "path": {"type": "string"},
            "pattern": {"type": "string"},
            "type": {"type": "string"},
        },
        "required": ["pattern"],
        "type": "object",
    },
    "NotebookEdit": {
        "additionalProperties": False,
        "properties": {
            "cell_id": {"type": "string"},
            "cell_type": {"enum": ["code", "markdown"], "type": "string"},
            "edit_mode": {"enum": ["replace", "insert", "delete"], "type": "string"},
            "new_source": {"type": "string"},
            "notebook_path": {"type": "string"},
        },
        "required": ["notebook_path", "new_source"],
        "type": "object",
    },
    "Read": {
        "additionalProperties": False,
        "properties": {
            "allow_large": {"type": "boolean"},
            "file_path": {"type": "string"},
            "limit": {"exclusiveMinimum": 0, "maximum": 9007199254740991, "type": "integer"},
            "offset": {"maximum": 9007199254740991, "minimum": 0, "type": "integer"},
            "pages": {"type": "string"},
        },
        "required": ["file_path"],
        "type": "object",
    },
    "WebFetch": {
        "additionalProperties": False,
        "properties": {
            "offset": {"maximum": 9007199254740991, "minimum": 0, "type": "integer"},
            "prompt": {"type": "string"},
            "url": {"format": "uri", "type": "string"},
        },
        "required": ["url", "prompt"],
        "type": "object",
    },
    "WebSearch": {
        "additionalProperties": False,
        "properties": {
            "allowed_domains": {"items": {"type": "string"}, "type": "array"},
            "blocked_domains": {"items": {"type": "string"}, "type": "array"},
            "query": {"minLength": 2, "type": "string"},
        },
        "required": ["query"],
        "type": "object",
    },
    "Write": {
        "additionalProperties": False,
        "properties": {"content": {"type": "string"}, "file_path": {"type": "string"}},
        "required": ["file_path", "content"],
        "type": "object",
    },
}

BUILTIN_SCHEMAS: MappingProxyType[str, JsonObject] = MappingProxyType(_SCHEMAS)
"""Tool name -> the JSON Schema of its arguments, for the built-in tools crossgate gates."""
