"""Triggers benchmark: a scheduler tick over 1000 schedules, mail arriving → poll → rule → draft card on
loopback Dovecot + aiosmtpd, and rules evaluated per second. Prints JSON as its last line."""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import ROOT, pct  # noqa: F401  (puts the repo on sys.path)

from runtime_host import schedule as sch
from runtime_host import store
from runtime_host.mail import ledger
from runtime_host.mail.imap import ImapSettings
from runtime_host.mail.mailroom import Draft, Mailroom
from runtime_host.mail.outbox import Outbox, SmtpSettings
from runtime_host.mail.parse import html_to_text, parse_message
from runtime_host.mail.rules import RuleSet
from tests.helpers.mailservers import Dovecot, SmtpSink, make_mail

CRONS = ["*/5 * * * *", "0 * * * *", "30 9 * * 1-5", "0 0 * * *", "15 */2 * * *", "0 9,17 * * MON-FRI",
         "*/15 8-18 * * *", "0 8 1 * *", "@hourly", "45 23 * * SUN"]
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney"]


def open_store(path: Path) -> store.Store:
    migs = list(store.MIGRATIONS)
    for m in (sch.SCHEDULES_MIGRATION, ledger.MAIL_MIGRATION):
        if m[0] not in [n for n, _ in migs]:
            migs.append(m)
    store.MIGRATIONS[:] = migs
    return store.Store(path)


def bench_tick(tmp: Path) -> float:
    st = open_store(tmp / "tick.db")
    t0 = datetime(2024, 6, 3, 7, 0, 30, tzinfo=UTC)
    for i in range(1000):
        sch.create_schedule(st.engine, person_id="p", instance_id=f"a{i % 10}", cron=CRONS[i % len(CRONS)],
                            tz=ZONES[i % len(ZONES)], prompt=f"job {i}", now=t0)
    started = 0

    def start_run(_row: sch.ScheduleRow, _due: datetime) -> str:
        nonlocal started
        started += 1
        return f"turn-{started}"

    times = []
    for k in range(1, 16):  # 15 ticks a minute apart, as the Pod's 60 s timer would make them
        t = time.perf_counter()
        sch.tick(st.engine, t0 + timedelta(minutes=k), start_run)
        times.append((time.perf_counter() - t) * 1000)
    st.close()
    print(f"tick over 1000 schedules: p50 {statistics.median(times):.1f} ms, max {max(times):.1f} ms, "
          f"{started} runs started", file=sys.stderr)
    return round(statistics.median(times), 1)


RULES = [
    {"id": f"r{i}", "name": f"Rule {i}", "match": "all" if i % 2 else "any",
     "when": [{"field": "from", "op": "contains", "value": f"@vendor{i}.example.com"},
              {"field": "subject", "op": "regex", "value": rf"(invoice|order)\s+#?{i}\d*"},
              {"field": f"header:x-list-{i}", "op": "exists"}],
     "then": [{"action": "label", "keyword": f"L{i}"}]} for i in range(20)
] + [{"id": "ask", "name": "Questions", "when": [{"field": "subject", "op": "endswith", "value": "?"},
                                                 {"field": "body", "op": "contains", "value": "please"}],
      "then": [{"action": "draft"}]}]


def bench_rules() -> float:
    mails = [parse_message(make_mail(f"Question {i}?", f"Could you please look at order {i}? " * 20,
                                     sender=f"Buyer <b{i}@vendor{i % 30}.example.com>")) for i in range(50)]
    rs = RuleSet(RULES)
    n = 0
    t = time.perf_counter()
    while time.perf_counter() - t < 1.0:
        for m in mails:
            rs.evaluate(m)
            n += len(rs.rules)
    rate = n / (time.perf_counter() - t)
    print(f"rules: {rate:,.0f} rule evaluations per second ({len(rs.rules)} rules)", file=sys.stderr)
    return round(rate)


# One megabyte of each: a style that made a backtracking pattern quadratic (30 KB took 13.7 s), a tag of half a
# million attributes, elements left open 100,000 deep, a list of 200,000 items each closing the one before, hidden
# formatting left open in paragraph after paragraph (opened again after each), a newsletter's table rows.
_ROW = ('<tr><td style="padding:8px;font-family:Arial;font-size:14px;color:#333333"><a href="https://shop.example/1" '
        'style="color:#0066cc"><b>Garden twine</b></a> <span style="font-size:12px;color:#777">3 x 4.99</span></td></tr>')
HOSTILE_HTML = {
    "style of spaces": '<p style="opacity:' + " " * 1_000_000 + 'x">Hello</p>',
    "style of semicolons": '<p style="' + ";" * 1_000_000 + '">Hello</p>',
    "attributes": "<p " + "a " * 500_000 + ">Hello</p>",
    "open spans": "<b><div>" + "<span>" * 83_000 + "</b>" * 125_000,
    "list items": "<ul>" + "<li>x" * 200_000,
    "hidden fonts reopened": "<p><font style='color:#fff'>x</p>" * 29_000,
    "newsletter": "<table>" + _ROW * 5_000 + "</table>",
}


def bench_html() -> float:
    """Seconds per megabyte of the slowest of HOSTILE_HTML read by html_to_text: about the same for each (the reader
    is linear); a pattern that backtracks or a walk of the open elements per tag shows as one far above the rest."""
    worst = 0.0
    for name, markup in HOSTILE_HTML.items():
        t = time.perf_counter()
        html_to_text(markup)
        per_mb = (time.perf_counter() - t) / (len(markup) / 1e6)
        print(f"html: {name}: {per_mb:.2f} s per MB", file=sys.stderr)
        worst = max(worst, per_mb)
    return round(worst, 2)


def drafter(stored: ledger.StoredMail, _a: ledger.ActionRow) -> Draft:
    return Draft(body=f"Thank you for your question about {stored.mail.subject!r}. I will reply by Friday.")


def bench_mail(tmp: Path, n: int = 30) -> float:
    st = open_store(tmp / "mail.db")
    with Dovecot({"alice": "secret"}) as dv, SmtpSink() as sink:
        imap = ImapSettings(host="127.0.0.1", port=dv.port, username="alice", security="none")
        room = Mailroom(st.engine, account_id="acc", address="alice@example.org", imap=imap, password="secret",
                        rules=RULES, drafter=drafter, start_at="now")
        room.poll()  # connect, set the watermark
        lat = []
        for i in range(n):
            dv.deliver(make_mail(f"Delivery date for order {i}?", "Could you please confirm?",
                                 sender="Buyer <buyer@shop.example.com>"))
            t = time.perf_counter()
            rep = room.poll()
            assert len(rep.cards) == 1, rep.to_dict()
            lat.append((time.perf_counter() - t) * 1000)
        room.close()
        ob = Outbox(st.engine, smtp=SmtpSettings(host="127.0.0.1", port=sink.port, security="none"), imap=imap,
                    imap_password="secret")
        card = ledger_first_pending(st)
        t = time.perf_counter()
        ob.approve(card)
        send_ms = (time.perf_counter() - t) * 1000
        assert len(sink.messages) == 1
    st.close()
    print(f"mail arriving → poll → rule → draft card: p50 {statistics.median(lat):.1f} ms, p95 {pct(lat, 0.95)} ms; "
          f"approve → SMTP + Sent copy {send_ms:.1f} ms", file=sys.stderr)
    return round(statistics.median(lat), 1)


def ledger_first_pending(st: store.Store) -> str:
    from runtime_host.mail.outbox import list_cards

    return list_cards(st.engine, state="pending")[0].id


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        out = {"tick_ms_1000_schedules": bench_tick(tmp), "mail_poll_to_card_ms_p50": bench_mail(tmp),
               "rules_per_s": bench_rules(), "html_worst_s_per_mb": bench_html()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
