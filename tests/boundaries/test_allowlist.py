"""Toolkit allowlists fail closed: only actions listed by name are offered or callable."""

from __future__ import annotations

import pytest

from runtime_host.allowlist import Allowlist, AllowlistError, catalog_of, mcp_toolkit
from runtime_host.tools import TOOLKITS


def test_only_listed_actions_are_offered_and_allowed() -> None:
    al = Allowlist("helper", {"notes": ["read_notes"], "mcp:files": ["read_file"]})
    catalog = {"notes": ["read_notes", "append_note"], "mcp:files": ["read_file", "write_file"], "math": ["calculate"]}
    assert al.offered(catalog) == {"notes": ["read_notes"], "mcp:files": ["read_file"]}
    assert al.check("notes", "read_notes").allowed
    assert al.check("notes", "append_note").rule == "action.not_allowed"
    assert al.check("math", "calculate").rule == "toolkit.not_allowed"
    assert al.pending(catalog) == {"notes": ["append_note"], "mcp:files": ["write_file"]}


def test_an_action_that_appears_later_is_not_reachable_until_allowed() -> None:
    al = Allowlist("helper", {mcp_toolkit("files"): ["read_file"]})
    grown = {"mcp:files": ["read_file", "delete_everything"]}
    assert "delete_everything" not in al.offered(grown)["mcp:files"]
    assert not al.allows("mcp:files", "delete_everything")
    al2 = al.allow("mcp:files", ["delete_everything"])
    assert al2.allows("mcp:files", "delete_everything") and not al.allows("mcp:files", "delete_everything")
    assert not al2.revoke("mcp:files", ["delete_everything"]).allows("mcp:files", "delete_everything")


def test_legacy_toolkit_lists_are_frozen_to_todays_actions() -> None:
    catalog = catalog_of(TOOLKITS)
    al = Allowlist.from_legacy_toolkits("helper", ["notes", "clock", "mcp:files"], catalog)
    assert al.allowed["notes"] == frozenset(catalog["notes"])
    assert "mcp:files" not in al.allowed  # MCP actions must be picked by a person
    later = {**catalog, "notes": catalog["notes"] + ["delete_notes"]}
    assert not al.allows("notes", "delete_notes") and "delete_notes" in al.pending(later)["notes"]


def test_concrete_tools_are_filtered() -> None:
    al = Allowlist("helper", {"math": ["calculate"]})
    tools = [t for tk in TOOLKITS.values() for t in tk.values()]
    assert [t.name for t in al.offered_tools(tools)] == ["calculate"]


def test_json_round_trip_and_clear_errors() -> None:
    al = Allowlist("helper", {"clock": ["current_time"], "mcp:files": ["read_file"]})
    assert Allowlist.from_json("helper", al.to_json()) == al
    with pytest.raises(AllowlistError, match="old list of toolkit names"):
        Allowlist.from_json("helper", '["clock"]')
    with pytest.raises(AllowlistError, match="Unknown toolkit"):
        Allowlist("helper", {"filesystem": ["read"]})
    with pytest.raises(AllowlistError, match="no wildcards"):
        Allowlist("helper", {"notes": ["*"]})
    with pytest.raises(AllowlistError, match="not a usable MCP server name"):
        mcp_toolkit("../evil")
    with pytest.raises(AllowlistError, match="list of action names"):
        Allowlist("helper", {"notes": "read_notes"})
