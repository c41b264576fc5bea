"""The core never imports Qt or the app; the worker never imports Qt, the ORM or the store."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
import {mods}
print(json.dumps(sorted(m for m in sys.modules)))
"""


def loaded_after(mods: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(mods=mods)], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


@pytest.mark.parametrize("mods", ["runtime_host, runtime_host.pod, runtime_host.cli", "wiki_engine", "vault"])
def test_core_packages_load_no_qt_and_no_app(mods: str) -> None:
    loaded = loaded_after(mods)
    assert not {m for m in loaded if m.split(".")[0] in {"PySide6", "qasync", "app", "shiboken6"}}


def test_worker_loads_no_qt_no_orm_no_store() -> None:
    loaded = loaded_after("runtime_host.worker.__main__, runtime_host.worker.loop")
    banned = {"PySide6", "qasync", "app", "sqlmodel", "sqlalchemy", "keyring"}
    assert not {m for m in loaded if m.split(".")[0] in banned}
    assert "runtime_host.store" not in loaded and "runtime_host.pod" not in loaded


def test_worker_readiness_path_is_stdlib_only() -> None:
    # What the worker imports before it says `ready`: no httpx (it is preloaded after ready).
    loaded = loaded_after("runtime_host.worker.__main__")
    assert "httpx" not in loaded


# -- the same rules read from the source: every import, at module level, inside functions or under TYPE_CHECKING

import ast  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("runtime_host", "wiki_engine", "vault", "unseen", "app")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PRODUCT:
        for p in (ROOT / pkg).rglob("*.py"):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = p
    return out


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """Every module `name` imports anywhere in its source (absolute names, as written or resolved)."""
    path = MODULES[name]
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                mod = ".".join(base[: len(base) - node.level + 1] + ([mod] if mod else []))
            for a in node.names:
                found.add(f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod)
    return found


def _ours(imported: str) -> str | None:
    parts = imported.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in MODULES:
            return ".".join(parts[:i])
    return None


GRAPH = {m: {o for i in _imports(m) if (o := _ours(i)) and o != m} for m in MODULES}


def _unit(module: str) -> str:
    """A top-level runtime_host module, a runtime_host subpackage with its parts, or a whole other package."""
    parts = module.split(".")
    if parts[0] != "runtime_host" or len(parts) == 1:
        return parts[0]
    head = ".".join(parts[:2])
    return head if (ROOT / "runtime_host" / parts[1] / "__init__.py").exists() else module


def _offenders(prefixes: tuple[str, ...], banned: tuple[str, ...]) -> list[str]:
    return sorted(f"{m} imports {i}" for m in MODULES if m.startswith(prefixes)
                  for i in _imports(m) if i.split(".")[0] in banned or i.startswith(tuple(b + "." for b in banned))
                  or i in banned)


def test_the_walk_sees_imports_inside_functions() -> None:
    # pod imports the mail host inside a property: the walk must see it
    assert "runtime_host.mailhost" in GRAPH["runtime_host.pod"]


def test_no_core_module_imports_qt_or_the_app_anywhere() -> None:
    assert _offenders(("runtime_host", "wiki_engine", "vault"), ("PySide6", "qasync", "shiboken6", "app")) == []


def test_wiki_engine_and_vault_import_nothing_of_ours_anywhere() -> None:
    assert _offenders(("wiki_engine",), ("runtime_host", "vault", "app")) == []
    assert _offenders(("vault",), ("runtime_host", "wiki_engine", "app")) == []


def test_unseen_imports_nothing_of_ours_and_nothing_but_the_standard_library() -> None:
    """The characters text shows nothing for, defined once for the core packages and the worker alike."""
    assert _offenders(("unseen",), ("runtime_host", "wiki_engine", "vault", "app")) == []
    assert {i.split(".")[0] for i in _imports("unseen")} <= set(sys.stdlib_module_names) | {"__future__"}


def test_the_worker_imports_no_qt_orm_store_or_pod_anywhere() -> None:
    banned = ("PySide6", "qasync", "app", "sqlmodel", "sqlalchemy", "keyring", "runtime_host.store", "runtime_host.pod")
    assert _offenders(("runtime_host.worker",), banned) == []


def test_no_product_module_imports_a_benchmark_or_a_test() -> None:
    assert _offenders(PRODUCT, ("bench", "tests", "_common")) == []


def test_mail_channels_and_mcp_do_not_import_the_pod() -> None:
    users = ("runtime_host.mailhost", "runtime_host.channelhost", "runtime_host.mcphost", "runtime_host.channels",
             "runtime_host.mail")
    assert _offenders(users, ("runtime_host.pod",)) == []


def test_no_import_circle_between_product_modules() -> None:
    """Tarjan's strongly connected components over the whole import graph; a circle inside one subpackage
    (a package and its own parts) is allowed, one across modules is not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len({_unit(m) for m in comp}) > 1:
                circles.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert circles == [], circles
