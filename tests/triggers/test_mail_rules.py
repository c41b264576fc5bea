"""The rules engine: rules as JSON, clear errors, explainable and deterministic matches, speed."""

from __future__ import annotations

import json
import time

import pytest

from runtime_host.mail.parse import parse_message
from runtime_host.mail.rules import RuleError, RuleSet, parse_rules, rules_to_json

MAIL = parse_message(
    b"From: Billing <billing@shop.example.com>\r\nTo: alice@example.org\r\nCc: Bob <bob@example.org>\r\n"
    b"Subject: Your invoice #4711 is ready\r\nX-Priority: 1\r\nList-Id: <news.shop.example.com>\r\n"
    b"Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\n"
    b"Dear Alice, the amount due is 12.50 EUR.\r\n--B\r\nContent-Type: application/pdf\r\n"
    b"Content-Disposition: attachment; filename=invoice-4711.pdf\r\n\r\n%PDF\r\n--B--\r\n")

RULES = [
    {"id": "invoices", "name": "Invoices", "when": [
        {"field": "from", "op": "contains", "value": "@shop.example.com"},
        {"field": "subject", "op": "regex", "value": r"invoice\s+#?\d+"}],
     "then": [{"action": "label", "keyword": "Invoices"}, {"action": "hand", "agent": "bookkeeper",
                                                          "prompt": "File it."}]},
    {"id": "urgent", "name": "Urgent", "match": "any", "when": [
        {"field": "header:X-Priority", "op": "equals", "value": "1"},
        {"field": "subject", "op": "contains", "value": "URGENT", "case_sensitive": True}],
     "then": [{"action": "notify"}]},
    {"id": "no-news", "name": "Not a newsletter", "when": [
        {"field": "header:List-Unsubscribe", "op": "not_exists"},
        {"field": "body", "op": "contains", "value": "amount due"}],
     "then": [{"action": "draft", "instructions": "Thank them."}], "stop": True},
    {"id": "never", "name": "After stop", "when": [{"field": "subject", "op": "contains", "value": "invoice"}],
     "then": [{"action": "mark_read"}]},
]


def test_matches_explain_themselves() -> None:
    matches = RuleSet(json.dumps(RULES)).evaluate(MAIL)
    assert [m.rule_id for m in matches] == ["invoices", "urgent", "no-news"]  # "never" comes after a stop
    inv = matches[0]
    assert inv.explain() == ("Rule 'Invoices' matched: from contains '@shop.example.com' (found "
                             "'billing <billing@shop.example.com>'); subject regex 'invoice\\\\s+#?\\\\d+' "
                             "(found 'invoice #4711')")
    assert [a.kind for a in inv.actions] == ["label", "hand"]
    assert matches[1].reasons == ["header:x-priority equals '1' (found '1')"]  # only the condition that held
    assert matches[2].reasons[0] == "header:list-unsubscribe does not exist"


def test_deterministic_and_round_trips() -> None:
    a = [m.explain() for m in RuleSet(RULES).evaluate(MAIL)]
    b = [m.explain() for m in RuleSet(rules_to_json(parse_rules(RULES))).evaluate(MAIL)]
    assert a == b


@pytest.mark.parametrize("field, op, value, hit", [
    ("to", "equals", "alice@example.org", True),
    ("recipients", "contains", "bob@", True),
    ("cc", "startswith", "bob", True),
    ("subject", "endswith", "ready", True),
    ("subject", "not_contains", "invoice", False),
    ("attachment", "endswith", ".pdf", True),
    ("body", "regex", r"\d+\.\d\d EUR", True),
    ("header:list-id", "contains", "news.shop", True),
    ("header:x-missing", "contains", "x", False),
    ("subject", "equals", "your invoice", False),
])
def test_fields_and_operators(field: str, op: str, value: str, hit: bool) -> None:
    rs = RuleSet([{"id": "r", "when": [{"field": field, "op": op, "value": value}], "then": [{"action": "notify"}]}])
    assert bool(rs.evaluate(MAIL)) is hit


@pytest.mark.parametrize("rules, message", [
    ("{not json", "Rules are not valid JSON"),
    ([{"id": "a", "when": [{"field": "sender", "value": "x"}], "then": [{"action": "notify"}]}],
     "Rule 'a', condition 1: unknown field 'sender'"),
    ([{"id": "a", "when": [{"field": "subject", "op": "like", "value": "x"}], "then": [{"action": "notify"}]}],
     "unknown operator 'like'"),
    ([{"id": "a", "when": [{"field": "subject", "op": "regex", "value": "(unclosed"}], "then": [{"action": "notify"}]}],
     "regex '(unclosed' does not compile"),
    ([{"id": "a", "when": [{"field": "subject", "value": "x"}], "then": [{"action": "label", "keyword": "Two Words"}]}],
     "Rule 'a', action 1: label 'Two Words' must be"),
    ([{"id": "a", "when": [{"field": "subject", "value": "x"}], "then": [{"action": "hand"}]}], "hand needs 'agent'"),
    ([{"id": "a", "when": [{"field": "subject", "value": "x"}], "then": [{"action": "delete"}]}], "unknown action"),
    ([{"id": "a", "when": [], "then": [{"action": "notify"}]}], "needs at least one condition"),
    ([{"id": "a", "when": [{"field": "subject", "value": ""}], "then": [{"action": "notify"}]}], "needs a non-empty"),
])
def test_errors_name_the_rule_and_part(rules: object, message: str) -> None:
    with pytest.raises(RuleError) as err:
        parse_rules(rules)  # type: ignore[arg-type]
    assert message in str(err.value)


def test_rules_per_second_is_measurable() -> None:
    rs = RuleSet(RULES)
    n = 0
    t = time.perf_counter()
    while time.perf_counter() - t < 0.2:
        rs.evaluate(MAIL)
        n += len(rs.rules)
    rate = n / (time.perf_counter() - t)
    assert rate > 10_000, rate
