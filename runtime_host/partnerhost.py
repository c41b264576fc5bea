"""Partner agents (A2A): partners a person pinned (endpoint, key in their vault, TLS pin), and the
`ask_partner` tool, whose every send waits for a person's approval (a card) before it leaves.
"""

from __future__ import annotations

import asyncio
from typing import Any

from runtime_host.store import StoreError
from unseen import AS_THEY_ARE, direction_shown, direction_warning


class PartnerHost:
    """Partner agents and their approved sends. `pod` is the Pod (kept loose: this module never imports it)."""

    def __init__(self, pod: Any):
        self.pod = pod
        self._partner_sends: dict[str, Any] = {}

    def register_tools(self, tools: dict[str, Any]) -> None:
        """The Pod tools this part carries out for a worker."""
        tools["ask_partner"] = self._tool_ask_partner

    def add_partner(self, person_id: str, name: str, endpoint: str, key: str, *, tls_fingerprint: str = "", ca_file: str | None = None,
                    ) -> dict[str, Any]:
        """Pins a partner as the operator adds it: endpoint, key (vault) and TLS pin, never changed later."""
        from sqlalchemy import text as sql

        from runtime_host.partners import Partner, PartnerConfigError, vault_key

        try:
            p = Partner.new(name, endpoint, key, tls_fingerprint=tls_fingerprint, ca_file=ca_file,
                            added_by=person.name if (person := self.pod.store.get_person_by_id(person_id)) else "")
        except PartnerConfigError as exc:
            raise StoreError(str(exc)) from None
        row = {**p.to_row(), "person_id": person_id}
        with self.pod.store.engine.begin() as c:
            c.execute(sql(f"INSERT INTO partners ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})"), row)
        self.pod.vault_for(person_id).set(vault_key(p.id), key)
        return {k: v for k, v in row.items() if k != "key_sha256"}

    def _partner(self, name: str, person_id: str) -> Any:
        from sqlalchemy import text as sql

        from runtime_host.partners import Partner, vault_key

        with self.pod.store.engine.connect() as c:
            row = c.execute(sql("SELECT * FROM partners WHERE name = :n AND person_id = :p AND disabled_at IS NULL"),
                            {"n": name, "p": person_id}).first()
        if row is None:
            raise ValueError(f"no partner named {name!r}; a person adds partners in Settings")
        m = {k: v for k, v in dict(row._mapping).items() if k != "person_id"}
        return Partner.from_row(m, credential=self.pod.vault_for(person_id).get(vault_key(m["id"])))

    def list_partners(self, person_id: str) -> list[dict[str, Any]]:
        from sqlalchemy import text as sql

        with self.pod.store.engine.connect() as c:
            return [{k: v for k, v in dict(r._mapping).items() if k != "key_sha256"}
                    for r in c.execute(sql("SELECT * FROM partners WHERE person_id = :p AND disabled_at IS NULL "
                                           "ORDER BY name"), {"p": person_id})]

    def partner_client(self, partner: Any) -> Any:
        """The client for one send. Tests replace this method to reach their own loopback server."""
        from runtime_host.partners import PartnerClient

        return PartnerClient(partner)

    async def _tool_ask_partner(self, person_id: str, instance_id: str, args: dict[str, Any]) -> str:
        """Prepares a send to a partner, shows it as a card, and sends only after a person approves."""
        from runtime_host.partners import PartnerError, approve, prepare_send

        partner = self._partner(str(args.get("partner") or ""), person_id)
        message = str(args.get("message") or "")
        found = self.pod.store.get_instance(instance_id)
        d = self.pod.gate("egress", message, person_id=person_id, agent_id=instance_id,
                      agent_name=found[0].name if found else instance_id, context={"partner": partner.name})
        if d.action.value == "blocked":
            raise ValueError(f"not sent: {d.message}")
        pending = prepare_send(partner, message)
        decided: asyncio.Future[tuple[bool, str]] = asyncio.get_running_loop().create_future()
        made_in = self.pod.turn_driver.working_on(person_id, instance_id)
        self._partner_sends[pending.id] = (pending, decided, person_id, made_in.get("conversation_id"))
        _ = self.pod.channels
        self.pod.emit({"type": "card.created", "person": person_id, "card_id": pending.id, "kind": "partner",
                   "summary": direction_shown(f"Send to partner {partner.name} ({partner.endpoint})")
                   + (f" — contains {d.message}" if d.findings else ""),
                   "body": direction_shown(message),
                   "warning": direction_warning({"message": message}, AS_THEY_ARE), **made_in})
        try:
            approved, who = await asyncio.wait_for(asyncio.shield(decided), 240)
        except TimeoutError:
            return f"the send to {partner.name} is still waiting for the person's approval; nothing was sent"
        finally:
            self._partner_sends.pop(pending.id, None)
        if not approved:
            return f"the person rejected the send to {partner.name}; nothing was sent"
        approval = approve(pending, decided_by=who)
        try:
            reply = await self.partner_client(partner).send(pending, approval)
        except PartnerError as exc:
            raise ValueError(f"{exc}" + ("" if exc.nothing_sent else " (the message may have reached the partner)")) from None
        self.pod.audit(person_id=person_id, agent=instance_id, kind="partner", action="sent", rule="partner.send",
                   summary=f"sent {pending.size} characters to {partner.name}; reply scored {reply.injection_score:.2f}",
                   detail={"raw_size": reply.raw_size, "elapsed_s": reply.elapsed_s})
        return reply.text_wrapped

    def partner_cards(self, person_id: str) -> list[dict[str, Any]]:
        return [{"id": pid, "partner": p.partner_name, "endpoint": p.endpoint, "text": p.text, "size": p.size,
                 "conversation_id": conv} for pid, (p, _f, person, conv) in self._partner_sends.items() if person == person_id]

    def decide_partner_send(self, send_id: str, approve: bool, decided_by: str = "app", *,
                            person_id: str | None = None) -> None:
        """A person's decision (`person_id` given: only on their own sends) or a channel's (already checked)."""
        from runtime_host.channelhost import AlreadyDecided

        entry = self._partner_sends.get(send_id)
        if entry is not None and person_id is not None and entry[2] != person_id:
            raise self.pod.refuse(person_id, "No such send waiting for approval (it was decided, or timed out).",
                              f"tried to decide partner send {send_id} of another person")
        if entry is None:
            raise StoreError("No such send waiting for approval (it was decided, or timed out).")
        if decided_by == "app":
            try:
                self.pod.channels.claim(send_id, approve, "app")
            except AlreadyDecided as exc:
                raise StoreError(str(exc)) from None
        if not entry[1].done():
            entry[1].set_result((approve, decided_by))
        self.pod.emit({"type": "card.decided", "person": entry[2], "card_id": send_id, "state": "approved" if approve else "rejected"})
