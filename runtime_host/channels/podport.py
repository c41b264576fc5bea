"""`PodChannelPort`: the channel port on top of the real Pod, using only its public methods
(start_turn, find_agent, list_agents, subscribe), plus the channel tables for what the Pod does
not keep yet (which Pod conversation belongs to which chat, approval-card decisions).

Decisions go through `decide_card` wherever they are made (phone or app): a compare-and-set in
pod.db lets exactly one of them through, and only that one reaches the decision listeners.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime_host.channels.base import ChannelError, TurnLike
from runtime_host.channels.store import Card, ChannelStore

if TYPE_CHECKING:
    from runtime_host.ports import ChannelPod
    from runtime_host.speech import SpeechEngine

log = logging.getLogger("hearth.channels")

CardListener = Callable[[Card], Any]


@dataclass(frozen=True)
class RunResult:
    """A finished run that started without a person (a schedule), as channels push it."""

    person_id: str
    agent: str
    origin: str
    status: str
    text: str
    error: str | None
    turn_id: str
    conversation_id: str = ""  # the run's conversation: its result not pushed yet goes if that is deleted


RunListener = Callable[[RunResult], Any]


def _call(listener: Callable[[Any], Any], arg: Any, tasks: set[asyncio.Task[Any]]) -> None:
    """Calls a listener; a coroutine listener runs as a task on the running loop."""
    try:
        res = listener(arg)
        if asyncio.iscoroutine(res):
            task = asyncio.get_running_loop().create_task(res)
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    except Exception:  # a broken listener must not break the caller
        log.exception("channel listener failed")


def card_body(ev: dict[str, Any]) -> str:
    """The body of the card a card.created event opens: its "body", under its "warning" about hidden direction
    characters when it has one (above the words it is about, so no cut to a phone's message length loses it)."""
    body, warning = str(ev.get("body") or ""), str(ev.get("warning") or "")
    return f"⚠️ *{warning}*" + (f"\n\n{body}" if body else "") if warning else body


class PodChannelPort:
    """A `PodPort` for one Pod. `speech` is created lazily (packaged offline model) when not given."""

    def __init__(self, pod: ChannelPod, store: ChannelStore | None = None, speech: SpeechEngine | None = None):
        self.pod = pod
        self.store = store if store is not None else ChannelStore(pod.store.engine)
        self._speech = speech
        self._own_speech = False
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._card_opened: list[CardListener] = []
        self._card_decided: list[CardListener] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._unsubscribe: Callable[[], None] | None = None
        self._run_listeners: list[tuple[RunListener, tuple[str, ...]]] = []

    # -- PodPort
    def _check_person(self, person_id: str) -> None:
        if self.pod.store.get_person_by_id(person_id) is None:
            raise ChannelError("This chat is linked to a person who is not on this pod any more. Link it again "
                               "from Hearth → Settings → Channels.")

    async def send(self, person_id: str, agent_name: str, text: str, conversation_key: str) -> TurnLike:
        """One turn in the chat's own conversation with that agent (created on first use)."""
        from runtime_host.store import StoreError

        self._check_person(person_id)
        self.pod.find_agent(person_id, agent_name)  # UnknownAgent (a StoreError) names the agents there are
        origin = conversation_key.split(":", 1)[0] or "channel"
        lock = self._locks.setdefault((conversation_key, agent_name), asyncio.Lock())
        async with lock:  # one turn at a time per chat: every message gets its own answer
            cid = self.store.conversation_for(conversation_key, agent_name)
            try:
                run = await self.pod.start_turn(person_id, agent_name, text, conversation_id=cid, new_conversation=cid is None,
                                                origin=origin, title=f"{origin.capitalize()} chat")
            except StoreError:
                if cid is None:
                    raise
                # The conversation was deleted in the app: start a fresh one for this chat.
                run = await self.pod.start_turn(person_id, agent_name, text, new_conversation=True, origin=origin,
                                                title=f"{origin.capitalize()} chat")
            if run.conversation_id != cid:
                self.store.set_conversation(conversation_key, agent_name, run.conversation_id)
            return await run.future

    def list_agents(self, person_id: str) -> list[str]:
        self._check_person(person_id)
        return [a["name"] for a in self.pod.list_agents(person_id)]

    def decide_card(self, card_id: str, approve: bool, decided_by: str) -> bool:
        """The one way to decide a card, from the phone or the app. False when it was decided already."""
        if not self.store.decide_card(card_id, approve, decided_by):
            return False
        card = self.store.get_card(card_id)
        assert card is not None
        log.info("card %s %s by %s", card_id, card.state, decided_by)
        for fn in list(self._card_decided):
            _call(fn, card, self._tasks)
        return True

    async def retry_card(self, card_id: str, person_id: str) -> str:
        """Sends an approved mail card whose send failed once more (at most once in all); says how it went."""
        from runtime_host.store import StoreError

        self._check_person(person_id)
        try:
            out = await self.pod.mail.retry(card_id, person_id)
        except StoreError as exc:
            return str(exc)
        return "Sent." if out["state"] == "sent" else f"Still not sent: {out.get('error') or out['state']}"

    async def transcribe(self, data: bytes) -> str:
        from runtime_host.speech import SpeechError

        engine = self._speech_engine()
        try:
            transcript = await engine.atranscribe(data)
        except SpeechError as exc:
            raise ChannelError(str(exc)) from None
        words = transcript.text.strip()
        if not words:
            raise ChannelError("I could not hear any words in that voice note. Try again closer to the microphone.")
        return words

    # -- cards (what the lead's approvals call)
    def open_card(self, person_id: str, kind: str, title: str, body: str = "", card_id: str | None = None) -> Card:
        """Records a pending approval card and shows it on every channel (through the listeners)."""
        card = self.store.open_card(person_id, kind, title, body, card_id=card_id)
        for fn in list(self._card_opened):
            _call(fn, card, self._tasks)
        return card

    def get_card(self, card_id: str) -> Card | None:
        return self.store.get_card(card_id)

    def on_card_opened(self, fn: CardListener) -> Callable[[], None]:
        self._card_opened.append(fn)
        return lambda: self._card_opened.remove(fn) if fn in self._card_opened else None

    def on_card_decided(self, fn: CardListener) -> Callable[[], None]:
        """`fn(card)` runs once per card, for the decision that won (the Pod acts on it here)."""
        self._card_decided.append(fn)
        return lambda: self._card_decided.remove(fn) if fn in self._card_decided else None

    # -- cards announced as Pod events (optional bridge)
    def follow_pod_cards(self) -> Callable[[], None]:
        """Mirrors Pod events into cards: {"type": "card.created", "card_id", "kind", "summary"|"title", "body",
        "warning" (about hidden direction characters, put above the body)} opens one (once per id), {"type": "card.decided", "card_id", "approved", "decided_by"} decides it
        (the compare-and-set still lets only the first decision through)."""

        def on_event(ev: dict[str, Any]) -> None:
            kind = ev.get("type")
            cid = str(ev.get("card_id") or "")
            if not cid or kind not in ("card.created", "card.decided"):
                return
            if kind == "card.created":
                person = ev.get("person_id") or ev.get("person")
                if self.store.get_card(cid) is None and person:
                    self.open_card(str(person), str(ev.get("kind") or "send"),
                                   str(ev.get("summary") or ev.get("title") or "Approval needed"), card_body(ev),
                                   card_id=cid)
            else:
                self.decide_card(cid, bool(ev.get("approved")), str(ev.get("decided_by") or "app"))

        return self.pod.subscribe(on_event)

    # -- runs without a person (schedules) pushed to chats
    def on_run_finished(self, fn: RunListener, origins: tuple[str, ...] = ("schedule",)) -> Callable[[], None]:
        entry = (fn, origins)
        self._run_listeners.append(entry)
        if self._unsubscribe is None:
            self._unsubscribe = self.pod.subscribe(self._on_pod_event)
        return lambda: self._run_listeners.remove(entry) if entry in self._run_listeners else None

    def _on_pod_event(self, ev: dict[str, Any]) -> None:
        if ev.get("type") != "turn.finished":
            return
        origin = str(ev.get("origin") or "")
        if not ev.get("person"):
            return
        result = RunResult(str(ev["person"]), str(ev.get("agent") or ""), origin, str(ev.get("status") or ""),
                           str(ev.get("text") or ""), ev.get("error"), str(ev.get("turn_id") or ""),
                           str(ev.get("conversation_id") or ""))
        for fn, origins in list(self._run_listeners):
            if origin in origins:
                _call(fn, result, self._tasks)

    def _speech_engine(self) -> SpeechEngine:
        if self._speech is None:
            from runtime_host.speech import SpeechEngine

            self._speech = SpeechEngine()
            self._own_speech = True
        return self._speech

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._own_speech and self._speech is not None:
            self._speech.close()
            self._speech = None
