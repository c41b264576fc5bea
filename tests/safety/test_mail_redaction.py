"""Personal data in a mail on its way into memory, through the Pod against real Dovecot on loopback: what the mail
says is kept, the value the README promises to redact is in no file of memory's."""

from __future__ import annotations

import asyncio
from email.header import Header

import pytest

from tests.helpers.mailservers import make_mail
from tests.integration.test_mail_pod import add_inbox
from tests.integration.test_memory_pod import files_holding


async def _remembered(pod, servers, raw: bytes) -> dict:
    """Alice's inbox gets ``raw``; the mail is checked and memory's run keeps it. Memory's report."""
    d, s = servers
    acct = add_inbox(pod, d, s, rules=[])
    d.deliver(raw)
    await asyncio.wait_for(pod.mail.poll(acct), 60)
    return (await pod.memory_produce())[0]


def _in_charset(charset: str, subject: str, body: str, sender: str) -> bytes:
    return (f"From: {sender}\r\nTo: alice@example.org\r\nSubject: {Header(subject, charset).encode()}\r\n"
            f"Message-ID: <{charset}.1@example.jp>\r\nDate: Mon, 03 Jun 2024 09:00:00 +0000\r\nMIME-Version: 1.0\r\n"
            f"Content-Type: text/plain; charset={charset}\r\nContent-Transfer-Encoding: 8bit\r\n\r\n").encode() \
        + body.encode(charset) + b"\r\n"


@pytest.mark.parametrize("charset,subject,body", [
    ("iso-2022-jp", "コテージの予約金",
     "アリスさん、コテージの予約金はカード4111111111111111で払いました。電話は090-1234-5678までお願いします。"),
    ("gb2312", "小屋的订金", "爱丽丝，小屋的订金我用卡号4111111111111111付了。请打电话090-1234-5678找我。"),
], ids=["japanese", "chinese"])
async def test_a_card_and_a_phone_in_a_japanese_or_chinese_mail_are_redacted(pod, servers, charset, subject,
                                                                            body) -> None:
    """Japanese and Chinese are written without spaces: "カード4111111111111111で払いました" (paid with card …).
    Before, the card and the phone number went into memory as they came (the card and phone patterns wanted no
    word character beside a number, and a kana or a hanzi is one); now both are redacted, and the rest is kept."""
    rep = await _remembered(pod, servers, _in_charset(charset, subject, body, "Tanaka <tanaka@example.jp>"))
    assert rep["kept"] == 1, rep
    src = pod.home / "memory" / "sources"
    assert files_holding(src, "Tanaka") != []
    assert files_holding(src, "4111111111111111") == [], "card number stored in memory"
    assert files_holding(src, "090-1234-5678") == [], "phone number stored in memory"


@pytest.mark.parametrize("sender,word", [
    ("Ivan Petrov <ivan.petrov@xn--80akhbyknj4f.xn--p1ai>", "ivan.petrov@"),  # a .рф domain as mail carries it
    ("José Ruiz <josé.ruiz@correo.example>", "ruiz@correo"),  # an address in UTF-8 (RFC 6531)
], ids=["punycode-domain", "utf8-local-part"])
async def test_a_senders_address_with_an_international_domain_or_letters_is_redacted(pod, servers, sender,
                                                                                     word) -> None:
    """README: mail addresses are redacted before memory, "a mail's sender's too". Before, a sender at a Russian .рф
    domain (in mail it is written xn--p1ai) or with an accent in the address went into memory as it came (the
    address pattern wanted a top-level domain of letters A-Z and an ASCII local part); now it is redacted there."""
    raw = (f"From: {sender}\r\nTo: alice@example.org\r\nSubject: Dacha keys\r\nMessage-ID: <{word}1@x.example>\r\n"
           "Date: Mon, 03 Jun 2024 09:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n"
           "\r\nHi Alice, the dacha keys are under the blue flowerpot by the shed.\r\n").encode()
    rep = await _remembered(pod, servers, raw)
    assert rep["kept"] == 1, rep
    assert files_holding(pod.home / "memory" / "sources", "flowerpot") != []
    assert files_holding(pod.home / "memory", word) == [], "the sender's address was stored in memory"


@pytest.mark.parametrize("line,secret", [
    ("Your card PIN: 8842.", "8842"),
    ("The garage door passcode is 2580 as well.", "2580"),
    ("The cottage wifi password: correcthorsebatterystaple", "correcthorsebatterystaple"),
], ids=["pin", "passcode", "passphrase-of-words"])
async def test_a_pin_or_a_password_of_plain_words_in_a_mail_is_redacted(pod, servers, line, secret) -> None:
    """README: "a password, passcode, PIN or wifi key written after its name" is redacted before it is remembered.
    Before, a bank's "Your card PIN: 8842" (four digits), a passcode of four digits and a passphrase of plain words
    after "password:" went into memory as they came (a labelled value had to have six characters with a digit or a
    symbol in it); now each is redacted, and the rest of the mail is kept."""
    rep = await _remembered(pod, servers, make_mail(
        "Your Quillsby Bank card", f"Hello Alice, your new Quillsby debit card is on its way. {line}",
        sender="Quillsby Bank <cards@quillsby.example>"))
    assert rep["kept"] == 1, rep
    src = pod.home / "memory" / "sources"
    assert files_holding(src, "Quillsby") != []
    assert files_holding(src, secret) == [], f"{secret!r} was stored in memory"


async def test_a_password_in_a_german_mail_is_redacted(pod, servers) -> None:
    """A German service's welcome mail, "Ihr Passwort: Geheim-4471x". Before, it went into memory as it came (only
    English names of a password were read, while account numbers' names are read in eight languages); now the
    password is redacted and the rest of the mail is kept."""
    rep = await _remembered(pod, servers, make_mail(
        "Willkommen bei Stadtwerke", "Hallo Alice, Ihr Kundenkonto bei den Stadtwerken ist bereit. "
        "Ihr Passwort: Geheim-4471x\nBitte ändern Sie es bald.", sender="Stadtwerke <service@stadtwerke.example>"))
    assert rep["kept"] == 1, rep
    src = pod.home / "memory" / "sources"
    assert files_holding(src, "Stadtwerke") != []
    assert files_holding(src, "Geheim-4471x") == [], "the password was stored in memory"


async def test_a_password_in_an_html_only_mails_table_is_redacted(pod, servers) -> None:
    """A service's HTML-only welcome mail shows its login as a table, "Password | Kx9mm2qL". Before, Hearth read the
    cells joined by a space, "Password Kx9mm2qL", no name and value to the redactor, and the password went into
    memory as it came; now the cells are read apart by " | " and the password is redacted."""
    html = ("<html><body><p>Welcome to Larkspur Energy, Alice! Your online account is ready.</p>"
            "<table><tr><td>Username</td><td>alice.m</td></tr>"
            "<tr><td>Password</td><td>Kx9mm2qL</td></tr></table></body></html>")
    raw = make_mail("Your Larkspur account", html, sender="Larkspur Energy <hello@larkspur.example>").replace(
        b"Content-Type: text/plain; charset=utf-8", b"Content-Type: text/html; charset=utf-8")
    rep = await _remembered(pod, servers, raw)
    assert rep["kept"] == 1, rep
    src = pod.home / "memory" / "sources"
    assert files_holding(src, "Larkspur") != []
    assert files_holding(src, "Kx9mm2qL") == [], "the password was stored in memory"
