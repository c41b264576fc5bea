"""Size bounds through the real worker: huge answers never brick a conversation, huge tool results are
cut with a note, and one oversized message is refused before anything is written."""

from __future__ import annotations

import asyncio

import pytest

from runtime_host.pod import MessageTooLarge
from runtime_host.protocol import MAX_LINE_BYTES
from runtime_host.sizes import MAX_MESSAGE_BYTES
from tests.helpers.fake_model import Text, ToolCalls

FIVE_MB = 5 * 1024 * 1024


async def test_two_5_mb_answers_do_not_brick_the_conversation(pod, script, fake_model) -> None:
    script([Text("a" * FIVE_MB, chunk_chars=256 * 1024), Text("b" * FIVE_MB, chunk_chars=256 * 1024),
            Text("still here")])
    r1 = await asyncio.wait_for(pod.chat("helper", "write a lot"), 120)
    r2 = await asyncio.wait_for(pod.chat("helper", "more"), 120)
    assert r1.ok and r2.ok, (r1.error, r2.error)
    assert len(r1.text) == FIVE_MB and len(r2.text) == FIVE_MB  # the person gets the whole answers
    # 10 MB of history is more than one pipe line: the next turn must still work, with the real worker.
    r3 = await asyncio.wait_for(pod.chat("helper", "are you there?"), 120)
    assert r3.ok, r3.error
    assert r3.text == "still here" and r3.conversation_id == r1.conversation_id
    sent = fake_model.requests[-1].messages
    assert sent[-1]["content"] == "are you there?"
    assert sum(len(m.get("content") or "") for m in sent) < MAX_LINE_BYTES
    # The earlier answers are there as excerpts that say so; the conversation keeps them whole.
    assert any("cut off by Hearth" in (m.get("content") or "") for m in sent)
    kept = [m.content for m in pod.store.list_messages(r1.conversation_id) if m.role == "assistant"]
    assert [len(k) for k in kept] == [FIVE_MB, FIVE_MB, len("still here")]


async def test_a_huge_tool_result_is_cut_with_a_note(pod, script, fake_model) -> None:
    import sys
    from pathlib import Path

    server = [sys.executable, str(Path(__file__).resolve().parents[1] / "helpers" / "mcp_prices.py"), "--catalogue"]
    await pod.mcp.add_server(pod.person.id, "prices", command=server)
    pod.edit_agent("helper", toolkits=["clock"])
    pod.allow_mcp("helper", "prices")
    script([ToolCalls([("prices__catalogue", {"lines": 500_000})]),  # about 10 MB, more than a pipe line
            lambda req: Text(f"got {len(req.tool_results[-1])} characters")])
    r = await asyncio.wait_for(pod.chat("helper", "the whole price list please"), 120)
    assert r.ok, r.error
    result = fake_model.requests[-1].tool_results[-1]
    assert "item 0: 3.50 EUR" in result and len(result) < 300 * 1024
    assert "cut off by Hearth" in result and "tool result" in result
    step = pod.turns(r.conversation_id)[0]["steps"][1]
    assert "cut off by Hearth" in step["result"]["output"]


async def test_an_oversized_message_is_refused_before_anything_is_written(pod, script, fake_model) -> None:
    script([Text("ok")])
    huge = "z" * (MAX_MESSAGE_BYTES + 1)
    with pytest.raises(MessageTooLarge, match=r"at most 1\.0 MB.*Nothing was sent"):
        await pod.start_turn("helper", huge)
    assert fake_model.requests == []
    assert pod.turns() == []
    r = await asyncio.wait_for(pod.chat("helper", "small one"), 60)
    assert r.ok and r.text == "ok"


async def test_a_message_with_a_broken_character_is_refused_before_anything_is_written(pod, script, fake_model) -> None:
    """A lone surrogate (a byte that was not text, decoded with surrogateescape) reached the database, which
    refused it with a traceback after the conversation and the turn were written: an empty conversation each time."""
    import httpx

    from runtime_host.serve import make_app, new_token

    script([Text("ok")])
    broken = "Caf\udce9 Nicola at 9"
    with pytest.raises(MessageTooLarge, match=r"broken character \(at character 4\).*Nothing was sent"):
        await pod.start_turn("helper", broken)
    with pytest.raises(MessageTooLarge, match=r"broken character"):
        pod.create_background_run("helper", broken)
    token = new_token(pod)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=make_app(pod)), base_url="http://pod") as c:
        r = await c.post("/v1/chat", content=b'{"agent": "helper", "message": "Caf\\udce9"}',
                         headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    assert r.status_code == 400 and "broken character" in r.json()["error"], r.text
    assert fake_model.requests == [] and pod.turns() == [] and pod.list_conversations("helper") == []
    r = await asyncio.wait_for(pod.chat("helper", "Café Nicola at 9"), 60)
    assert r.ok and r.text == "ok"
    kept = [(m.role, m.content) for m in pod.store.list_messages(r.conversation_id)]
    mine = pod.store.list_messages(r.conversation_id)[0]
    with pytest.raises(MessageTooLarge, match=r"broken character"):  # an edit: the exchange it replaces stays
        await pod.answer_again(r.conversation_id, mine.id, broken)
    assert [(m.role, m.content) for m in pod.store.list_messages(r.conversation_id)] == kept == [
        ("user", "Café Nicola at 9"), ("assistant", "ok")]


async def test_serve_answers_413_with_the_reason(pod, script, fake_model) -> None:
    import httpx

    from runtime_host.serve import make_app, new_token

    script([Text("ok")])
    token = new_token(pod)
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=make_app(pod)), base_url="http://pod") as c:
        r = await c.post("/v1/chat", json={"agent": "helper", "message": "y" * (MAX_MESSAGE_BYTES + 10)}, headers=auth)
        assert r.status_code == 413 and "at most 1.0 MB" in r.json()["error"]
        r = await c.post("/v1/chat", content=b'{"agent": "helper", "message": "' + b"y" * (5 * MAX_MESSAGE_BYTES) + b'"}',
                         headers={**auth, "Content-Type": "application/json"})
        assert r.status_code == 413 and "at most 1.0 MB" in r.json()["error"]
        ok = await c.post("/v1/chat", json={"agent": "helper", "message": "small"}, headers=auth)
        assert ok.status_code == 200 and ok.json()["text"] == "ok"
    assert pod.turns()[0]["status"] == "done" and len(pod.turns()) == 1


def test_the_cli_refuses_an_oversized_message_from_stdin(home, fake_model, script) -> None:
    from tests.integration.test_cli import cli, setup_agent

    setup_agent(home, fake_model.base_url)
    script([Text("ok")])
    r = cli(home, "chat", "helper", "-", stdin="w" * (2 * MAX_MESSAGE_BYTES))
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: This message is 2.0 MB; Hearth takes at most 1.0 MB") and "Traceback" not in r.stderr
    assert fake_model.requests == []
    r = cli(home, "chat", "helper", "-", stdin="a normal question")
    assert r.returncode == 0 and r.stdout.strip() == "ok"


async def test_telegram_replies_with_the_reason(pod, script) -> None:
    from runtime_host.channels.podport import PodChannelPort
    from runtime_host.channels.telegram import TelegramChannel
    from tests.channels.conftest import OWNER, link_owner, sent
    from tests.helpers.fake_telegram import FakeTelegram

    script([Text("ok")])
    tg = FakeTelegram().start()
    port = PodChannelPort(pod.pod)
    ch = TelegramChannel(port, port.store, tg.token, base_url=tg.base_url, default_agent="helper", poll_timeout_s=1.0,
                         http_grace_s=1.0, backoff_s=(0.05, 0.4))
    try:
        await ch.start()
        await link_owner(ch, tg, pod.person.id)
        before = len(tg.sent_to(OWNER))
        tg.send_text(OWNER, "q" * (MAX_MESSAGE_BYTES + 1))
        reply = (await sent(tg, OWNER, before + 1))[-1]
        assert "at most 1.0 MB" in reply.text and "Nothing was sent" in reply.text
        assert pod.turns() == []
    finally:
        await asyncio.wait_for(ch.stop(), 10)
        port.close()
        tg.stop()


async def test_a_runaway_answer_stops_at_the_limit_with_a_note(pod, script) -> None:
    from runtime_host.sizes import MAX_ANSWER_BYTES

    script([Text("r" * (8 * 1024 * 1024), chunk_chars=256 * 1024), Text("next")])
    r = await asyncio.wait_for(pod.chat("helper", "never stop"), 120)
    assert r.ok, r.error
    assert len(r.text) <= MAX_ANSWER_BYTES and r.text.startswith("rrrr")
    assert r.text.rstrip().endswith("the model wrote more and Hearth stopped reading.]")
    assert (await asyncio.wait_for(pod.chat("helper", "and now?"), 120)).text == "next"
