"""Channels benchmark: the Telegram channel against the loopback fake Bot API, a real Pod and the fake model.

poll_to_answer_ms: from a user's message arriving at the (fake) Bot API to the bot's answer being
accepted by it: long-poll wake-up, turn through a warm worker, HTML conversion, sendMessage.
messages_per_s: a burst from several linked chats at once, until every message is answered.
Prints one JSON object as its last line: poll_to_answer_ms_p50, poll_to_answer_ms_p95, messages_per_s,
burst_messages, burst_chats.
"""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
import time
from pathlib import Path

from _common import pct

from runtime_host.channels.podport import PodChannelPort  # noqa: E402
from runtime_host.channels.telegram import TelegramChannel  # noqa: E402
from runtime_host.pod import Pod  # noqa: E402
from tests.helpers.fake_model import FakeModelServer, Text  # noqa: E402
from tests.helpers.fake_telegram import FakeTelegram  # noqa: E402

LATENCY_MESSAGES = 15  # one chat; the Pod allows 20 turns a minute per conversation
BURST_CHATS = 8
BURST_PER_CHAT = 10


async def link(ch: TelegramChannel, tg: FakeTelegram, person_id: str, user_id: int) -> None:
    tg.send_text(user_id, f"/link {ch.begin_link(person_id).code}")
    await asyncio.to_thread(tg.wait_sent, user_id, 1, 20)


async def main() -> dict[str, float]:
    logging.getLogger("hearth").setLevel(logging.ERROR)
    fake = FakeModelServer(lambda req: Text("**pong**: " + req.last_user)).start()
    tg = FakeTelegram().start()
    home = Path(tempfile.mkdtemp(prefix="hearth-bench-"))
    pod = Pod(home).first_person()
    pod.add_provider("fake", kind="openai-compatible", base_url=fake.base_url, model="fake-1")
    pod.add_agent("bench", provider="fake")
    port = PodChannelPort(pod.pod)
    ch = TelegramChannel(port, port.store, tg.token, base_url=tg.base_url, default_agent="bench",
                         poll_timeout_s=25, backoff_s=(0.05, 1.0))
    try:
        await ch.start()
        users = [500 + i for i in range(BURST_CHATS + 1)]
        for u in users:
            await link(ch, tg, pod.person.id, u)
        first = users[0]
        tg.send_text(first, "warm-up")  # spawns the worker
        await asyncio.to_thread(tg.wait_sent, first, 2, 30)

        latencies = []
        for i in range(LATENCY_MESSAGES):
            have = len(tg.sent_to(first))
            t = time.perf_counter()
            tg.send_text(first, f"ping {i}")
            await asyncio.to_thread(tg.wait_sent, first, have + 1, 30)
            latencies.append((time.perf_counter() - t) * 1000)

        burst = users[1:]
        t = time.perf_counter()
        for n in range(BURST_PER_CHAT):
            for u in burst:
                tg.send_text(u, f"burst {n}")
        for u in burst:
            await asyncio.to_thread(tg.wait_sent, u, 1 + BURST_PER_CHAT, 120)
        elapsed = time.perf_counter() - t
        total = BURST_CHATS * BURST_PER_CHAT
        for u in burst:  # every message answered once, in order
            texts = [m.text for m in tg.sent_to(u)[1:]]
            assert texts == [f"pong: burst {n}" for n in range(BURST_PER_CHAT)], texts
    finally:
        await ch.stop()
        port.close()
        await pod.close()
        tg.stop()
        fake.stop()
    return {
        "poll_to_answer_ms_p50": pct(latencies, 0.5),
        "poll_to_answer_ms_p95": pct(latencies, 0.95),
        "messages_per_s": round(total / elapsed, 1),
        "burst_messages": total,
        "burst_chats": BURST_CHATS,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
