"""Detectors against the shipped labelled set (per detector) and a few exact-offset cases."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runtime_host.safety import _checksums as ck
from runtime_host.safety.detectors import DETECTOR_NAMES, Finding, UnknownDetector, detect
from runtime_host.safety.evaluation import load_labelled, score

DATA = Path(__file__).resolve().parent.parent / "data" / "safety"
ROWS = load_labelled(DATA / "labelled.jsonl")
COUNTS = score(ROWS)
# Targets from the issue for cards, IBANs, emails and key shapes; the rest are held to what they reach now.
FLOOR = {"card": 0.95, "iban": 0.95, "email": 0.95, "secret": 0.95, "national_id": 0.9, "phone": 0.9, "address": 0.85,
         "account": 0.9}


def test_dataset_is_large_and_covers_every_detector_with_negatives() -> None:
    assert len(ROWS) >= 300
    for det in DETECTOR_NAMES:
        positives = [r for r in ROWS if any(s["detector"] == det for s in r["spans"])]
        negatives = [r for r in ROWS if r["category"] == det and not r["spans"]]
        assert len(positives) >= 25, det
        assert len(negatives) >= 15, det


@pytest.mark.parametrize("detector", DETECTOR_NAMES)
def test_precision_and_recall_on_labelled_set(detector: str) -> None:
    c = COUNTS[detector]
    errors = "\n".join(map(str, c.errors))
    assert c.precision >= FLOOR[detector], f"{detector} precision {c.precision:.3f}\n{errors}"
    assert c.recall >= FLOOR[detector], f"{detector} recall {c.recall:.3f}\n{errors}"


@pytest.mark.parametrize("detector", DETECTOR_NAMES)
def test_hard_negatives_of_each_category_produce_nothing_of_that_kind(detector: str) -> None:
    wrong = [
        (r["id"], f.text) for r in ROWS if r["category"] == detector and not r["spans"]
        for f in detect(r["text"]) if f.detector == detector
    ]
    allowed = int(len([r for r in ROWS if r["category"] == detector and not r["spans"]]) * 0.05)
    assert len(wrong) <= allowed, wrong


def _one(text: str, det: str) -> Finding:
    found = [f for f in detect(text) if f.detector == det]
    assert len(found) == 1, (text, found)
    return found[0]


def test_offsets_are_exact() -> None:
    text = "Pay 4111 1111 1111 1111 or DE89 3704 0044 0532 0130 00, mail a.b@c.org."
    card, iban, email = _one(text, "card"), _one(text, "iban"), _one(text, "email")
    assert (card.start, card.end, card.kind) == (4, 23, "visa") and text[card.start:card.end] == card.text
    assert text[iban.start:iban.end] == "DE89 3704 0044 0532 0130 00" and iban.kind == "DE"
    assert email.text == "a.b@c.org"


def test_card_needs_luhn_issuer_and_length() -> None:
    assert _one("card 4111 1111 1111 1111", "card").confidence > 0.9
    assert not [f for f in detect("card 4111 1111 1111 1112") if f.detector == "card"]  # Luhn
    assert not [f for f in detect("id 1234 5678 9012 3452") if f.detector == "card"]  # no issuer starts with 1
    assert not [f for f in detect("IMEI 356938035643809") if f.detector == "card"]  # Luhn-valid, not a card


def test_card_named_as_order_number_is_below_threshold() -> None:
    assert not [f for f in detect("Order no. 4111 1111 1111 1111 confirmed") if f.detector == "card"]
    weak = [f for f in detect("Order no. 4111 1111 1111 1111", min_confidence=0.0) if f.detector == "card"]
    assert weak and weak[0].confidence < 0.5


@pytest.mark.parametrize("written", [
    "4111 1111\n1111 1111",  # split across two lines
    "4111\u00a01111\u00a01111\u00a01111",  # non-breaking spaces, pasted from a web page
    "4111\u2009\u20091111\t1111  1111",  # thin spaces, a tab, several spaces
    "４１１１ １１１１ １１１１ １１１１",  # full-width digits
    "٤١١١ ١١١١ ١١١١ ١١١١",  # Arabic-Indic digits
    "4111\u200b 1111 1111\ufeff 1111",  # zero-width characters
    "4111\u00ad1111\u00ad1111\u00ad1111",  # soft hyphens (HTML's &shy;): the number shows as 4111111111111111
    "4111\u200e1111\u200f1111\u034f1111",  # direction marks, a combining grapheme joiner
    "4111\u180e1111\u20621111\U000e00201111",  # a Mongolian vowel separator, an invisible "times", a tag character
    "4111\u20131111\u20131111\u20131111",  # en dashes
    "4111 1111-1111 1111",  # mixed separators
    "4111 - 1111 - 1111 - 1111",  # a dash with a space either side
    "4111-1111-\n1111-1111",  # dashes, split after one at the end of a line
])
def test_a_card_is_found_however_it_is_written_and_its_span_is_the_original(written: str) -> None:
    text = f"Pay with {written}, thanks."
    card = _one(text, "card")
    assert (card.start, card.end, card.kind, card.confidence) == (9, 9 + len(written), "visa", 0.95)
    assert card.text == written == text[card.start:card.end]


def test_folding_keeps_the_false_positive_guards_and_other_offsets() -> None:
    assert not [f for f in detect("Order no.\n4111 1111-1111 1111 confirmed") if f.detector == "card"]
    assert not [f for f in detect("v4111.1111.1111 1111 and 4111.1111-1111 1111") if f.detector == "card"]
    text = "Note\n\n\u200bmail\u00a0a.b\uff20c.org  or call +44\u00a020\u00a07946\u00a00958."
    email, phone = _one(text, "email"), _one(text, "phone")
    assert email.text == "a.b\uff20c.org" and text[email.start:email.end] == email.text
    assert phone.text == "+44\u00a020\u00a07946\u00a00958" and text[phone.start:phone.end] == phone.text


@pytest.mark.parametrize(("text", "detector", "value"), [
    ("Call me on 020 7946 0018\n3 kids at home", "phone", "020 7946 0018"),
    ("Call me on +44 20 7946 0018\n2 bags", "phone", "+44 20 7946 0018"),
    ("My SIN is 046 454 286\n4 more forms to go", "national_id", "046 454 286"),
])
def test_a_number_before_a_line_that_starts_with_a_digit_is_still_found_whole(text: str, detector: str,
                                                                              value: str) -> None:
    assert _one(text, detector).text == value


@pytest.mark.parametrize(("text", "values"), [
    ("Cards:\n4111 1111 1111 1111\n5555 5555 5555 4444\n", ["4111 1111 1111 1111", "5555 5555 5555 4444"]),
    ("4111 1111 1111 1111 5555 5555 5555 4444", ["4111 1111 1111 1111", "5555 5555 5555 4444"]),
    ("Tel: +44 20 7946 0958\n4111 1111 1111 1111\n", ["+44 20 7946 0958", "4111 1111 1111 1111"]),
    ("IBAN DE89 3704 0044 0532 0130 00\n4111 1111 1111 1111\n", ["DE89 3704 0044 0532 0130 00", "4111 1111 1111 1111"]),
    ("Call +44 20 7946 0958\n(415) 555-0132\n", ["+44 20 7946 0958", "(415) 555-0132"]),
])
def test_numbers_on_consecutive_lines_are_each_found_whole(text: str, values: list[str]) -> None:
    """Reading line breaks as spaces (for a card split over two lines) must not glue one line's number to the next."""
    assert [f.text for f in detect(text)] == values


def test_a_long_text_that_needs_no_folding_is_not_copied_into_a_map() -> None:
    from runtime_host.safety.detectors import _fold

    assert _fold("plain words and 4111 1111 1111 1111 " * 1000) is None
    folded = _fold("a\n\nb\u200bc")
    assert folded is not None and folded.text == "a bc"


def test_a_uk_address_keeps_its_whole_postcode() -> None:
    text = "Send it to 221 Baker Street, London NW1 6XE please."
    assert _one(text, "address").text == "221 Baker Street, London NW1 6XE"
    assert _one("221B Baker\nStreet, London", "address").text == "221B Baker\nStreet, London"


def test_iban_checks_mod97_and_country_length() -> None:
    assert ck.iban_valid("GB82WEST12345698765432")
    assert not ck.iban_valid("GB82WEST12345698765433")  # mod 97
    assert not ck.iban_valid("GB82WEST1234569876543")  # length
    assert not ck.iban_valid("XX82WEST12345698765432")  # country
    assert not [f for f in detect("GB82 WEST 1234 5698 7654 33") if f.detector == "iban"]


@pytest.mark.parametrize("written", ["GB82/WEST/1234/5698/7654/32", "GB82 - WEST - 1234 - 5698 - 7654 - 32",
                                     "GB82-WEST-1234-\n5698-7654-32", "GB82 WEST 1234 5698 7654 32"])
def test_an_iban_written_with_slashes_or_spaced_dashes_is_found_whole(written: str) -> None:
    """An IBAN's groups joined by slashes or by " - " were not found (the account number reached memory as written)."""
    text = f"Transfer to {written} today."
    iban = _one(text, "iban")
    assert text[iban.start:iban.end] == written
    assert not [f for f in detect("GB82 / WEST / 1234 / 5698 / 7654 / 33") if f.detector == "iban"]  # mod 97
    assert not [f for f in detect("GB82 -- WEST 1234 5698 7654 32") if f.detector == "iban"]


@pytest.mark.parametrize("gap", ["\u00ad", "\u200e", "\u2063", "\U000e0020"])
def test_an_iban_split_by_invisible_characters_is_found_whole(gap: str) -> None:
    """An IBAN (or card) whose groups are split by a soft hyphen, a direction mark, an invisible separator or a tag
    character reads as one number, and reached memory as written: only zero-width spaces and joiners were read as
    nothing."""
    written = gap.join(["GB82", "WEST", "1234", "5698", "7654", "32"])
    text = f"Transfer to {written} today."
    iban = _one(text, "iban")
    assert text[iban.start:iban.end] == written
    assert not [f for f in detect(written[:-1] + "3") if f.detector == "iban"]  # mod 97 still checked


def test_secret_shapes_and_pem_block() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7d9s\nabc123==\n-----END RSA PRIVATE KEY-----"
    f = _one(f"key:\n{pem}\n", "secret")
    assert f.text == pem and f.kind == "private_key"
    assert not detect("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYI\n-----END PUBLIC KEY-----")
    assert _one("postgres://app:Tr0ub4dor3@db:5432/x", "secret").text == "Tr0ub4dor3"
    assert not detect("postgres://app:${DB_PASSWORD}@db:5432/x")
    assert _one("AKIAIOSFODNN7EXAMPLE", "secret").kind == "aws_access_key_id"


JWT = ("eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwiZXhwIjoxOTAwMDAwMDAwfQ."
       "c2lnbmF0dXJlLWJ5dGVzLWhlcmUtYWJjZGVmZ2hpamtsbW5vcA")


@pytest.mark.parametrize(("said", "value"), [
    (f"access_token={JWT}", JWT),
    ("Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0.", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ("password: hunter2horse", "hunter2horse"),
    ("The wifi password is CorrectHorse99.", "CorrectHorse99"),
    ('{"user": "jo", "password": "Tr0ub4dor&3"}', "Tr0ub4dor&3"),
    ("DB_PASSWD='s3cr3t-pass' in the env file", "s3cr3t-pass"),
    ("my API key: 7c1e94d2b0aa, don't share it", "7c1e94d2b0aa"),
    ("The wifi password is: CorrectHorse99", "CorrectHorse99"),
    ("The password was: 'Tr0ub4dor&3'", "Tr0ub4dor&3"),
    ("The wifi password for the cabin is Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("The router password is now Bluebird77", "Bluebird77"),
    ("Passwords: Bluebird77", "Bluebird77"),
])
def test_a_token_or_a_value_labelled_as_a_password_is_a_secret(said: str, value: str) -> None:
    """Only vendor key shapes were secrets: a JWT, a bearer token or "password: hunter2horse" quoted from a tool's
    result went into memory as it was."""
    assert _one(said, "secret").text == value


@pytest.mark.parametrize("said", [
    "The wifi password is on the fridge.",
    "password: ******** (hidden)",
    "PASSWORD=${DB_PASSWORD}",
    "the token is expired, ask for a new one",
    "Thanks for the token: it works",
    "He said the password: Monday.",
    "Bearer tokens are for clients that hold one.",
    "token = strdup16(name);",
    "api_key: [SECRET#ab12cd]",
    "The secret is 48-hour marinating.",
    "Secret: 12-hour slow cook",
    "My secret is 42-year-old whisky",
    "the password for my bank is in the drawer",
])
def test_a_password_spoken_of_without_a_made_up_value_is_no_secret(said: str) -> None:
    assert not [f for f in detect(said) if f.detector == "secret"]



@pytest.mark.parametrize(("said", "value"), [
    ("Password for the shared drive at work: Zz81kkq0", "Zz81kkq0"),
    ("API key for the weather station: 3f9a8b7c6d5e", "3f9a8b7c6d5e"),
    ("Password for the garage door opener is Lm4np8qz", "Lm4np8qz"),
    ("Guest wifi password - BlueFox44", "BlueFox44"),
    ("guest wifi password \u2014 BlueFox44.", "BlueFox44"),
    ("Netflix password -> Sunny2024", "Sunny2024"),
    ("Alarm password \u2192 Hx83kd9q", "Hx83kd9q"),
    ("Password for the NAS - Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("my password=Summer2024!", "Summer2024!"),
    ("The router password is Bluebird77?!", "Bluebird77?!"),
    # a passcode, a PIN, a wifi key (their names were not read as a credential's)
    ("Passcode for the garage keypad: 884172", "884172"),
    ("PIN for the alarm panel is 90412877", "90412877"),
    ("Wifi key for the caravan: Gull7harbour", "Gull7harbour"),
    ("Passcode to the side gate - 5512093", "5512093"),
    # a backtick inside the value is part of it (it was left as written), one around it is quoting
    ("The cabin wifi password is Kp2r`W8m`z4", "Kp2r`W8m`z4"),
    ("The cabin wifi password is `Kp2rW8mz4`.", "Kp2rW8mz4"),
])
def test_a_password_after_its_name_a_dash_or_an_arrow_is_redacted_whole(said: str, value: str) -> None:
    """README: "a password written after its name" is redacted. "Password for the cabin wifi: ..." (words before the
    colon), "Wifi password - ..." (a dash) were remembered as written, and "password=Xk9pq22!" left its "!" behind.
    Found by review."""
    assert _one(said, "secret").text == value


@pytest.mark.parametrize("said", [
    "password - forgot it again",
    "Wifi password - on the fridge",
    "The password manager - 1Password7 works well for us",
    "Password for the cabin wifi: ask Dad",
    "Passwords for the kids' tablets: same as last year",
    "He said the password: Monday!",
    "The password is hello!",
    "password-protected PDF: report2024.pdf",
    "Password reset link -> expired",
    # a token or a secret for something is a fare or a recipe, not a credential (these were redacted; found by review)
    "The secret to a crisp pavlova is 1tbsp-cornflour.",
    "Secret of the lasagne: 3x-bechamel layers",
    "Token for the car wash - 2EUR50",
    "Secret to getting Tom to sleep: 20min-bath then a story",
    "The secret in Grandma's gravy is 2tbsp-marmite",
])
def test_a_dash_or_a_colon_after_a_password_spoken_of_is_no_secret(said: str) -> None:
    assert not [f for f in detect(said) if f.detector == "secret"]

def test_national_id_checksums() -> None:
    assert _one("DNI 12345678Z", "national_id").kind == "es_dni"
    assert not detect("DNI 12345678A")
    assert _one("SSN 536-22-8104", "national_id").kind == "us_ssn"
    assert not detect("SSN 666-22-8104")
    assert _one("NI number JG103759A", "national_id").kind == "uk_nino"
    assert ck.verhoeff_valid("236")  and not ck.verhoeff_valid("237")


def test_overlap_goes_to_the_higher_priority_detector() -> None:
    found = detect("https://bob:correct-horse-battery@api.example.com/v1")
    assert [f.detector for f in found] == ["secret"]


def test_unknown_detector_is_an_error_that_lists_the_choices() -> None:
    with pytest.raises(UnknownDetector, match="choose from"):
        detect("x", ["cards"])


def test_import_is_light() -> None:
    code = (
        "import sys, runtime_host.safety.policy, runtime_host.safety.untrusted, runtime_host.safety.audit;"
        "heavy = [m for m in ('PySide6', 'sqlmodel', 'httpx', 'keyring', 'sqlalchemy') if m in sys.modules];"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("said", [
    "For the hotel booking, card 4111 1111 1111 1111 expires in May.",
    "My account card is 4111 1111 1111 1111.",
    "Order paid with 4111 1111 1111 1111 yesterday.",
    "my account: visa 4111 1111 1111 1111",
])
def test_a_card_named_as_a_card_after_an_order_or_account_is_still_a_card(said: str) -> None:
    """A word like booking, order or account before a number shaped like a card marks it as a reference number (it
    is not redacted); a card word nearer the number (card, visa, paid with) names it a card again: these were kept
    in memory as written."""
    assert _one(said, "card").confidence >= 0.9


def test_a_reference_number_nearer_its_name_than_a_card_word_stays_a_reference() -> None:
    weak = [f for f in detect("Card order no. 4111 1111 1111 1111", min_confidence=0.0) if f.detector == "card"]
    assert weak and weak[0].confidence < 0.5


@pytest.mark.parametrize("said, address", [
    ("I moved to 42 elm street, springfield last spring.", "42 elm street"),
    ("Send the parcel to 42 ELM STREET, SPRINGFIELD.", "42 ELM STREET, SPRINGFIELD"),
    ("my flat is 3b baker street", "3b baker street"),
])
def test_an_address_typed_in_small_or_capital_letters_is_an_address(said: str, address: str) -> None:
    """People type addresses as they like: "42 elm street" and "42 ELM STREET" were kept in memory as written."""
    assert _one(said, "address").text == address


@pytest.mark.parametrize("said", ["We walked 5 blocks down the road.", "3 long road trips this year",
                                  "We drove 20 miles on the highway.", "I counted 4 old road signs",
                                  "It was a 2 way street.", "a 4 lane highway", "a 10 lane highway.",
                                  "I WALKED 5 MILES IN THE PARK", "WE SPENT 3 HOURS AT THE PARK",
                                  "WE HAD 2 FLAT TIRES ON THE WAY"])
def test_a_number_before_a_road_in_small_letters_is_not_an_address(said: str) -> None:
    assert not [f for f in detect(said) if f.detector == "address"]


@pytest.mark.parametrize("said, address", [
    ("Our new home is 350 5th Ave, New York.", "350 5th Ave, New York"),
    ("The office is at 123 2nd Street.", "123 2nd Street"),
    ("Meet me at 10 E 21st St tomorrow.", "10 E 21st St"),
])
def test_an_address_on_a_numbered_street_is_an_address(said: str, address: str) -> None:
    """Streets named by an ordinal ("5th Ave", "2nd Street") were stored in memory as typed."""
    assert _one(said, "address").text == address


@pytest.mark.parametrize("text, detector, value", [
    ("please take it from my card 4111 1111\n> 1111 1111 and send", "card", "4111 1111\n> 1111 1111"),
    ("from my card 4111 1111\n>> 1111 1111 and", "card", "4111 1111\n>> 1111 1111"),
    ("> pay to DE89 3704 0044\n> 0532 0130 00 today", "iban", "DE89 3704 0044\n> 0532 0130 00"),
    ("> ship it to 221B Baker\n> Street, London", "address", "221B Baker\n> Street, London"),
])
def test_a_value_wrapped_inside_a_quoted_mail_reply_is_found_whole(text: str, detector: str, value: str) -> None:
    """A mail client wraps a quoted reply at 72 columns and starts each line with "> ": a card, IBAN or address
    split there was kept in memory in clear, while the same split without the quote marks was found."""
    assert _one(text, detector).text == value


def test_quote_marks_do_not_glue_numbers_of_separate_lines() -> None:
    text = "> Cards:\n> 4111 1111 1111 1111\n> 5555 5555 5555 4444\n"
    assert [f.text for f in detect(text)] == ["4111 1111 1111 1111", "5555 5555 5555 4444"]


@pytest.mark.parametrize("text, detector, value", [
    ("Pay with 4111/1111/1111/1111 today.", "card", "4111/1111/1111/1111"),
    ("Transfer to DE89-3704-0044-0532-0130-00 please.", "iban", "DE89-3704-0044-0532-0130-00"),
    ("Write to 1600 Pennsylvania Avenue NW, Washington, DC 20500 soon.", "address",
     "1600 Pennsylvania Avenue NW, Washington, DC 20500"),
    ("Send the forms to PO Box 4417, thanks.", "address", "PO Box 4417"),
    ("Send the forms to P.O. Box 4417, thanks.", "address", "P.O. Box 4417"),
])
def test_values_written_other_common_ways_are_found_whole(text: str, detector: str, value: str) -> None:
    """A card with slashes, an IBAN with dashes, a street's direction after its type and a post-office box were
    kept in memory as typed (or, for the direction, half of the address was)."""
    assert _one(text, detector).text == value


@pytest.mark.parametrize("said", ["See the release notes at 2024/11/05 and 1.2.3.", "Paths like /4111/1111/1111/1111 in a URL",
                                  "Dates 2024/1111/1111/1111 are not cards"])
def test_slashes_are_no_card_outside_the_four_by_four_form_or_inside_a_path(said: str) -> None:
    assert not [f for f in detect(said) if f.detector == "card"]


# ---- what a pattern needs before it is run: a text without it cannot match, so the pattern is skipped ----------


def _digit_run(items: list) -> tuple[bool, int, int]:  # type: ignore[type-arg]
    """(only digits, fewest characters, longest run of digits every match holds) of parsed pattern items: what a
    pattern's shape guarantees, read from the pattern, against the figures detectors.py writes down by hand."""
    from re import _constants as c  # type: ignore[attr-defined]

    def node(op, av) -> tuple[bool, int, int]:  # type: ignore[no-untyped-def]
        if op is c.LITERAL:
            return chr(av).isdigit() and chr(av).isascii(), 1, int(chr(av).isdigit() and chr(av).isascii())
        if op is c.IN:
            digit = all((o is c.LITERAL and 48 <= a <= 57) or (o is c.RANGE and 48 <= a[0] and a[1] <= 57)
                        or (o is c.CATEGORY and a is c.CATEGORY_DIGIT) for o, a in av)
            return digit, 1, int(digit)
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            return True, 0, 0  # a place: the digits either side of it are one run
        if op is c.SUBPATTERN:
            return _digit_run(av[3].data)
        if op is c.BRANCH:
            alts = [_digit_run(b.data) for b in av[1]]
            return all(a[0] for a in alts), min(a[1] for a in alts), min(a[2] for a in alts)
        if op in (c.MAX_REPEAT, c.MIN_REPEAT):
            digit, least, run = _digit_run(av[2].data)
            return digit, av[0] * least, (av[0] * least if digit else run if av[0] else 0)
        return False, 0, 0  # a back-reference, a condition, any character: nothing known

    only, total, best, run = True, 0, 0, 0
    for op, av in items:
        digit, least, inner = node(op, av)
        total += least
        if digit:
            run += least
        else:
            only, best, run = False, max(best, run, inner), 0
    return only, total, max(best, run)


def _needs_digits(rx) -> int:  # type: ignore[no-untyped-def]
    from re import _parser as p  # type: ignore[attr-defined]

    return _digit_run(p.parse(rx.pattern, rx.flags).data)[2]


def test_a_pattern_skipped_for_want_of_digits_could_not_have_matched() -> None:
    """Each figure detectors.py skips a pattern by is at most the run of digits the pattern's every match holds."""
    from runtime_host.safety import detectors as d

    for kind, rx in d._nid_res().items():
        assert d._NID_DIGITS[kind] <= _needs_digits(rx), kind
    for kind, rx in d._phone_res().items():
        assert d._PHONE_NEEDS[kind][1] <= _needs_digits(rx), kind
    for kind, rx in d._address_res().items():
        assert d._ADDRESS_DIGITS[kind] <= _needs_digits(rx), kind
    assert _needs_digits(d._card_re()) >= 4
    assert min(d._NID_DIGITS.values()) >= 2  # detect_national_ids returns at once below two


def test_a_phone_pattern_skipped_for_want_of_a_character_could_not_have_matched() -> None:
    import re

    from runtime_host.safety import detectors as d
    from wiki_engine.literals import formula

    def holds(f, word: str) -> bool:  # type: ignore[no-untyped-def]  # every match of f holds the word
        if isinstance(f, str):
            return word in f
        return isinstance(f, tuple) and (any if f[0] == "and" else all)(holds(p, word) for p in f[1])

    for kind, rx in d._phone_res().items():
        word = d._PHONE_NEEDS[kind][0]
        assert not word or holds(formula(rx), word), kind
    assert _needs_digits(re.compile(r"a\d{3}(?:-\d{2})?\d")) == 3 and _needs_digits(re.compile(r"(?:19|20)?\d{6}")) == 6


@pytest.mark.parametrize("text", ["+44 20 7946 0958", "0044 20 7946 0958", "(415) 555-0132", "020 7946 0958",
                                  "call 4155550132", "SSN 123-45-6789", "AB 12 34 56 C", "4111 1111 1111 1111",
                                  "12 rue de la Paix, 75002 Paris", "42 Elm Street"])
def test_a_value_with_few_digits_around_it_is_still_found(text: str) -> None:
    assert detect(text)


# ---- bank accounts, cards split by a slash, addresses in small letters with their town (review rev95, finding 3) ----


@pytest.mark.parametrize("said, values", [
    ("Ihre Kontonummer lautet 2345678901.", ["2345678901"]),
    ("Mon RIB : 30004 00550 00012345678 68", ["30004 00550 00012345678 68"]),
    ("Sort code: 83-91-46 Account no: 10293847", ["83-91-46", "10293847"]),
    ("send it to acct# 445566778899 by Friday", ["445566778899"]),
    ("rekeningnr. 987654321 t.n.v. P. Jansen", ["987654321"]),
    ("our checking account number is 7719 2200 4431", ["7719 2200 4431"]),
    ("Wire to routing 026009593 then account 8812 0044 5519", ["026009593", "8812 0044 5519"]),
    ("Paid into BSB 032-001 account 123456 yesterday", ["032-001", "123456"]),
    ("la cuenta número 0182 5322 40 0201504123", ["0182 5322 40 0201504123"]),
])
def test_a_bank_account_named_by_the_words_before_it_is_found(said: str, values: list[str]) -> None:
    """A domestic account number, with its sort code, routing number or BSB, was remembered as written: no detector
    read it (only IBANs were found)."""
    assert [f.text for f in detect(said) if f.detector == "account"] == values


def test_a_routing_number_is_one_only_with_its_check_digit() -> None:
    assert ck.aba_routing_valid("021000021") and ck.aba_routing_valid("122105155")
    assert not ck.aba_routing_valid("021000022") and not ck.aba_routing_valid("421000021")  # check digit, prefix
    assert [f.kind for f in detect("ABA 021000021")] == ["us_routing"]
    assert not detect("ABA 021000022")


@pytest.mark.parametrize("said", [
    "my account was suspended on 12/03/2024", "she has 3 accounts and 2 cards", "account: 2,500 followers",
    "the account 2019-2020 was audited", "An account of 300000 refugees crossing the border", "routing 16 lanes",
    "Kontostand 125000 Euro", "compte rendu 2024-2025", "conto: 145000 euro a testa", "sort code 12-345",
    "account 1234", "I'll take it into account 100%",
])
def test_account_words_without_an_account_number_find_nothing(said: str) -> None:
    assert not [f for f in detect(said) if f.detector == "account"]


# ---- ordinary chat the account detector took for a bank account (review rev98, finding 3) ----
# Conversation titles are redacted, so these showed in the chat list as "[ACCOUNT_1]"; egress asked about a "bank
# account number". Each cause in several languages: a date written with spaces, years, a season, a count or unit
# after the number, English "on" between the word and a date, Polish "kto" ("who").
@pytest.mark.parametrize("said", [
    "I logged into my account on 20 03 2024 and was charged twice",
    "I opened the account on 14 02 2023 with my sister",
    "the account: 31 12 2023 was the last login",
    "the account on 2024 01 31 showed a refund",
    "compte 12 05 2024 relevé envoyé",
    "Rekening nr 2024 0113 van de loodgieter",
    "rekening 20231205 van de garage",
    "Fix the acc 2024 2025 budget sheet",
    "acct 2022 2023 tax return is late",
    "Konto 2023 2024 Abschluss fehlt noch",
    "cuenta 2022 2023 cerrada",
    "account 2023-24 statements are in the drawer",
    "My Instagram account 150000 followers, how to grow?",
    "the account was 1234567 points after the promo",
    "Her TikTok account 2500000 likes in a week",
    "my fitness account 250000 steps this month",
    "account 1250000 km on the odometer",
    "Konto 120000 Abonnenten seit Mai",
    "compte 250000 abonnés sur Instagram",
    "cuenta 150000 seguidores en un mes",
    "conto 1200000 visualizzazioni su YouTube",
    "conta 300000 seguidores no Instagram",
    "tili 500000 seuraajaa",
    "konto 150000 följare på en vecka",
    "Kto 123456 wygrał?",
    "Kto 1500000 zapłacił za ten dom?",
])
def test_dates_years_counts_and_polish_who_are_no_bank_account(said: str) -> None:
    from runtime_host.store import made_title

    found = [f.text for f in detect(said) if f.detector == "account"]
    assert not found, f"{said!r}: {found}; its title in the chat list: {made_title(said)!r}"


@pytest.mark.parametrize("said, values", [
    ("Kto.-Nr. 12345678 bei der Sparkasse", ["12345678"]),
    ("Kto. 1234567890, BLZ 37040044", ["1234567890", "37040044"]),
    ("Kto-Nr 7654321 (Volksbank)", ["7654321"]),
    ("tilinumero on 12345678901234", ["12345678901234"]),
    ("account 2024 5678, sort code 20-32-06", ["2024 5678", "20-32-06"]),  # starts like a year, is no date
    ("account 12345678 was closed last week", ["12345678"]),
    ("the account number is 20241399 at Lloyds", ["20241399"]),  # no month 13
])
def test_a_bank_account_near_those_shapes_is_still_found(said: str, values: list[str]) -> None:
    assert [f.text for f in detect(said) if f.detector == "account"] == values


@pytest.mark.parametrize("said, card", [
    ("Card: 5555 5555 / 5555 4444 exp 03/27", "5555 5555 / 5555 4444"),
    ("use 4111-1111 / 1111-1111 for the deposit", "4111-1111 / 1111-1111"),
    ("4012 8888/8888 1881 is the card", "4012 8888/8888 1881"),
])
def test_a_card_split_by_a_slash_is_a_card(said: str, card: str) -> None:
    """A card's groups split by "/" ("4111 1111 / 1111 1111") were cut at the slash: half a card, no card."""
    assert _one(said, "card").text == card


@pytest.mark.parametrize("said", ["4111 1111 / 1111 1112", "pages 1200 / 1300 / 1400 / 1500", "ratio 4111 / 1111111"])
def test_a_slash_between_groups_that_fail_the_check_is_no_card(said: str) -> None:
    assert not [f for f in detect(said) if f.detector == "card"]


@pytest.mark.parametrize("said, address", [
    ("flat 2, 9 mill lane bristol bs1 4dj.", "9 mill lane bristol bs1 4dj"),
    ("ship to 1200 oak avenue austin tx 78701 asap", "1200 oak avenue austin tx 78701"),
    ("she is at 10 queen street toronto on m5h 2n2", "10 queen street toronto on m5h 2n2"),
    ("post it to 7 church lane, york yo1 7hh please", "7 church lane, york yo1 7hh"),
])
def test_an_address_in_small_letters_keeps_its_town_and_postcode(said: str, address: str) -> None:
    """An address typed in small letters and followed by its town and postcode was not found at all: the small
    letters form had to end at the street type."""
    assert _one(said, "address").text == address


def test_the_account_patterns_need_two_digits() -> None:
    from runtime_host.safety import detectors as d

    assert all(_needs_digits(rx) >= 2 for rx in d._account_res().values())


@pytest.mark.parametrize("said, address", [
    ("my new address is 12 elm road, leeds", "12 elm road, leeds"),
    ("we moved to 3 oak avenue, high wycombe. come by!", "3 oak avenue, high wycombe"),
    ("Send it to 7 MARKET STREET, DURHAM\nCheers", "7 MARKET STREET, DURHAM"),
])
def test_a_town_after_a_street_in_small_letters_is_part_of_the_address(said: str, address: str) -> None:
    """"12 elm road, leeds ls6 2ab" was redacted whole, but "12 elm road, leeds" up to the street type only: the
    town stayed in memory beside the placeholder."""
    assert _one(said, "address").text == address


@pytest.mark.parametrize("said, address", [
    ("I live at 12 elm road, thanks", "12 elm road"),
    ("meet at 3 elm lane, then lunch", "3 elm lane"),
    ("I moved to 42 elm street, springfield last spring.", "42 elm street"),
    ("drop it at 9 mill lane, probably.", "9 mill lane"),
    ("12 elm road, leeds, on tuesday", "12 elm road"),
])
def test_a_sentence_going_on_after_a_street_is_no_town(said: str, address: str) -> None:
    assert _one(said, "address").text == address


@pytest.mark.parametrize("said, card", [
    ("Amex 3782/822463/10005 exp 12/26", "3782/822463/10005"),
    ("my amex: 3714 / 496353 / 98431", "3714 / 496353 / 98431"),
])
def test_an_amex_split_by_slashes_in_its_own_groups_is_a_card(said: str, card: str) -> None:
    """An American Express number is printed 4-6-5: with slashes between those groups it was kept in memory in clear,
    while 4-4-4-4 slash groups were found."""
    assert _one(said, "card").text == card


@pytest.mark.parametrize("said", ["the ratio was 3782/822463", "ref 3782/822463/10008", "file 3012/345678/90125 here",
                                  "3782/822463/1000 is no card"])
def test_slashes_in_amex_groups_are_no_card_unless_it_is_a_valid_amex(said: str) -> None:
    assert not [f for f in detect(said) if f.detector == "card"]


# ---- towns in any script, of several words, with an abbreviation; an Amex split by dots (review rev102) -----------


@pytest.mark.parametrize("said, address", [
    ("send it to 12 elm road, zürich", "12 elm road, zürich"),
    ("we moved to 4 mill lane, malmö.", "4 mill lane, malmö"),
    ("my address: 12 elm road, são paulo", "12 elm road, são paulo"),
    ("I live at 12 elm road, st. albans", "12 elm road, st. albans"),
    ("12 elm road, stoke on trent.", "12 elm road, stoke on trent"),
    ("12 elm road, newcastle upon tyne", "12 elm road, newcastle upon tyne"),
    ("her flat: 3 canal road, halle an der saale!", "3 canal road, halle an der saale"),
    ("6 queen street, vila nova de gaia", "6 queen street, vila nova de gaia"),
    ("9 green lane, київ", "9 green lane, київ"),
    ("post it to 10 queen street, montréal qc h2x 1y4", "10 queen street, montréal qc h2x 1y4"),
    ("I live at 12 Elm Road, St. Albans", "12 Elm Road, St. Albans"),
    ("Send it to 12 Elm Road, Stoke on Trent.", "12 Elm Road, Stoke on Trent"),
])
def test_a_town_in_any_script_of_several_words_or_abbreviated_is_redacted_whole(said: str, address: str) -> None:
    """A town with a letter outside a-z ("zürich", "são paulo") was left out of the address, and of one written with
    an abbreviation ("st. albans") or joined as towns are ("stoke on trent", "newcastle upon tyne") the placeholder
    took only the first word or none: the rest stayed in memory in clear beside it."""
    assert _one(said, "address").text == address


@pytest.mark.parametrize("said, address", [
    ("I moved to 42 elm street, springfield last spring.", "42 elm street"),
    ("it's at 21 mill lane, see you on friday.", "21 mill lane"),
    ("the shop at 4 bridge street, open on sundays.", "4 bridge street"),
    ("we stayed at 8 beach road, come on over.", "8 beach road"),
    ("it's 6 elm road, ok. see you", "6 elm road"),
    ("12 elm road, leeds. bring wine.", "12 elm road, leeds"),
    ("12 elm road, leeds an hour away", "12 elm road"),
])
def test_words_joined_like_a_town_that_go_on_with_the_sentence_are_no_town(said: str, address: str) -> None:
    assert _one(said, "address").text == address


@pytest.mark.parametrize("said, card", [
    ("amex 3782.822463.10005", "3782.822463.10005"),
    ("Card: 3714.496353.98431, exp 08/28", "3714.496353.98431"),
    ("visa 4111.1111.1111.1111 please", "4111.1111.1111.1111"),
])
def test_an_amex_split_by_dots_in_its_own_groups_is_a_card(said: str, card: str) -> None:
    """README: a card's groups split by dots. In 4-4-4-4 dotted groups it was found, an Amex in its printed 4-6-5 dotted
    groups kept in memory in clear."""
    assert _one(said, "card").text == card


@pytest.mark.parametrize("said", ["build 3782.822463.10006", "the file 3012.345678.90125 is archived",
                                  "version 3782.822463.10005.1 is out", "release 2024.110503.12345",
                                  "3782.822463 and 10005"])
def test_dots_in_amex_groups_are_no_card_unless_it_is_a_valid_amex(said: str) -> None:
    assert not [f for f in detect(said) if f.detector == "card"]


@pytest.mark.parametrize(("said", "detector", "value"), [
    ("コテージの予約金はカード4111111111111111で払いました。", "card", "4111111111111111"),
    ("订金我用卡号4111 1111 1111 1111付了", "card", "4111 1111 1111 1111"),
    ("電話は090-1234-5678までお願いします。", "phone", "090-1234-5678"),
    ("请打电话+86 138 0013 8000找我", "phone", "+86 138 0013 8000"),
    ("電話は(415) 555-0132まで", "phone", "(415) 555-0132"),
])
def test_a_card_or_phone_beside_kana_or_hanzi_is_found(said: str, detector: str, value: str) -> None:
    """Japanese and Chinese are written without spaces: a card or phone number beside a kana or a hanzi was no card
    or phone (the patterns wanted no Unicode word character beside it) and was remembered as written."""
    assert _one(said, detector).text == value


@pytest.mark.parametrize(("said", "value"), [
    ("请打电话13812345678找我", "13812345678"),
    ("电话：138 1234 5678", "138 1234 5678"),
    ("Call me on 13812345678", "13812345678"),
    ("電話08012345678まで", "08012345678"),
    ("携帯は090-1234-5678です", "090-1234-5678"),
])
def test_a_chinese_or_japanese_mobile_as_written_at_home_is_a_phone(said: str, value: str) -> None:
    """A mainland Chinese mobile (eleven digits from 13-19, bare or 3-4-4) and a Japanese one written without dashes
    were no phone, even right after 电话 or "Call me on", and were remembered as written. Found by review."""
    assert _one(said, "phone").text == value


@pytest.mark.parametrize("said", ["Order 13812345678 shipped", "record 13812345678 updated", "ID 08012345678"])
def test_eleven_digits_without_a_phone_word_before_them_are_no_mobile(said: str) -> None:
    assert not [f for f in detect(said) if f.detector == "phone"]


@pytest.mark.parametrize("said", [
    "ref AB4111111111111111", "build 4111111111111111x", "id_4111111111111111", "SKU x020-7946-0958", "v0207946095_8",
])
def test_a_number_glued_to_a_latin_letter_is_still_part_of_a_longer_token(said: str) -> None:
    assert not [f for f in detect(said) if f.detector in ("card", "phone")]


@pytest.mark.parametrize(("said", "value"), [
    ("Ivan Petrov <ivan.petrov@xn--80akhbyknj4f.xn--p1ai>", "ivan.petrov@xn--80akhbyknj4f.xn--p1ai"),
    ("write to josé.ruiz@correo.example today", "josé.ruiz@correo.example"),
    ("Пишите: иван@почта.рф, спасибо", "иван@почта.рф"),
    ("Mail an jürgen@bücher.de.", "jürgen@bücher.de"),
    ("メールはalice@example.comまでお願いします", "alice@example.com"),
])
def test_an_address_with_letters_of_any_alphabet_or_an_idna_domain_is_found_whole(said: str, value: str) -> None:
    """An address with an accent, in Cyrillic, or at a domain as mail carries an international one (xn--…) was no
    address (letters A-Z only) and was remembered as written; beside a kana it still ends where the kana starts."""
    assert _one(said, "email").text == value


@pytest.mark.parametrize("said", ["icon@2x.png", "git@github.com:org/repo.git", "x@y.com-z", "Thanks @мария!",
                                  "the @xn--p1ai handle"])
def test_shapes_near_an_address_are_still_no_address(said: str) -> None:
    assert not [f for f in detect(said) if f.detector == "email"]


@pytest.mark.parametrize(("said", "value"), [
    ("Your card PIN: 8842.", "8842"),
    ("The garage door passcode is 2580 as well.", "2580"),
    ("Your PIN number is 4321.", "4321"),
    ("the wifi password is 12345", "12345"),
    ("The cottage wifi password: correcthorsebatterystaple", "correcthorsebatterystaple"),
    ("Wifi password: SeaView", "SeaView"),
    ("Guest wifi password - LighthouseKeeper, the router is in the hall", "LighthouseKeeper"),
    ('the password is "sunflower"', "sunflower"),
    ("Wifi key = 'meadowlark'", "meadowlark"),
])
def test_a_pin_of_four_digits_or_a_password_of_letters_alone_is_a_secret(said: str, value: str) -> None:
    """A PIN or passcode of four digits, and a password of letters alone (words run together, a capital inside, or
    quoted) were remembered as written: a labelled value had to have six characters with a digit or a symbol."""
    assert _one(said, "secret").text == value


@pytest.mark.parametrize("said", [
    "password: forgotten",
    "Password: required.",
    "Your password is incorrect, try again",
    "The password is wrong.",
    "the password is written on the fridge",
    "PIN: see above",
    "PIN: none",
    "the pin is 2 inches long",
    "PIN 4411 and door code 1234",
    "token: 1234",
    "api key: 5678",
    "Password: Forgot?",
    "Passwords: in LastPass",
    "The password is case-insensitive.",
    "Your password expires in 14 days.",
    "the password was 8 characters",
    "Ihr Passwort: vergessen",
])
def test_a_word_of_prose_or_a_short_number_after_a_password_or_pin_is_no_secret(said: str) -> None:
    assert not [f for f in detect(said) if f.detector == "secret"]


@pytest.mark.parametrize("said", [
    # a long word of prose after "password is", in English or another language's compound
    "Changing the password is counterproductive.",
    "The password is incomprehensible.",
    "Das neue Passwort ist gewöhnungsbedürftig.",
    "Le mot de passe est incompréhensible.",
    "Salasana on luottamuksellinen.",
    # an error message quoted as the screen showed it
    'It says the password is "incorrect"',
    # a year after a password's name
    "The last password change was 2021.",
    "Das Passwort war 2019 noch sicher.",
    # pins counted
    "Enamel pins: 1500 sold",
    "Grandma's pin collection is 1500 pieces.",
])
def test_a_long_word_a_quoted_message_a_year_or_pins_counted_are_no_secret(said: str) -> None:
    """A letters-only value of 16 letters or more after any password name and any "is" was taken for words run
    together (German, French and Finnish words are that long), a quoted word for a password whatever said it, and
    four digits after any password's or pin's name for a PIN: prose, years and counts were redacted. Found by
    review."""
    assert not [f for f in detect(said) if f.detector == "secret"]


@pytest.mark.parametrize(("said", "value"), [
    ("Ihr Passwort: Geheim-4471x", "Geheim-4471x"),  # de
    ("Das WLAN-Kennwort lautet: Sonne-2024x", "Sonne-2024x"),
    ("Passwort für das WLAN ist Sonne-2024x", "Sonne-2024x"),
    ("Ihre neue Geheimzahl: 4471.", "4471"),
    ("Le mot de passe de la box est Soleil-2024", "Soleil-2024"),  # fr
    ("code confidentiel : 8842", "8842"),
    ("La contraseña del wifi es Sol-2024x", "Sol-2024x"),  # es
    ("La password è Sole2024x", "Sole2024x"),  # it
    ("Het wachtwoord is Zon2024x", "Zon2024x"),  # nl
    ("Salasanasi on nyt: Aurinko2024", "Aurinko2024"),  # fi
    ("tunnusluku on 4471", "4471"),
    ("A sua senha é Sol2024x", "Sol2024x"),  # pt
    ("palavra-passe: Sol2024x", "Sol2024x"),
    ("Lösenordet är Sol2024x", "Sol2024x"),  # sv
    ("Adgangskoden er Sol2024x", "Sol2024x"),  # da
    ("Passordet til ruteren er Sol2024x", "Sol2024x"),  # no
    ("Hasło: Słońce2024", "Słońce2024"),  # pl
])
def test_a_password_named_in_another_language_is_a_secret(said: str, value: str) -> None:
    """Only English names of a password were read ("password", "passcode", "PIN"): "Ihr Passwort: Geheim-4471x" and
    the like were remembered as written, while account numbers' names are read in these languages."""
    assert _one(said, "secret").text == value


@pytest.mark.parametrize("said", [
    "Passwort: vergessen",
    "Das Passwort ist abgelaufen.",
    "Passwortmanager: KeePass2",
    "Le mot de passe est incorrect.",
    "la contraseña es incorrecta",
    "Salasana on vanhentunut.",
    "The password on 1Password7",
    "Token für die U-Bahn ist 2EUR50",
    "Wachtwoord vergeten? Klik hier",
])
def test_a_word_of_prose_after_a_password_named_in_another_language_is_no_secret(said: str) -> None:
    assert not [f for f in detect(said) if f.detector == "secret"]


@pytest.mark.parametrize(("said", "detector", "value"), [
    ("Username | alice.m\nPassword | Kx9mm2qL", "secret", "Kx9mm2qL"),
    ("| Wifi password: | SeaView |", "secret", "SeaView"),
    ("Your login | Passwort | Geheim-4471x", "secret", "Geheim-4471x"),
    ("Card PIN | 8842", "secret", "8842"),
    ("Account number | 31926819", "account", "31926819"),
    ("Sort code: | 20-00-00", "account", "20-00-00"),
])
def test_a_value_in_the_table_cell_after_its_name_is_found(said: str, detector: str, value: str) -> None:
    """An HTML mail's table as Hearth reads it ("Password | Kx9mm2qL") or a Markdown table: the value in the cell
    after its name was no labelled value (a colon, "is" or a dash was wanted), and was remembered as written."""
    assert _one(said, detector).text == value


@pytest.mark.parametrize("said", [
    "echo $PASSWORD | base64", "cat password.txt | sha256sum", "Password | forgotten", "| Password | see above |",
    "Token | 1234", "printenv | grep -i password | sort",
])
def test_a_pipe_after_a_password_spoken_of_is_no_secret(said: str) -> None:
    assert not [f for f in detect(said) if f.detector == "secret"]
