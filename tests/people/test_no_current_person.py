"""No module under runtime_host/ reads "the current person": the Pod keeps none, and every operation on a
person's data names its person (or runs in a PersonPod, bound to one person for good)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "runtime_host"
# Where "the first person" (the one who set Hearth up) is asked for, and why: never as "whoever is shown".
FIRST_PERSON_OK = {
    "store.py": "defines it",
    "pod.py": "creates the first person; first_person() is what the window opens on",
    "cli.py": "the default for --person",
    "serve.py": "a token made before tokens named their person",
    "memory_jobs.py": "owner(): shared scopes (public) and the one embedding index follow the first person's models",
    "channelhost.py": "a Telegram token saved before tokens named their keeper",
}


def _modules() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if p.name != "person.py")


def _base_is_pod(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id in ("pod", "self")) or \
        (isinstance(node, ast.Attribute) and node.attr == "pod")


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_reads_a_current_person(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("person", "switch_person") and _base_is_pod(node.value):
            bad.append(f"line {node.lineno}: .{node.attr}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "vault" \
                and not node.args and _base_is_pod(node.func.value):
            bad.append(f"line {node.lineno}: vault() of no one in particular")
        if isinstance(node, ast.Attribute) and node.attr == "default_person" and path.name not in FIRST_PERSON_OK:
            bad.append(f"line {node.lineno}: default_person outside {sorted(FIRST_PERSON_OK)}")
    assert not bad, f"{path.name} reads a current person: {bad}"


def test_the_pod_has_no_person_and_a_person_pod_cannot_be_repointed(tmp_path: Path) -> None:
    from runtime_host.pod import Pod

    pod = Pod(tmp_path)
    try:
        assert not hasattr(pod, "person") and not hasattr(pod, "switch_person") and not hasattr(pod, "vault")
        pod.add_person("Bob", "bob-passphrase-1")
        me, bob = pod.first_person(), pod.unlock("Bob", "bob-passphrase-1")
        with pytest.raises(AttributeError, match="bound to Me for good"):
            me.person = bob.person
        assert (me.person.name, bob.person.name) == ("Me", "Bob") and not hasattr(pod, "person")
    finally:
        import asyncio

        asyncio.run(pod.close())
