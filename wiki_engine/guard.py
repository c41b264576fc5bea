"""The instruction filter: memory is data, not orders. Items that try to instruct the assistant are refused.

Each rule has a name and a plain-language reason that is shown to the person, who may release a
quarantined item if it was a false alarm.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_AI = r"(?:assistant|ai|agent|bot|model|chatgpt|claude|gpt|hearth|you)"

_RULES: list[tuple[str, str, re.Pattern[str]]] = [
    (
        "override",
        "tries to override the assistant's instructions",
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(?:previous|prior|above|earlier|all|your|system|original)\b"
            r"[^.\n]{0,20}\b(?:instructions?|prompts?|rules?|directives?|guidelines?|messages?)",
            re.I,
        ),
    ),
    (
        "new-instructions",
        "announces new instructions or a new system prompt for the assistant",
        re.compile(
            r"\b(?:new|updated|real|actual)\s+(?:system\s+)?(?:instructions?|prompt|rules)\s*[:\-]|\bsystem\s+prompt\b|"
            r"<\s*/?\s*system\s*>|\[\s*system\s*\]",
            re.I,
        ),
    ),
    (
        "persona",
        "tries to change who the assistant is or what it may do",
        re.compile(
            rf"\b(?:you\s+are\s+now|from\s+now\s+on,?\s+(?:you|the\s+{_AI}|always|never)|act\s+as\s+(?:an?\s+)?(?:unrestricted|jailbroken|different)|"
            r"developer\s+mode|jailbreak)",
            re.I,
        ),
    ),
    (
        "standing-order",
        "gives the assistant a standing order to send, forward or share things",
        re.compile(
            r"\b(?:always|automatically|silently|secretly|from\s+now\s+on)\b[,\s]+(?:(?:please|also|just|quietly|automatically|silently|secretly)\s+)?(?:forward|send|cc|bcc|share|upload|"
            r"email|e-mail|mail|transfer|wire|pay|reveal|disclose)\b[^.\n]{0,60}\b(?:to|with)\b",
            re.I,
        ),
    ),
    (
        "exfiltrate",
        "asks the assistant to send mail, passwords or keys to someone",
        re.compile(
            r"\b(?:forward|send|email|e-mail|share|reveal|leak|post)\b[^.\n]{0,30}\b(?:all|every|any|the\s+user'?s?)\b[^.\n]{0,30}"
            r"\b(?:mails?|emails?|messages?|passwords?|keys?|tokens?|credentials?|secrets?|files?|contacts?)\b[^.\n]{0,40}\bto\b",
            re.I,
        ),
    ),
    (
        "addressed-order",
        "addresses the assistant directly with an order",
        re.compile(
            rf"(?:^|[\n.!?]\s*)(?:dear\s+|hey\s+|attention\s*,?\s*)?(?:{_AI})\s*[,:]\s*(?:please\s+)?(?:you\s+must|you\s+will|always|never|do\s+not\s+tell|don't\s+tell|"
            r"ignore|forward|send|delete|transfer|reveal)\b",
            re.I,
        ),
    ),
    (
        "concealment",
        "tells the assistant to hide something from the person",
        re.compile(r"\b(?:do\s+not|don't|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|notify|alert)\s+(?:the\s+user|the\s+owner|anyone|them)\b", re.I),
    ),
]


@dataclass(frozen=True)
class Verdict:
    """The filter's answer: ``ok`` False means refuse or quarantine, with ``rule`` and ``reason``."""

    ok: bool
    rule: str = ""
    reason: str = ""
    excerpt: str = ""


def check_instructions(text: str) -> Verdict:
    """Checks one item's text for attempts to give the assistant orders."""
    for name, reason, pattern in _RULES:
        m = pattern.search(text)
        if m:
            excerpt = text[max(0, m.start() - 20) : m.end() + 20].replace("\n", " ").strip()
            return Verdict(False, name, f"Quarantined: the item {reason} (\u201c{excerpt}\u201d).", excerpt)
    return Verdict(True)
