"""A deterministic rules engine for inbound mail: rules are JSON data, every match explains itself.

A rule has conditions (a field, an operator, a value) joined by `all` or `any`, and actions:
`label` (an IMAP keyword), `hand` (to an agent, with a prompt), `draft` (a reply that becomes an
approve-and-send card), `notify` (the person), `mark_read` (the only way polling changes read state).
No model runs here: the same mail and rules always give the same matches, fast enough to count.

    [{"id": "invoices", "name": "Invoices", "match": "all",
      "when": [{"field": "from", "op": "contains", "value": "@billing.example.com"},
               {"field": "subject", "op": "regex", "value": "invoice\\s+#?\\d+"}],
      "then": [{"action": "label", "keyword": "Invoices"},
               {"action": "hand", "agent": "bookkeeper", "prompt": "File this invoice."}],
      "stop": false}]
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from runtime_host.mail.parse import ParsedMail

FIELDS = ("from", "to", "cc", "recipients", "subject", "body", "attachment", "header:NAME")
OPS = ("contains", "equals", "regex", "startswith", "endswith", "exists")
ACTIONS = {
    "label": ("keyword",),
    "hand": ("agent",),
    "draft": (),
    "notify": (),
    "mark_read": (),
}
BODY_SCAN_CHARS = 100_000  # regexes see at most this much body text (bounded time on hostile mail)
_KEYWORD_RE = re.compile(r"^[A-Za-z0-9_.\-$]{1,64}$")


class RuleError(ValueError):
    """A rule that cannot be used; the message names the rule and the part to fix."""


@dataclass(frozen=True)
class Condition:
    field: str
    op: str
    value: str = ""
    case_sensitive: bool = False
    negate: bool = False
    _regex: re.Pattern[str] | None = None

    def describe(self) -> str:
        neg = "not " if self.negate else ""
        if self.op == "exists":
            return f"{self.field} {'does not exist' if self.negate else 'exists'}"
        return f"{self.field} {neg}{self.op} {self.value!r}"


@dataclass(frozen=True)
class Action:
    kind: str
    params: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"action": self.kind, **self.params}


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    conditions: tuple[Condition, ...]
    actions: tuple[Action, ...]
    match: str = "all"
    enabled: bool = True
    stop: bool = False


@dataclass
class RuleMatch:
    """Why a rule matched (one reason per condition that held) and what it asks for."""

    rule_id: str
    rule_name: str
    reasons: list[str]
    actions: list[Action] = field(default_factory=list)

    def explain(self) -> str:
        return f"Rule {self.rule_name!r} matched: " + "; ".join(self.reasons)


def _fail(rule: str, where: str, msg: str) -> RuleError:
    return RuleError(f"Rule {rule!r}, {where}: {msg}")


def _condition(rule: str, i: int, raw: Any) -> Condition:
    where = f"condition {i + 1}"
    if not isinstance(raw, dict):
        raise _fail(rule, where, "must be an object like {\"field\": \"subject\", \"op\": \"contains\", \"value\": \"...\"}")
    fld = str(raw.get("field", "")).strip()
    low = fld.lower()
    if not (low in FIELDS[:-1] or (low.startswith("header:") and len(fld) > 7)):
        raise _fail(rule, where, f"unknown field {fld!r} (use {', '.join(FIELDS)})")
    if low.startswith("header:"):
        fld = "header:" + fld[7:].strip().lower()
    else:
        fld = low
    op = str(raw.get("op", "contains")).strip().lower()
    negate = bool(raw.get("not", False))
    if op.startswith("not_"):
        op, negate = op[4:], not negate
    if op not in OPS:
        raise _fail(rule, where, f"unknown operator {op!r} (use {', '.join(OPS)}, or prefix not_)")
    value = raw.get("value", "")
    if op != "exists" and (not isinstance(value, str) or value == ""):
        raise _fail(rule, where, f"{op} needs a non-empty text value")
    case = bool(raw.get("case_sensitive", False))
    rx = None
    if op == "regex":
        if len(value) > 500:
            raise _fail(rule, where, "regex is longer than 500 characters")
        try:
            rx = re.compile(value, 0 if case else re.IGNORECASE)
        except re.error as exc:
            raise _fail(rule, where, f"regex {value!r} does not compile: {exc}") from exc
    return Condition(fld, op, str(value), case, negate, rx)


def _action(rule: str, i: int, raw: Any) -> Action:
    where = f"action {i + 1}"
    if not isinstance(raw, dict) or "action" not in raw:
        raise _fail(rule, where, "must be an object with an \"action\" (label, hand, draft, notify, mark_read)")
    kind = str(raw["action"]).strip().lower()
    if kind not in ACTIONS:
        raise _fail(rule, where, f"unknown action {kind!r} (use {', '.join(ACTIONS)})")
    params = {k: v for k, v in raw.items() if k != "action"}
    for req in ACTIONS[kind]:
        if not str(params.get(req, "")).strip():
            raise _fail(rule, where, f"{kind} needs {req!r}")
    if kind == "label":
        kw = str(params["keyword"])
        if kw.startswith("\\") or not _KEYWORD_RE.match(kw):
            raise _fail(rule, where, f"label {kw!r} must be 1-64 letters, digits, '-', '_', '.' (an IMAP keyword)")
    return Action(kind, params)


def parse_rules(data: str | list[Any]) -> list[Rule]:
    """Rules from JSON text or already-loaded data; raises RuleError naming the rule and the part."""
    if isinstance(data, str):
        try:
            data = json.loads(data) if data.strip() else []
        except json.JSONDecodeError as exc:
            raise RuleError(f"Rules are not valid JSON: {exc}") from exc
    if not isinstance(data, list):
        raise RuleError("Rules must be a JSON list of rule objects.")
    rules: list[Rule] = []
    seen: set[str] = set()
    for n, raw in enumerate(data):
        if not isinstance(raw, dict):
            raise RuleError(f"Rule {n + 1} must be an object.")
        rid = str(raw.get("id") or f"rule-{n + 1}")
        if rid in seen:
            raise RuleError(f"Two rules have the id {rid!r}: ids must be unique.")
        seen.add(rid)
        name = str(raw.get("name") or rid)
        match = str(raw.get("match", "all")).lower()
        if match not in ("all", "any"):
            raise _fail(name, "match", f"{match!r} is not 'all' or 'any'")
        conds = raw.get("when", [])
        acts = raw.get("then", [])
        if not isinstance(conds, list) or not conds:
            raise _fail(name, "when", "needs at least one condition")
        if not isinstance(acts, list) or not acts:
            raise _fail(name, "then", "needs at least one action")
        rules.append(Rule(rid, name, tuple(_condition(name, i, c) for i, c in enumerate(conds)),
                          tuple(_action(name, i, a) for i, a in enumerate(acts)), match,
                          bool(raw.get("enabled", True)), bool(raw.get("stop", False))))
    return rules


def rules_to_json(rules: list[Rule]) -> list[dict[str, Any]]:
    out = []
    for r in rules:
        conds = []
        for c in r.conditions:
            d: dict[str, Any] = {"field": c.field, "op": c.op}
            if c.op != "exists":
                d["value"] = c.value
            if c.case_sensitive:
                d["case_sensitive"] = True
            if c.negate:
                d["not"] = True
            conds.append(d)
        out.append({"id": r.id, "name": r.name, "match": r.match, "enabled": r.enabled, "stop": r.stop,
                    "when": conds, "then": [a.to_json() for a in r.actions]})
    return out


class _View:
    """Field values of one mail, computed once and shared by every rule."""

    def __init__(self, mail: ParsedMail):
        self.mail = mail
        self._cache: dict[tuple[str, bool], list[str] | None] = {}

    def values(self, fld: str, case: bool) -> list[str] | None:
        key = (fld, case)
        if key in self._cache:
            return self._cache[key]
        m = self.mail
        vals: list[str] | None
        if fld == "from":
            vals = [m.from_addr] if m.from_addr else []
        elif fld == "to":
            vals = list(m.to)
        elif fld == "cc":
            vals = list(m.cc)
        elif fld == "recipients":
            vals = list(m.to) + list(m.cc)
        elif fld == "subject":
            vals = [m.subject]
        elif fld == "body":
            vals = [m.text[:BODY_SCAN_CHARS]]
        elif fld == "attachment":
            vals = [a.filename for a in m.attachments]
        else:  # header:name
            vals = m.headers.get(fld[7:])
        if vals is not None and not case:
            vals = [v.casefold() for v in vals]
        self._cache[key] = vals
        return vals


def _test(c: Condition, view: _View) -> tuple[bool, str]:
    vals = view.values(c.field, c.case_sensitive)
    if c.op == "exists":
        ok = bool(vals)
        return ok != c.negate, c.describe()
    if not vals:
        return c.negate, f"{c.field} is absent" if c.negate else ""
    needle = c.value if c.case_sensitive else c.value.casefold()
    hit: str | None = None
    for v in vals:
        if c.op == "contains":
            found = needle in v
        elif c.op == "equals":
            found = v.strip() == needle.strip()
        elif c.op == "startswith":
            found = v.startswith(needle)
        elif c.op == "endswith":
            found = v.rstrip().endswith(needle)
        else:
            assert c._regex is not None
            mo = c._regex.search(v)
            found = mo is not None
            if mo:
                hit = mo.group(0)
        if found:
            if hit is None:
                at = v.find(needle) if c.op == "contains" else 0
                hit = v[max(0, at - 20): at + len(needle) + 20] if at >= 0 else v[:60]
            break
    if hit is None:
        return c.negate, c.describe() if c.negate else ""
    if c.negate:
        return False, ""
    return True, f"{c.describe()} (found {hit.strip()[:80]!r})"


class RuleSet:
    """Compiled rules in order. `evaluate(mail)` returns every rule that matched, up to the first `stop`."""

    def __init__(self, rules: list[Rule] | str | list[Any]):
        if isinstance(rules, list) and all(isinstance(r, Rule) for r in rules):
            self.rules: list[Rule] = list(rules)
        else:
            self.rules = parse_rules(rules)

    def evaluate(self, mail: ParsedMail) -> list[RuleMatch]:
        view = _View(mail)
        out: list[RuleMatch] = []
        for rule in self.rules:
            if not rule.enabled:
                continue
            reasons: list[str] = []
            if rule.match == "all":
                matched = True
                for c in rule.conditions:
                    ok, why = _test(c, view)
                    if not ok:
                        matched = False
                        break
                    reasons.append(why)
            else:
                matched = False
                for c in rule.conditions:
                    ok, why = _test(c, view)
                    if ok:
                        matched = True
                        reasons.append(why)
            if matched:
                out.append(RuleMatch(rule.id, rule.name, reasons, list(rule.actions)))
                if rule.stop:
                    break
        return out
