"""A fake Telegram Bot API on 127.0.0.1 that speaks the real HTTP contract, scriptable from tests.

Every call is /bot<token>/METHOD (GET query, form or JSON body) answering {"ok": true, "result": ...}
or {"ok": false, "error_code": N, "description": "..."}; a wrong token gets 401 Unauthorized, an
unknown method 404 Not Found. Implemented as Telegram documents and behaves:
- getUpdates: long polling honouring offset (confirms every update below it; negative counts from
  the end), limit 1-100, timeout, allowed_updates (remembered between calls); a second concurrent
  getUpdates ends the first with 409 Conflict.
- sendMessage: chat must exist (the user wrote first) and not have blocked the bot; text 1-4096
  UTF-16 units after entity parsing; parse_mode HTML parsed like Telegram's own parser (supported
  tags only, entities &lt; &gt; &amp; &quot; and numeric; errors "Bad Request: can't parse
  entities: ..." with the byte offset); inline keyboards with callback_data 1-64 bytes.
- editMessageReplyMarkup ("message is not modified" when nothing changes), answerCallbackQuery (once
  per query), sendChatAction, getMe, deleteWebhook, getFile + GET /file/bot<token>/<file_path>
  (20 MB limit for bots).
Scripting: inject user messages, button presses and voice notes; make the next calls fail with 502
(an HTML page, as Telegram's front end sends), 429 with retry_after, a dropped connection or a hang;
take the whole server down (connections refused) and bring it back on the same port.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

MAX_TEXT = 4096
MAX_BOT_DOWNLOAD = 20 * 1024 * 1024
SUPPORTED_TAGS = {"a", "b", "strong", "i", "em", "s", "strike", "del", "u", "ins", "tg-spoiler", "tg-emoji", "span",
                  "pre", "code", "blockquote"}
UPDATE_TYPES = ("message", "edited_message", "callback_query")


class EntityParseError(Exception):
    pass


def utf16_len(s: str) -> int:
    return sum(2 if ord(c) > 0xFFFF else 1 for c in s)


def _decode_entity(text: str, i: int) -> tuple[str, int] | None:
    """Telegram decodes only &lt; &gt; &amp; &quot; and numeric entities; anything else stays a literal '&'."""
    m = re.compile(r"&(lt|gt|amp|quot|#\d{1,7}|#x[0-9a-fA-F]{1,6});").match(text, i)
    if not m:
        return None
    name = m.group(1)
    if name.startswith("#x"):
        ch = chr(int(name[2:], 16)) if int(name[2:], 16) <= 0x10FFFF else "\ufffd"
    elif name.startswith("#"):
        ch = chr(int(name[1:])) if int(name[1:]) <= 0x10FFFF else "\ufffd"
    else:
        ch = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}[name]
    return ch, m.end()


def parse_html(text: str) -> tuple[str, list[dict[str, Any]]]:
    """Text and entities from Telegram HTML, or EntityParseError with Telegram's own wording."""
    out: list[str] = []
    entities: list[dict[str, Any]] = []
    stack: list[tuple[str, int, dict[str, str]]] = []  # tag, utf16 offset, attributes
    i, n = 0, len(text)

    def boff(k: int) -> int:
        return len(text[:k].encode("utf-8"))

    def pos16() -> int:
        return utf16_len("".join(out))

    while i < n:
        c = text[i]
        if c == "&":
            dec = _decode_entity(text, i)
            if dec:
                out.append(dec[0])
                i = dec[1]
                continue
            out.append("&")
            i += 1
            continue
        if c != "<":
            out.append(c)
            i += 1
            continue
        begin = i
        i += 1
        if i < n and text[i] == "/":
            i += 1
            j = i
            while i < n and (text[i].isalnum() or text[i] in "-_"):
                i += 1
            name = text[j:i].lower()
            while i < n and text[i] in " \t\n\r":
                i += 1
            if i >= n or text[i] != ">":
                raise EntityParseError(f"Unclosed end tag at byte offset {boff(begin)}")
            i += 1
            if not stack:
                raise EntityParseError(f"Unexpected end tag at byte offset {boff(begin)}")
            tag, start, open_attrs = stack[-1]
            if name != tag:
                raise EntityParseError(f'Unmatched end tag at byte offset {boff(begin)}, expected "</{tag}>", found '
                                       f'"</{name}>"')
            stack.pop()
            length = pos16() - start
            if length > 0:
                ent = {"type": tag, "offset": start, "length": length}
                if tag == "a":
                    ent = {"type": "text_link", "offset": start, "length": length, "url": open_attrs.get("href", "")}
                entities.append(ent)
            continue
        j = i
        while i < n and (text[i].isalnum() or text[i] in "-_"):
            i += 1
        name = text[j:i].lower()
        if name not in SUPPORTED_TAGS:
            raise EntityParseError(f'Unsupported start tag "{name}" at byte offset {boff(begin)}')
        attrs: dict[str, str] = {}
        while True:
            while i < n and text[i] in " \t\n\r":
                i += 1
            if i >= n:
                raise EntityParseError(f'Unclosed start tag at byte offset {boff(begin)}')
            if text[i] == ">":
                i += 1
                break
            k = i
            while i < n and text[i] not in " \t\n\r=>":
                i += 1
            attr = text[k:i].lower()
            if i >= n or text[i] != "=":
                if attr:
                    attrs[attr] = ""
                    continue
                raise EntityParseError(f'Expected equal sign in declaration of an attribute of the tag "{name}" '
                                       f"at byte offset {boff(begin)}")
            i += 1
            if i < n and text[i] in "\"'":
                q = text[i]
                end = text.find(q, i + 1)
                if end < 0:
                    raise EntityParseError(f'Unclosed start tag "{name}" at byte offset {boff(begin)}')
                raw = text[i + 1:end]
                i = end + 1
            else:
                k = i
                while i < n and text[i] not in " \t\n\r>":
                    i += 1
                raw = text[k:i]
            value, p = [], 0
            while p < len(raw):
                dec = _decode_entity(raw, p) if raw[p] == "&" else None
                if dec:
                    value.append(dec[0])
                    p = dec[1]
                else:
                    value.append(raw[p])
                    p += 1
            attrs[attr] = "".join(value)
        if name == "span" and attrs.get("class") != "tg-spoiler":
            raise EntityParseError(f'Tag "span" must have class "tg-spoiler" at byte offset {boff(begin)}')
        stack.append((name, pos16(), attrs))
    if stack:
        raise EntityParseError(f'Can\'t find end tag corresponding to start tag "{stack[-1][0]}"')
    return "".join(out), entities


@dataclass
class Fault:
    kind: str  # "502", "500", "429", "drop", "hang"
    times: int = 1
    seconds: float = 0.0  # hang duration / retry_after


@dataclass
class BotMessage:
    message_id: int
    chat_id: int
    text: str
    html: str | None
    entities: list[dict[str, Any]]
    reply_markup: dict[str, Any] | None
    date: int
    edits: list[dict[str, Any]] = field(default_factory=list)

    def as_api(self, bot: dict[str, Any], chat: dict[str, Any]) -> dict[str, Any]:
        msg: dict[str, Any] = {"message_id": self.message_id, "from": bot, "chat": chat, "date": self.date,
                               "text": self.text}
        if self.entities:
            msg["entities"] = self.entities
        if self.reply_markup:
            msg["reply_markup"] = self.reply_markup
        return msg

    def buttons(self) -> list[dict[str, Any]]:
        return [b for row in (self.reply_markup or {}).get("inline_keyboard", []) for b in row]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
            return
        super().handle_error(request, client_address)


class _Drop(Exception):
    """Close the connection without an answer."""


class FakeTelegram:
    """Start with `.start()`; `base_url` is what a client uses instead of https://api.telegram.org."""

    def __init__(self, token: str | None = None, port: int = 0):
        self.bot_id = 7000000000 + secrets.randbelow(1000000)
        self.token = token or f"{self.bot_id}:{secrets.token_urlsafe(26)[:35]}"
        self.bot = {"id": self.bot_id, "is_bot": True, "first_name": "Hearth Test", "username": "hearth_test_bot"}
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._cv = threading.Condition()
        self._down = False
        self.updates: list[dict[str, Any]] = []
        self._next_update = 100000 + secrets.randbelow(1000)
        self._next_message = 1
        self.allowed_updates: list[str] = []
        self._poll_generation = 0
        self.chats: dict[int, dict[str, Any]] = {}
        self.blocked: set[int] = set()
        self.users: dict[int, dict[str, Any]] = {}
        self.messages: dict[tuple[int, int], BotMessage] = {}
        self.sent: list[BotMessage] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.callback_answers: list[dict[str, Any]] = []
        self._callbacks: dict[str, bool] = {}  # id -> answered
        self.files: dict[str, tuple[str, bytes]] = {}  # file_id -> (file_path, data)
        self.faults: dict[str, list[Fault]] = {}
        self.webhook_url = ""

    # -- lifecycle
    @property
    def port(self) -> int:
        assert self._port, "start() the server first"
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeTelegram:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                fake._dispatch(self, b"")

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                fake._dispatch(self, self.rfile.read(length) if length else b"")

        self._down = False
        self._server = _Server(("127.0.0.1", self._port), Handler)
        self._port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-telegram", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.down()

    def down(self) -> None:
        """The server goes away: waiting long polls drop, new connections are refused."""
        with self._cv:
            self._down = True
            self._cv.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def up(self) -> None:
        """Back on the same port, with the same state (updates not confirmed are still there)."""
        if self._server is None:
            self.start()

    def __enter__(self) -> FakeTelegram:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- scripting
    def fail_next(self, method: str, kind: str, times: int = 1, seconds: float = 0.0) -> None:
        """The next `times` calls of `method` ("*" for any) fail: "502", "500", "429", "drop" or "hang"."""
        with self._cv:
            self.faults.setdefault(method, []).append(Fault(kind, times, seconds))

    def user(self, user_id: int, first_name: str = "Sam", username: str | None = None) -> dict[str, Any]:
        u = {"id": user_id, "is_bot": False, "first_name": first_name, "username": username or f"user{user_id}",
             "language_code": "en"}
        self.users[user_id] = u
        return u

    def _from(self, user_id: int) -> dict[str, Any]:
        return self.users.get(user_id) or self.user(user_id)

    def _private_chat(self, user_id: int) -> dict[str, Any]:
        u = self._from(user_id)
        chat = {"id": user_id, "type": "private", "first_name": u["first_name"], "username": u["username"]}
        self.chats[user_id] = chat
        return chat

    def _push(self, kind: str, payload: dict[str, Any]) -> int:
        with self._cv:
            uid = self._next_update
            self._next_update += 1
            self.updates.append({"update_id": uid, kind: payload})
            self._cv.notify_all()
            return uid

    def _user_message(self, user_id: int, chat: dict[str, Any] | None, **content: Any) -> dict[str, Any]:
        with self._cv:
            mid = self._next_message
            self._next_message += 1
        chat = chat or self._private_chat(user_id)
        self.chats[chat["id"]] = chat
        return {"message_id": mid, "from": self._from(user_id), "chat": chat, "date": int(time.time()), **content}

    def send_text(self, user_id: int, text: str, chat: dict[str, Any] | None = None) -> int:
        """The user writes to the bot; returns the update id."""
        msg = self._user_message(user_id, chat, text=text)
        if text.startswith("/"):
            cmd = text.split()[0]
            msg["entities"] = [{"type": "bot_command", "offset": 0, "length": utf16_len(cmd)}]
        return self._push("message", msg)

    def send_voice(self, user_id: int, data: bytes, duration: int = 1, mime_type: str = "audio/ogg",
                   declared_size: int | None = None) -> int:
        """The user records a voice note; its bytes are served by getFile + /file/bot<token>/<path>."""
        file_id = "AwACAgQ" + secrets.token_urlsafe(30)
        unique = secrets.token_urlsafe(10)
        path = f"voice/file_{len(self.files)}.oga"
        self.files[file_id] = (path, data)
        voice = {"duration": duration, "mime_type": mime_type, "file_id": file_id, "file_unique_id": unique,
                 "file_size": declared_size if declared_size is not None else len(data)}
        return self._push("message", self._user_message(user_id, None, voice=voice))

    def press(self, user_id: int, message: BotMessage, callback_data: str) -> str:
        """The user taps an inline button of a bot message; returns the callback query id."""
        current = self.messages[(message.chat_id, message.message_id)]
        if callback_data not in [b.get("callback_data") for b in current.buttons()]:
            raise AssertionError(f"message {message.message_id} has no button with data {callback_data!r} "
                                 f"(buttons: {current.buttons()})")
        qid = str(secrets.randbelow(10**18))
        self._callbacks[qid] = False
        cq = {"id": qid, "from": self._from(user_id), "chat_instance": str(-secrets.randbelow(10**18)),
              "message": current.as_api(self.bot, self.chats[current.chat_id]), "data": callback_data}
        self._push("callback_query", cq)
        return qid

    def sent_to(self, chat_id: int) -> list[BotMessage]:
        with self._cv:
            return [m for m in self.sent if m.chat_id == chat_id]

    def wait_sent(self, chat_id: int, count: int, timeout: float = 10.0) -> list[BotMessage]:
        """Waits until the bot sent at least `count` messages to the chat; returns them all."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                got = [m for m in self.sent if m.chat_id == chat_id]
                if len(got) >= count:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"expected {count} messages to chat {chat_id}, got {len(got)}: "
                                         f"{[m.text[:60] for m in got]}")
                self._cv.wait(left)

    def wait_for(self, predicate: Any, timeout: float = 10.0, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        with self._cv:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what}")
                self._cv.wait(min(left, 0.05))

    def pending_updates(self) -> list[dict[str, Any]]:
        with self._cv:
            return list(self.updates)

    def count_calls(self, method: str) -> int:
        with self._cv:
            return sum(1 for m, _ in self.calls if m == method)

    # -- HTTP
    def _dispatch(self, h: BaseHTTPRequestHandler, raw: bytes) -> None:
        path = urlsplit(h.path).path
        try:
            if path.startswith("/file/bot"):
                return self._download(h, path)
            m = re.fullmatch(r"/bot([^/]+)/([A-Za-z]+)", path)
            if not m:
                return self._json(h, 404, {"ok": False, "error_code": 404, "description": "Not Found"})
            token, method = m.group(1), m.group(2)
            self._fault(h, method)
            if token != self.token:
                return self._json(h, 401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
            fn = getattr(self, f"_m_{method.lower()}", None)
            if fn is None:
                return self._json(h, 404, {"ok": False, "error_code": 404, "description": "Not Found"})
            try:
                params = self._params(h, raw)
                with self._cv:
                    self.calls.append((method, params))
                result = fn(params)
            except _ApiError as e:
                body: dict[str, Any] = {"ok": False, "error_code": e.code, "description": e.description}
                if e.parameters:
                    body["parameters"] = e.parameters
                return self._json(h, e.code, body)
            self._json(h, 200, {"ok": True, "result": result})
        except _Handled:
            return
        except _Drop:
            h.close_connection = True
            try:
                h.connection.shutdown(2)
            except OSError:
                pass

    def _fault(self, h: BaseHTTPRequestHandler, method: str) -> None:
        with self._cv:
            queue = self.faults.get(method) or self.faults.get("*")
            if not queue:
                return
            fault = queue[0]
            fault.times -= 1
            if fault.times <= 0:
                queue.pop(0)
        if fault.kind == "drop":
            raise _Drop()
        if fault.kind == "hang":
            time.sleep(fault.seconds)
            raise _Drop()
        if fault.kind == "502":
            body = b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.18.0</center>\r\n</body>\r\n</html>\r\n"
            h.send_response(502)
            h.send_header("Content-Type", "text/html")
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)
            raise _Handled()
        if fault.kind == "500":
            self._json(h, 500, {"ok": False, "error_code": 500, "description": "Internal Server Error"})
            raise _Handled()
        if fault.kind == "429":
            secs = int(fault.seconds or 1)
            self._json(h, 429, {"ok": False, "error_code": 429, "description": f"Too Many Requests: retry after {secs}",
                                "parameters": {"retry_after": secs}})
            raise _Handled()

    @staticmethod
    def _params(h: BaseHTTPRequestHandler, raw: bytes) -> dict[str, Any]:
        ctype = (h.headers.get("content-type") or "").split(";")[0].strip().lower()
        params: dict[str, Any] = {k: v[-1] for k, v in parse_qs(urlsplit(h.path).query).items()}
        if raw and ctype == "application/json":
            params.update(json.loads(raw))
        elif raw and ctype == "application/x-www-form-urlencoded":
            params.update({k: v[-1] for k, v in parse_qs(raw.decode()).items()})
        for key in ("reply_markup", "allowed_updates"):
            if isinstance(params.get(key), str):
                try:
                    params[key] = json.loads(params[key])
                except json.JSONDecodeError:
                    raise _ApiError(400, f"Bad Request: can't parse {key} JSON object") from None
        return params

    def _json(self, h: BaseHTTPRequestHandler, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _download(self, h: BaseHTTPRequestHandler, path: str) -> None:
        m = re.fullmatch(r"/file/bot([^/]+)/(.+)", path)
        self._fault(h, "file")
        found = next((d for p, d in self.files.values() if m and p == m.group(2)), None)
        if not m or m.group(1) != self.token or found is None:
            return self._json(h, 404, {"ok": False, "error_code": 404, "description": "Not Found"})
        h.send_response(200)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Content-Length", str(len(found)))
        h.end_headers()
        h.wfile.write(found)

    # -- methods
    def _m_getme(self, p: dict[str, Any]) -> dict[str, Any]:
        return {**self.bot, "can_join_groups": True, "can_read_all_group_messages": False,
                "supports_inline_queries": False}

    def _m_deletewebhook(self, p: dict[str, Any]) -> bool:
        if _bool(p.get("drop_pending_updates")):
            with self._cv:
                self.updates.clear()
        self.webhook_url = ""
        return True

    def _m_getupdates(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        if self.webhook_url:
            raise _ApiError(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook "
                                 "to delete the webhook first")
        offset = int(p.get("offset") or 0)
        limit = int(p.get("limit") or 100)
        if not 1 <= limit <= 100:
            limit = max(1, min(100, limit))
        timeout = float(p.get("timeout") or 0)
        if "allowed_updates" in p and p["allowed_updates"] is not None:
            self.allowed_updates = list(p["allowed_updates"])
        deadline = time.monotonic() + timeout
        with self._cv:
            self._poll_generation += 1
            me = self._poll_generation
            if offset < 0:
                self.updates = self.updates[offset:]
            elif offset:
                self.updates = [u for u in self.updates if u["update_id"] >= offset]
            self._cv.notify_all()  # an older long poll still waiting ends with 409
            while True:
                if self._down:
                    raise _Drop()
                if self._poll_generation != me:
                    raise _ApiError(409, "Conflict: terminated by other getUpdates request; make sure that only one "
                                         "bot instance is running")
                allowed = self.allowed_updates or ["message", "edited_message", "callback_query"]
                ready = [u for u in self.updates if any(k in u for k in allowed)][:limit]
                if ready or time.monotonic() >= deadline:
                    return ready
                self._cv.wait(max(0.0, deadline - time.monotonic()))

    def _chat(self, p: dict[str, Any]) -> dict[str, Any]:
        if p.get("chat_id") in (None, ""):
            raise _ApiError(400, "Bad Request: chat_id is empty")
        try:
            chat_id = int(p["chat_id"])
        except (TypeError, ValueError):
            raise _ApiError(400, "Bad Request: chat not found") from None
        chat = self.chats.get(chat_id)
        if chat is None:
            raise _ApiError(400, "Bad Request: chat not found")
        if chat_id in self.blocked:
            raise _ApiError(403, "Forbidden: bot was blocked by the user")
        return chat

    def _markup(self, p: dict[str, Any]) -> dict[str, Any] | None:
        markup = p.get("reply_markup")
        if not markup:
            return None
        if not isinstance(markup, dict):
            raise _ApiError(400, "Bad Request: can't parse reply keyboard markup JSON object")
        rows = markup.get("inline_keyboard")
        if rows is None:
            return markup
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise _ApiError(400, "Bad Request: field \"inline_keyboard\" of the InlineKeyboardMarkup must be an Array")
        for row in rows:
            for b in row:
                if not isinstance(b, dict) or not b.get("text"):
                    raise _ApiError(400, "Bad Request: can't parse inline keyboard button: Text buttons are "
                                         "unallowed in the inline keyboard")
                data = b.get("callback_data")
                if data is not None and not 1 <= len(str(data).encode()) <= 64:
                    raise _ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
        return markup

    def _text(self, p: dict[str, Any]) -> tuple[str, str | None, list[dict[str, Any]]]:
        raw = p.get("text")
        if raw is None or raw == "":
            raise _ApiError(400, "Bad Request: message text is empty")
        raw = str(raw)
        mode = p.get("parse_mode")
        entities: list[dict[str, Any]] = []
        if mode in (None, ""):
            text = raw
        elif str(mode).lower() == "html":
            try:
                text, entities = parse_html(raw)
            except EntityParseError as e:
                raise _ApiError(400, f"Bad Request: can't parse entities: {e}") from None
        else:
            raise _ApiError(400, f"Bad Request: unsupported parse_mode {mode!r}" if str(mode) not in
                            ("Markdown", "MarkdownV2") else "Bad Request: this fake speaks HTML only")
        if not text.strip():
            raise _ApiError(400, "Bad Request: message text is empty")
        if utf16_len(text) > MAX_TEXT:
            raise _ApiError(400, "Bad Request: message is too long")
        return text, (raw if entities or mode else None), entities

    def _m_sendmessage(self, p: dict[str, Any]) -> dict[str, Any]:
        chat = self._chat(p)
        text, html, entities = self._text(p)
        markup = self._markup(p)
        with self._cv:
            mid = self._next_message
            self._next_message += 1
            msg = BotMessage(mid, chat["id"], text, html, entities, markup, int(time.time()))
            self.messages[(chat["id"], mid)] = msg
            self.sent.append(msg)
            self._cv.notify_all()
        return msg.as_api(self.bot, chat)

    def _m_sendchataction(self, p: dict[str, Any]) -> bool:
        self._chat(p)
        if p.get("action") not in ("typing", "upload_photo", "record_voice", "upload_voice", "upload_document",
                                   "choose_sticker", "find_location", "record_video", "upload_video",
                                   "record_video_note", "upload_video_note"):
            raise _ApiError(400, "Bad Request: wrong parameter action in request")
        return True

    def _m_editmessagereplymarkup(self, p: dict[str, Any]) -> dict[str, Any]:
        chat = self._chat(p)
        msg = self.messages.get((chat["id"], int(p.get("message_id") or 0)))
        if msg is None:
            raise _ApiError(400, "Bad Request: message to edit not found")
        markup = self._markup(p)
        if (markup or None) == (msg.reply_markup or None):
            raise _ApiError(400, "Bad Request: message is not modified: specified new message content and reply "
                                 "markup are exactly the same as a current content and reply markup of the message")
        with self._cv:
            msg.edits.append({"reply_markup": markup, "at": time.time()})
            msg.reply_markup = markup
            self._cv.notify_all()
        return msg.as_api(self.bot, chat)

    def _m_answercallbackquery(self, p: dict[str, Any]) -> bool:
        qid = str(p.get("callback_query_id") or "")
        if self._callbacks.get(qid, True):
            raise _ApiError(400, "Bad Request: query is too old and response timeout expired or query ID is invalid")
        if len(str(p.get("text") or "")) > 200:
            raise _ApiError(400, "Bad Request: MESSAGE_TOO_LONG")
        with self._cv:
            self._callbacks[qid] = True
            self.callback_answers.append({"id": qid, "text": p.get("text") or "", "show_alert": p.get("show_alert")})
            self._cv.notify_all()
        return True

    def _m_getfile(self, p: dict[str, Any]) -> dict[str, Any]:
        fid = str(p.get("file_id") or "")
        if fid not in self.files:
            raise _ApiError(400, "Bad Request: invalid file_id")
        path, data = self.files[fid]
        if len(data) > MAX_BOT_DOWNLOAD:
            raise _ApiError(400, "Bad Request: file is too big")
        return {"file_id": fid, "file_unique_id": fid[-10:], "file_size": len(data), "file_path": path}


def _bool(v: Any) -> bool:
    return v is True or str(v).lower() in ("true", "1")


class _ApiError(Exception):
    def __init__(self, code: int, description: str, parameters: dict[str, Any] | None = None):
        super().__init__(description)
        self.code, self.description, self.parameters = code, description, parameters


class _Handled(Exception):
    """A fault already wrote its answer."""

