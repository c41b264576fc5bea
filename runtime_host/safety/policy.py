"""Per-agent safety policy and the gate: `decide(phase, text, policy)` returns what to do with a text.

Phases: ingress (person to agent) detects and flags; egress (agent to mail, partners, web) blocks or asks,
naming what was found; memory write redacts before storing, keeping a reversible mapping only when the
person opted in (the mapping goes to a caller-supplied store such as the vault, never to disk here);
memory read passes through. Every decision is handed to the caller's audit callback as an event.
"""

from __future__ import annotations

import re
import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Literal

from runtime_host.safety.audit import AuditCallback, emit, make_event
from runtime_host.safety.detectors import DETECTOR_NAMES, Finding, detect

MappingStore = Callable[[str, dict[str, str]], None]
MappingLookup = Callable[[str], Mapping[str, str] | None]


class Phase(StrEnum):
    INGRESS = "ingress"
    EGRESS = "egress"
    MEMORY_WRITE = "memory_write"
    MEMORY_READ = "memory_read"


class Action(StrEnum):
    ALLOWED = "allowed"
    REDACTED = "redacted"
    BLOCKED = "blocked"
    ASKED = "asked"


EgressRule = Literal["block", "ask", "allow"]
_EGRESS_RULES = ("block", "ask", "allow")
_DEFAULT_EGRESS: dict[str, EgressRule] = {
    "secret": "block", "card": "ask", "iban": "ask", "account": "ask", "national_id": "ask",
    "email": "ask", "phone": "ask", "address": "ask",
}


# The detectors of the Hearth whose profiles kept a list of the detectors that run ("detectors": [...]) rather than
# of those turned off: a detector added since then is on for such a profile; one of these it leaves out stays off.
_DETECTORS_OF_ON_LISTS = ("secret", "card", "iban", "national_id", "email", "phone", "address")


class PolicyError(ValueError):
    """A policy that cannot be applied as written (unknown phase, detector or mode)."""


class MappingStoreFailed(RuntimeError):
    """Reversible redaction was on, but the caller's mapping store failed: nothing may be stored."""


@dataclass(frozen=True)
class Policy:
    """What the gate does for one agent, per phase. Build from a profile with `Policy.from_dict`."""

    agent: str
    detectors: tuple[str, ...] = DETECTOR_NAMES
    min_confidence: float = 0.5
    ingress: Literal["flag", "redact", "off"] = "flag"
    egress: Mapping[str, EgressRule] = field(default_factory=lambda: dict(_DEFAULT_EGRESS))
    memory_write: Literal["redact", "allow"] = "redact"
    memory_write_detectors: tuple[str, ...] = DETECTOR_NAMES
    reversible: bool = False
    memory_read: Literal["pass", "flag"] = "pass"

    def __post_init__(self) -> None:
        if not self.agent:
            raise PolicyError("A policy needs the agent it belongs to (agent='…').")
        for name in (*self.detectors, *self.memory_write_detectors, *self.egress):
            if name not in DETECTOR_NAMES:
                raise PolicyError(f"Unknown detector {name!r} in the policy for {self.agent}; use one of {', '.join(DETECTOR_NAMES)}.")
        for det, rule in self.egress.items():
            if rule not in _EGRESS_RULES:
                raise PolicyError(f"Egress rule for {det} is {rule!r} in the policy for {self.agent}; use block, ask or allow.")
        _check_choice(self.agent, "ingress", self.ingress, ("flag", "redact", "off"))
        _check_choice(self.agent, "memory_write", self.memory_write, ("redact", "allow"))
        _check_choice(self.agent, "memory_read", self.memory_read, ("pass", "flag"))
        if not 0.0 <= self.min_confidence <= 1.0:
            raise PolicyError(f"min_confidence must be between 0 and 1, got {self.min_confidence} for {self.agent}.")

    @classmethod
    def from_dict(cls, agent: str, data: Mapping[str, Any] | None, *,
                  listed_among: tuple[str, ...] = _DETECTORS_OF_ON_LISTS) -> Policy:
        """Reads the `safety` section of an agent profile; missing keys keep their defaults.

        Which detectors run is kept as those the person turned off (`detectors_off`,
        `memory_write_detectors_off`), so a detector a later Hearth adds runs for a saved policy too. A list of
        those that run (`detectors`, `memory_write_detectors`, as profiles saved before kept it) turns off only
        the detectors of `listed_among` that it leaves out: the detectors of the Hearth that wrote it."""
        data = dict(data or {})
        known = {"detectors", "detectors_off", "min_confidence", "ingress", "egress", "memory_write",
                 "memory_write_detectors", "memory_write_detectors_off", "reversible", "memory_read"}
        extra = set(data) - known
        if extra:
            raise PolicyError(f"Unknown safety setting(s) {sorted(extra)} for {agent}; known settings: {sorted(known)}.")
        kwargs: dict[str, Any] = {}
        for key in ("detectors", "memory_write_detectors"):
            if key in data and key + "_off" in data:
                raise PolicyError(f"The policy for {agent} gives both {key} and {key}_off; keep one of them "
                                  f"({key}_off, the detectors turned off, lets a detector Hearth adds later run).")
            off = data.get(key + "_off")
            if off is None and key in data:
                off = [d for d in listed_among if d not in data[key]]
                _check_detectors(agent, data[key])
            if off is not None:
                _check_detectors(agent, off)
                kwargs[key] = tuple(d for d in DETECTOR_NAMES if d not in off)
        if "egress" in data:
            kwargs["egress"] = {**_DEFAULT_EGRESS, **dict(data["egress"])}
        for key in ("min_confidence", "ingress", "memory_write", "reversible", "memory_read"):
            if key in data:
                kwargs[key] = data[key]
        return cls(agent=agent, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        """The policy as a profile keeps it: detectors by those turned off, so one added later runs."""
        return {
            "detectors_off": [d for d in DETECTOR_NAMES if d not in self.detectors],
            "min_confidence": self.min_confidence, "ingress": self.ingress,
            "egress": dict(self.egress), "memory_write": self.memory_write,
            "memory_write_detectors_off": [d for d in DETECTOR_NAMES if d not in self.memory_write_detectors],
            "reversible": self.reversible, "memory_read": self.memory_read,
        }

    def saved(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """``data``, the safety section this policy was read from, as a profile keeps it: a list of the detectors
        that run becomes the list of those turned off (the rest of ``data`` stays as given)."""
        kept = {k: v for k, v in data.items() if k not in ("detectors", "memory_write_detectors")}
        if "detectors" in data:
            kept["detectors_off"] = [d for d in DETECTOR_NAMES if d not in self.detectors]
        if "memory_write_detectors" in data:
            kept["memory_write_detectors_off"] = [d for d in DETECTOR_NAMES if d not in self.memory_write_detectors]
        return kept


def _check_detectors(agent: str, names: Iterable[str]) -> None:
    for name in names:
        if name not in DETECTOR_NAMES:
            raise PolicyError(f"Unknown detector {name!r} in the policy for {agent}; use one of {', '.join(DETECTOR_NAMES)}.")


def _check_choice(agent: str, key: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise PolicyError(f"{key} is {value!r} in the policy for {agent}; use one of {', '.join(choices)}.")


@dataclass(frozen=True)
class Decision:
    """The gate's answer. `text` is what may go on (redacted for redactions, the original otherwise);
    `message` names what was found without values; `event` is the audit event that was emitted."""

    action: Action
    phase: Phase
    agent: str
    rule: str
    findings: tuple[Finding, ...]
    text: str
    message: str
    event: dict[str, Any]
    mapping_id: str | None = None

    @property
    def proceed(self) -> bool:
        """True when the text may go on now (allowed or redacted); False when blocked or waiting for a person."""
        return self.action in (Action.ALLOWED, Action.REDACTED)


def describe(findings: Iterable[Finding]) -> str:
    """'1 payment card (visa, •••• 1111), 2 email addresses' — never a raw value."""
    by_det: dict[str, list[Finding]] = {}
    for f in findings:
        by_det.setdefault(f.detector, []).append(f)
    parts = []
    for det in DETECTOR_NAMES:
        fs = by_det.get(det)
        if not fs:
            continue
        label = fs[0].label().split(" (")[0]
        noun = label if len(fs) == 1 else (label + "es" if label.endswith("s") else label + "s")
        shown = ", ".join(sorted({f.kind if det == "secret" else f.masked() for f in fs}))
        parts.append(f"{len(fs)} {noun} ({shown})")
    return ", ".join(parts)


_PLACEHOLDER_RE = re.compile(r"\[(EMAIL|PHONE|CARD|IBAN|ACCOUNT|NATIONAL_ID|ADDRESS|SECRET)_(\d+)(?:#([0-9a-f]{16}))?\]")


def redact(
    text: str, findings: Iterable[Finding], *, mapping_id: str | None = None
) -> tuple[str, dict[str, str]]:
    """Replaces each finding with a placeholder like [CARD_1] (or [CARD_1#<mapping id>] when reversible).

    The same value gets the same placeholder within one text. Returns the new text and the mapping
    placeholder -> original value; the caller decides whether the mapping is kept (and where).
    """
    ordered = sorted(findings, key=lambda f: f.start)
    numbers: dict[tuple[str, str], str] = {}
    counters: Counter[str] = Counter()
    mapping: dict[str, str] = {}
    out: list[str] = []
    pos = 0
    for f in ordered:
        if f.start < pos:
            continue
        key = (f.detector, f.text)
        ph = numbers.get(key)
        if ph is None:
            counters[f.detector] += 1
            suffix = f"#{mapping_id}" if mapping_id else ""
            ph = f"[{f.detector.upper()}_{counters[f.detector]}{suffix}]"
            numbers[key] = ph
            mapping[ph] = f.text
        out.append(text[pos:f.start])
        out.append(ph)
        pos = f.end
    out.append(text[pos:])
    return "".join(out), mapping


def restore(text: str, lookup: MappingLookup) -> str:
    """Puts original values back for reversible placeholders; `lookup(mapping_id)` returns the stored mapping.

    Placeholders whose mapping is missing (or irreversible ones) stay as they are.
    """
    cache: dict[str, Mapping[str, str] | None] = {}

    def sub(m: re.Match[str]) -> str:
        mid = m.group(3)
        if not mid:
            return m.group(0)
        if mid not in cache:
            cache[mid] = lookup(mid)
        mapping = cache[mid]
        return mapping.get(m.group(0), m.group(0)) if mapping else m.group(0)

    return _PLACEHOLDER_RE.sub(sub, text)


def reversible_placeholders(text: str) -> list[str]:
    """The reversible placeholders in ``text`` ([CARD_1#<mapping id>], ...), each once, in order."""
    return list(dict.fromkeys(m.group(0) for m in _PLACEHOLDER_RE.finditer(text) if m.group(3)))


def mapping_ids(text: str) -> set[str]:
    """The ids of the reversible mappings the placeholders in ``text`` point to (the vault's ``redactions/<id>``)."""
    return {m.group(3) for m in _PLACEHOLDER_RE.finditer(text) if m.group(3)}


def keep_placeholders(edited: str, restored: Mapping[str, str]) -> str:
    """``edited`` (text shown with its placeholders restored, then changed by its owner) with each original value
    still in it turned back into its placeholder (``restored``: placeholder -> value), so saving it keeps what was
    reversible reversible; a value the owner changed or typed anew stays as typed."""
    for ph, value in sorted(restored.items(), key=lambda kv: -len(kv[1])):
        if value and value != ph:
            edited = edited.replace(value, ph)
    return edited


def decide(
    phase: Phase | str,
    text: str,
    policy: Policy,
    *,
    audit: AuditCallback | None = None,
    mapping_store: MappingStore | None = None,
    context: Mapping[str, Any] | None = None,
    injection_score: float | None = None,
) -> Decision:
    """Applies `policy` to `text` for `phase`, emits one audit event through `audit`, and returns the Decision.

    Raises PolicyError for an unknown phase, MappingStoreFailed when reversible redaction is on and the
    mapping cannot be kept, and AuditFailed when the audit callback raises.
    """
    try:
        ph = Phase(phase)
    except ValueError:
        raise PolicyError(f"Unknown phase {phase!r}; use one of {', '.join(p.value for p in Phase)}.") from None
    mapping_id: str | None = None
    findings: tuple[Finding, ...] = ()
    out_text = text

    if ph is Phase.MEMORY_READ and policy.memory_read == "pass":
        action, rule = Action.ALLOWED, "memory_read.pass"
    elif ph is Phase.INGRESS and policy.ingress == "off":
        action, rule = Action.ALLOWED, "ingress.off"
    else:
        dets = policy.memory_write_detectors if ph is Phase.MEMORY_WRITE else policy.detectors
        findings = tuple(detect(text, dets, min_confidence=policy.min_confidence))
        if not findings:
            action, rule = Action.ALLOWED, f"{ph.value}.clean"
        elif ph is Phase.INGRESS:
            if policy.ingress == "redact":
                out_text, _ = redact(text, findings)
                action, rule = Action.REDACTED, "ingress.redact"
            else:
                action, rule = Action.ALLOWED, "ingress.flag"
        elif ph is Phase.MEMORY_READ:
            action, rule = Action.ALLOWED, "memory_read.flag"
        elif ph is Phase.EGRESS:
            rules = {f.detector: policy.egress.get(f.detector, "ask") for f in findings}
            blocking = sorted(d for d, r in rules.items() if r == "block")
            asking = sorted(d for d, r in rules.items() if r == "ask")
            if blocking:
                action, rule = Action.BLOCKED, "egress.block." + "+".join(blocking)
            elif asking:
                action, rule = Action.ASKED, "egress.ask." + "+".join(asking)
            else:
                action, rule = Action.ALLOWED, "egress.allow"
        else:  # memory write
            if policy.memory_write == "allow":
                action, rule = Action.ALLOWED, "memory_write.allow"
            elif policy.reversible:
                if mapping_store is None:
                    raise MappingStoreFailed(
                        f"Agent {policy.agent} keeps reversible redactions, but no mapping store was given to decide(). "
                        "Pass mapping_store=<a vault-backed callable>, or turn reversible redaction off for this agent."
                    )
                mapping_id = secrets.token_hex(8)
                out_text, mapping = redact(text, findings, mapping_id=mapping_id)
                try:
                    mapping_store(mapping_id, mapping)
                except Exception as exc:  # caller's store: any failure means the original would be lost
                    raise MappingStoreFailed(
                        f"Could not keep the reversible mapping {mapping_id} for agent {policy.agent}: {exc!r}. "
                        "Nothing was stored. Check that the vault is unlocked and retry, or turn reversible redaction off."
                    ) from exc
                action, rule = Action.REDACTED, "memory_write.redact.reversible"
            else:
                out_text, _ = redact(text, findings)
                action, rule = Action.REDACTED, "memory_write.redact"

    message = _message(ph, action, findings)
    event = make_event(
        agent=policy.agent, phase=ph.value, action=action.value, rule=rule, findings=findings, chars=len(text),
        mapping_id=mapping_id, injection_score=injection_score, context=context,
    )
    emit(audit, event)
    return Decision(action, ph, policy.agent, rule, findings, out_text, message, event, mapping_id)


def _message(phase: Phase, action: Action, findings: tuple[Finding, ...]) -> str:
    if not findings:
        return "Nothing personal or secret found." if phase is not Phase.MEMORY_READ else "Memory read passes through."
    what = describe(findings)
    if action is Action.BLOCKED:
        return f"Blocked: the outgoing text contains {what}. Remove it, or change this agent's egress rule."
    if action is Action.ASKED:
        return f"The outgoing text contains {what}. Allow it to leave?"
    if action is Action.REDACTED:
        return f"Redacted {what} before storing." if phase is Phase.MEMORY_WRITE else f"Redacted {what}."
    return f"Found {what}."


def with_overrides(policy: Policy, **changes: Any) -> Policy:
    """A copy of `policy` with some settings changed (validated like a new policy)."""
    return replace(policy, **changes)
