"""The log file: under <data>/logs, rotated by size, and no secret the vault knows ever reaches it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime_host.logs import BACKUP_COUNT, log_file, remove_logging, setup_logging, tail
from vault import remember_secret

SECRET = "sk-live-Zq8cU2pW9xLr4TbN7mKe"


@pytest.fixture
def logs(tmp_path: Path) -> Iterator[Path]:
    root = logging.getLogger()
    hearth = logging.getLogger("hearth")
    levels = root.level, hearth.level
    remember_secret(SECRET)
    try:
        yield tmp_path
    finally:
        remove_logging()
        root.setLevel(levels[0])
        hearth.setLevel(levels[1])


def test_hearth_lines_go_to_the_data_folder(logs: Path) -> None:
    setup_logging(logs)
    logging.getLogger("hearth.pod").info("worker %s is ready", "helper")
    logging.getLogger("some.library").info("chatter below WARNING stays out")
    logging.getLogger("some.library").warning("a library warning goes in")
    text = log_file(logs).read_text(encoding="utf-8")
    assert log_file(logs) == logs / "logs" / "hearth.log"
    assert "INFO" in text and "hearth.pod" in text and "worker helper is ready" in text
    assert "chatter" not in text and "a library warning goes in" in text


def test_known_secrets_are_hidden_in_messages_arguments_and_tracebacks(logs: Path) -> None:
    setup_logging(logs)
    log = logging.getLogger("hearth.providers")
    log.info(f"key in the message {SECRET}")
    log.info("key as an argument %s", SECRET)
    log.info("key inside a structure %r", {"headers": {"authorization": f"Bearer {SECRET}"}})
    try:
        raise RuntimeError(f"the server rejected {SECRET}")
    except RuntimeError:
        log.exception("request failed")
    text = log_file(logs).read_text(encoding="utf-8")
    assert SECRET not in text
    assert text.count("[secret hidden]") >= 4
    assert "RuntimeError: the server rejected [secret hidden]" in text  # the traceback is still readable
    assert all(SECRET not in line for line in tail(logs))


def test_the_log_rotates_and_keeps_a_bounded_number_of_files(logs: Path) -> None:
    setup_logging(logs, max_bytes=2000, backup_count=3)
    log = logging.getLogger("hearth.test")
    for i in range(400):
        log.info("line %04d %s", i, "x" * 40)
    files = sorted(p.name for p in (logs / "logs").iterdir())
    assert files == ["hearth.log", "hearth.log.1", "hearth.log.2", "hearth.log.3"]
    assert all((logs / "logs" / f).stat().st_size <= 2000 for f in files)
    assert "line 0399" in log_file(logs).read_text(encoding="utf-8")  # the newest lines are in the current file
    assert tail(logs, 2)[-1].endswith("line 0399 " + "x" * 40)
    assert BACKUP_COUNT >= 3


def test_setting_up_again_replaces_the_handler(logs: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    other = tmp_path_factory.mktemp("other")
    setup_logging(logs)
    setup_logging(other)
    ours = [h for h in logging.getLogger().handlers if getattr(h, "_hearth_log_handler", False)]
    assert len(ours) == 1
    logging.getLogger("hearth.x").info("only in the second folder")
    assert "only in the second folder" in log_file(other).read_text(encoding="utf-8")
    assert not log_file(logs).exists() or "only in the second" not in log_file(logs).read_text(encoding="utf-8")


def test_tail_of_a_missing_log_is_empty(tmp_path: Path) -> None:
    assert tail(tmp_path) == []
