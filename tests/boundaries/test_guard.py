"""The pre-tool-call guard over a real temp tree: what it allows, what it refuses and why, and its audit."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.guard_fuzz import SENTINEL, Tree, build_tree, make_guard  # noqa: E402
from runtime_host.allowlist import Allowlist  # noqa: E402
from runtime_host.guard import Guard, ToolShape, shape_from_schema  # noqa: E402


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return build_tree(tmp_path)


@pytest.fixture
def audit() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def guard(tree: Tree, audit: list[dict[str, Any]]) -> Guard:
    return make_guard(tree, audit.append)


ALLOWED = [
    ("read_file", {"path": "notes.md"}),
    ("read_file", {"path": "sub/../notes.md"}),
    ("read_file", {"path": "café.md"}),
    ("read_file", {"path": "link_in"}),  # a symlink that stays inside
    ("read_file", {"path": "link_wiki/page1.md"}),  # a symlink into the public wiki (read-only root)
    ("read_file", {"path": "../../../wiki/public/page1.md"}),
    ("read_file", {"path": "../../../wiki/private/p1/mine.md"}),
    ("read_file", {"path": "*.md"}),
    ("write_file", {"path": "drafts/new/deep.md", "content": "x"}),
    ("wiki_read", {"page": "people/bob"}),
    ("wiki_propose", {"page": "page1", "text": "a fix"}),
    ("run_shell", {"command": "grep -c 'a$' notes.md | sort > out.txt 2>/dev/null"}),
    ("run_shell", {"command": "cat 'with space.md' | wc -l"}),
    ("web_fetch", {"url": "https://example.org/a"}),
    ("calculate", {"expression": "2+2"}),
]


@pytest.mark.parametrize(("tool", "args"), ALLOWED)
def test_legitimate_calls_are_allowed(guard: Guard, tool: str, args: dict[str, Any]) -> None:
    d = guard.check(tool, args)
    assert d.allowed, d.reason
    assert d.rule == "ok"


DENIED = [
    ("read_file", {"path": "../a2/secret.txt"}, "path.outside"),
    ("read_file", {"path": "to_a2/secret.txt"}, "path.outside"),  # symlink to another agent
    ("read_file", {"path": "chain1/pod.db"}, "path.forbidden"),  # symlink chain to the data dir
    ("read_file", {"path": "to_db"}, "path.forbidden"),
    ("read_file", {"path": "dangling"}, "path.outside"),  # dangling link pointing outside
    ("read_file", {"path": "../../../wiki/private/p2/diary.md"}, "path.outside"),
    ("read_file", {"path": "%2e%2e/a2/secret.txt"}, "path.outside"),
    ("read_file", {"path": "%252e%252e/a2/secret.txt"}, "path.outside"),
    ("read_file", {"path": "%c0%ae%c0%ae/a2"}, "path.encoding"),
    ("read_file", {"path": "..\uff0fa2"}, "path.unicode"),
    ("read_file", {"path": "..\u2215a2"}, "path.unicode"),
    ("read_file", {"path": "..\u200b/a2"}, "path.unicode"),
    ("read_file", {"path": "notes.md\x00../../pod.db"}, "path.control"),
    ("read_file", {"path": "..\\a2\\secret.txt"}, "path.outside"),
    ("read_file", {"path": "~/.ssh/id_rsa"}, "path.forbidden"),
    ("read_file", {"path": "$HOME/.bashrc"}, "path.outside"),
    ("read_file", {"path": "${DATA}/pod.db"}, "path.env"),
    ("read_file", {"path": "$OPENAI_API_KEY"}, "path.env"),
    ("read_file", {"path": "%HOME%/.netrc"}, "path.forbidden"),
    ("read_file", {"path": "file:///etc/passwd"}, "path.forbidden"),
    ("read_file", {"path": ".env"}, "path.forbidden"),  # even inside its own folder
    ("read_file", {"path": "p?d.db"}, "glob.forbidden"),
    ("read_file", {"path": "*"}, "path.forbidden"),  # a bare * here would reach to_db
    ("read_file", {"path": "sub/*/../../../a2/*"}, "glob.traversal"),
    ("read_file", {"path": "TO_A2/SECRET.TXT"}, "path.outside"),  # what a case-insensitive FS would open
    ("write_file", {"path": "../../../wiki/public/page1.md", "content": "x"}, "wiki.write"),
    ("write_file", {"path": "link_wiki/new.md", "content": "x"}, "wiki.write"),
    ("wiki_write", {"page": "page1", "text": "x"}, "wiki.write"),
    ("wiki_read", {"page": "../private/p2/diary"}, "wiki.page"),
    ("run_shell", {"command": "printenv"}, "shell.command"),
    ("run_shell", {"command": "env"}, "shell.command"),
    ("run_shell", {"command": "cat /proc/self/environ"}, "shell.forbidden"),
    ("run_shell", {"command": "cat p\"o\"d.db"}, "shell.forbidden"),
    ("run_shell", {"command": "cat ../a\\2/secret.txt"}, "path.outside"),
    ("run_shell", {"command": "cat $'\\x2e\\x2e/a2/secret.txt'"}, "shell.construct"),
    ("run_shell", {"command": "cat $(echo ../a2/secret.txt)"}, "shell.construct"),
    ("run_shell", {"command": "cat {notes.md,../a2/secret.txt}"}, "path.outside"),
    ("run_shell", {"command": "grep -f../a2/secret.txt notes.md"}, "path.outside"),
    ("run_shell", {"command": "cp notes.md ../../../wiki/public/x.md"}, "wiki.write"),
    ("run_shell", {"command": "grep -r KEY ."}, "path.forbidden"),  # would read ./.env
    ("run_shell", {"command": "bash -c 'cat notes.md'"}, "shell.command"),
    ("run_shell", {"command": "PATH=. x"}, "shell.assign"),
    ("run_shell", {"command": "./run.sh"}, "shell.exec"),
    ("web_fetch", {"url": "file:///etc/passwd"}, "url.scheme"),
    ("read_file", {"path": "notes.md", "person": "p2"}, "args.unknown"),
    ("read_file", {"path": ["notes.md"]}, "args.type"),
    ("read_file", {}, "args.missing"),
    ("read_file", "notes.md", "args.shape"),
    ("no_such_tool", {}, "tool.unknown"),
]


@pytest.mark.parametrize(("tool", "args", "rule"), DENIED)
def test_hostile_calls_are_denied_by_the_right_rule(guard: Guard, tool: str, args: Any, rule: str) -> None:
    d = guard.check(tool, args)
    assert not d.allowed
    assert d.rule == rule, d.reason
    assert d.reason


def test_a_hard_link_to_the_database_is_caught_by_inode(tree: Tree, guard: Guard) -> None:
    os.link(tree.data / "pod.db", tree.scratch / "harmless.txt")
    d = guard.check("read_file", {"path": "harmless.txt"})
    assert not d.allowed and d.rule == "path.forbidden"


def test_tools_outside_the_allowlist_are_refused(tree: Tree) -> None:
    g = Guard.for_binding({"person": "p1", "agent": "a1", "scratch": str(tree.scratch)}, tree.data,
                          Allowlist("a1", {"clock": ["current_time"]}), home=tree.home, env=tree.env)
    assert g.check("current_time", {"timezone": "UTC"}).allowed
    d = g.check("calculate", {"expression": "1"})
    assert not d.allowed and d.rule == "toolkit.not_allowed"
    d = g.check("run_shell", {"command": "ls"})
    assert not d.allowed and d.rule == "toolkit.not_allowed"


def test_every_decision_is_audited_without_secret_values(guard: Guard, audit: list[dict[str, Any]]) -> None:
    from vault import remember_secret

    remember_secret(SENTINEL)
    guard.check("read_file", {"path": "notes.md"})
    guard.check("read_file", {"path": f"../{SENTINEL}/x"})
    guard.check("run_shell", {"command": "printenv"})
    assert len(audit) == 3
    for ev in audit:
        assert set(ev) == {"type", "agent", "tool", "rule", "allowed", "reason"}
        assert ev["agent"] == "a1"
        assert SENTINEL not in repr(ev)
    assert [e["allowed"] for e in audit] == [True, False, False]
    assert "[secret hidden]" in audit[1]["reason"]


def test_mcp_shapes_fail_closed_and_scan_strings(guard: Guard) -> None:
    schema = {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"},
                                               "mode": {"enum": ["a", "b"]}, "opts": {"type": "object"}},
              "required": ["query"]}
    guard.allowlist = guard.allowlist.allow("mcp:files", ["search"])
    guard.register(shape_from_schema("search", "mcp:files", schema))
    assert guard.check("search", {"query": "bob", "limit": 3, "mode": "a"}).allowed
    assert guard.check("search", {"query": "bob", "mode": "c"}).rule == "args.type"
    assert guard.check("search", {"query": "../a2/secret.txt"}).rule == "path.outside"
    assert guard.check("search", {"query": "x", "opts": {"root": "~/.ssh"}}).rule == "path.forbidden"
    # A tool the server grew later is unknown to the guard and not allowed: refused twice over.
    assert guard.check("delete_all", {}).rule == "tool.unknown"
    guard.register(ToolShape("delete_all", "mcp:files", {}))
    assert guard.check("delete_all", {}).rule == "action.not_allowed"


def test_data_dir_under_a_forbidden_tree_still_works(tmp_path: Path) -> None:
    # A data dir inside the home's ~/.local/share (as on a desktop): its own folders stay usable.
    home = tmp_path / "home"
    data = home / ".local" / "share" / "Hearth"
    scratch = data / "agents" / "p" / "a"
    scratch.mkdir(parents=True)
    (scratch / "n.md").write_text("x")
    (home / ".local" / "share" / "keyrings").mkdir(parents=True)
    g = Guard.for_binding({"person": "p", "agent": "a", "scratch": str(scratch)}, data,
                          Allowlist("a", {"shell": ["run_shell"]}), home=home, env={"HOME": str(home)})
    assert g.path_decision("n.md").allowed
    assert g.path_decision(str(scratch / "n.md")).allowed
    assert g.path_decision("../../../../keyrings/x").rule == "path.forbidden"
    assert g.path_decision("../../../pod.db").rule == "path.forbidden"


def test_shapes_for_the_registered_tools(tree: Tree) -> None:
    from runtime_host.guard import shapes_for_tools
    from runtime_host.tools import TOOLKITS

    tools = [t for tk in TOOLKITS.values() for t in tk.values()]
    shapes = shapes_for_tools(tools)
    assert set(shapes) == {t.name for t in tools}
    al = Allowlist("a1", {t.toolkit: [x.name for x in tools if x.toolkit == t.toolkit] for t in tools})
    g = Guard.for_binding({"person": "p1", "agent": "a1", "scratch": str(tree.scratch)}, tree.data, al,
                          shapes=shapes, home=tree.home, env=tree.env)
    assert g.check("calculate", {"expression": "1+1"}).allowed
    assert g.check("append_note", {"text": "see ../../etc/passwd in the story"}).allowed  # text is not a path
    if "remember" in shapes:
        assert g.check("remember", {"fact": "Bob likes tea", "scope": "person"}).allowed
        assert g.check("remember", {"fact": "x", "scope": "other-person"}).rule == "args.type"
