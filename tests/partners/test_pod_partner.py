"""A partner call through the Pod: the agent asks, a card waits, the person approves, the real A2A server
answers over TLS, and the reply reaches the model wrapped as untrusted text. Rejected: nothing is sent."""

from __future__ import annotations

import asyncio

import pytest

from runtime_host.partners import PartnerClient
from tests.helpers.fake_model import Text, ToolCalls
from tests.partners.conftest import LOOPBACK


@pytest.fixture
def pod_with_partner(pod, make_partner, resolver, server):
    partner = make_partner()
    row = pod.add_partner(partner.name, partner.endpoint, server.key, tls_fingerprint=partner.tls_fingerprint)
    assert row["name"] == partner.name and "key" not in str(row).lower().replace("key_", "")
    # TEST ONLY: let this Pod's client reach the test's own loopback server (no setting can do this)
    pod.partner_host.partner_client = lambda p: PartnerClient._for_tests(p, resolver=resolver,
                                                            _unsafe_allow_addresses_for_tests=LOOPBACK)
    pod.edit_agent("helper", toolkits=["partners"])
    return pod, partner


async def test_an_approved_partner_call_returns_a_wrapped_reply(pod_with_partner, script, fake_model) -> None:
    pod, partner = pod_with_partner
    script([ToolCalls([("ask_partner", {"partner": partner.name, "message": "Quote for 10 chairs?"})]),
            lambda req: Text(req.tool_results[-1])])
    cards: list[dict] = []
    pod.subscribe(lambda e: cards.append(e) if e["type"] == "card.created" else None)
    run = await pod.start_turn("helper", "get a quote")
    for _ in range(200):
        if pod.partner_cards():
            break
        await asyncio.sleep(0.05)
    (card,) = pod.partner_cards()
    assert card["text"] == "Quote for 10 chairs?" and cards[-1]["kind"] == "partner"
    assert card["conversation_id"] == run.conversation_id  # shown above that chat's composer, after a switch too
    pod.decide_partner_send(card["id"], True)
    result = await asyncio.wait_for(run.future, 60)
    assert result.ok, result.error
    assert "untrusted" in result.text.lower() and "partner" in result.text.lower()
    assert any(e["kind"] == "partner" and e["action"] == "sent" for e in pod.audit_log())


async def test_a_rejected_partner_call_sends_nothing(pod_with_partner, script, server) -> None:
    pod, partner = pod_with_partner
    before = len(server.received) if hasattr(server, "received") else None
    script([ToolCalls([("ask_partner", {"partner": partner.name, "message": "secret plans"})]),
            lambda req: Text(req.tool_results[-1])])
    run = await pod.start_turn("helper", "ask them")
    for _ in range(200):
        if pod.partner_cards():
            break
        await asyncio.sleep(0.05)
    pod.decide_partner_send(pod.partner_cards()[0]["id"], False)
    result = await asyncio.wait_for(run.future, 60)
    assert "rejected" in result.text and "nothing was sent" in result.text
    if before is not None:
        assert len(server.received) == before


async def test_an_unknown_partner_is_refused(pod, script) -> None:
    pod.edit_agent("helper", toolkits=["partners"])
    script([ToolCalls([("ask_partner", {"partner": "evil.example", "message": "hi"})]),
            lambda req: Text(req.tool_results[-1])])
    r = await asyncio.wait_for(pod.chat("helper", "x"), 30)
    assert "no partner named 'evil.example'" in r.text


def test_settings_refuses_a_partner_on_plain_http(qtbot, pod) -> None:
    from app.dialogs import PartnersPage

    page = PartnersPage(pod)
    qtbot.addWidget(page)
    page.name.setText("Acme")
    page.endpoint.setText("http://agents.example.com/a2a")
    page.key.setText("k" * 20)
    assert not page.save()
    assert "https" in page.message.text().lower()
    assert pod.list_partners() == []


async def test_a_partner_card_shows_a_direction_character_written_out_and_approve_sends_the_text(
        pod_with_partner, script, qapp) -> None:
    """A hostile model's message to a partner company held a right-to-left override: its card (and the notification,
    the phone's card) read "$90.00" where the text sent says "00.09$". Now the character is written out, a warning
    says so, and Approve sends the text as it is stored."""
    import unseen
    from app.cards_view import PartnerCardWidget

    pod, partner = pod_with_partner
    message = "We accept your offer of \u202e00.09$\u202c for the chairs."
    script([ToolCalls([("ask_partner", {"partner": partner.name, "message": message})]),
            lambda req: Text(req.tool_results[-1])])
    told: list[dict] = []
    pod.subscribe(lambda e: told.append(e) if e["type"] == "card.created" else None)
    run = await pod.start_turn("helper", "accept their offer")
    for _ in range(200):
        if pod.partner_cards():
            break
        await asyncio.sleep(0.05)
    (card,) = pod.partner_cards()
    assert card["text"] == message
    w = PartnerCardWidget(pod, card)
    assert w.text.toPlainText() == "We accept your offer of \\u202e00.09$\\u202c for the chairs."
    assert not w.direction.isHidden() and "message" in w.direction.text()
    assert told[-1]["body"] == w.text.toPlainText() and not unseen.has_direction(told[-1]["summary"])
    w.approve.click()
    result = await asyncio.wait_for(run.future, 60)
    assert result.ok, result.error
    assert "partner says" in result.text and "00.09$" in result.text, result.text
    w.deleteLater()
