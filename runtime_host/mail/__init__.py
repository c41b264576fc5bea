"""Inbound and outbound mail for the Pod, Qt-free: IMAP polling, a rules engine, an approve-and-send outbox.

Pieces: `parse` (raw bytes to bounded, untrusted plain text), `rules` (deterministic JSON rules),
`imap` (a blocking IMAP client with BODY.PEEK and IDLE), `ledger` (the 0005_mail tables and their
helpers), `mailroom` (poll → keep → rules → actions), `outbox` (cards, sent exactly once over SMTP).
"""

from runtime_host.mail.imap import (
    ImapSession,
    ImapSettings,
    MailAuthError,
    MailConnectionError,
    MailError,
)
from runtime_host.mail.ledger import MAIL_MIGRATION, ActionRow, StoredMail
from runtime_host.mail.mailroom import Draft, Mailroom, PollReport, draft_to_card
from runtime_host.mail.outbox import (
    Card,
    Outbox,
    OutboxBusy,
    OutboxError,
    SmtpSettings,
    create_card,
    reply_card,
)
from runtime_host.mail.parse import Attachment, ParsedMail, parse_message
from runtime_host.mail.rules import Rule, RuleError, RuleMatch, RuleSet, parse_rules

__all__ = [
    "MAIL_MIGRATION", "ActionRow", "Attachment", "Card", "Draft", "ImapSession", "ImapSettings", "MailAuthError",
    "MailConnectionError", "MailError", "Mailroom", "Outbox", "OutboxBusy", "OutboxError", "ParsedMail",
    "PollReport", "Rule", "RuleError", "RuleMatch", "RuleSet", "SmtpSettings", "StoredMail", "create_card",
    "draft_to_card", "parse_message", "parse_rules", "reply_card",
]
