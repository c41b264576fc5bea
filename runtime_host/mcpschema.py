"""The MCP servers table, as a named migration the store applies (kept apart so the store needs no MCP code)."""

from __future__ import annotations

MCP_MIGRATION: tuple[str, list[str]] = (
    "0013_mcp",
    ["""CREATE TABLE mcp_servers (id TEXT PRIMARY KEY, person_id TEXT NOT NULL, name TEXT NOT NULL,
        transport TEXT NOT NULL, target TEXT NOT NULL, tools TEXT NOT NULL DEFAULT '[]',
        listed_at DOUBLE PRECISION, created_at DOUBLE PRECISION NOT NULL, UNIQUE (person_id, name))"""],
)
