"""After a session that used keys, no key value is anywhere it should not be: the database file, the
logs, any worker's argv or environment, the audit log."""

from __future__ import annotations

import asyncio
import logging

import psutil

from tests.helpers.fake_model import Text, ToolCalls

PROVIDER_KEY = "sk-live-Hx81Q-provider-key-5521"
MAIL_PASSWORD = "mail-password-Zw9!-4410"


def worker_processes() -> list[psutil.Process]:
    me = psutil.Process()
    return [c for c in me.children(recursive=True) if "runtime_host.worker" in " ".join(c.cmdline())]


async def test_no_key_value_leaks_after_a_session(pod, script, fake_model, secure_keyring, caplog) -> None:
    from runtime_host.logs import remove_logging, setup_logging

    setup_logging(pod.home)
    try:
        await _session(pod, script, fake_model, caplog)
    finally:
        remove_logging()


async def _session(pod, script, fake_model, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    pod.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1", key=PROVIDER_KEY)
    pod.edit_agent("helper", toolkits=["notes", "memory", "files", "clock"])
    script([ToolCalls([("append_note", {"text": "remember the plan"})]),
            ToolCalls([("read_file", {"path": "/proc/self/environ"})]),
            lambda req: Text("done")], repeat_last=True)
    r = await asyncio.wait_for(pod.chat("helper", "work with your key"), 60)
    assert r.ok, r.error
    assert fake_model.requests[0].headers["authorization"] == f"Bearer {PROVIDER_KEY}"  # the key was used
    pod.vault().set("mail/x/imap", MAIL_PASSWORD)
    logging.getLogger("hearth.test").warning("a log line that mentions %s by mistake", PROVIDER_KEY)

    procs = worker_processes()
    assert procs, "a worker should still be running"
    for p in procs:
        assert PROVIDER_KEY not in " ".join(p.cmdline())
        assert not any(PROVIDER_KEY in v for v in p.environ().values())
    for f in pod.home.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert PROVIDER_KEY.encode() not in data, f"the provider key leaked into {f}"
            assert MAIL_PASSWORD.encode() not in data, f"the mail password leaked into {f}"
    assert PROVIDER_KEY not in str(pod.audit_log())
    assert all(PROVIDER_KEY not in rec.getMessage() for rec in caplog.records if rec.name.startswith("hearth"))
    # the guard refused the attempt to read the worker's environment, and said so in the audit log
    assert any(e["action"] == "denied" and "read_file" in e["summary"] for e in pod.audit_log(kind="guard"))
