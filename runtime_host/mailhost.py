"""Mail in the Pod: inboxes per person, polling with rules, agents handed mail as untrusted text,
drafts that become approve-and-send cards, and sending only after a person approves.

Passwords live in the vault under "mail/<account id>/imap" and ".../smtp"; nothing here writes
one anywhere else. An agent reaches mail only through the mail Pod tools, scoped to the inboxes
of the person its pipe is bound to.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from runtime_host.mail import ledger
from runtime_host.mail.imap import ImapSettings, MailError
from runtime_host.mail.mailroom import Draft, Mailroom, draft_to_card
from runtime_host.mail.outbox import Outbox, OutboxError, SmtpSettings, create_card, get_card, list_cards
from runtime_host.safety.untrusted import score_injection, wrap_untrusted
from runtime_host.store import StoreError
from unseen import AS_THEY_ARE, direction_shown, direction_warning

if TYPE_CHECKING:
    from runtime_host.ports import MailPod

log = logging.getLogger("hearth.mail")
POLL_EVERY_S = 60.0


def _key(action_id: str, what: str) -> str:
    """The id of what a rule action makes (its conversation, its card): the same each time it is carried out."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"hearth:mail-action:{action_id}:{what}").hex


# What a failed rule action did not do, and what the person can do about it.
_FAILED = {
    "hand": ("did not hand {mail} to {agent}",
             "Check the rule's agent in Mail → Rules; the mail is not handed again, so hand it on yourself if it "
             "still needs doing."),
    "draft": ("did not draft a reply to {mail}",
              "Check the rule's agent in Mail → Rules; no reply waits in Approvals, so answer the mail yourself if it "
              "needs one."),
    "label": ("did not label {mail} {keyword!r}", "Set the label in your mail program if you need it."),
    "mark_read": ("did not mark {mail} read", "Mark it read in your mail program if you need to."),
    "notify": ("did not tell you of {mail}", "The mail is in the inbox's recent mail."),
}


class MailHost:
    def __init__(self, pod: MailPod):
        self.pod = pod
        self.engine = pod.store.engine
        self._rooms: dict[str, Mailroom] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._removing: set[str] = set()  # inboxes being removed: their watchers end without a failure notice
        self._left_alone: set[str] = set()  # inboxes of a person removed (or being removed), said once in the log
        self._task: asyncio.Task[None] | None = None

    # -- accounts
    def add_account(self, person_id: str, address: str, *, imap: dict[str, Any], smtp: dict[str, Any],
                    password: str, smtp_password: str | None = None, rules: list[Any] | None = None,
                    review_required: bool = True, start_at: str = "now") -> ledger.AccountRow:
        ImapSettings(**imap)
        SmtpSettings(**smtp)
        person = self.pod.store.get_person_by_id(person_id)
        self.pod.store.still_here(person_id, person.name if person is not None else "This person")
        row = ledger.add_account(self.engine, person_id=person_id, address=address, imap=imap, smtp=smtp,
                                 rules=rules, review_required=review_required, start_at=start_at)
        vault = self.pod.vault_for(person_id)
        vault.set(f"mail/{row.id}/imap", password)
        vault.set(f"mail/{row.id}/smtp", smtp_password or password)
        return row

    async def remove_account(self, account_id: str, person_id: str) -> int:
        """Stops watching an inbox and deletes it, its passwords and what Hearth kept of its mail, memory's sources
        of it too (claims leave the pages citing them; added again, the inbox is remembered once, not twice).
        Returns how many memory sources were deleted."""
        acct = self._account(account_id, person_id)
        self._removing.add(acct.id)
        try:
            room = self._rooms.pop(acct.id, None)
            if room is not None:
                await asyncio.to_thread(room.close)  # a check under way stops before its next message
            async with self._locks.setdefault(acct.id, asyncio.Lock()):  # and has ended: nothing more of it is kept
                return await self._remove_account(acct, person_id)
        finally:
            self._removing.discard(acct.id)

    async def _remove_account(self, acct: ledger.AccountRow, person_id: str) -> int:
        keys = ledger.message_row_ids(self.engine, acct.id)
        # Kept as forgotten too: a memory run that read this mail before and is still waiting on its model stores
        # nothing of it after. The real values behind its reversible placeholders leave the keyring once unused.
        forgotten = await self.pod.forget_origins(acct.person_id, keys) if keys else 0
        ledger.delete_account(self.engine, acct.id)
        vault = self.pod.vault_for(person_id)
        for which in ("imap", "smtp"):
            try:
                vault.delete(f"mail/{acct.id}/{which}")
            except Exception as exc:  # already gone: nothing to remove
                log.info("no %s password removed for %s: %s", which, acct.address, exc)
        self.pod.emit({"type": "mail.removed", "person": person_id, "account": acct.address})
        return forgotten

    def accounts(self, person_id: str) -> list[ledger.AccountRow]:
        return ledger.list_accounts(self.engine, person_id)

    def messages(self, account_id: str, person_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The inbox's latest kept messages, newest first, without their body text."""
        return ledger.list_messages(self.engine, self._account(account_id, person_id).id, limit=limit, newest=True)

    def sender(self, person_id: str, mail_id: str) -> str:
        """Who sent the person's kept mail ``mail_id`` (a mail item's key in memory), as their Mail shows it ("Ana
        Quintero <ana@example.org>"); "" when it is no mail of theirs. For the person's own eyes: memory keeps the
        address redacted (agents, models and other people never read it), so a look-alike sender of the same name
        is told apart where the person decides about a mail (Held back, Ask memory's sources)."""
        stored = ledger.get_message(self.engine, mail_id) if mail_id else None
        if stored is None:
            return ""
        acct = ledger.get_account(self.engine, stored.account_id)
        return stored.mail.from_addr if acct is not None and acct.person_id == person_id else ""

    def set_rules(self, account_id: str, person_id: str, rules: list[Any]) -> None:
        """Replaces the inbox's rules (RuleError when one is wrong); the next check of mail uses them."""
        acct = self._account(account_id, person_id)
        ledger.set_rules(self.engine, acct.id, rules)
        self._rooms.pop(acct.id, None)

    def _account(self, account_id: str, person_id: str | None = None) -> ledger.AccountRow:
        acct = ledger.get_account(self.engine, account_id)
        if acct is None or (person_id is not None and acct.person_id != person_id):
            raise StoreError(f"No inbox {account_id!r} for this person.")
        return acct

    def _room(self, acct: ledger.AccountRow) -> Mailroom:
        room = self._rooms.get(acct.id)
        if room is None:
            password = self.pod.vault_for(acct.person_id).get(f"mail/{acct.id}/imap")
            if not password:
                raise MailError(f"The password for {acct.address} is missing from the keyring; add the inbox again.")
            room = self._rooms[acct.id] = Mailroom(self.engine, account_id=acct.id, address=acct.address,
                                                   imap=ImapSettings(**acct.imap), password=password,
                                                   rules=acct.rules, start_at=acct.start_at)
        return room

    def outbox(self, acct: ledger.AccountRow) -> Outbox:
        vault = self.pod.vault_for(acct.person_id)
        return Outbox(self.engine, smtp=SmtpSettings(**acct.smtp), smtp_password=vault.get(f"mail/{acct.id}/smtp"),
                      imap=ImapSettings(**acct.imap), imap_password=vault.get(f"mail/{acct.id}/imap"))

    # -- polling
    async def poll(self, account_id: str) -> dict[str, Any]:
        acct = self._account(account_id)
        lock = self._locks.setdefault(account_id, asyncio.Lock())
        async with lock:  # never two polls on one inbox at once
            room = self._room(acct)
            failed_before = ledger.failed_action_ids(self.engine, acct.id)
            try:
                report = await asyncio.to_thread(room.poll)
                dispatched = await self.dispatch(acct)
            finally:  # each rule action that failed in this check is told to the inbox's person, once
                self._tell_failures(acct, ledger.failed_action_ids(self.engine, acct.id) - failed_before)
        out = {**report.to_dict(), "dispatched": dispatched}
        self.pod.emit({"type": "mail.polled", "person": acct.person_id, "account": acct.address,
                       **{k: v for k, v in out.items() if isinstance(v, int)}})
        return out

    def _nobodys(self, acct: ledger.AccountRow, active: set[str] | None = None) -> bool:
        """Whether an inbox's person was removed from this Hearth or is being removed (``active``: the people who
        are not, read once for a pass over every inbox): it is never checked, none of its mail kept (the end of a
        removal, or the next start, deletes it with its passwords: ``removal.sweep``). Said once in the log."""
        nobodys = acct.person_id not in active if active is not None else self.pod.store.removing(acct.person_id)
        if nobodys and acct.id not in self._left_alone:
            self._left_alone.add(acct.id)
            log.info("mail: inbox %s is not checked: its person was removed from this Hearth, or is being removed",
                     acct.id)
        return nobodys

    def _active(self) -> set[str]:
        return {p.id for p in self.pod.store.list_people(active=True)}

    async def poll_all(self) -> list[dict[str, Any]]:
        out = []
        active = self._active()
        for acct in ledger.list_accounts(self.engine):
            if acct.paused or self._nobodys(acct, active):
                continue
            try:
                out.append(await self.poll(acct.id))
            except MailError as exc:
                self.pod.emit({"type": "mail.failed", "person": acct.person_id, "account": acct.address, "error": str(exc)})
                out.append({"account": acct.address, "error": str(exc)})
        return out

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        """One watcher per inbox (new inboxes are picked up every minute)."""
        watchers: dict[str, asyncio.Task[None]] = {}
        try:
            while True:
                active = self._active()
                for acct in ledger.list_accounts(self.engine):
                    if acct.paused or self._nobodys(acct, active):
                        continue
                    if acct.id not in watchers or watchers[acct.id].done():
                        watchers[acct.id] = asyncio.create_task(self._watch(acct.id))
                await asyncio.sleep(POLL_EVERY_S)
        finally:
            for t in watchers.values():
                t.cancel()

    async def _watch(self, account_id: str) -> None:
        """Polls an inbox, then waits with IDLE (where the server has it) until mail arrives or a minute
        passes; on a failure it tells the person and tries again a minute later."""
        while True:
            try:
                acct = self._account(account_id)
            except StoreError:
                return  # the inbox was removed
            if self._nobodys(acct):
                return  # its person's removal began (in this process or another)
            try:
                await self.poll(account_id)
                room = self._room(acct)
                lock = self._locks.setdefault(account_id, asyncio.Lock())
                async with lock:
                    has_idle = await asyncio.to_thread(self._supports_idle, room)
                    if has_idle:
                        await asyncio.to_thread(room.idle, POLL_EVERY_S - 5)
                if not has_idle:
                    await asyncio.sleep(POLL_EVERY_S)
            except MailError as exc:
                if account_id in self._removing or ledger.get_account(self.engine, account_id) is None:
                    return  # removed while it was checked: nothing to tell anyone
                self.pod.emit({"type": "mail.failed", "person": acct.person_id, "account": acct.address,
                               "error": str(exc)})
                await asyncio.sleep(POLL_EVERY_S)
            except Exception as exc:  # noqa: BLE001 - a fault in Hearth: said to the person and logged, tried again
                if account_id in self._removing or ledger.get_account(self.engine, account_id) is None:
                    return
                log.exception("mail: the check of %s failed", acct.address)
                self.pod.emit({"type": "mail.failed", "person": acct.person_id, "account": acct.address,
                               "error": f"The check of {acct.address} failed ({type(exc).__name__}: {exc}); Hearth "
                                        "tries again in a minute, and the details are in its log."})
                await asyncio.sleep(POLL_EVERY_S)

    @staticmethod
    def _supports_idle(room: Mailroom) -> bool:
        try:
            return "IDLE" in room._connected().capabilities
        except (AttributeError, MailError):
            return False

    async def close(self) -> None:
        if self._task:
            self._task.cancel()
        for room in self._rooms.values():
            await asyncio.to_thread(room.close)

    # -- rule actions that failed, told to the inbox's person
    def rule_problems(self, account_id: str, person_id: str, limit: int = 20) -> list[dict[str, Any]]:
        """The inbox's rule actions that failed, the latest first: which rule, which mail, the error, and in
        ``text`` all of it in a sentence with what to do."""
        acct = self._account(account_id, person_id)
        return self._problems(acct, ledger.failed_actions(self.engine, acct.id, limit=limit))

    def _tell_failures(self, acct: ledger.AccountRow, ids: set[str]) -> None:
        if not ids:
            return
        for p in self._problems(acct, ledger.failed_actions(self.engine, acct.id, only=ids)):
            self.pod.emit({"type": "mail.rule_failed", "person": acct.person_id, "account": acct.address,
                           "rule": p["rule"], "subject": p["subject"], "error": p["error"], "text": p["text"]})

    def _problems(self, acct: ledger.AccountRow, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from runtime_host.mail.rules import RuleError, parse_rules

        try:
            names = {r.id: r.name for r in parse_rules(acct.rules)}
        except RuleError:
            names = {}
        out = []
        for row in rows:
            rule = names.get(row["rule_id"]) or row["rule_id"]
            subject = " ".join(str(row.get("subject") or "").split())[:80] or "(no subject)"
            sender = " ".join(str(row.get("from_addr") or "").split())[:80]
            mail = f"“{subject}”" + (f" from {sender}" if sender else "")
            did, advice = _FAILED.get(row["kind"], ("did not act on {mail}", "Check the rule in Mail."))
            did = did.format(mail=mail, agent=row["params"].get("agent") or "its agent",
                             keyword=row["params"].get("keyword") or "")
            error = str(row.get("error") or "no reason was kept").strip().rstrip(".")
            out.append({"id": row["id"], "mail_id": row["mail_id"], "rule": rule, "kind": row["kind"],
                        "subject": subject, "from": sender, "error": error, "at": row["done_at"],
                        "text": f"Rule {rule!r} {did}: {error}. {advice}"})
        return out

    # -- rule actions the Pod carries out
    def _agent_of(self, acct: ledger.AccountRow, name: str | None) -> Any:
        agents = self.pod.store.list_agents(acct.person_id)
        if not agents:
            raise StoreError(f"{acct.address} has no agent to hand mail to; create one first.")
        if name:
            found = next(((i, p) for i, p in agents if i.name == name), None)
            if found is None:
                raise StoreError(f"Rule names agent {name!r}, which {acct.address}'s person does not have.")
            return found
        return agents[0]

    @staticmethod
    def untrusted_mail(stored: ledger.StoredMail) -> tuple[str, Any]:
        from runtime_host.sizes import MAX_MESSAGE_BYTES, clip

        # A huge mail still reaches its agent, cut with a note (a turn carries at most one message's worth).
        text = clip(stored.mail.for_agent(), MAX_MESSAGE_BYTES // 2, "mail", "the whole mail is kept in the inbox")
        return wrap_untrusted(text, "mail", origin=stored.mail.from_addr).text, score_injection(text)

    async def dispatch(self, acct: ledger.AccountRow) -> int:
        """Hands, drafts and notifications the rules asked for, for one inbox. A hand-off or draft cut short by a
        crash is picked up where it stopped (its conversation, turn and card have ids of the action's own), never
        started a second time."""
        done = 0
        for action in ledger.pending_actions(self.engine, acct.id, kinds=("hand", "draft", "notify")):
            stored = ledger.get_message(self.engine, action.mail_id)
            if stored is None:
                ledger.finish_action(self.engine, action.id, ok=False, error="the message is gone")
                continue
            try:
                if action.kind == "notify":
                    self.pod.emit({"type": "mail.notify", "person": acct.person_id, "account": acct.address,
                                   "subject": stored.mail.subject, "from": stored.mail.from_addr, "why": action.why})
                elif action.kind == "hand":
                    await self._hand(acct, stored, action)
                elif action.kind == "draft" and not await self._draft(acct, stored, action):
                    continue  # its turn, resumed after a crash, runs in another live process: the next check ends it
                ledger.finish_action(self.engine, action.id, ok=True)
                done += 1
            except (StoreError, MailError) as exc:
                ledger.finish_action(self.engine, action.id, ok=False, error=str(exc))
        return done

    def _action_turn(self, inst: Any, action: ledger.ActionRow) -> tuple[str, Any]:
        """The id of the action's own conversation (it comes from the action's, so a dispatch after a crash finds
        it) and the turn already started in it for the action, if any."""
        conv_id = _key(action.id, "conversation")
        conv = self.pod.store.get_conversation(conv_id)
        if conv is not None and conv.instance_id != inst.id:
            raise StoreError(f"The conversation of this mail's {action.kind} belongs to another agent now.")
        turns = self.pod.store.list_turns(conversation_id=conv_id) if conv is not None else []
        return conv_id, turns[0] if turns else None

    async def _start_action_turn(self, inst: Any, profile: Any, conv_id: str, title: str, text: str) -> Any:
        """Starts the action's turn in its own conversation, made for it now. A turn the Pod refuses (too large a
        message, a missing agent or model) leaves no empty conversation behind in the agent's list."""
        store = self.pod.store
        if store.get_conversation(conv_id) is None:
            store.create_conversation(inst.id, title=title, conversation_id=conv_id)
        try:
            return await self.pod.start_turn_for(inst, profile, text, conversation_id=conv_id, origin="mail")
        except BaseException:
            if store.delete_empty_conversation(conv_id):
                self.pod.emit({"type": "conversation.deleted", "conversation_id": conv_id, "person": inst.person_id})
            raise

    async def _hand(self, acct: ledger.AccountRow, stored: ledger.StoredMail, action: ledger.ActionRow) -> None:
        inst, profile = self._agent_of(acct, action.params.get("agent"))
        conv_id, turn = self._action_turn(inst, action)
        if turn is not None:
            return  # handed before a crash: that turn is the agent's (recovery resumes it when unfinished)
        wrapped, score = self.untrusted_mail(stored)
        prompt = action.params.get("prompt") or "A mail arrived for you to handle."
        flag = f"\n\nWarning: this mail looks like it tries to instruct you ({score.explain()})." if score.level != "ok" else ""
        await self._start_action_turn(inst, profile, conv_id, f"Mail: {stored.mail.subject[:50]}",
                                      f"{prompt}\n\n{wrapped}{flag}")

    async def _draft(self, acct: ledger.AccountRow, stored: ledger.StoredMail, action: ledger.ActionRow) -> bool:
        """Drafts the reply card; False when the drafting turn runs in another live process (the action waits)."""
        inst, profile = self._agent_of(acct, action.params.get("agent"))
        card_id = _key(action.id, "card")
        card = get_card(self.engine, card_id)
        if card is not None:  # drafted before a crash: announced again (the arbiter opens a card once)
            self._card_created(acct, card)
            return True
        wrapped, score = self.untrusted_mail(stored)
        conv_id, turn = self._action_turn(inst, action)
        if turn is None:
            ask = ("Write the body of a reply to this mail, in the person's voice, ready to send. Answer with the "
                   "reply text only.")
            run = await self._start_action_turn(inst, profile, conv_id, f"Draft: {stored.mail.subject[:50]}",
                                                f"{ask}\n\n{wrapped}")
            result = await run.future
            ok, body, error = result.ok, result.text, result.error
        else:  # started before a crash: its answer is the draft, never a second turn
            if turn.status in ("pending", "running"):
                run = await self.pod.resume_turn(turn.id)
                if run is not None:
                    await asyncio.shield(run.future)
                turn = self.pod.store.get_turn(turn.id)
                if turn is None or turn.status in ("pending", "running"):
                    return False
            ok, error = turn.status == "done", turn.error
            body = next((m.content for m in reversed(self.pod.store.list_messages(conv_id))
                         if m.turn_id == turn.id and m.role == "assistant" and m.content.strip()), "")
        if not ok:
            raise MailError(f"The agent could not draft a reply: {error}")
        why = action.why + (f" — warning: the mail looks like it tries to instruct the assistant ({score.explain()})"
                            if score.level != "ok" else "")
        why += self.egress(acct, inst.name, stored.mail.subject, body)
        card = draft_to_card(self.engine, stored, action, Draft(body=body, why=why), from_addr=acct.address,
                             card_id=card_id)
        self._card_created(acct, card)
        return True

    def egress(self, acct: ledger.AccountRow, agent_name: str, subject: str, body: str) -> str:
        """The egress gate for outgoing mail: a block refuses the draft; anything found is named on the card."""
        d = self.pod.gate("egress", f"{subject}\n{body}", person_id=acct.person_id, agent_id=None, agent_name=agent_name,
                          context={"inbox": acct.address})
        if d.action.value == "blocked":
            raise MailError(f"Not drafted: {d.message}")
        return f" — contains {d.message}" if d.findings else ""

    def _card_created(self, acct: ledger.AccountRow, card: Any, made_in: dict[str, str] | None = None) -> None:
        """Announces a card; ``made_in``: the turn and conversation whose tool drafted it (a rule's card has none)."""
        _ = self.pod.channels  # the card arbiter must exist before the card is announced
        # Told as a card shows it (the tray, the phone): a direction character in it written out, never obeyed.
        self.pod.emit({"type": "card.created", "person": acct.person_id, "card_id": card.id, "kind": "send",
                       "summary": direction_shown(f"Send mail to {card.to}: {card.subject}"),
                       "body": direction_shown(f"**Subject:** {card.subject}\n\n{card.body}"),
                       "warning": direction_warning({"To": card.to, "Subject": card.subject, "Body": card.body},
                                                    AS_THEY_ARE), **(made_in or {})})

    # -- cards
    def cards(self, person_id: str, state: str | tuple[str, ...] | None = ("pending", "failed")) -> list[dict[str, Any]]:
        """The person's cards in `state` (default: those waiting for them: pending, or failed to send with the
        reason in `error`, to retry or reject)."""
        mine = {a.id: a for a in self.accounts(person_id)}
        states = (state,) if isinstance(state, str) else state
        return [{**c.to_dict(), "inbox": mine[c.account_id].address}
                for c in list_cards(self.engine) if c.account_id in mine and (states is None or c.state in states)]

    def _card_account(self, card_id: str, person_id: str) -> ledger.AccountRow:
        card = get_card(self.engine, card_id)
        if card is None:
            raise StoreError(f"No card {card_id!r}.")
        return self._account(card.account_id, person_id)

    def _claim(self, card_id: str, approve: bool) -> None:
        from runtime_host.channelhost import AlreadyDecided

        try:
            self.pod.channels.claim(card_id, approve, "app")
        except AlreadyDecided as exc:
            raise StoreError(str(exc)) from None

    async def approve(self, card_id: str, person_id: str, edits: dict[str, str] | None = None, *,
                      _decided: bool = False) -> dict[str, Any]:
        acct = self._card_account(card_id, person_id)
        if get_card(self.engine, card_id).state == "failed":  # type: ignore[union-attr]
            return await self.retry(card_id, person_id, edits)  # approved already: sending again is a retry
        if not _decided:
            self._claim(card_id, True)
        return await self._send(acct, card_id, person_id, edits)

    async def retry(self, card_id: str, person_id: str, edits: dict[str, str] | None = None) -> dict[str, Any]:
        """Sends an approved card whose send failed, once more (at most once in all: a copy already in the
        Sent mailbox, by its Message-ID, counts as sent)."""
        acct = self._card_account(card_id, person_id)
        card = get_card(self.engine, card_id)
        if card is None or card.state != "failed":
            state = card.state if card else "gone"
            raise StoreError(f"This card is {state}, not a failed send: there is nothing to retry.")
        return await self._send(acct, card_id, person_id, edits)

    async def _send(self, acct: ledger.AccountRow, card_id: str, person_id: str,
                    edits: dict[str, str] | None) -> dict[str, Any]:
        try:
            card = await asyncio.to_thread(self.outbox(acct).approve, card_id, edits)
        except OutboxError as exc:
            raise StoreError(str(exc)) from None
        self.pod.emit({"type": "card.decided", "person": person_id, "card_id": card_id, "state": card.state,
                       "kind": "send", "error": card.error,
                       "summary": direction_shown(f"Send mail to {card.to}: {card.subject}")})
        return card.to_dict()

    async def reject(self, card_id: str, person_id: str, reason: str | None = None, *,
                     _decided: bool = False) -> dict[str, Any]:
        acct = self._card_account(card_id, person_id)
        if not _decided and get_card(self.engine, card_id).state != "failed":  # type: ignore[union-attr]
            self._claim(card_id, False)  # (a failed send was approved already: dropping it decides nothing new)
        try:
            card = await asyncio.to_thread(self.outbox(acct).reject, card_id, reason)
        except OutboxError as exc:
            raise StoreError(str(exc)) from None
        self.pod.emit({"type": "card.decided", "person": person_id, "card_id": card_id, "state": card.state})
        return card.to_dict()

    # -- the mail toolkit (Pod tools, scoped to the pipe's person)
    async def tool_list_mail(self, person_id: str, _agent: str, args: dict[str, Any]) -> str:
        limit = max(1, min(int(args.get("limit") or 20), 100))
        latest = [m for acct in self.accounts(person_id)
                  for m in ledger.list_messages(self.engine, acct.id, limit=limit, newest=True)]
        latest = sorted(latest, key=lambda m: (m["received_at"], m["id"]), reverse=True)[:limit]
        if not latest:
            return "no mail yet"
        # Senders and subjects are strangers' words, like a mail's text: data for the model, never orders.
        return wrap_untrusted("\n".join(f"[{m['id']}] {m.get('from_addr', '')} — {m.get('subject', '')}"
                                        for m in latest), "mail", origin="the person's inboxes").text

    async def tool_read_mail(self, person_id: str, _agent: str, args: dict[str, Any]) -> str:
        stored = ledger.get_message(self.engine, str(args.get("mail_id") or ""))
        if stored is None or stored.account_id not in {a.id for a in self.accounts(person_id)}:
            raise ValueError("no such mail in your inboxes")
        return self.untrusted_mail(stored)[0]

    async def tool_draft_mail(self, person_id: str, _agent: str, args: dict[str, Any]) -> str:
        accts = self.accounts(person_id)
        if not accts:
            raise ValueError("this person has no inbox to send from")
        acct = accts[0]
        found = self.pod.store.get_instance(_agent)
        subject, body = str(args.get("subject") or ""), str(args.get("body") or "")
        try:
            note = self.egress(acct, found[0].name if found else _agent, subject, body)
        except MailError as exc:
            raise ValueError(str(exc)) from None
        made_in = self.pod.turn_driver.working_on(person_id, _agent)
        card = create_card(self.engine, account_id=acct.id, from_addr=acct.address, to=str(args.get("to") or ""),
                           subject=subject, body=body, why=str(args.get("why") or "drafted by an agent") + note,
                           conversation_id=made_in.get("conversation_id"))
        self._card_created(acct, card, made_in)
        return f"draft {card.id} is waiting for the person's approval; nothing was sent"
