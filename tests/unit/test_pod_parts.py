"""The Pod stays a thin facade over parts with one job each (issue 17): it composes them and delegates, and
neither it nor a part grows back into a service locator of 1,800 lines."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "runtime_host"
PARTS = ("turns", "agenthost", "memoryhost", "schedulehost", "taskhost", "partnerhost")


def _lines(name: str) -> int:
    return len((ROOT / f"{name}.py").read_text().splitlines())


def test_the_pod_and_its_parts_stay_small() -> None:
    sizes = {name: _lines(name) for name in ("pod", *PARTS)}
    assert sizes["pod"] <= 850, f"pod.py has {sizes['pod']} lines: give the new work a part of its own ({sizes})"
    too_big = {k: n for k, n in sizes.items() if k != "pod" and n > 600}
    assert too_big == {}, f"split these along their seams: {too_big}"


def test_each_part_registers_its_own_pod_tools(tmp_path: Path) -> None:
    from runtime_host.pod import Pod

    pod = Pod(tmp_path / "home")
    owners = {name: getattr(fn, "__self__", None) for name, fn in pod.pod_tools.items()}
    assert owners["remember"] is pod.memory_host and owners["search_memory"] is pod.memory_host
    assert owners["hand_off"] is pod.task_host and owners["wait_for_task"] is pod.task_host
    assert owners["ask_partner"] is pod.partner_host
    assert pod.pod_tools is pod.turn_driver.tools  # the turns dispatch what the parts registered
