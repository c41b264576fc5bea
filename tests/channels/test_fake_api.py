"""The fake Bot API keeps the real contract (so the channel is tested against what Telegram does), and the
bot token lives in the vault, never in the database."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from runtime_host.channels.base import ChannelError
from runtime_host.channels.telegram import VAULT_KEY, load_bot_token, save_bot_token
from tests.helpers.fake_telegram import FakeTelegram


@pytest.fixture
def api(tg: FakeTelegram) -> Iterator[Any]:
    with httpx.Client(timeout=10) as client:
        def call(method: str, token: str | None = None, **params: Any) -> tuple[int, dict[str, Any]]:
            r = client.post(f"{tg.base_url}/bot{token or tg.token}/{method}", json=params)
            return r.status_code, r.json()
        yield call


def test_envelope_token_and_methods(tg: FakeTelegram, api: Any) -> None:
    assert api("getMe") == (200, {"ok": True, "result": {**tg.bot, "can_join_groups": True,
                                                         "can_read_all_group_messages": False,
                                                         "supports_inline_queries": False}})
    assert api("getMe", token="1:wrong") == (401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
    assert api("noSuchMethod")[0] == 404


def test_send_message_rules(tg: FakeTelegram, api: Any) -> None:
    assert api("sendMessage", chat_id=5, text="hi")[1]["description"] == "Bad Request: chat not found"
    tg.send_text(5, "hello")
    assert api("sendMessage", chat_id=5, text="")[1]["description"] == "Bad Request: message text is empty"
    assert api("sendMessage", chat_id=5, text="x" * 4097)[1]["description"] == "Bad Request: message is too long"
    ok, body = api("sendMessage", chat_id=5, text="<b>" + "x" * 4096 + "</b>", parse_mode="HTML")
    assert ok == 200 and body["result"]["entities"] == [{"type": "b", "offset": 0, "length": 4096}]
    code, body = api("sendMessage", chat_id=5, text="1 < 2", parse_mode="HTML")
    assert (code, body["description"]) == (400, 'Bad Request: can\'t parse entities: Unsupported start tag "" at '
                                                'byte offset 2')
    code, body = api("sendMessage", chat_id=5, text="<b>x</i>", parse_mode="HTML")
    assert body["description"].endswith('Unmatched end tag at byte offset 4, expected "</b>", found "</i>"')
    code, body = api("sendMessage", chat_id=5, text="<b>x", parse_mode="HTML")
    assert body["description"].endswith('Can\'t find end tag corresponding to start tag "b"')
    markup = {"inline_keyboard": [[{"text": "ok", "callback_data": "x" * 65}]]}
    assert api("sendMessage", chat_id=5, text="a", reply_markup=markup)[1]["description"] == \
        "Bad Request: BUTTON_DATA_INVALID"
    tg.blocked.add(5)
    assert api("sendMessage", chat_id=5, text="a")[0] == 403


def test_get_updates_offset_long_poll_and_conflict(tg: FakeTelegram, api: Any) -> None:
    first = tg.send_text(7, "one")
    tg.send_text(7, "two")
    assert [u["update_id"] for u in api("getUpdates")[1]["result"]] == [first, first + 1]
    assert [u["update_id"] for u in api("getUpdates", offset=first + 1)[1]["result"]] == [first + 1]
    assert api("getUpdates", offset=first)[1]["result"][0]["update_id"] == first + 1  # confirmed stays gone
    t = time.monotonic()
    assert api("getUpdates", offset=first + 2, timeout=1)[1]["result"] == []
    assert 0.9 < time.monotonic() - t < 3
    threading.Timer(0.3, tg.send_text, args=(7, "late")).start()
    t = time.monotonic()
    got = api("getUpdates", offset=first + 2, timeout=5)[1]["result"]
    assert [u["message"]["text"] for u in got] == ["late"] and time.monotonic() - t < 2
    results: list[Any] = []
    waiter = threading.Thread(target=lambda: results.append(api("getUpdates", offset=first + 3, timeout=3)))
    waiter.start()
    time.sleep(0.3)
    api("getUpdates", offset=first + 3, timeout=0)
    waiter.join()
    assert results[0][0] == 409 and "terminated by other getUpdates request" in results[0][1]["description"]


def test_callbacks_files_and_faults(tg: FakeTelegram, api: Any) -> None:
    tg.send_text(8, "hi")
    msg = api("sendMessage", chat_id=8, text="card",
              reply_markup={"inline_keyboard": [[{"text": "Yes", "callback_data": "c:1:a"}]]})[1]["result"]
    qid = tg.press(8, tg.messages[(8, msg["message_id"])], "c:1:a")
    assert api("answerCallbackQuery", callback_query_id=qid, text="Done")[1]["ok"]
    assert api("answerCallbackQuery", callback_query_id=qid)[0] == 400  # once only
    same = {"inline_keyboard": [[{"text": "Yes", "callback_data": "c:1:a"}]]}
    assert "not modified" in api("editMessageReplyMarkup", chat_id=8, message_id=msg["message_id"],
                                 reply_markup=same)[1]["description"]
    tg.send_voice(8, b"OggS-bytes")
    voice = api("getUpdates")[1]["result"][-1]["message"]["voice"]
    f = api("getFile", file_id=voice["file_id"])[1]["result"]
    assert httpx.get(f"{tg.base_url}/file/bot{tg.token}/{f['file_path']}").content == b"OggS-bytes"
    tg.fail_next("getMe", "502")
    r = httpx.post(f"{tg.base_url}/bot{tg.token}/getMe")
    assert r.status_code == 502 and r.headers["content-type"] == "text/html"
    tg.fail_next("getMe", "429", seconds=3)
    assert api("getMe")[1]["parameters"] == {"retry_after": 3}
    tg.fail_next("getMe", "drop")
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(f"{tg.base_url}/bot{tg.token}/getMe")
    tg.down()
    with pytest.raises(httpx.ConnectError):
        httpx.post(f"{tg.base_url}/bot{tg.token}/getMe")
    tg.up()
    assert api("getMe")[0] == 200


def test_token_kept_in_the_vault(secure_keyring: str) -> None:
    from vault import Vault

    vault = Vault("test-channels/person/p1")
    try:
        with pytest.raises(ChannelError, match="@BotFather"):
            save_bot_token(vault, "hello")
        with pytest.raises(ChannelError, match="No Telegram bot token"):
            load_bot_token(vault)
        token = "123456789:AAE" + "x" * 32
        save_bot_token(vault, f"  {token}\n")
        assert load_bot_token(vault) == token
    finally:
        vault.delete(VAULT_KEY)
