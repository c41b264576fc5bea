"""How a mail is read, against a real Dovecot on loopback: odd charset labels, mail Hearth cannot read, the same
mail read again after its source was deleted, and lines wrapped by the sender's mail client."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.helpers.mailservers import Dovecot, SmtpSink, make_mail

DENTIST = make_mail("Dentist", "Your appointment with Dr Quillfeather is on Friday at 10.", sender="Clinic <c@example.org>")


@pytest.fixture
def servers() -> Iterator[tuple[Dovecot, SmtpSink]]:
    d = Dovecot({"alice": "secret"}).start()
    s = SmtpSink().start()
    try:
        yield d, s
    finally:
        s.stop()
        d.stop()


def add_inbox(pod, servers: tuple[Dovecot, SmtpSink]) -> str:
    d, s = servers
    return pod.mail.add_account(
        pod.person.id, "alice@example.org",
        imap={"host": "127.0.0.1", "port": d.port, "username": "alice", "security": "none", "timeout_s": 10},
        smtp={"host": "127.0.0.1", "port": s.port, "security": "none"},
        password="secret", rules=[], start_at="all").id


def odd_mail(n: int, content_type: str, body: str = "", disposition: str = "") -> bytes:
    body = body or f"Hello there, plain note {n} about the Marbleton fete."
    return (f"From: Spam <spam@example.net>\r\nTo: alice@example.org\r\nSubject: Odd {n}\r\n"
            f"Message-ID: <odd-{n}@example.net>\r\nMIME-Version: 1.0\r\nContent-Type: {content_type}\r\n{disposition}"
            f"\r\n{body}\r\n").encode()


async def test_mail_with_odd_charset_labels_is_kept_readable_and_the_next_mail_still_arrives(pod, servers) -> None:
    """Python knows base64, rot13, zlib... by name as bytes-to-bytes codecs, and punycode or idna as codecs no mail is
    written in: a part or file name labelled so stopped the check of the inbox for good, at that mail."""
    labels = ["base64", "rot13", "hex", "zlib", "uu", "quopri", "bz2", "punycode", "idna"]
    d, _ = servers
    acct = add_inbox(pod, servers)
    for n, label in enumerate(labels):
        d.deliver(odd_mail(n, f"text/plain; charset={label}"))
    d.deliver(odd_mail(len(labels), "multipart/mixed; boundary=BB",
                       "--BB\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThe Marbleton fete flyer.\r\n--BB\r\n"
                       "Content-Type: application/pdf\r\n"
                       "Content-Disposition: attachment; filename*=punycode''%E9flyer.pdf\r\n\r\nJVBERi0=\r\n--BB--"))
    d.deliver(DENTIST)
    await asyncio.wait_for(pod.mail.poll(acct), 60)
    kept = {m["subject"]: m for m in pod.mail.messages(acct, pod.person.id)}
    assert set(kept) == {f"Odd {n}" for n in range(len(labels) + 1)} | {"Dentist"}
    assert "unknown charset 'base64'" in " ".join(kept["Odd 0"]["notes"])  # what the person reads beside it
    await pod.memory_produce()
    assert await pod.memory_search("Quillfeather appointment", mode="keyword")
    fete = [h.snippet for h in await pod.memory_search("Marbleton fete", mode="keyword", k=50)]
    assert all(any(f"plain note {n} about the Marbleton fete" in s for s in fete) for n in range(len(labels))), fete
