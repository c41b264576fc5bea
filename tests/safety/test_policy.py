"""decide() per phase: ingress flags, egress blocks or asks, memory write redacts (reversibly only on opt-in),
memory read passes; every decision emits one audit event without raw values."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from runtime_host.safety.audit import AuditFailed, events_to_csv, events_to_jsonl
from runtime_host.safety.detectors import DETECTOR_NAMES
from runtime_host.safety.policy import (
    Action,
    MappingStoreFailed,
    Phase,
    Policy,
    PolicyError,
    decide,
    keep_placeholders,
    redact,
    restore,
    reversible_placeholders,
)

CARD = "4111 1111 1111 1111"
KEY = "sk-proj-4fQ9xL2mZ8vB1nR7tK3wY6hJ0pD5sA9cE2gU"
TEXT = f"My card is {CARD}, mail me at jo.lee@example.com. Key {KEY}."


@pytest.fixture
def events() -> list[dict[str, Any]]:
    return []


def test_ingress_flags_and_passes_text_through(events: list[dict[str, Any]]) -> None:
    d = decide(Phase.INGRESS, TEXT, Policy("chat"), audit=events.append)
    assert d.action is Action.ALLOWED and d.rule == "ingress.flag" and d.text == TEXT
    assert {f.detector for f in d.findings} == {"card", "email", "secret"}
    assert events == [d.event]


def test_ingress_redact_mode(events: list[dict[str, Any]]) -> None:
    d = decide("ingress", TEXT, Policy("chat", ingress="redact"), audit=events.append)
    assert d.action is Action.REDACTED and CARD not in d.text and "[CARD_1]" in d.text


def test_egress_blocks_secrets_and_names_what_was_found(events: list[dict[str, Any]]) -> None:
    d = decide("egress", TEXT, Policy("mailer"), audit=events.append)
    assert d.action is Action.BLOCKED and d.rule == "egress.block.secret" and not d.proceed
    assert "openai_key" in d.message and "payment card" in d.message and "1111" in d.message
    assert KEY not in d.message and CARD not in d.message


def test_egress_asks_for_personal_data_and_allows_clean_text(events: list[dict[str, Any]]) -> None:
    d = decide("egress", f"Card {CARD}", Policy("mailer"), audit=events.append)
    assert d.action is Action.ASKED and d.rule == "egress.ask.card"
    assert decide("egress", "See you at 5.", Policy("mailer"), audit=events.append).action is Action.ALLOWED
    relaxed = Policy.from_dict("mailer", {"egress": {"card": "allow"}})
    assert decide("egress", f"Card {CARD}", relaxed).action is Action.ALLOWED


def test_memory_write_redacts_irreversibly_by_default(events: list[dict[str, Any]]) -> None:
    d = decide("memory_write", TEXT, Policy("wiki"), audit=events.append)
    assert d.action is Action.REDACTED and d.rule == "memory_write.redact" and d.mapping_id is None
    for value in (CARD, KEY, "jo.lee@example.com"):
        assert value not in d.text
    assert "[CARD_1]" in d.text and "[EMAIL_1]" in d.text and "[SECRET_1]" in d.text


def test_memory_write_reversible_hands_mapping_to_the_store_and_restores(events: list[dict[str, Any]]) -> None:
    vault: dict[str, dict[str, str]] = {}
    d = decide("memory_write", TEXT, Policy("wiki", reversible=True), audit=events.append,
               mapping_store=lambda mid, m: vault.__setitem__(mid, m))
    assert d.rule == "memory_write.redact.reversible" and d.mapping_id in vault
    assert CARD not in d.text and CARD in vault[d.mapping_id].values()
    assert restore(d.text, vault.get) == TEXT
    assert restore(d.text, lambda mid: None) == d.text  # no mapping, nothing revealed
    assert events[-1]["mapping_id"] == d.mapping_id


def test_an_edited_restored_text_keeps_the_placeholders_of_values_left_as_they_were(
        events: list[dict[str, Any]]) -> None:
    """Its owner reads the text restored and corrects another part: the values left as they were go back as their
    placeholders (still reversible); a value they changed stays as typed."""
    vault: dict[str, dict[str, str]] = {}
    d = decide("memory_write", TEXT, Policy("wiki", reversible=True), audit=events.append,
               mapping_store=lambda mid, m: vault.__setitem__(mid, m))
    shown = {ph: restore(ph, vault.get) for ph in reversible_placeholders(d.text)}
    assert set(shown.values()) == {CARD, "jo.lee@example.com", KEY}
    edited = restore(d.text, vault.get).replace("My card", "Our card").replace("jo.lee@", "jo@")
    kept = keep_placeholders(edited, shown)
    card, mail = (ph for ph, value in shown.items() if value in (CARD, "jo.lee@example.com"))
    assert kept.startswith(f"Our card is {card}, mail me at jo@example.com.") and CARD not in kept
    assert restore(kept, vault.get) == edited
    assert reversible_placeholders("[CARD_1] stays irreversible") == []


def test_reversible_without_store_or_with_failing_store_refuses(events: list[dict[str, Any]]) -> None:
    with pytest.raises(MappingStoreFailed, match="no mapping store"):
        decide("memory_write", TEXT, Policy("wiki", reversible=True), audit=events.append)

    def broken(mid: str, mapping: dict[str, str]) -> None:
        raise OSError("keyring locked")

    with pytest.raises(MappingStoreFailed, match="keyring locked"):
        decide("memory_write", TEXT, Policy("wiki", reversible=True), mapping_store=broken)
    assert events == []  # nothing was decided, nothing audited


def test_memory_read_passes_through(events: list[dict[str, Any]]) -> None:
    d = decide("memory_read", TEXT, Policy("wiki"), audit=events.append)
    assert d.action is Action.ALLOWED and d.rule == "memory_read.pass" and d.text == TEXT and not d.findings


def test_audit_events_never_hold_values_and_export(events: list[dict[str, Any]], tmp_path: Any) -> None:
    for phase in Phase:
        decide(phase, TEXT, Policy("agent-7"), audit=events.append, context={"conversation": "c1"})
    blob = json.dumps(events)
    for value in (CARD, CARD.replace(" ", ""), KEY, "jo.lee@example.com", "1111"):
        assert value not in blob
    assert {e["phase"] for e in events} == {p.value for p in Phase}
    assert all(e["agent"] == "agent-7" and e["rule"] and e["action"] for e in events)
    egress = next(e for e in events if e["phase"] == "egress")
    assert egress["detectors"] == {"card": 1, "email": 1, "secret": 1}

    path = tmp_path / "audit.jsonl"
    assert events_to_jsonl(events, path) == 4
    assert [json.loads(line)["decision_id"] for line in path.read_text().splitlines()] == [e["decision_id"] for e in events]
    buf = io.StringIO()
    assert events_to_csv(events, buf) == 4
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert rows[1]["rule"] == "egress.block.secret" and rows[1]["detectors"] == "card=1;email=1;secret=1"


def test_failing_audit_callback_is_reported() -> None:
    def sink(event: dict[str, Any]) -> None:
        raise RuntimeError("disk full")

    with pytest.raises(AuditFailed, match="disk full"):
        decide("egress", "hello", Policy("x"), audit=sink)


def test_policy_validation_messages() -> None:
    with pytest.raises(PolicyError, match="block, ask or allow"):
        Policy.from_dict("a", {"egress": {"card": "drop"}})
    with pytest.raises(PolicyError, match="Unknown safety setting"):
        Policy.from_dict("a", {"egres": {}})
    with pytest.raises(PolicyError, match="Unknown phase"):
        decide("outbound", "x", Policy("a"))
    p = Policy.from_dict("a", {"reversible": True, "detectors": ["card"]})
    assert Policy.from_dict("a", p.to_dict()) == p


@pytest.mark.parametrize("detector", DETECTOR_NAMES)
def test_every_kind_of_value_redacted_reversibly_is_restored_for_its_owner(detector: str) -> None:
    """A reversible placeholder is only read back when restore() knows its kind: a kind left out of its pattern
    stays "[ACCOUNT_1#…]" for the person whose value it is, and its keyring entry is never freed."""
    from runtime_host.safety.detectors import Finding

    text = "before VALUE after"
    redacted, mapping = redact(text, [Finding(detector, 7, 12, "VALUE", 0.9)], mapping_id="0123456789abcdef")
    assert "VALUE" not in redacted and reversible_placeholders(redacted) == list(mapping)
    assert restore(redacted, {"0123456789abcdef": mapping}.get) == text


def test_a_bank_account_is_redacted_before_storing_and_restored_for_its_owner() -> None:
    said = "Rent: acct no. 20458831, sort code 30-94-57, from the 1st; ABA 122105155 for the US one."
    vault: dict[str, dict[str, str]] = {}
    d = decide("memory_write", said, Policy("wiki", reversible=True), mapping_store=lambda mid, m: vault.__setitem__(mid, m))
    for value in ("20458831", "30-94-57", "122105155"):
        assert value not in d.text
    assert "[ACCOUNT_1#" in d.text and "bank account number" in d.message
    assert restore(d.text, vault.get) == said


# ---- a detector added in a later Hearth runs for a policy saved before it (review rev98, finding 1) ----
# What the Safety form saved before `account` came: the whole policy, with the lists of the 7 detectors that ran.
_SEVEN = ["secret", "card", "iban", "national_id", "email", "phone", "address"]
_PAY = "Please pay the plumber: account 31926819, sort code 20-32-06."


def _saved_by_the_old_form(**changes: object) -> dict:
    return {"detectors": _SEVEN, "min_confidence": 0.5, "ingress": "flag",
            "egress": {d: "ask" for d in _SEVEN}, "memory_write": "redact",
            "memory_write_detectors": _SEVEN, "reversible": True, "memory_read": "pass", **changes}


def test_a_policy_saved_before_the_account_detector_came_asks_and_redacts_account_numbers() -> None:
    """Anyone who had changed an agent's Safety settings before: the account number left with no question asked,
    and was remembered as written, though Settings showed "Bank account ...: Ask me first"."""
    pol = Policy.from_dict("helper", _saved_by_the_old_form())
    asked = decide("egress", _PAY, pol)
    assert asked.action is Action.ASKED and "bank account number" in asked.message
    kept = decide("memory_write", _PAY, pol, mapping_store=lambda _id, _m: None)
    assert "31926819" not in kept.text and "20-32-06" not in kept.text


def test_a_detector_the_person_turned_off_before_the_upgrade_stays_off() -> None:
    no_email = [d for d in _SEVEN if d != "email"]
    pol = Policy.from_dict("helper", _saved_by_the_old_form(detectors=no_email, memory_write_detectors=no_email))
    assert "email" not in pol.detectors and "email" not in pol.memory_write_detectors
    assert "account" in pol.detectors and "account" in pol.memory_write_detectors
    assert decide("egress", "write to bob@example.org", pol).action is Action.ALLOWED
    # saved again (the form saves the whole dict it was given), it keeps what was off and nothing else
    again = Policy.from_dict("helper", pol.to_dict())
    assert again == pol and pol.to_dict()["detectors_off"] == ["email"]


def test_a_policy_saved_now_runs_a_detector_hearth_adds_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """What is saved names the detectors turned off, not those that run, so the next new one needs no migration."""
    import runtime_host.safety.policy as policy_module

    saved = Policy.from_dict("helper", {"detectors_off": ["phone"], "reversible": True}).to_dict()
    assert "detectors" not in saved and "memory_write_detectors" not in saved
    monkeypatch.setattr(policy_module, "DETECTOR_NAMES", (*DETECTOR_NAMES, "next_one"))
    later = Policy.from_dict("helper", saved)
    assert "next_one" in later.detectors and "next_one" in later.memory_write_detectors
    assert "phone" not in later.detectors and "phone" in later.memory_write_detectors


def test_detectors_given_both_ways_or_unknown_are_refused() -> None:
    with pytest.raises(PolicyError, match="both detectors and detectors_off"):
        Policy.from_dict("a", {"detectors": ["card"], "detectors_off": ["email"]})
    with pytest.raises(PolicyError, match="Unknown detector 'mail'"):
        Policy.from_dict("a", {"detectors_off": ["mail"]})
