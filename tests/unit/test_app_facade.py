"""Widgets never reach under the Pod: no module under app/ touches `pod.store`, a store engine, a Pod part's
private fields, or the store / schedule / task / mail-ledger functions. They call the Pod interface, the same
one the remote window has, so what one window can do does not depend on being in the Pod's process."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = sorted((ROOT / "app").rglob("*.py"))

# Modules whose functions take the store's engine: from these a widget may import only error types
# (and the machine's time zone name, which is the window's own machine, not the Pod's).
INTERNAL = ("runtime_host.store", "runtime_host.schedule", "runtime_host.tasks", "runtime_host.mail.ledger",
            "runtime_host.conversations")
ALLOWED_NAMES = {"local_zone"}


def _reaches_pod(node: ast.AST) -> bool:
    """True for `pod`, `self.pod`, `x.pod.mail` ...: an expression that goes through a Pod."""
    while isinstance(node, ast.Attribute):
        if node.attr == "pod":
            return True
        node = node.value
    return isinstance(node, ast.Name) and node.id == "pod"


def _problems(path: Path, root: Path = ROOT) -> list[str]:
    out = []
    where = path.relative_to(root)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Attribute) and _reaches_pod(node.value):
            if node.attr in ("store", "engine"):
                out.append(f"{line} reaches pod.{node.attr}")
            elif node.attr.startswith("_"):
                out.append(f"{line} reaches a private field {node.attr} under the Pod")
        elif isinstance(node, ast.Import):
            out += [f"{line} imports {a.name}" for a in node.names if a.name.startswith(INTERNAL)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            full = [f"{node.module}.{a.name}" for a in node.names]
            out += [f"{line} imports {f}" for f in full if f in INTERNAL]
            if node.module in INTERNAL:
                out += [f"{line} imports {node.module}.{a.name}" for a in node.names
                        if not (a.name.endswith("Error") or a.name in ALLOWED_NAMES)]
    return out


def test_rule_sees_each_way_of_reaching_under_the_pod(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from runtime_host import schedule\nfrom runtime_host.mail import ledger\n"
                   "import runtime_host.tasks\nfrom runtime_host.store import Turn, StoreError\n"
                   "def f(self, pod):\n    pod.store.get_turn('x')\n    self.pod.store.engine\n"
                   "    self.pod.mail._rooms.pop('a')\n")
    found = _problems(bad, tmp_path)
    assert len(found) == 8, found  # pod.store.engine counts twice; StoreError is allowed, Turn is not
    assert not any("StoreError" in f for f in found)


def test_no_widget_reaches_under_the_pod() -> None:
    problems = [p for path in APP for p in _problems(path)]
    assert not problems, "app/ must call the Pod interface, not its store or parts:\n" + "\n".join(problems)
