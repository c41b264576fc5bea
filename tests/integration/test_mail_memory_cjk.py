"""A Japanese (ISO-2022-JP) or Chinese mail of whole sentences reaches memory with no model chosen: the keep-or-skip
rules counted words as runs of letters between spaces, so a paragraph was one or two "words" and was skipped."""
from __future__ import annotations

import asyncio

import pytest

from tests.helpers.mailservers import Dovecot, SmtpSink

TEXTS = {
    "ja": ("ISO-2022-JP", "iso2022_jp", "歯医者の予約",
           "歯医者の予約は来週の金曜日の午前十時に変更になりました。場所は東京駅前の山田歯科クリニックです。"),
    "zh": ("utf-8", "utf-8", "牙医预约", "您的牙医预约已改到下周五上午十点，地点在北京朝阳区王医生诊所三楼。"),
}


@pytest.mark.parametrize("lang", list(TEXTS))
async def test_a_cjk_mail_of_whole_sentences_reaches_memory(pod, lang) -> None:
    label, codec, subject, body = TEXTS[lang]
    with Dovecot({"alice": "secret"}) as d, SmtpSink() as s:
        acct = pod.mail.add_account(
            pod.person.id, "alice@example.org",
            imap={"host": "127.0.0.1", "port": d.port, "username": "alice", "security": "none", "timeout_s": 10},
            smtp={"host": "127.0.0.1", "port": s.port, "security": "none"},
            password="secret", rules=[], start_at="all").id
        d.deliver(b"From: Clinic <c@example.org>\r\nTo: alice@example.org\r\nSubject: appointment\r\n"
                  b"Message-ID: <cjk@example.org>\r\nMIME-Version: 1.0\r\n"
                  + f"Content-Type: text/plain; charset={label}\r\n\r\n".encode() + body.encode(codec) + b"\r\n")
        await asyncio.wait_for(pod.mail.poll(acct), 60)
        rep = (await pod.memory_produce())[0]
        assert rep["kept"] == 1, rep["skipped"]
