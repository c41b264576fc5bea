"""Telegram through the Bot API with long polling (no webhook, so the pod needs no public address).

The person stores a bot token (from @BotFather) in the vault and links their own Telegram account
with a one-time code shown in the app (`/link CODE`, or the deep link t.me/<bot>?start=CODE).
Messages from any other account are ignored and logged. Each linked chat talks to one chosen agent
(`/agents`, `/agent NAME`); answers go out as Telegram HTML split into messages that fit; approval
cards carry approve / reject buttons; voice notes are transcribed locally before the agent sees them.

Delivery is at-least-once towards Hearth and once towards the person: an update is marked handled
and its answer queued in the outbox in one transaction, and the getUpdates offset moves past it only
after that, so a restart or a dropped connection neither loses a message nor answers it twice.
Answers that could not be sent stay in the outbox and are retried with back-off.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import re
import time
from typing import Any

import httpx

from runtime_host.channels.base import (
    Channel,
    ChannelError,
    ChannelStatus,
    LinkOffer,
    PodPort,
    StatusListener,
    check_channel_address,
)
from runtime_host.channels.markup import MESSAGE_LIMIT, Part, escape, plain_parts, to_telegram
from runtime_host.channels.store import (
    APPROVED,
    Card,
    ChannelLink,
    ChannelStore,
    LinkCodeError,
    OutboxItem,
    format_code,
)
from vault import RedactingFilter, Vault, redact, remember_secret

log = logging.getLogger("hearth.channels.telegram")

CHANNEL = "telegram"
DEFAULT_BASE_URL = "https://api.telegram.org"
VAULT_KEY = "channel/telegram/token"
TOKEN_RE = re.compile(r"^\d{3,}:[A-Za-z0-9_-]{30,}$")
ALLOWED_UPDATES = ["message", "callback_query"]
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024  # bots may download files up to 20 MB
CALLBACK_DATA_MAX = 64
LINK_FAILURES_ALLOWED = 5  # per account per LINK_FAILURE_WINDOW_S; later attempts are ignored
LINK_FAILURE_WINDOW_S = 600.0
UPDATE_ATTEMPTS = 5  # an update that keeps failing for network reasons is answered with an apology after this

HELP = ("You are talking to <b>{agent}</b> in your Hearth pod.\n\n"
        "/agents — list your agents\n/agent NAME — talk to another agent\n"
        "/push on|off — scheduled results in this chat\n/unlink — stop using this chat\n\n"
        "Send text or a voice note; voice is transcribed on your own computer.")


class BotApiError(ChannelError):
    """Telegram answered {"ok": false, ...}."""

    def __init__(self, method: str, code: int, description: str, retry_after: float | None = None):
        self.method, self.code, self.description, self.retry_after = method, code, description, retry_after
        super().__init__(f"Telegram refused {method}: {description} (error {code}).")

    @property
    def transient(self) -> bool:
        return self.code == 429 or self.code >= 500


class TransientError(ChannelError):
    """The network or Telegram's servers failed; the same call may work later."""


class _RetryLater(Exception):
    """Handling an update hit a transient failure: leave it unconfirmed and try again after back-off."""


# -- the token in the vault
def save_bot_token(vault: Vault, token: str) -> None:
    token = token.strip()
    if not TOKEN_RE.match(token):
        raise ChannelError("That does not look like a Telegram bot token (it looks like 123456789:AAE...). "
                           "Copy the whole token that @BotFather sent you.")
    vault.set(VAULT_KEY, token)


def load_bot_token(vault: Vault) -> str:
    token = vault.get(VAULT_KEY)
    if not token:
        raise ChannelError("No Telegram bot token yet: create a bot with @BotFather in Telegram, then paste its "
                           "token in Hearth → Settings → Channels → Telegram.")
    return token


class BotApi:
    """A thin Bot API client: every call is POST /bot<token>/METHOD, answers {"ok": ..., "result": ...}."""

    def __init__(self, token: str, base_url: str = DEFAULT_BASE_URL, *, timeout_s: float = 30.0):
        if not TOKEN_RE.match(token):
            raise ChannelError("The stored Telegram bot token is malformed. Paste it again in Hearth → Settings → "
                               "Channels → Telegram.")
        self.base_url = base_url.rstrip("/")
        check_channel_address(self.base_url)
        self._token = token
        remember_secret(token)
        httpx_log = logging.getLogger("httpx")
        if not any(isinstance(f, RedactingFilter) for f in httpx_log.filters):
            httpx_log.addFilter(RedactingFilter())  # its request lines carry the token in the URL
        self.timeout_s = timeout_s
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=10.0))

    async def close(self) -> None:
        await self._client.aclose()

    async def call(self, method: str, params: dict[str, Any] | None = None, *, timeout_s: float | None = None) -> Any:
        url = f"{self.base_url}/bot{self._token}/{method}"
        try:
            resp = await self._client.post(url, json=params or {},
                                           timeout=None if timeout_s is None else httpx.Timeout(timeout_s, connect=10.0))
        except httpx.TimeoutException:
            raise TransientError(f"Telegram did not answer {method} in time.") from None
        except httpx.TransportError as exc:
            raise TransientError(redact(f"Could not reach Telegram ({type(exc).__name__}: {exc}).")) from None
        try:
            data = resp.json()
        except ValueError:
            data = None
        if not isinstance(data, dict) or "ok" not in data:
            if resp.status_code >= 500 or resp.status_code == 429:
                raise TransientError(f"Telegram's servers answered HTTP {resp.status_code} to {method}.")
            raise BotApiError(method, resp.status_code, f"unexpected HTTP {resp.status_code} answer")
        if not data["ok"]:
            params_ = data.get("parameters") or {}
            raise BotApiError(method, int(data.get("error_code") or resp.status_code),
                              str(data.get("description") or "no description"), params_.get("retry_after"))
        return data.get("result")

    async def download(self, file_path: str, max_bytes: int = MAX_DOWNLOAD_BYTES) -> bytes:
        url = f"{self.base_url}/file/bot{self._token}/{file_path}"
        try:
            async with self._client.stream("GET", url) as resp:
                if resp.status_code >= 500:
                    raise TransientError(f"Telegram's file server answered HTTP {resp.status_code}.")
                if resp.status_code != 200:
                    raise ChannelError(f"Telegram could not give the file (HTTP {resp.status_code}); send it again.")
                chunks: list[bytes] = []
                size = 0
                async for chunk in resp.aiter_bytes():
                    size += len(chunk)
                    if size > max_bytes:
                        raise ChannelError(f"That file is larger than {max_bytes // 1048576} MB, more than "
                                           "Telegram lets bots download.")
                    chunks.append(chunk)
                return b"".join(chunks)
        except httpx.TimeoutException:
            raise TransientError("Telegram did not send the file in time.") from None
        except httpx.TransportError as exc:
            raise TransientError(redact(f"Could not download from Telegram ({type(exc).__name__}).")) from None


class _Backoff:
    def __init__(self, first: float, cap: float):
        self.first, self.cap, self.n = first, cap, 0

    def next(self) -> float:
        delay = min(self.cap, self.first * (2 ** self.n))
        self.n += 1
        return delay * random.uniform(0.8, 1.2)

    def reset(self) -> None:
        self.n = 0


def _parse_command(text: str | None) -> tuple[str | None, str]:
    if not text or not text.startswith("/"):
        return None, ""
    head, _, rest = text.strip().partition(" ")
    return head.split("@", 1)[0].lower(), rest.strip()


def _who(decided_by: str | None) -> str:
    if not decided_by:
        return ""
    if decided_by == "app":
        return "in the app"
    if decided_by.startswith("telegram"):
        return "on Telegram"
    return f"by {decided_by}"


class TelegramChannel(Channel):
    """One bot, polled by one Hearth process. `port` is the Pod; `store` holds links, offsets and the outbox."""

    name = CHANNEL

    def __init__(self, port: PodPort, store: ChannelStore, token: str, *, base_url: str = DEFAULT_BASE_URL,
                 default_agent: str | None = None, poll_timeout_s: float = 25.0, http_grace_s: float = 10.0,
                 backoff_s: tuple[float, float] = (1.0, 60.0), max_download_bytes: int = MAX_DOWNLOAD_BYTES,
                 on_status: StatusListener | None = None):
        self.port = port
        self.store = store
        self.api = BotApi(token, base_url)
        self.default_agent = default_agent
        self.poll_timeout_s = poll_timeout_s
        self.http_grace_s = http_grace_s
        self.backoff_s = backoff_s
        self.max_download_bytes = max_download_bytes
        self.on_status = on_status
        self.bot_username: str | None = None
        self.recent_strangers: collections.deque[dict[str, Any]] = collections.deque(maxlen=50)
        self._status = ChannelStatus(CHANNEL, "stopped")
        self._task: asyncio.Task[None] | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._send_lock = asyncio.Lock()
        self._attempts: dict[int, int] = {}
        self._link_failures: dict[int, list[float]] = {}
        self._flush_backoff = _Backoff(*backoff_s)
        self._inflight: set[asyncio.Task[str]] = set()

    @classmethod
    def from_vault(cls, port: PodPort, store: ChannelStore, vault: Vault, **kw: Any) -> TelegramChannel:
        return cls(port, store, load_bot_token(vault), **kw)

    # -- status
    @property
    def status(self) -> ChannelStatus:
        return self._status

    def _set_status(self, state: str, detail: str = "") -> None:
        if (state, detail) == (self._status.state, self._status.detail):
            return
        self._status = ChannelStatus(CHANNEL, state, detail)
        if self.on_status is not None:
            try:
                self.on_status(self._status)
            except Exception:
                log.exception("status listener failed")

    # -- lifecycle
    async def start(self) -> None:
        if self._task is not None and not self._task.done():
            return
        self._set_status("starting", "Connecting to Telegram…")
        self._task = asyncio.create_task(self._run(), name="telegram-poll")
        self._flusher = asyncio.create_task(self._flush_loop(), name="telegram-outbox")

    async def stop(self) -> None:
        for task in (self._task, self._flusher):
            if task is not None and not task.done():
                task.cancel()
        for task in (self._task, self._flusher):
            if task is not None:
                try:
                    await task
                except asyncio.CancelledError:
                    pass
                except Exception:  # it ended with an error before the stop: say so (the stop goes on)
                    log.exception("a Telegram task had failed before it was stopped")
        self._task = self._flusher = None
        if self._inflight:  # sends already on the wire finish and are recorded
            await asyncio.wait(list(self._inflight), timeout=self.http_grace_s + 10)
        await self.api.close()
        self._set_status("stopped")

    async def _run(self) -> None:
        backoff = _Backoff(*self.backoff_s)
        while self.bot_username is None:
            try:
                me = await self.api.call("getMe", timeout_s=self.http_grace_s + 5)
                self.bot_username = str(me.get("username") or "")
            except BotApiError as exc:
                if exc.code in (401, 404):
                    self._set_status("failed", "Telegram refused the bot token. Create a new token with @BotFather "
                                               "and paste it in Hearth → Settings → Channels → Telegram.")
                    return
                await self._wait_out(backoff, exc)
            except TransientError as exc:
                await self._wait_out(backoff, exc)
        await self._poll_loop(backoff)

    async def _wait_out(self, backoff: _Backoff, exc: Exception, at_least: float = 0.0) -> None:
        delay = max(backoff.next(), at_least)
        self._set_status("retrying", f"{exc} Trying again in {delay:.0f} s.")
        log.warning("telegram: %s; retrying in %.1f s", exc, delay)
        await asyncio.sleep(delay)

    async def _poll_loop(self, backoff: _Backoff) -> None:
        webhook_cleared = False
        while True:
            offset = self.store.get_offset(CHANNEL)
            try:
                updates = await self.api.call(
                    "getUpdates", {"offset": offset, "limit": 100, "timeout": int(self.poll_timeout_s),
                                   "allowed_updates": ALLOWED_UPDATES},
                    timeout_s=self.poll_timeout_s + self.http_grace_s)
            except BotApiError as exc:
                if exc.code in (401, 404):
                    self._set_status("failed", "Telegram refused the bot token. Create a new token with @BotFather "
                                               "and paste it in Hearth → Settings → Channels → Telegram.")
                    return
                if exc.code == 409 and "webhook" in exc.description.lower() and not webhook_cleared:
                    webhook_cleared = True
                    try:
                        await self.api.call("deleteWebhook", {"drop_pending_updates": False})
                        continue
                    except ChannelError as exc2:
                        await self._wait_out(backoff, exc2)
                        continue
                if exc.code == 409:
                    exc = BotApiError(exc.method, exc.code, "another program is reading this bot's messages "
                                      "(only one Hearth may use a bot)")
                await self._wait_out(backoff, exc, at_least=exc.retry_after or 0.0)
                continue
            except TransientError as exc:
                await self._wait_out(backoff, exc)
                continue
            backoff.reset()
            self._set_status("connected", f"Listening as @{self.bot_username}." if self.bot_username else "Listening.")
            if not updates:
                continue
            try:
                commit = await self._handle_batch(updates)
                self.store.commit_offset(CHANNEL, commit)
            except Exception as exc:  # e.g. the database is locked: handled updates are skipped when they come again
                log.exception("telegram: a batch of updates could not be finished")
                await self._wait_out(backoff, ChannelError(f"Hearth could not record Telegram messages ({exc})."))
                continue
            retry_ids = [u["update_id"] for u in updates if u["update_id"] >= commit]
            if retry_ids:  # something in the batch must be tried again: don't hammer
                await self._wait_out(backoff, TransientError("A message could not be handled yet."))

    async def _handle_batch(self, updates: list[dict[str, Any]]) -> int:
        """Handles a batch (chats concurrently, each chat in order). Returns the offset to commit."""
        by_chat: dict[int, list[dict[str, Any]]] = collections.defaultdict(list)
        for u in updates:
            by_chat[self._chat_key(u)].append(u)
        retry: list[int] = []

        async def one_chat(items: list[dict[str, Any]]) -> None:
            for u in items:
                uid = int(u["update_id"])
                if self.store.is_handled(CHANNEL, uid):
                    continue
                try:
                    await self._handle_update(u)
                    self._attempts.pop(uid, None)
                except _RetryLater as exc:
                    n = self._attempts[uid] = self._attempts.get(uid, 0) + 1
                    log.warning("telegram: update %s not handled yet (attempt %s): %s", uid, n, exc)
                    if n >= UPDATE_ATTEMPTS:
                        self._attempts.pop(uid, None)
                        self._give_up(u, str(exc))
                        continue
                    retry.append(uid)
                    return  # keep this chat's order: later messages wait for this one
                except Exception:
                    log.exception("telegram: update %s failed", uid)
                    self._give_up(u, "Hearth hit an internal error (details are in the log).")

        await asyncio.gather(*(one_chat(items) for items in by_chat.values()))
        await self._flush()
        if retry:
            return min(retry)
        return max(int(u["update_id"]) for u in updates) + 1

    @staticmethod
    def _chat_key(u: dict[str, Any]) -> int:
        if "message" in u:
            return int(u["message"]["chat"]["id"])
        if "callback_query" in u:
            return int(u["callback_query"]["from"]["id"])
        return 0

    def _give_up(self, u: dict[str, Any], why: str) -> None:
        msg = u.get("message")
        if msg is None:
            self.store.finish_update(CHANNEL, int(u["update_id"]))
            return
        chat_id = int(msg["chat"]["id"])
        link = self.store.get_link(CHANNEL, chat_id)
        notice = [] if link is None else self._plain(f"Sorry, I could not handle that message: {why} Please send it again.")
        self.store.finish_update(CHANNEL, int(u["update_id"]), chat_id, notice)

    # -- one update
    async def _handle_update(self, u: dict[str, Any]) -> None:
        uid = int(u["update_id"])
        if "callback_query" in u:
            await self._on_callback(uid, u["callback_query"])
            return
        msg = u.get("message")
        if not msg:
            self.store.finish_update(CHANNEL, uid)
            return
        chat = msg.get("chat") or {}
        chat_id = int(chat.get("id") or 0)
        user = msg.get("from") or {}
        user_id = int(user.get("id") or 0)
        text = msg.get("text")
        cmd, arg = _parse_command(text)
        link = self.store.get_link(CHANNEL, chat_id)
        if link is None or link.user_id != user_id:
            replies = self._link_attempt(chat, user, arg) if cmd in ("/link", "/start") and arg else None
            if replies is None:
                self._log_stranger(chat_id, user, msg)
            self.store.finish_update(CHANNEL, uid, chat_id, replies or [])
            return
        replies = await self._linked_message(link, msg, cmd, arg)
        self.store.finish_update(CHANNEL, uid, chat_id, replies)

    def _log_stranger(self, chat_id: int, user: dict[str, Any], msg: dict[str, Any]) -> None:
        entry = {"user_id": user.get("id"), "username": user.get("username"), "name": user.get("first_name"),
                 "chat_id": chat_id, "at": time.time()}
        self.recent_strangers.append(entry)
        log.warning("telegram: ignored a message from an unlinked account (user id %s, @%s, chat %s)",
                    user.get("id"), user.get("username") or "-", chat_id)

    def _link_attempt(self, chat: dict[str, Any], user: dict[str, Any], code: str) -> list[dict[str, Any]] | None:
        user_id = int(user.get("id") or 0)
        now = time.time()
        fails = [t for t in self._link_failures.get(user_id, []) if now - t < LINK_FAILURE_WINDOW_S]
        self._link_failures[user_id] = fails
        if len(fails) >= LINK_FAILURES_ALLOWED:
            log.warning("telegram: ignored a link attempt from user id %s (too many wrong codes)", user_id)
            return None
        if chat.get("type") != "private":
            return self._plain("For privacy, Hearth links only a private chat with this bot. Open the bot and send "
                               "the code there.")
        try:
            link = self.store.redeem_link_code(CHANNEL, code, chat_id=int(chat["id"]), user_id=user_id,
                                               default_agent=self.default_agent)
        except LinkCodeError as exc:
            fails.append(now)
            log.warning("telegram: refused a link code from user id %s: %s", user_id, exc)
            return self._plain(str(exc))
        self._link_failures.pop(user_id, None)
        log.info("telegram: chat %s linked to person %s", link.chat_id, link.person_id)
        agent = self._agent_for(link)
        return [{"text": "Linked. This chat now reaches your Hearth pod.\n\n" + HELP.format(agent=escape(agent or "—")),
                 "parse_mode": "HTML"}]

    def _agent_for(self, link: ChannelLink) -> str | None:
        try:
            names = self.port.list_agents(link.person_id)
        except ChannelError:
            return None
        if link.agent in names:
            return link.agent
        if self.default_agent in names:
            return self.default_agent
        return names[0] if names else None

    async def _linked_message(self, link: ChannelLink, msg: dict[str, Any], cmd: str | None,
                              arg: str) -> list[dict[str, Any]]:
        chat_id = link.chat_id
        if cmd is not None:
            return self._command(link, cmd, arg)
        agent = self._agent_for(link)
        if agent is None:
            return self._plain("You have no agents yet. Add one in the Hearth app, then write again.")
        heard: list[dict[str, Any]] = []
        text = msg.get("text")
        if text is None:
            voice = msg.get("voice") or msg.get("audio")
            if voice is None:
                return self._plain("Hearth on Telegram understands text and voice notes. Send files in the app.")
            try:
                text = await self._transcribe(voice)
            except ChannelError as exc:
                return self._plain(str(exc))
            heard = [{"text": f"🎙 <i>{escape(p)}</i>", "parse_mode": "HTML"} for p in plain_parts(text, MESSAGE_LIMIT - 10)]
        await self._typing(chat_id)
        try:
            result = await self.port.send(link.person_id, agent, text, f"{CHANNEL}:{chat_id}")
        except ChannelError as exc:
            return heard + self._plain(str(exc))
        except Exception as exc:  # e.g. UnknownAgent from the store: its message is written for people
            if type(exc).__name__ in ("UnknownAgent", "StoreError", "TurnFailed", "MessageTooLarge"):
                return heard + self._plain(str(exc))
            raise
        if not result.ok:
            return heard + self._plain(f"⚠️ {agent} could not answer: {result.error or 'the turn failed'}")
        # a long answer's markdown takes seconds to read: never on the Pod's event loop
        parts = await asyncio.to_thread(to_telegram, result.text) or [
            Part("<i>(The agent gave an empty answer.)</i>", "(empty answer)")]
        return heard + [{"text": p.html, "parse_mode": "HTML", "_plain": p.plain} for p in parts]

    def _command(self, link: ChannelLink, cmd: str, arg: str) -> list[dict[str, Any]]:
        agent = self._agent_for(link)
        if cmd in ("/start", "/help"):
            return [{"text": HELP.format(agent=escape(agent or "no agent yet")), "parse_mode": "HTML"}]
        if cmd == "/agents":
            names = self.port.list_agents(link.person_id)
            if not names:
                return self._plain("You have no agents yet. Add one in the Hearth app.")
            lines = [f"{'▶' if n == agent else '•'} {escape(n)}" for n in names]
            return [{"text": "<b>Your agents</b>\n" + "\n".join(lines) + "\n\nSwitch with /agent NAME.",
                     "parse_mode": "HTML"}]
        if cmd == "/agent":
            names = self.port.list_agents(link.person_id)
            if not arg:
                return self._plain(f"You are talking to {agent or 'no agent'}. Switch with /agent NAME "
                                   f"({', '.join(names) or 'no agents yet'}).")
            match = next((n for n in names if n == arg), None) or next(
                (n for n in names if n.lower() == arg.lower()), None)
            if match is None:
                return self._plain(f"No agent named {arg!r}. Your agents: {', '.join(names) or 'none yet'}.")
            self.store.set_link_agent(CHANNEL, link.chat_id, match)
            return [{"text": f"Now talking to <b>{escape(match)}</b>.", "parse_mode": "HTML"}]
        if cmd == "/push":
            if arg.lower() not in ("on", "off"):
                state = "on" if link.push_runs else "off"
                return self._plain(f"Scheduled results come to this chat: {state}. Change with /push on or /push off.")
            self.store.set_push_runs(CHANNEL, link.chat_id, arg.lower() == "on")
            return self._plain("Scheduled results will come to this chat." if arg.lower() == "on"
                               else "Scheduled results will no longer come to this chat.")
        if cmd == "/unlink":
            self.store.unlink(CHANNEL, link.chat_id)
            log.info("telegram: chat %s unlinked by its owner", link.chat_id)
            return self._plain("Unlinked. This chat no longer reaches your Hearth pod; link it again from the app.")
        if cmd == "/link":
            return self._plain("This chat is already linked to your Hearth pod.")
        return self._plain(f"Unknown command {cmd}. Send /help to see what works here.")

    @staticmethod
    def _plain(text: str) -> list[dict[str, Any]]:
        return [{"text": p} for p in plain_parts(text)]

    async def _typing(self, chat_id: int) -> None:
        try:
            await self.api.call("sendChatAction", {"chat_id": chat_id, "action": "typing"}, timeout_s=5)
        except ChannelError as exc:
            log.debug("telegram: typing indicator not shown: %s", exc)

    async def _transcribe(self, voice: dict[str, Any]) -> str:
        size = int(voice.get("file_size") or 0)
        limit_mb = self.max_download_bytes // 1048576
        if size > self.max_download_bytes:
            raise ChannelError(f"That voice note is {size / 1048576:.1f} MB; Telegram lets bots download at most "
                               f"{limit_mb} MB. Send a shorter one.")
        try:
            info = await self.api.call("getFile", {"file_id": voice["file_id"]})
            data = await self.api.download(str(info["file_path"]), self.max_download_bytes)
        except TransientError as exc:
            raise _RetryLater(str(exc)) from None
        except BotApiError as exc:
            if exc.transient:
                raise _RetryLater(str(exc)) from None
            if "too big" in exc.description:
                raise ChannelError(f"That voice note is larger than {limit_mb} MB, more than Telegram lets bots "
                                   "download. Send a shorter one.") from None
            raise ChannelError(f"Telegram could not give the voice note ({exc.description}). Send it again.") from None
        return await self.port.transcribe(data)

    # -- approval buttons
    async def _on_callback(self, uid: int, cq: dict[str, Any]) -> None:
        user_id = int((cq.get("from") or {}).get("id") or 0)
        data = str(cq.get("data") or "")
        answer = ""
        try:
            answer = await self._decide_from_button(user_id, cq, data)
        finally:
            try:  # always answer, or the button keeps spinning on the phone
                await self.api.call("answerCallbackQuery", {"callback_query_id": cq["id"], "text": answer[:200]})
            except ChannelError as exc:
                log.warning("telegram: could not answer a button press: %s", exc)
            self.store.finish_update(CHANNEL, uid)

    async def _decide_from_button(self, user_id: int, cq: dict[str, Any], data: str) -> str:
        message = cq.get("message") or {}
        chat_id = int((message.get("chat") or {}).get("id") or user_id)
        link = self.store.get_link(CHANNEL, chat_id)
        if link is None or link.user_id != user_id:
            self._log_stranger(chat_id, cq.get("from") or {}, message)
            return "This button is not for you."
        parts = data.split(":")
        if len(parts) != 3 or parts[0] != "c" or parts[2] not in ("a", "r", "s", "t"):
            return "This button is from an older version of Hearth."
        card = self.store.get_card(parts[1])
        if card is None or card.person_id != link.person_id:
            return "This card no longer exists."
        if parts[2] == "t":  # Retry an approved send that failed
            retry = getattr(self.port, "retry_card", None)
            return await retry(card.card_id, link.person_id) if retry else "Retry this send in the Hearth app."
        if parts[2] == "s" or not card.pending:
            await self.card_decided(card)
            return f"Already {card.state} {_who(card.decided_by)}."
        approve = parts[2] == "a"
        if self.port.decide_card(card.card_id, approve, f"telegram:{user_id}"):
            decided = self.store.get_card(card.card_id) or card
            await self.card_decided(decided)
            return "Approved." if approve else "Rejected."
        now_card = self.store.get_card(card.card_id) or card
        await self.card_decided(now_card)
        return f"Already {now_card.state} {_who(now_card.decided_by)}."

    @staticmethod
    def _card_buttons(card: Card) -> dict[str, Any]:
        rows = [[{"text": "✅ Approve", "callback_data": f"c:{card.card_id}:a"},
                 {"text": "✖ Reject", "callback_data": f"c:{card.card_id}:r"}]]
        for row in rows:
            for b in row:
                if len(b["callback_data"].encode()) > CALLBACK_DATA_MAX:
                    raise ChannelError(f"Card id {card.card_id!r} is too long for a Telegram button.")
        return {"inline_keyboard": rows}

    async def deliver_card(self, card: Card) -> int:
        markup = self._card_buttons(card)
        kind = {"send": "Approve and send", "handoff": "Hand-off"}.get(card.kind, card.kind.capitalize())
        head = f"<b>Approval needed · {escape(kind)}</b>\n<b>{escape(card.title)}</b>"
        body = await asyncio.to_thread(to_telegram, card.body, MESSAGE_LIMIT - 400) if card.body.strip() else []
        text = head + (f"\n\n{body[0].html}" if body else "")
        if len(body) > 1:
            text += "\n\n<i>(shortened: the whole card is in the app)</i>"
        links = [lk for lk in self.store.links(CHANNEL, card.person_id)]
        for lk in links:
            self.store.queue_messages(CHANNEL, lk.chat_id, [{"text": text, "parse_mode": "HTML", "reply_markup": markup}],
                                      card_id=card.card_id)
        if links:
            await self._flush()
        return len(links)

    async def send_failed(self, card_id: str, person_id: str, title: str, error: str) -> int:
        """Tells the person's chats that an approved send failed, with the reason and a Retry button."""
        text = f"⚠️ <b>Not sent</b> · {escape(title)}\n\n{escape(error)}"
        markup = {"inline_keyboard": [[{"text": "🔁 Retry", "callback_data": f"c:{card_id}:t"}]]}
        links = self.store.links(CHANNEL, person_id)
        for lk in links:
            self.store.queue_messages(CHANNEL, lk.chat_id, [{"text": text, "parse_mode": "HTML", "reply_markup": markup}])
        if links:
            await self._flush()
        return len(links)

    @staticmethod
    def _status_markup(card: Card) -> dict[str, Any]:
        label = ("✅ Approved " if card.state == APPROVED else "✖ Rejected ") + _who(card.decided_by)
        return {"inline_keyboard": [[{"text": label.strip(), "callback_data": f"c:{card.card_id}:s"}]]}

    async def card_decided(self, card: Card) -> None:
        if card.pending:
            return
        for chat_id, message_id in self.store.card_messages(card.card_id, CHANNEL):
            await self._show_decision(card, chat_id, message_id)

    async def _show_decision(self, card: Card, chat_id: int, message_id: int) -> None:
        try:
            await self.api.call("editMessageReplyMarkup", {"chat_id": chat_id, "message_id": message_id,
                                                           "reply_markup": self._status_markup(card)})
        except BotApiError as exc:
            if "not modified" not in exc.description:
                log.warning("telegram: could not update the buttons of card %s: %s", card.card_id, exc)
        except TransientError as exc:
            log.warning("telegram: could not update the buttons of card %s: %s", card.card_id, exc)

    # -- pushed answers (scheduled runs)
    async def deliver_answer(self, person_id: str, text: str, *, title: str | None = None,
                             conversation_id: str = "") -> int:
        markdown = f"**{title}**\n\n{text}" if title else text
        parts = await asyncio.to_thread(to_telegram, markdown) or [Part(escape(title or "(empty)"), title or "(empty)")]
        links = [lk for lk in self.store.links(CHANNEL, person_id) if lk.push_runs]
        for lk in links:
            self.store.queue_messages(CHANNEL, lk.chat_id,
                                      [{"text": p.html, "parse_mode": "HTML", "_plain": p.plain} for p in parts],
                                      conversation_id=conversation_id or None)
        if links:
            await self._flush()
        return len(links)

    # -- linking from the app
    def begin_link(self, person_id: str, ttl_s: float = 600.0) -> LinkOffer:
        code = self.store.create_link_code(CHANNEL, person_id, ttl_s)
        bot = f"@{self.bot_username}" if self.bot_username else "your bot"
        minutes = max(1, round(ttl_s / 60))
        return LinkOffer(CHANNEL, format_code(code), time.time() + ttl_s,
                         f"In Telegram, open {bot} and send: /link {format_code(code)} (valid for {minutes} minutes, "
                         "once).",
                         f"https://t.me/{self.bot_username}?start={code}" if self.bot_username else None)

    def links(self, person_id: str | None = None) -> list[ChannelLink]:
        return self.store.links(CHANNEL, person_id)

    def unlink(self, chat_id: int) -> bool:
        return self.store.unlink(CHANNEL, chat_id)

    # -- the outbox
    async def _flush_loop(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=1.0)
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                await self._flush()
            except Exception:
                log.exception("telegram: sending queued messages failed")

    async def _flush(self) -> None:
        """Sends every due outbox message in order; a chat whose message fails waits for its retry."""
        async with self._send_lock:
            held: set[int] = set()
            for item in self.store.pending_outbox(CHANNEL):
                if item.chat_id in held:
                    continue
                outcome = await self._send_item(item)
                if outcome == "network":
                    return  # nothing else will get through now either
                if outcome == "retry":
                    held.add(item.chat_id)

    async def _send_item(self, item: OutboxItem) -> str:
        """Sends one queued message. Shielded: a stop during the call lets it finish and be recorded, so a
        message Telegram received is never left marked unsent (and sent again after a restart)."""
        task = asyncio.ensure_future(self._send_item_now(item))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        return await asyncio.shield(task)

    async def _send_item_now(self, item: OutboxItem) -> str:
        body = dict(item.body)
        plain = body.pop("_plain", None)
        card = self.store.get_card(item.card_id) if item.card_id else None
        if card is not None and not card.pending:  # decided while the card waited in the outbox
            body["reply_markup"] = self._status_markup(card)
        try:
            res = await self.api.call("sendMessage", {"chat_id": item.chat_id, **body})
        except BotApiError as exc:
            if exc.code == 400 and "can't parse entities" in exc.description and plain:
                log.error("telegram: Telegram could not parse a message's HTML (%s); sending it as plain text",
                          exc.description)
                self.store.update_body(item, {"text": plain, **({"reply_markup": body["reply_markup"]}
                                                                 if "reply_markup" in body else {})})
                return await self._send_item_now(OutboxItem(item.id, item.channel, item.chat_id, item.part,
                                                        {"text": plain, **({"reply_markup": body["reply_markup"]}
                                                                           if "reply_markup" in body else {})},
                                                        item.update_id, item.card_id, item.attempts, item.next_try_at))
            if exc.transient:
                delay = float(exc.retry_after) if exc.retry_after else self._flush_backoff.next()
                self.store.mark_retry(item, delay)
                self._set_status("retrying", f"{exc} Queued answers go out in {delay:.0f} s.")
                return "retry"
            log.warning("telegram: message to chat %s dropped: %s", item.chat_id, exc)
            self.store.mark_failed(item, exc.description)
            return "failed"
        except TransientError as exc:
            delay = self._flush_backoff.next()
            self.store.mark_retry(item, delay)
            log.warning("telegram: answer queued for re-send in %.1f s: %s", delay, exc)
            return "network"
        self._flush_backoff.reset()
        message_id = int(res.get("message_id") or 0) if isinstance(res, dict) else None
        self.store.mark_sent(item, message_id)
        if card is not None and card.pending and message_id:
            now_card = self.store.get_card(card.card_id)
            if now_card is not None and not now_card.pending:  # decided while this send was on the wire
                await self._show_decision(now_card, item.chat_id, message_id)
        return "sent"



__all__ = ["DEFAULT_BASE_URL", "VAULT_KEY", "BotApi", "BotApiError", "TelegramChannel", "TransientError",
           "load_bot_token", "save_bot_token"]
