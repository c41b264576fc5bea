from __future__ import annotations

from pathlib import Path

import pytest

from runtime_host.store import MIGRATIONS, Store, StoreError, step_tree


def test_migrations_are_recorded_once_and_in_order(tmp_path: Path) -> None:
    db = tmp_path / "pod.db"
    s = Store(db)
    assert s.applied_migrations() == [name for name, _ in MIGRATIONS]
    s.close()
    again = Store(db)
    assert again.migrate() == []  # nothing applied twice
    mode = again.engine.connect().exec_driver_sql("PRAGMA journal_mode").scalar()
    assert mode == "wal"


def test_duplicate_agent_name_is_a_clear_error(tmp_path: Path) -> None:
    s = Store(tmp_path / "pod.db")
    person = s.default_person()
    s.add_agent(person.id, "ada", provider=None, model=None, system="")
    with pytest.raises(StoreError, match="already exists"):
        s.add_agent(person.id, "ada", provider=None, model=None, system="")


def test_step_tree_rebuilds_nesting_from_the_store_alone(tmp_path: Path) -> None:
    s = Store(tmp_path / "pod.db")
    person = s.default_person()
    inst = s.add_agent(person.id, "ada", provider=None, model=None, system="")
    conv = s.create_conversation(inst.id)
    turn = s.create_turn(conv.id, inst.id)
    s.start_step(turn.id, "m1", kind="model", name="m", parent_id=None, arguments=None, call_id=None)
    s.start_step(turn.id, "sub", kind="tool", name="delegate", parent_id=None, arguments={"task": "x"}, call_id="c1")
    s.start_step(turn.id, "inner", kind="tool", name="calculate", parent_id="sub", arguments={"expression": "1+1"}, call_id="c2")
    s.finish_step("inner", "finished", {"output": "2"})
    s.start_step(turn.id, "m1", kind="model", name="dup", parent_id=None, arguments=None, call_id=None)  # re-sent: once
    s.close()
    tree = step_tree(Store(tmp_path / "pod.db").list_steps(turn.id))
    assert [n["id"] for n in tree] == ["m1", "sub"]
    assert tree[1]["children"][0]["id"] == "inner"
    assert tree[1]["children"][0]["result"] == {"output": "2"}
    assert tree[0]["name"] == "m"
