"""Detectors for personal data and secrets, each returning findings with character offsets. Stdlib only.

A detector is a function from text to a list of `Finding`s. Shapes are found with regular expressions
and then confirmed with what the shape alone cannot tell: check digits (Luhn, mod 97, ABA routing, Verhoeff,
national id keys), issuer prefixes and lengths, and nearby words ("order", "SSN", "call", "account"). Patterns
compile on first use so that importing this module costs next to nothing.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from itertools import accumulate

import unseen
from runtime_host.safety import _checksums as ck

DETECTOR_NAMES: tuple[str, ...] = (
    "secret", "card", "iban", "account", "national_id", "email", "phone", "address",
)
# Where two findings overlap, the detector earlier in DETECTOR_NAMES wins (a password inside a URL is a
# secret, not an email; an IBAN's digits are not a phone number).
_PRIORITY = {name: i for i, name in enumerate(DETECTOR_NAMES)}
DEFAULT_MIN_CONFIDENCE = 0.5


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing found in a text: which detector, where (text[start:end]), and how sure.

    `kind` narrows the detector ("visa", "us_ssn", "openai_key"). `text` is the raw value: keep it in
    memory only; audit events and messages use `label()` and `masked()` instead.
    """

    detector: str
    start: int
    end: int
    text: str
    confidence: float
    kind: str = ""

    def masked(self) -> str:
        """The value with all but a short tail hidden, e.g. '•••• 1111' for a card; secrets show nothing."""
        if self.detector == "secret":
            return f"[{self.kind or 'secret'}]"
        alnum = [c for c in self.text if c.isalnum()]
        tail = "".join(alnum[-4:]) if len(alnum) > 8 else ""
        return f"•••• {tail}".strip() if tail else "••••"

    def label(self) -> str:
        """A human name for what was found, without the value: 'payment card (visa)'."""
        base = _LABELS.get(self.detector, self.detector)
        return f"{base} ({self.kind})" if self.kind and self.detector != "email" else base

    def to_dict(self, *, include_text: bool = False) -> dict[str, object]:
        d: dict[str, object] = {
            "detector": self.detector, "kind": self.kind, "start": self.start, "end": self.end,
            "confidence": round(self.confidence, 3),
        }
        if include_text:
            d["text"] = self.text
        return d


_LABELS = {
    "email": "email address", "phone": "phone number", "card": "payment card", "iban": "IBAN",
    "national_id": "national id number", "address": "street address", "secret": "secret",
    "account": "bank account number",
}


@dataclass(frozen=True, slots=True)
class _Ctx:
    """Words near a match that raise or lower belief in it."""

    before: int = 32
    positive: re.Pattern[str] | None = None
    negative: re.Pattern[str] | None = None

    def window(self, text: str, start: int) -> str:
        return text[max(0, start - self.before):start]


_DIGIT_RUN = re.compile(r"\d+")


def _longest_digits(text: str) -> int:
    """The longest run of digits (of any script, as the patterns' ``\\d`` reads them) in ``text``: a pattern that
    needs a longer one cannot match, and is not run (most texts hold no number longer than a date's)."""
    return max(map(len, _DIGIT_RUN.findall(text)), default=0)


def _boundary_ok(text: str, start: int, end: int, chars: str = "") -> bool:
    """True when text[start:end] is not glued to letters, digits or the given extra characters."""
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] in chars):
        return False
    if end < len(text) and (text[end].isalnum() or text[end] in chars):
        return False
    return True


# --------------------------------------------------------------------------------------------- email

_FILE_EXTENSIONS = frozenset(
    "png jpg jpeg gif svg webp ico bmp tif tiff avif heic js mjs ts tsx jsx css scss less json yaml yml lock txt log"
    " html htm xml py rb java kt swift go rs c h cpp hpp o so dll exe zip gz tar".split()
)


# Letters of the scripts written without spaces between words (kana, hanzi and kanji, hangul, Thai, Lao, Khmer,
# Myanmar, half-width katakana): an address written beside one ends there ("メールはalice@example.comまで").
_NO_SPACE_SCRIPTS = ("\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff\u3130-\u318f"
                     "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff65-\uff9f"
                     "\U00020000-\U0003ffff")


@cache
def _email_re() -> re.Pattern[str]:
    # An address may hold letters of any alphabet (RFC 6531: "josé.ruiz@correo.example", "иван@почта.рф") and a
    # domain in the form mail carries one in (IDNA: "xn--80akhbyknj4f.xn--p1ai").
    # A local part is at most 64 characters (RFC 5321): bounded, a run of "a'a'a'…" without an "@" is read once,
    # not again from each letter after an apostrophe to its end; and once only (possessive: no shorter local part
    # can be followed by an "@" the longest one was not).
    word = rf"[^\W{_NO_SPACE_SCRIPTS}]"  # a letter, a digit or "_"
    alnum = rf"[^\W_{_NO_SPACE_SCRIPTS}]"
    local = rf"{word}(?:{word}|[%+'-]|\.(?={word}|[%+-])){{0,63}}+"
    tld = rf"(?:[Xx][Nn]--[A-Za-z0-9-]{{1,59}}|[^\W\d_{_NO_SPACE_SCRIPTS}]{{2,63}})"
    domain = rf"(?:{alnum}(?:(?:{alnum}|-){{0,61}}{alnum})?\.)+{tld}"
    return re.compile(rf"(?<!{word})(?<![.%+-])({local})@({domain})(?!{alnum}|-|\.{alnum})")


def detect_emails(text: str) -> list[Finding]:
    if "@" not in text:
        return []
    out: list[Finding] = []
    for m in _email_re().finditer(text):
        start, end = m.span()
        tld = m.group(2).rsplit(".", 1)[-1].lower()
        if tld in _FILE_EXTENSIONS:
            continue  # icon@2x.png, image.jpg@1.5x.webp
        if end < len(text) - 1 and text[end] == ":" and not text[end + 1].isspace():
            continue  # scp / git remote: git@github.com:org/repo.git
        if text[max(0, start - 3):start] == "://":
            continue  # URL userinfo, not a mailbox: https://user@host/
        out.append(Finding("email", start, end, m.group(0), 0.95))
    return out


# --------------------------------------------------------------------------------------------- phone

@cache
def _phone_res() -> dict[str, re.Pattern[str]]:
    sep = r"[ .\-]"
    # Glued to a latin letter, a digit or "_" a number is part of a longer token ("ID4155550132"); beside a kana or a
    # hanzi it is not: Japanese and Chinese are written without spaces ("電話は090-1234-5678まで"), so no \w here.
    return {
        # +CC then groups; an optional (0) trunk marker; groups may be parenthesised.
        "intl": re.compile(
            r"(?<![A-Za-z0-9_+])\+\d{1,3}(?:[ \-.]?\(0\))?(?:[ \-.]?\(?\d{1,5}\)?){1,6}(?![A-Za-z0-9_])"
        ),
        # 00 international prefix, written with spaces.
        "intl00": re.compile(r"(?<![A-Za-z0-9_.\-+/])00[1-9]\d{0,2}(?: \d{1,5}){2,5}(?![A-Za-z0-9_]|[.\-/ ]\d)"),
        # North American Numbering Plan: (415) 555-0132, 415-555-0132, 415.555.0132, 1-800-555-0199.
        "nanp": re.compile(
            rf"(?<![A-Za-z0-9_.\-+/])(?:1{sep})?(?:\([2-9]\d{{2}}\) ?|[2-9]\d{{2}}(?P<s>{sep}))[2-9]\d{{2}}(?(s)(?P=s)|{sep})\d{{4}}(?![A-Za-z0-9_]|[.\-/]\d)"
        ),
        # National numbers with a trunk 0: 020 7946 0958, 06 12 34 56 78, 0170 9876543.
        "trunk": re.compile(r"(?<![A-Za-z0-9_.\-+/:])0[1-9]\d{0,3}(?:[ \-]\d{2,8}){1,4}(?![A-Za-z0-9_]|[.\-/: ]\d)"),
        # Ten bare digits, only when a phone word is near.
        "bare": re.compile(r"(?<![A-Za-z0-9_.\-+/])[2-9]\d{9}(?![A-Za-z0-9_]|[.\-/]\d)"),
        # A mobile as written at home, only when a phone word is near: mainland China's eleven digits from 13-19,
        # bare or 3-4-4 ("13812345678", "138 1234 5678"); Japan's 070/080/090 and eight digits unseparated
        # ("08012345678"; separated it is a trunk number).
        "mobile": re.compile(r"(?<![A-Za-z0-9_.\-+/])(?:1[3-9]\d(?P<s>[ \-]?)\d{4}(?P=s)\d{4}|0[789]0\d{8})"
                             r"(?![A-Za-z0-9_]|[.\-/]\d)"),
    }


# Chinese and Japanese phone words are written inside a run of letters ("请打电话", "携帯番号"): no \b there
_PHONE_WORDS = re.compile(r"(?i)\b(?:call|phone|tel|telephone|mobile|cell|text|sms|whatsapp|fax|ring|contact|number|handy)\b"
                          r"|电话|電話|手机|手機|携帯|ケータイ")
_PHONE_NEG = re.compile(r"(?i)(?:order|invoice|tracking|serial|sn|isbn|ref|reference|version|build|ticket|id|account|lot|no\.)\W{0,3}$")


# What each phone pattern needs of a text: a literal, and a run of digits at least this long.
_PHONE_NEEDS = {"intl": ("+", 1), "intl00": ("00", 3), "nanp": ("", 4), "trunk": ("0", 2), "bare": ("", 10), "mobile": ("", 4)}


def detect_phones(text: str) -> list[Finding]:
    res = _phone_res()
    out: list[Finding] = []
    longest = _longest_digits(text)
    for kind, rx in res.items():
        literal, digits = _PHONE_NEEDS[kind]
        if longest < digits or literal not in text:
            continue
        for m in rx.finditer(text):
            start, end = m.span()
            value = m.group(0)
            if kind == "intl" and value.endswith(")") and value.count(")") > value.count("("):
                value = value[:-1]  # "(… +48 601 234 567)": the closing bracket is the sentence's
                end -= 1
            if kind != "intl" and start >= 2 and text[start - 1] == " " and text[start - 2].isdigit():
                continue  # a later group of a longer number: IBAN, card, parcel id
            digits = sum(c.isdigit() for c in value)
            if kind == "intl":
                if not 8 <= digits <= 15 or value.count("(") != value.count(")"):
                    continue
                # A run of digits glued to version-style dots is not a phone: +1.2.3
                if value.count(".") >= 3 and " " not in value:
                    continue
                conf = 0.9
            elif kind == "intl00":
                if not 11 <= digits <= 15:
                    continue
                conf = 0.8
            elif kind == "nanp":
                conf = 0.85
            elif kind == "trunk":
                if not 10 <= digits <= 11:
                    continue
                conf = 0.75
            else:  # bare, mobile
                if not _PHONE_WORDS.search(text[max(0, start - 24):start]):
                    continue
                conf = 0.7
            if kind != "intl" and _PHONE_NEG.search(text[max(0, start - 16):start]):
                continue
            out.append(Finding("phone", start, end, value, conf, kind))
    return _dedupe_same_detector(out)


# ---------------------------------------------------------------------------------------------- card

@cache
def _card_re() -> re.Pattern[str]:
    # Groups joined by one separator throughout (none, dots, slashes, spaces or dashes), or by spaces, dashes and
    # slashes mixed ("4111 1111-1111 1111", "4111 - 1111 - 1111 - 1111", "4111 1111 / 1111 1111", or "4111-1111-"
    # ending a line); dots never mix, and a card never follows a slash (a path or an address). Glued to a latin letter
    # or a digit it is part of a longer token; a kana or a hanzi beside it is a word of a text written without spaces
    # ("カード4111111111111111で払いました"), so no \w here.
    return re.compile(
        r"(?<![A-Za-z0-9_.\-/])(?:\d{4}(?P<s>[ .\-/]?)\d{2,7}(?:(?P=s)\d{1,7}){1,4}"
        r"|\d{4}(?: ?[-/] ?| )\d{2,7}(?:(?: ?[-/] ?| )\d{1,7}){1,4})"
        r"(?![A-Za-z0-9_]|[.\-/]\d)"
    )


def _card_brand(d: str) -> str | None:
    n = len(d)
    two, three, four, six = int(d[:2]), int(d[:3]), int(d[:4]), int(d[:6])
    if d[0] == "4" and n in (13, 16, 19):
        return "visa"
    if (51 <= two <= 55 or 2221 <= four <= 2720) and n == 16:
        return "mastercard"
    if two in (34, 37) and n == 15:
        return "amex"
    if (four == 6011 or 644 <= three <= 649 or two == 65 or 622126 <= six <= 622925) and 16 <= n <= 19:
        return "discover"
    if 3528 <= four <= 3589 and 16 <= n <= 19:
        return "jcb"
    if (300 <= three <= 305 or four == 3095 or two in (36, 38, 39)) and 14 <= n <= 19:
        return "diners"
    if two == 62 and 16 <= n <= 19:
        return "unionpay"
    if 2200 <= four <= 2204 and n == 16:
        return "mir"
    if (two == 50 or 56 <= two <= 69) and 16 <= n <= 19:
        return "maestro"
    return None


_CARD_NEG = re.compile(
    r"(?i)\b(?:order|invoice|tracking|ref|reference|booking|confirmation|parcel|serial|ticket|reservation|gift|imei|isbn|sku|account)\b[^\d]{0,12}$"
)
# A word naming a card ("booking, card 4111 …", "order paid with 4111 …"): nearer the number than one of the
# words above, the number is a card after all.
_CARD_POS = re.compile(
    r"(?i)\b(?:card|visa|mastercard|master card|amex|american express|maestro|discover|credit|debit|paid with|pay with)"
    r"\b[^\d]{0,12}$"
)


def detect_cards(text: str) -> list[Finding]:
    out: list[Finding] = []
    if _longest_digits(text) < 4:  # every card pattern starts with four digits
        return out
    rx, pos = _card_re(), 0
    while (m := rx.search(text, pos)) is not None:
        pos = m.end()
        value = m.group(0)
        spans = [g.span() for g in re.finditer(r"\d+", value)]
        groups = [value[a:b] for a, b in spans]
        four_by_four = len(groups) >= 4 and all(len(g) == 4 for g in groups[:4])
        if "." in value and [len(g) for g in groups] not in ([4, 4, 4, 4], [4, 6, 5]):
            continue  # dots only in a card's printed groups, 4-4-4-4 or an Amex's 4-6-5 (checked below); anything
            # else is a version, an amount or a date
        # The longest run of whole groups, from the start, that is a valid card.
        for k in range(len(groups), 0, -1):
            digits = "".join(groups[:k])
            if len(digits) < 13:
                break
            if len(digits) > 19:
                continue
            brand = _card_brand(digits)
            split = value[:spans[k - 1][1]]
            if ("/" in split or "." in split) and not (k == 4 and four_by_four) and not (
                    brand == "amex" and [len(g) for g in groups[:k]] == [4, 6, 5]):
                continue  # slashes or dots between a card's groups only in its printed groups: 4-4-4-4, or an Amex's 4-6-5
            if brand and ck.luhn_valid(digits):
                start = m.start()
                end = start + spans[k - 1][1]
                conf = 0.95
                before = text[max(0, start - 40):start]
                other, named = _CARD_NEG.search(before), _CARD_POS.search(before)
                if other and not (named and named.start() > other.start()):
                    conf = 0.35  # "Order no. 4000 ..." : shaped like a card, named as something else
                out.append(Finding("card", start, end, text[start:end], conf, brand))
                pos = end  # the groups after a card may start the next one ("4111 1111 1111 1111 5555 5555 ...")
                break
    return out


# ---------------------------------------------------------------------------------------------- iban

@cache
def _iban_start_re() -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9])([A-Za-z]{2})(\d{2})")


_IBAN_SEP = re.compile(r" ?[-/] ?| ")  # a space, a dash or a slash (with a space either side or not)


def detect_ibans(text: str) -> list[Finding]:
    out: list[Finding] = []
    n = len(text)
    for m in _iban_start_re().finditer(text):
        cc = m.group(1)
        if not (cc.isupper() or cc.islower()):
            continue
        length = ck.IBAN_LENGTHS.get(cc.upper())
        if length is None:
            continue
        chars = [cc, m.group(2)]
        count, i = 4, m.end()
        while count < length and i < n:
            ch = text[i]
            if ch.isascii() and ch.isalnum():
                chars.append(ch)
                count += 1
                i += 1
            elif (sep := _IBAN_SEP.match(text, i)) and sep.end() < n and text[sep.end()].isascii() \
                    and text[sep.end()].isalnum():
                i = sep.end()  # one separator between groups
            else:
                break
        if count != length:
            continue
        if i < n and text[i].isascii() and text[i].isalnum():
            continue  # longer than this country's IBAN
        compact = "".join(chars)
        if not ck.iban_valid(compact):
            continue
        if cc.islower() and not compact.islower() and not compact[2:].isdigit():
            pass  # mixed case inside the BBAN is unusual but mod 97 already passed
        out.append(Finding("iban", m.start(), i, text[m.start():i], 0.97, cc.upper()))
    return out


# ------------------------------------------------------------------------------------------- account
# A domestic bank account number is digits like any other: only the words before it say what it is ("account
# 31926819", "acct #…", "Kontonummer …", "numéro de compte …", "numero di conto …"), in the languages the other
# detectors read. A bank's code is checked where it can be: a US routing (ABA) number by its check digit, a UK
# sort code by its NN-NN-NN shape, an Australian BSB by NNN-NNN, a German Bankleitzahl by its eight digits.

# en "account", "acct", "acc", "a/c"; de, sv, da, no "Konto", "Kto." / "Kto-Nr" (a bare "kto" is Polish "who");
# fr "compte", "RIB"; es "cuenta"; it "conto", "c/c"; nl "rekening"; fi "tili"; pt "conta". A kind of account may
# come first ("savings account").
_ACCOUNT_WORD = (r"(?:(?:bank|checking|chequing|savings|current|deposit|personal|joint)[ -])?"
                 r"(?:account|acct|acc|a/c|konto|kto(?=\.|[ -]?(?:nr|no|nummer)\b)|compte|(?-i:RIB)|cuenta|conto|c/c"
                 r"|rekening|tili|conta)"
                 r"(?: (?:corrente|corriente|courant))?")  # "conto corrente", "cuenta corriente", "compte courant"
_ACCOUNT_COMPOUND = r"(?:kontonummer|kontonr|kontonumero|rekeningnummer|rekeningnr|tilinumero|girokonto)"
_NUMBER_WORD = r"(?:number|num|no|nr|n[°º]|n(?=\.)|nummer|numéro|numero|número|#)"
# "numéro de compte", "n° de compte", "número de cuenta", "numero di conto", "número da conta"
_NUMBER_OF = r"(?:(?:numéro|numero|número|n[°º]|no|nr)\.? (?:de |di |da |do |del |of )?)"
# Between the name and the value: "account: 1234", "account number is 1234", "Kontonummer lautet 1234",
# Finnish "tilinumero on 1234" ("on" is "is" there; an English "account on 20 03 2024" is a date, see _FINNISH_ON)
# A table's next cell too ("Account number | 31926819", as Hearth reads an HTML mail's table: htmltext.CELL_SEPARATOR)
_GAP = r"(?: ?[:=#-]? ?\| ?| ?[:=#-] ?| (?:is|was|ist|lautet|est|es|è|é|är|er|on|ja)(?: ?:)? | )?"
_FINNISH_ON = re.compile(r"(?i)tili\w*\.? on ")
_NUMBER_END = r"(?![\w]|[.,/]\d|[ -]\d)"
# A number named as money, not as an account: "an account of 250 000 EUR"
_MONEY_AFTER = re.compile(
    r"(?i) ?(?:[€$£¥₹%]|(?:eur|euros?|usd|gbp|chf|jpy|cad|aud|dollars?|pounds?|pesos?|lire|lira|yen|yuan|rupees?|francs?"
    r"|kr|kronor|kroner|krona|sek|nok|dkk|zloty|złoty|rand|reais)\b)")
# A number that counts something, or measures it, is no account: "an account with 150000 followers", "the account
# was 1234567 points", in the languages above; units of size, weight, distance and time too.
_COUNT_AFTER = re.compile(
    r"(?i) ?(?:followers?|subscribers?|fans|likes|views|visits|visitors|users|members|people|customers|clients"
    r"|players|points|pts|votes|stars|reviews|comments|posts|messages|tweets|downloads|shares|clicks|impressions"
    r"|hits|steps|times|items|entries|rows|records|files|lines|words|pages|credits|coins|tokens|miles|km|kg|lbs?|mb"
    r"|gb|kb|tb|ms|hours?|hrs?|minutes?|mins?|seconds?|secs?|days|weeks|months|years"
    r"|abonnenten|punkte|stimmen|mitglieder|nutzer|aufrufe|schritte|besucher|kunden|mal|jahre|tage|stunden"
    r"|abonnés|vues|membres|utilisateurs|visiteurs|abonnes|fois|ans|jours|heures"
    r"|seguidores|puntos|votos|miembros|usuarios|visitas|pasos|veces|años|días|horas|pontos|membros|usuários"
    r"|visualizações|vezes|anos|dias"
    r"|punti|voti|membri|utenti|visualizzazioni|passi|volte|anni|giorni|ore"
    r"|volgers|punten|stemmen|leden|gebruikers|bezoekers|keer|jaar|dagen|uur"
    r"|seuraajaa|pistettä|ääntä|jäsentä|käyttäjää|kertaa|vuotta|päivää"
    r"|följare|poäng|röster|medlemmar|användare|gånger|dagar|følgere|stemmer|medlemmer|brugere|gange|dage"
    r"|obserwujących|punktów|głosów|użytkowników|razy|lat|dni)\b")
_YEAR = r"(?:19|20)\d\d"
# Years, not an account: "the 2019-2020 account", "acc 2024 2025", "account 2023-24" (a season).
_YEARS = re.compile(rf"{_YEAR}(?:[ -]{_YEAR})+|({_YEAR})[ -](\d\d)")


def _reads_as_date_or_years(value: str) -> bool:
    """True for a value that reads as a calendar date, its groups at the date's own boundaries ("20 03 2024",
    "2024-01-13", "2024 0113", "20240113"), as years ("2024 2025") or as a season ("2023-24")."""
    m = _YEARS.fullmatch(value)
    if m:
        return m.group(1) is None or int(m.group(2)) == (int(m.group(1)) + 1) % 100
    digits = "".join(c for c in value if c.isdigit())
    cuts = set(accumulate(len(g) for g in re.split(r"[ -]", value)[:-1]))  # where the groups part
    for order, bounds in (("ymd", {4, 6}), ("dmy", {2, 4}), ("mdy", {2, 4})):
        if len(digits) != 8 or not cuts <= bounds:
            continue
        y, a, b = ((digits[:4], digits[4:6], digits[6:]) if order == "ymd" else (digits[4:], digits[:2], digits[2:4]))
        month, day = (int(a), int(b)) if order in ("ymd", "mdy") else (int(b), int(a))
        if 1900 <= int(y) <= 2099 and 1 <= month <= 12 and 1 <= day <= 31:
            return True
    return False
# Literal substrings (of the text in small letters) one of which every match of the pattern holds: a pattern whose
# triggers are all absent is not run.
_ACCOUNT_TRIGGERS = {
    "account": ("acc", "a/c", "kont", "kto", "compt", "rib", "cuent", "cont", "c/c", "rekening", "tili"),
    "uk_sort_code": ("sort", "s/c"), "us_routing": ("routing", "aba", "rtn"), "au_bsb": ("bsb",),
    "de_blz": ("blz", "bankleitzahl"),
}


@cache
def _account_res() -> dict[str, re.Pattern[str]]:
    named = r"(?<![\w/])"
    number_word = rf"(?:[ -]?{_NUMBER_WORD}\.?)?"
    return {
        "account": re.compile(
            rf"(?i){named}(?:{_NUMBER_OF}?{_ACCOUNT_WORD}\.?{number_word}|{_ACCOUNT_COMPOUND}\.?){_GAP}"
            rf"(?<![^\W\d])(\d{{2,}}(?:[ -]\d+){{0,5}}){_NUMBER_END}"),
        "uk_sort_code": re.compile(rf"(?i){named}(?:sort[ -]?code|s/c){_GAP}(\d\d([ -]?)\d\d\2\d\d){_NUMBER_END}"),
        "us_routing": re.compile(
            rf"(?i){named}(?:(?:aba|ach|wire)[ -])?(?:routing|aba|rtn)(?:[ -]transit)?{number_word}{_GAP}"
            rf"(\d{{9}}){_NUMBER_END}"),
        "au_bsb": re.compile(rf"(?i){named}bsb{number_word}{_GAP}(\d{{3}}[ -]?\d{{3}}){_NUMBER_END}"),
        "de_blz": re.compile(rf"{named}(?:BLZ|[Bb]ankleitzahl){_GAP}(\d{{3}} ?\d{{3}} ?\d\d){_NUMBER_END}"),
    }


def detect_accounts(text: str) -> list[Finding]:
    lowered = text.lower()
    kinds = [kind for kind, triggers in _ACCOUNT_TRIGGERS.items() if any(t in lowered for t in triggers)]
    if not kinds or _longest_digits(text) < 2:
        return []
    out: list[Finding] = []
    for kind in kinds:
        rx = _account_res()[kind]
        for m in rx.finditer(text):
            start, end = m.span(1)
            value = m.group(1)
            digits = "".join(c for c in value if c.isdigit())
            if kind == "account":
                if (not 6 <= len(digits) <= 24 or _reads_as_date_or_years(value) or _MONEY_AFTER.match(text, end)
                        or _COUNT_AFTER.match(text, end)):
                    continue
                if " on " in text[m.start():start].lower() and not _FINNISH_ON.match(text, m.start()):
                    continue
                conf = 0.8
            elif kind == "us_routing":
                if not ck.aba_routing_valid(digits):
                    continue
                conf = 0.9
            else:
                conf = 0.85
            out.append(Finding("account", start, end, value, conf, "" if kind == "account" else kind))
    return _dedupe_same_detector(out)


# --------------------------------------------------------------------------------------- national id

@cache
def _nid_res() -> dict[str, re.Pattern[str]]:
    return {
        "us_ssn": re.compile(r"(?<![\w\-])(\d{3})([\- ])(\d{2})\2(\d{4})(?![\w]|-\w)"),
        "us_ssn_bare": re.compile(r"(?<![\w\-])(\d{3})(\d{2})(\d{4})(?![\w\-])"),
        "uk_nino": re.compile(r"(?i)(?<![A-Za-z0-9])([A-Z]{2}) ?(\d{2}) ?(\d{2}) ?(\d{2}) ?([A-D])(?![A-Za-z0-9])"),
        "es_dni": re.compile(r"(?i)(?<![A-Za-z0-9])(\d{8})-?([A-Z])(?![A-Za-z0-9])"),
        "es_nie": re.compile(r"(?i)(?<![A-Za-z0-9])([XYZ])-?(\d{7})-?([A-Z])(?![A-Za-z0-9])"),
        "it_codice_fiscale": re.compile(
            r"(?i)(?<![A-Za-z0-9])[A-Z]{6}\d{2}[ABCDEHLMPRST]\d{2}[A-Z]\d{3}[A-Z](?![A-Za-z0-9])"
        ),
        "se_personnummer": re.compile(r"(?<![\w\-])(?:19|20)?(\d{2})(\d{2})(\d{2})[\-+](\d{3})(\d)(?![\w\-])"),
        "fi_hetu": re.compile(r"(?i)(?<![\w\-])(\d{2})(\d{2})(\d{2})([\-+A-FU-Y])(\d{3})([0-9A-Y])(?![\w\-])"),
        "ca_sin": re.compile(r"(?<![\w\-])(\d{3})([ \-]?)(\d{3})\2(\d{3})(?![\w\-]| \d)"),
        "in_aadhaar": re.compile(r"(?<![\w\-])(?<!\d )([2-9]\d{3})( ?)(\d{4})\2(\d{4})(?![\w\-]| \d)"),
        "nl_bsn": re.compile(r"(?<![\w\-])(\d{9})(?![\w\-])"),
        "fr_nir": re.compile(
            r"(?<![\w\-])([12]) ?(\d{2}) ?(0[1-9]|1[0-2]|[2-9]\d) ?(\d{2}|2[AB]) ?(\d{3}) ?(\d{3}) ?(\d{2})(?![\w\-])"
        ),
    }


_SSN_CTX = re.compile(r"(?i)\b(?:ssn|social security|soc\.? sec)")
_SSN_NEG = re.compile(r"(?i)\b(?:part|no\.|order|lot|ref|serial|model|item|sku|zip|phone|tel|room|build)\b[^\d]{0,6}$")
_DATE_ID_NEG = re.compile(r"(?i)\b(?:build|version|release|order|ref|lot|batch|ticket|run|job)\b\W{0,4}$")
_SIN_CTX = re.compile(r"(?i)\b(?:sin|social insurance|nas)\b")
_AADHAAR_CTX = re.compile(r"(?i)\b(?:aadhaar|aadhar|uid|uidai)\b")
_BSN_CTX = re.compile(r"(?i)\b(?:bsn|burgerservicenummer|sofi)")


# The longest run of digits each national id pattern needs ("\d{3}" and "\d{4}" of "123-45-6789": four).
_NID_DIGITS = {"us_ssn": 4, "us_ssn_bare": 9, "uk_nino": 2, "es_dni": 8, "es_nie": 7, "it_codice_fiscale": 3,
               "se_personnummer": 6, "fi_hetu": 6, "ca_sin": 3, "in_aadhaar": 4, "nl_bsn": 9, "fr_nir": 3}


def _near(rx: re.Pattern[str], text: str, start: int, before: int = 40) -> bool:
    return rx.search(text[max(0, start - before):start]) is not None


def detect_national_ids(text: str) -> list[Finding]:
    longest = _longest_digits(text)
    if longest < 2:
        return []
    res = _nid_res()

    def found(kind: str) -> Iterable[re.Match[str]]:
        return res[kind].finditer(text) if longest >= _NID_DIGITS[kind] else ()

    out: list[Finding] = []
    add = out.append
    for m in found("us_ssn"):
        if not ck.us_ssn_valid(m.group(1), m.group(3), m.group(4)):
            continue
        s = m.start()
        if _near(_SSN_CTX, text, s):
            add(Finding("national_id", s, m.end(), m.group(0), 0.95, "us_ssn"))
        elif m.group(2) == "-" and not _SSN_NEG.search(text[max(0, s - 20):s]):
            add(Finding("national_id", s, m.end(), m.group(0), 0.6, "us_ssn"))
    lowered = text.lower()
    for m in (found("us_ssn_bare") if ("ssn" in lowered or "social sec" in lowered or "soc" in lowered) else ()):
        if ck.us_ssn_valid(m.group(1), m.group(2), m.group(3)) and _near(_SSN_CTX, text, m.start(), 30):
            add(Finding("national_id", m.start(), m.end(), m.group(0), 0.85, "us_ssn"))
    for m in found("uk_nino"):
        letters = m.group(1)
        if not (letters.isupper() == m.group(5).isupper()) or not ck.uk_nino_prefix_valid(letters):
            continue
        add(Finding("national_id", m.start(), m.end(), m.group(0), 0.85, "uk_nino"))
    for m in found("es_dni"):
        if ck.es_dni_valid(m.group(1), m.group(2)):
            add(Finding("national_id", m.start(), m.end(), m.group(0), 0.9, "es_dni"))
    for m in found("es_nie"):
        if ck.es_dni_valid(m.group(1) + m.group(2), m.group(3)):
            add(Finding("national_id", m.start(), m.end(), m.group(0), 0.9, "es_nie"))
    for m in found("it_codice_fiscale"):
        if ck.it_codice_fiscale_valid(m.group(0)):
            add(Finding("national_id", m.start(), m.end(), m.group(0), 0.95, "it_codice_fiscale"))
    for m in found("se_personnummer"):
        yy, mm, dd, nnn, c = m.groups()
        day = str(int(dd) - 60) if int(dd) > 60 else dd  # coordination numbers add 60 to the day
        if _DATE_ID_NEG.search(text[max(0, m.start() - 20):m.start()]):
            continue  # "build 20240611-1423" is a timestamp
        if ck.plausible_date(yy, mm, day) and ck.luhn_valid(yy + mm + dd + nnn + c):
            add(Finding("national_id", m.start(), m.end(), m.group(0), 0.8, "se_personnummer"))
    for m in found("fi_hetu"):
        dd, mm, yy, sep, nnn, c = m.groups()
        if ck.plausible_date(yy, mm, dd) and ck.fi_hetu_valid(dd + mm + yy, nnn, c):
            add(Finding("national_id", m.start(), m.end(), m.group(0), 0.9, "fi_hetu"))
    for m in (found("ca_sin") if ("sin" in lowered or "social insurance" in lowered or "nas" in lowered) else ()):
        digits = m.group(1) + m.group(3) + m.group(4)
        if ck.luhn_valid(digits) and _near(_SIN_CTX, text, m.start()):
            add(Finding("national_id", m.start(), m.end(), m.group(0), 0.85, "ca_sin"))
    for m in found("in_aadhaar"):
        digits = m.group(1) + m.group(3) + m.group(4)
        if not ck.verhoeff_valid(digits):
            continue
        if _near(_AADHAAR_CTX, text, m.start()):
            add(Finding("national_id", m.start(), m.end(), m.group(0), 0.9, "in_aadhaar"))
        elif m.group(2) == " ":
            add(Finding("national_id", m.start(), m.end(), m.group(0), 0.55, "in_aadhaar"))
    for m in (found("nl_bsn") if ("bsn" in lowered or "burgerservice" in lowered or "sofi" in lowered) else ()):
        if ck.nl_bsn_valid(m.group(1)) and _near(_BSN_CTX, text, m.start()):
            add(Finding("national_id", m.start(), m.end(), m.group(0), 0.85, "nl_bsn"))
    for m in found("fr_nir"):
        g = m.groups()
        if ck.fr_nir_valid("".join(g[:6]), g[6]):
            add(Finding("national_id", m.start(), m.end(), m.group(0), 0.9, "fr_nir"))
    return _dedupe_same_detector(out)


# ------------------------------------------------------------------------------------------- address

_STREET_TYPES = (
    "Street|St|Avenue|Ave|Av|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Parkway|Pkwy|Terrace|Ter|Place|Pl|Court|Ct|"
    "Way|Loop|Circle|Cir|Highway|Hwy|Square|Sq|Crescent|Cres|Close|Row|Trail|Trl|Walk|Mews|Gardens|Grove|Hill|Park"
)
_PLAIN_STREET_TYPES = "street|avenue|ave|road|rd|lane|boulevard|blvd|parkway|pkwy|terrace|crescent|highway|hwy"
_CONT_SUFFIX = (
    "straße|strasse|str\\.|weg|gasse|platz|allee|gracht|laan|straat|plein|ring|damm|ufer|kade|steeg|vej|gatan|gata|veien|"
    "väg|vägen|kuja|katu|tie"
)


# A town's word: letters of any script, with an apostrophe or a hyphen inside ("zürich", "são", "stoke-on-trent",
# "bishop's", "villeneuve-d'ascq").
_TOWN_WORD = r"[^\W\d_](?:[^\W\d_]|['\u2019\-])*"
# What joins the words of a town in the languages the detectors read: "stoke on trent", "newcastle upon tyne",
# "ashton under lyne", "frankfurt am main", "halle an der saale", "freiburg im breisgau", "rothenburg ob der tauber",
# "boulogne sur mer", "aix en provence", "villeneuve lès avignon", "rio de janeiro", "reggio di calabria",
# "bergen op zoom", "alphen aan den rijn", "wijk bij duurstede", "nowe miasto nad pilicą": a preposition, an article
# after it or not. One letter ("i", "y") is too often English "I"; "an", "in" and "by" alone too often English.
_TOWN_JOIN = (r"(?:(?:on|upon|under|am|im|ob|auf|bei|vor|zum|zur|sur|sous|en|lès|les|le|la|de|des|du|del|della|"
              r"delle|dei|degli|di|da|das|dos|al|au|aux|sul|sulla|aan|op|bij|ter|ten|nad|pod)"
              r"(?: (?:the|der|dem|den|die|das|la|le|les|los|las|el|het))?"
              r"|(?:an|in|by) (?:the|der|dem|den|die|das))")
# An abbreviation starting a town, its dot no sentence's end: "st. albans", "ste. foy", "mt. vernon", "ft. worth".
_TOWN_ABBREVIATION = r"[^\W\d_]{1,3}\. "


def _town(word: str, plain: int) -> str:
    """A town: a word matching ``word``, up to ``plain`` more after a space, then perhaps one more after what joins a
    town's words (_TOWN_JOIN), all perhaps after an abbreviation: "leeds", "são paulo", "st. albans",
    "stoke on trent", "newcastle upon tyne"."""
    return rf"(?:(?={word}\. ){_TOWN_ABBREVIATION})?{word}(?: {word}){{0,{plain}}}(?: {_TOWN_JOIN} {word})?"


@cache
def _address_res() -> dict[str, re.Pattern[str]]:
    word = r"(?:[A-Z][\w'.\-]*|\d{1,3}(?:st|nd|rd|th))"  # a name, or an ordinal ("5th Ave", "E 21st St")
    # City words are letters only, so that "London NW1 6XE" leaves the whole postcode to the postcode part.
    city_word = r"[A-ZÀ-Ý](?:[^\W\d_]|['\-])*\b(?!\d)"
    city = _town(city_word, 2)  # "New York", "Salt Lake City", "St. Albans", "Stoke on Trent"
    us_tail = r"(?:,? [A-Z]{2} \d{5}(?:-\d{4})?)"
    uk_post = r"(?: [A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2})"
    ca_tail = r"(?:,? [A-Z]{2} [A-Z]\d[A-Z] ?\d[A-Z]\d)"
    unit = r"(?:,? (?:Apt|Apartment|Suite|Ste|Unit|Flat|Floor|Fl|#)\.? ?[\w\-]+)"
    # Typed all in small or all in capital letters ("42 elm street", "42 ELM STREET"): only before a street type
    # that is no everyday word, ending the phrase, with no small word (the, at, down...), measure (lane, way,
    # mile, hour...) or street type among the names: "5 blocks down the road", "3 long road trips", "a 4 lane
    # highway" and "a 2 way street" are no addresses.
    small = (r"(?:the|a|an|at|in|on|of|to|by|for|from|and|or|my|our|your|his|her|their|its|this|that|down|up|"
             r"along|across|blocks?|miles?|km|kilometres?|kilometers?|metres?|meters?|feet|foot|yards?|hours?|"
             r"minutes?|mins?|days?|weeks?|times?|" + _STREET_TYPES.lower() + ")")
    lower = rf"(?!{small}\b)[a-z][a-z'\-]*"
    # After the street type, a postcode (UK, US with its state, Canadian) typed the same way, a town before it or not:
    # words after a street type without one are no town ("3 long road trips", "42 elm street, springfield last spring")
    small_town = _town(rf"(?!{small}\b){_TOWN_WORD}", 2)
    small_post = r"(?:[a-z]{1,2}\d[a-z\d]? ?\d[a-z]{2}|(?:[a-z]{2} )?(?:\d{5}(?:-\d{4})?|[a-z]\d[a-z] ?\d[a-z]\d))\b"
    # Without a postcode, a town is told by where it stands: right after the street type and a comma, words that end
    # the sentence or the line ("12 elm road, leeds.", "14 station road, milton keynes", "4 mill lane, malmö"). Words
    # of the closed classes (pronouns, articles, conjunctions, prepositions and the particles they make, auxiliaries),
    # greetings and thanks, time words (days of the week, parts of the day) and adverbs in -ly are how a sentence goes
    # on, never a town: "12 elm road, thanks", "3 elm lane, then lunch", "6 mill lane, honestly", "8 dock road, come
    # on over", "4 bridge street, open on sundays".
    going_on = (r"(?:i|me|my|you|your|we|us|our|he|him|his|she|her|it|its|they|them|their|this|that|these|those|"
                r"there|here|a|an|the|and|or|but|so|yet|nor|if|as|about|above|across|after|against|along|among|"
                r"around|at|away|back|before|behind|below|beneath|beside|besides|between|beyond|by|down|during|for|"
                r"from|in|into|near|of|off|on|onto|out|over|past|round|since|through|till|to|toward|towards|under|"
                r"until|up|upon|via|with|within|without|not|no|yes|is|are|was|were|be|been|am|do|does|did|have|has|"
                r"had|will|would|shall|should|can|could|may|might|must|then|than|too|also|now|soon|later|today|"
                r"tonight|tomorrow|yesterday|again|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|mornings?|"
                r"afternoons?|evenings?|nights?|weekends?|ok|okay|right|please|thanks|thank|thx|ta|cheers|sorry|bye|"
                r"hi|hello|love|regards|best|only|x+|[^\W\d_]+(?<!e)ly)")  # -ly, not -ley (bromley, barnsley)
    # Two words at most unless joined as a town's are ("springfield last spring" is a sentence going on).
    town = _town(rf"(?!{going_on}\b){_TOWN_WORD}", 1)
    sentence_end = r"(?=[ \t]*(?:[;!?)\n]|\.(?!\w)|$))"
    return {
        "number_first": re.compile(
            rf"(?<![\w.,\-])\d{{1,5}}[A-Za-z]?(?: (?:[NSEW]|North|South|East|West)\.?)? {word}(?: {word}){{0,3}} "
            rf"(?:{_STREET_TYPES})\b(?!-)"
            rf"(?: (?:[NS][EW]|[NSEW])\b\.?)?"  # a direction after the street type ("Avenue NW")
            rf"{unit}?"
            rf"(?:, {city}(?:{us_tail}|{ca_tail}|{uk_post})?)?"
        ),
        "small_letters": re.compile(
            rf"(?i)(?<![\w.,\-])\d{{1,5}}[a-z]? {lower}(?: {lower}){{0,2}} (?:{_PLAIN_STREET_TYPES})\b"
            rf"(?:(?:,? {small_town})?,? {small_post}"  # "12 elm road leeds ls6 2ab"
            rf"|, {town}{sentence_end}"  # "12 elm road, leeds.", "4 mill lane, st. ives", "9 dock road, stoke on trent"
            rf"|(?=[ \t]*(?:[,.;:!?)\n]|$)))"
        ),
        "name_first": re.compile(
            rf"(?<![\w\-])(?:(?:Via|Viale|Calle|Carrer|Avenida|Rua|Piazza|Plaza|Paseo)(?: (?:de|del|della|da|do|dos|la|las|los))*"
            rf" [A-ZÀ-Ý][\w'\-]*|[A-ZÄÖÜ][\wäöüßÄÖÜ\-]*(?:{_CONT_SUFFIX})) \d{{1,4}}[a-zA-Z]?\b"
            rf"(?:, \d{{4,5}}(?: [A-Z]{{2}})? [A-ZÀ-Ý][\w\-]*)?"
        ),
        "po_box": re.compile(r"(?i)(?<![\w\-])P\.? ?O\.? Box \d{1,6}\b"),
        "french": re.compile(
            r"(?i)(?<![\w\-])\d{1,4}(?: ?(?:bis|ter))?,? (?:rue|avenue|av\.|boulevard|bd|place|allée|impasse|chemin|quai|cours)"
            r"(?: [\w'À-ÿ\-]+){1,5}?, \d{5} [A-ZÀ-Ý][\w\-]*"
        ),
    }


# The longest run of digits each address pattern needs: a house number, a French postcode.
_ADDRESS_DIGITS = {"number_first": 1, "small_letters": 1, "name_first": 1, "po_box": 1, "french": 5}


def detect_addresses(text: str) -> list[Finding]:
    out: list[Finding] = []
    longest = _longest_digits(text)
    for kind, rx in _address_res().items():
        if longest < _ADDRESS_DIGITS[kind]:
            continue
        for m in rx.finditer(text):
            value = m.group(0)
            has_post = bool(re.search(r"\d{4,5}|[A-Z]\d[A-Z]? ?\d[A-Z]{2}", value[len(value.split(" ", 1)[0]):]))
            out.append(Finding("address", m.start(), m.end(), value, 0.85 if has_post else 0.7, kind))
    return _dedupe_same_detector(out)


# -------------------------------------------------------------------------------------------- secret

# What names a credential: "password", "wifi-password", "API key", "access_token", "client secret", "passcode", "PIN",
# "wifi key"; at the end of a name of code's ("GITHUB_TOKEN", "db-secret") a token or a secret too. Read from the
# start of a run like "db_admin_password" only, once (from each of its parts, a long run took the square of its length).
_LABEL_RUN = r"(?<![A-Za-z0-9])(?<![A-Za-z0-9][_\-])(?:[A-Za-z0-9]+[_\-])*"
_FINNISH_PASSWORD = r"salasan(?:asi|anne|amme|at|an|a)"
# A password's names (a wifi key is one): a value of plain words after one may be the password ("wifi password:
# correcthorsebatterystaple"); a PIN's or a passcode's: four digits after one are the PIN ("Your card PIN: 8842").
# In the languages account numbers are read in (see _ACCOUNT_WORD): de "Passwort", "Kennwort", "Geheimzahl"; fr "mot
# de passe", "code confidentiel"; es "contraseña"; it "password"; nl "wachtwoord", "pincode"; fi "salasana",
# "tunnusluku"; pt "senha", "palavra-passe"; sv "lösenord"; da "adgangskode", "kodeord"; no "passord"; pl "hasło".
_PASSWORD_WORD = (r"pass(?:words?|wd|phrases?|w(?:ort(?:e?s)?|örter)|ord(?:et)?)|pwd"
                  r"|w(?:i-?fi[_\-\s]?keys?|achtwoord(?:en)?)"
                  r"|k(?:ennw(?:ort(?:e?s)?|örter)|odeord(?:et)?)|mots?[^\S\n]+de[^\S\n]+passe|contraseñas?"
                  rf"|{_FINNISH_PASSWORD}|senhas?|palavras?-passe|lösenord(?:et|en)?|adgangskoder?n?|has(?:ło|lo|ła|la)")
_PIN_WORD = (r"pins?(?:[_\-\s]?(?:codes?|numbers?|nummer|koodi|kode|kod))?|passcodes?|geheimzahl|tunnusluku"
             r"|code[^\S\n]+confidentiel")
_CREDENTIAL_WORD = (rf"(?P<name>(?i:{_PASSWORD_WORD}|{_PIN_WORD}|"
                    r"api[_\-\s]?keys?|(?:access|auth|refresh)[_\-\s]?tokens?|client[_\-\s]?secrets?|secret[_\-\s]?keys?|"
                    r"(?<=[_\-])(?:tokens?|secrets?)))")
_NAMES_A_PASSWORD = re.compile(rf"(?i:{_PASSWORD_WORD})")
_NAMES_A_PIN = re.compile(rf"(?i:{_PIN_WORD})")
# "pin" or "pins" alone in small letters is a thing counted ("Enamel pins: 1500 sold"), a PIN is written in capitals
_SMALL_PIN = re.compile(r"(?i:pins?)(?<!PIN)(?<!PINs)(?<!PINS)")
# A password's English names: words run together after one ("wifi password: correcthorsebatterystaple"); another
# language's long words are compounds of prose ("Passwort: gewöhnungsbedürftig")
_ENGLISH_PASSWORD = re.compile(r"(?i:pass(?:words?|wd|phrases?)|pwd|wi-?fi[_\-\s]?keys?)")
# What a screen or a message says, quoted: 'It says the password is "incorrect"', 'the app shows "expired" for the
# password' (present tense; "She said the password is 'sunflower'" tells one)
_REPORTED = re.compile(r"(?i:\b(?:says|shows|reads|displays|sagt|zeigt|steht|dit|affiche|dice|muestra|zegt|toont|sanoo"
                       r"|näyttää|diz|mostra|säger|visar|siger|viser|sier|mówi|pokazuje)\b[^\n.!?]*$)")
# A token or a secret on its own names many things besides: "the token for the metro", "the secret to Nan's scones"
_BARE_WORD = r"(?i:(?<![_\-])(?:tokens?|secrets?))"
# What the credential is for, after its name: " for the cabin wifi", " to Mum's laptop", " of example.com"
_WHAT_FOR = (r"(?i:[^\S\n]+(?:for|of|to|on|at|in|für|fürs|pour|para|per|voor|för|til|do|du|de|del|da|van|vom|zum|zur)"
             r"(?:[^\S\n]+[\w'\-]+(?:\.[\w\-]+)*){1,5}?)")
# "is" after a credential's name and what it is for: "Passwort für das WLAN ist …", "la contraseña del wifi es …"
_IS = r"(?:is|was|ist|lautet|war|est|était|es|era|è|é|är|var|er)"
# "password: x", "PASSWORD=x", "the password is x", "the router password is now: x" (words before "is" that say what
# it is for are read by _WHAT_FOR, after a credential's name only)
_SAID = (r"(?:[\"']?\s*[:=]|(?i:(?![^\S\n]+(?:for|of|to|on|at|in)[^\S\n]))(?:\s+[\w']+){0,3}?\s+(?:is|was)"
         r"(?:\s+now)?\s*:?"
         # another language's "is" right after the name: "Ihr Passwort lautet …", "la contraseña es …"
         rf"|[^\S\n]+{_IS}[^\S\n]*:?)")
# Finnish "salasana on …" ("on" is "is" there; an English "password on the fridge" is where it is)
_FINNISH_SAID = rf"(?P<fi>(?i:{_FINNISH_PASSWORD}|tunnusluku|pin-koodi))[^\S\n]+on(?:[^\S\n]+nyt)?[^\S\n]*:?"
# The value, to its end: a sentence's full stop or colon after it is not part of it; a backtick inside it is
# ("Qv7r`T2m`z9"), one around it is quoting
_CREDENTIAL_VALUE = r"(?P<value>[^\s\"'`<>,;()\[\]{}][^\s\"'<>,;()\[\]{}]{2,}[^\s\"'`<>,;()\[\]{}](?<![.:]))"
# What may follow a value that ends its line or clause: a closing quote, then the line's end, a comma, a semicolon, a
# closing bracket, a table's next cell or a full stop ending the sentence ("the password manager - 1Password7 works
# well" is prose)
_ENDS_CLAUSE = r"[\"'`]?[^\S\n]*(?:$|[\n,;)|]|\.(?!\w))"
# How a value follows the credential's name right after it: a sign ("password: x", "PASSWORD=x", "Password - x",
# "Password | x"), or "is" ("the password is x", "salasana on x"); words between ("the password change was 2021")
# name no value
_SIGN_AFTER_NAME = re.compile(r"[\"']?\s*(?:[:=]|-{1,2}|-+>|=>|\u2192|\u21d2|:?\s*\|)\s*[\"'`]?")
_IS_AFTER_NAME = re.compile(rf"(?i:\s+(?:{_IS}|on)(?:\s+(?:now|nyt))?\s*:?\s*[\"'`]?)")


@cache
def _secret_res() -> list[tuple[str, re.Pattern[str], int | str]]:
    """(kind, pattern, group holding the secret)."""
    b = r"(?<![A-Za-z0-9_\-])"
    e = r"(?![A-Za-z0-9_\-])"
    return [
        ("private_key", _KEY_BEGIN, 0),  # to its END line: see _private_keys
        ("anthropic_key", re.compile(rf"{b}sk-ant-(?:api|admin|oat)\d{{2}}-[A-Za-z0-9_\-]{{40,}}{e}"), 0),
        ("openrouter_key", re.compile(rf"{b}sk-or-v1-[0-9a-f]{{64}}{e}"), 0),
        ("openai_key", re.compile(rf"{b}sk-(?!ant-|or-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{{20,}}{e}"), 0),
        ("aws_access_key_id", re.compile(
            r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z2-7]{16}(?![A-Za-z0-9])"), 0),
        ("aws_secret_access_key", re.compile(
            r"(?i)(?:aws_?secret_?access_?key|secret_?access_?key|aws_?secret)[\"']?\s*[:=]\s*[\"']?"
            r"(?-i:([A-Za-z0-9/+]{40}))(?![A-Za-z0-9/+=])"), 1),
        ("github_token", re.compile(rf"{b}gh[pousr]_[A-Za-z0-9]{{36,76}}{e}"), 0),
        ("github_token", re.compile(rf"{b}github_pat_[A-Za-z0-9_]{{60,}}{e}"), 0),
        ("gitlab_token", re.compile(rf"{b}glpat-[A-Za-z0-9_\-]{{20,}}{e}"), 0),
        ("slack_token", re.compile(rf"{b}xox[abposr]-(?:\d+-)+[A-Za-z0-9]{{10,}}{e}"), 0),
        ("slack_token", re.compile(rf"{b}xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{{20,}}{e}"), 0),
        ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{16,}"), 0),
        ("google_api_key", re.compile(rf"{b}AIza[0-9A-Za-z_\-]{{35}}{e}"), 0),
        ("stripe_key", re.compile(rf"{b}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{20,}}{e}"), 0),
        ("groq_key", re.compile(rf"{b}gsk_[A-Za-z0-9]{{48,}}{e}"), 0),
        ("xai_key", re.compile(rf"{b}xai-[A-Za-z0-9]{{60,}}{e}"), 0),
        ("huggingface_token", re.compile(rf"{b}hf_[A-Za-z]{{30,}}{e}"), 0),
        ("url_password", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]*:([^\s/@]+)@[^\s/@]"), 1),
        # A JSON Web Token: base64url of '{"' twice (header, claims), then the signature (empty for alg none).
        ("jwt", re.compile(rf"{b}eyJ[A-Za-z0-9_\-]{{8,}}\.eyJ[A-Za-z0-9_\-]{{8,}}\.[A-Za-z0-9_\-]*{e}"), 0),
        ("bearer_token", re.compile(r"(?i:(?<![A-Za-z0-9])bearer)\s+([A-Za-z0-9\-._~+/]{19,}[A-Za-z0-9\-_~+/]=*)(?![A-Za-z0-9\-_~+/=])"), 1),
        # A value labelled as a credential: "password: hunter2horse", PASSWORD=..., {"api_key": "..."}, "the wifi
        # password is CorrectHorse99", "Password for the cabin wifi: Qv7rT2mz". Only a value that looks made up (see
        # _looks_credential), not prose; a "!" or "?" at its end is part of it (see detect_secrets). What it is for
        # is said of a credential's name only: "the token for the metro is 1.65EUR", "the secret to Nan's scones:
        # 2tsp-baking-powder" are a fare and a recipe.
        ("labelled_secret", re.compile(
            # "the wifi password for the cabin is now: x", "password for the cabin wifi: x"
            rf"{_LABEL_RUN}(?:{_CREDENTIAL_WORD}(?:{_WHAT_FOR}(?:\s*:|\s+{_IS}(?:\s+now)?\s*:?)|{_SAID})"
            rf"|{_BARE_WORD}{_SAID}|{_FINNISH_SAID})"
            rf"\s*[\"'`]?{_CREDENTIAL_VALUE}"), "value"),
        # The same after a dash or an arrow, a note's "Wifi password - Qv7rT2mz", "API key for the NAS -> 3f9a8b7c6d":
        # the value ends its line or clause ("the password manager - 1Password7 works well" is prose).
        ("labelled_secret", re.compile(
            rf"{_LABEL_RUN}(?:{_CREDENTIAL_WORD}{_WHAT_FOR}?|{_BARE_WORD})"
            r"(?:[^\S\n]+-{1,2}[^\S\n]+|[^\S\n]*(?:-+>|=>|\u2192|\u21d2)[^\S\n]*)"
            rf"[\"'`]?{_CREDENTIAL_VALUE}(?={_ENDS_CLAUSE})", re.M), "value"),
        # A table's cell naming it, the value alone in the next: "Password | Kx9mm2qL" (an HTML mail's table as
        # Hearth reads it, htmltext.CELL_SEPARATOR), "| Wifi password: | SeaView |" (Markdown). The name's cell starts
        # its line or follows a "|"; a command's "echo $PASSWORD | base64" is no table.
        ("labelled_secret", re.compile(
            rf"(?:^|\|)[^\S\n]*(?:[\w'\-]+[^\S\n]+){{0,3}}?{_LABEL_RUN}(?:{_CREDENTIAL_WORD}|{_BARE_WORD})[^\S\n]*:?"
            rf"[^\S\n]*\|[^\S\n]*[\"'`]?{_CREDENTIAL_VALUE}(?=[\"'`]?[^\S\n]*(?:$|\|))", re.M), "value"),
    ]


_PLACEHOLDER = re.compile(r"^(?:\$\{[^}]*\}|\$[A-Za-z_]\w*|\*+|x+|X+|<[^>]*>|\{\{[^}]*\}\}|%\([^)]*\)s|password|pass|secret|changeme)$")


def _looks_credential(s: str, name: str = "", *, set_apart: bool = False, quoted: bool = False, how: str = "",
                      reported: bool = False) -> bool:
    """A labelled value that is a made-up string: letters with a digit or a symbol, or six digits or more; not a
    word of prose ("the password is on the fridge", "token: expired"), a path, a code name or a placeholder.

    ``how`` the value follows its ``name``: "sign" (a colon, "=", a dash, a table's cell), "is", or "" (words between).
    Right after a PIN's name four digits are one too ("PIN: 8842"), after a password's five ("Das Passwort war 2019"
    is a year). Letters alone after a password's name are one where they are quoted or end their line or clause
    (``set_apart``) and no word of prose is: a capital inside ("SeaView"), or, after an English name and a sign, words
    run together ("wifi password: correcthorsebatterystaple"; "The password is incomprehensible." is prose). A quoted
    word a screen ``reported`` ('It says the password is "incorrect"') is its message. "password: forgotten",
    "The password is hello!" and "He said the password: Monday." stay prose."""
    if len(s) < 4 or _PLACEHOLDER.match(s) or not s[0].isalnum():
        return False
    if s.isdigit():
        if len(s) >= 6:
            return True
        if not how:
            return False
        if _NAMES_A_PIN.fullmatch(name):
            return not _SMALL_PIN.fullmatch(name)
        return len(s) >= 5 and bool(_NAMES_A_PASSWORD.fullmatch(name))
    if len(s) < 6:
        return False
    if _QUANTITY.match(s):  # "the secret is 48-hour marinating", "42-year-old whisky"
        return False
    if any(c.isalpha() for c in s) and any(c.isdigit() or c in "!@#$%^&*+=?~" for c in s):
        return True
    if not (s.isalpha() and _NAMES_A_PASSWORD.fullmatch(name) and (set_apart or quoted)):
        return False
    if any(a.islower() and b.isupper() for a, b in zip(s, s[1:])):
        return True
    if quoted:
        return not reported
    return how == "sign" and len(s) >= _RUN_TOGETHER and bool(_ENGLISH_PASSWORD.fullmatch(name))


# Letters alone this many or more are words run together: no word of LoCoMo's 2,760 dev turns (66,500 words) has
# 16 letters, 13 have 15
_RUN_TOGETHER = 16
_ENDS_CLAUSE_RE = re.compile(_ENDS_CLAUSE, re.M)


_QUANTITY = re.compile(r"^\d+(?:[.,]\d+)?-[a-z]+(?:-[a-z]+)*$")


def _looks_random(s: str) -> bool:
    """A key body has many distinct characters and mixes digits or cases; placeholders ('sk-xxxx…') do not."""
    alnum = [c for c in s if c.isalnum()]
    kinds = any(c.isdigit() for c in alnum) + any(c.islower() for c in alnum) + any(c.isupper() for c in alnum)
    return len(set(alnum)) >= 10 and kinds >= 2


_CREDENTIAL_TRIGGERS = (
    "assw", "pwd", "ssphrase", "sscode", "pin", "fi key", "fi-key", "fi_key", "fikey", "pi key", "pi_key", "pikey",
    "pi-key", "oken", "ecret", "kennw", "de passe", "-passe", "contrase", "wachtw", "salasan", "senha", "senord",
    "adgangskode", "kodeord", "assord", "hasło", "haslo", "hasła", "hasla", "geheimzahl", "tunnusluku", "confidentiel")
# Literal substrings at least one of which every match of the same-index pattern contains: a pattern whose
# triggers are all absent is skipped, which keeps the common no-secret case fast.
_SECRET_TRIGGERS: tuple[tuple[str, ...], ...] = (
    ("-----BEGIN",), ("sk-ant-",), ("sk-or-",), ("sk-",),
    ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA"),
    ("ecret", "ECRET"), ("gh",), ("github_pat_",), ("glpat-",), ("xox",), ("xapp-",), ("hooks.slack.com",),
    ("AIza",), ("_live_", "_test_"), ("gsk_",), ("xai-",), ("hf_",), ("://",), ("eyJ",), ("earer", "EARER"),
    _CREDENTIAL_TRIGGERS,  # read in lower case
    _CREDENTIAL_TRIGGERS,
    ("|",),
)
_LOWER_CASE_TRIGGERS = frozenset({"labelled_secret"})


_KEY_BEGIN = re.compile(r"-----BEGIN ((?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?)-----")


def _private_keys(text: str) -> list[tuple[int, int]]:
    """Each private key block, from its BEGIN line to the first matching END line at least 16 characters on. Read
    once: a BEGIN with no END of its kind after it is passed over without searching the rest of the text again
    (a message of BEGIN lines took minutes)."""
    out: list[tuple[int, int]] = []
    last_end: dict[str, int] = {}
    pos = 0
    while m := _KEY_BEGIN.search(text, pos):
        end_line = f"-----END {m.group(1)}-----"
        if end_line not in last_end:
            last_end[end_line] = text.rfind(end_line)
        j = text.find(end_line, m.end() + 16) if last_end[end_line] >= m.end() + 16 else -1
        if j < 0:
            pos = m.end()
            continue
        out.append((m.start(), j + len(end_line)))
        pos = j + len(end_line)
    return out


def detect_secrets(text: str) -> list[Finding]:
    out: list[Finding] = []
    lower = ""
    for (kind, rx, grp), triggers in zip(_secret_res(), _SECRET_TRIGGERS, strict=True):
        if kind in _LOWER_CASE_TRIGGERS:
            lower = lower or text.lower()
        if not any(t in (lower if kind in _LOWER_CASE_TRIGGERS else text) for t in triggers):
            continue
        if kind == "private_key":
            out += [Finding("secret", a, b, text[a:b], 0.99, kind) for a, b in _private_keys(text)]
            continue
        for m in rx.finditer(text):
            start, end = m.span(grp)
            value = m.group(grp)
            if kind == "url_password":
                if _PLACEHOLDER.match(value) or len(value) < 3:
                    continue
                conf = 0.9
            elif kind == "slack_webhook":
                conf = 0.99
            elif kind == "labelled_secret":
                # "Xk9pq22!" is a password, "Monday!" a word said loudly: a final "!" or "?" is redacted with the
                # value but does not make it one
                quoted = start > 0 and text[start - 1] in "\"'`" and text.startswith(text[start - 1], end)
                named = "name" if m.group("name") else "fi" if m.groupdict().get("fi") else ""
                name = m.group(named) if named else ""
                between = text[m.end(named):start] if named else ""
                how = ("sign" if _SIGN_AFTER_NAME.fullmatch(between) else "is" if _IS_AFTER_NAME.fullmatch(between)
                       else "")
                reported = quoted and bool(_REPORTED.search(text, max(0, m.start() - 200), m.start()))
                if not _looks_credential(value.rstrip("!?"), name, quoted=quoted, how=how, reported=reported,
                                         set_apart=bool(_ENDS_CLAUSE_RE.match(text, end))) \
                        or text.startswith("(", end):  # token = strdup16(...)
                    continue
                conf = 0.85
            elif kind == "jwt":
                conf = 0.97
            else:
                if not _looks_random(value):
                    continue
                conf = 0.97
            out.append(Finding("secret", start, end, value, conf, kind))
    return _dedupe_same_detector(out)


# ------------------------------------------------------------------------------------------ registry

DETECTORS: dict[str, Callable[[str], list[Finding]]] = {
    "secret": detect_secrets,
    "card": detect_cards,
    "iban": detect_ibans,
    "account": detect_accounts,
    "national_id": detect_national_ids,
    "email": detect_emails,
    "phone": detect_phones,
    "address": detect_addresses,
}


def _unfolded(f: Finding, folded: _Folded, text: str) -> Finding:
    start, end = folded.start(f.start), folded.end(f.end)
    return Finding(f.detector, start, end, text[start:end], f.confidence, f.kind)


class UnknownDetector(ValueError):
    """A detector name that Hearth does not have."""


def _first_come(findings: Iterable[Finding]) -> list[Finding]:
    """The findings, in the order given, that overlap none kept before them; in text order. The kept ones are
    disjoint, so one look either side of where a finding would go tells (a contacts export of 50,000 addresses
    was checked against every finding kept so far: minutes)."""
    starts: list[int] = []
    kept: list[Finding] = []  # by start, disjoint: their ends ascend too
    for f in findings:
        at = bisect_left(starts, f.end)  # the ones starting before f ends are kept[:at]
        if at and kept[at - 1].end > f.start:
            continue
        if at < len(kept) and kept[at].start < f.end:  # a kept one starting exactly where f starts
            continue
        starts.insert(at, f.start)
        kept.insert(at, f)
    return kept


def _dedupe_same_detector(findings: list[Finding]) -> list[Finding]:
    """Overlapping findings of one detector: keep the more confident, then the longer."""
    return _first_come(sorted(findings, key=lambda f: (-f.confidence, -(f.end - f.start), f.start)))


# ------------------------------------------------------------------------------------------- folding
# People write numbers in many ways: split over lines, with non-breaking or thin spaces, with full-width or
# Arabic-Indic digits, with typographic dashes. The detectors run on a folded copy that writes all of these the
# ASCII way; each finding is then mapped back to the span of the original text it came from.

_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
_INLINE_SPACES = "\t\x1f\xa0"
_LATIN1_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85"
_LINE_BREAKS = _LATIN1_LINE_BREAKS + "\u2028\u2029"
# Values people split over two lines ("4111 1111" then "1111 1111", a street then its town): these detectors also
# read the text with its line breaks folded into spaces. The others would glue the number ending one line to the
# one starting the next, so every detector first reads the text with its line breaks kept.
_ACROSS_LINES = frozenset({"card", "iban", "account", "address"})


def _is_latin1(text: str) -> bool:
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


@cache
def _fold_table() -> dict[int, int]:
    """One character for one, beyond ASCII: whitespace to ' ', decimal digits to ASCII, dashes to '-', full-width
    ASCII forms to ASCII."""
    beyond = "".join(map(chr, range(0x80, 0x20000)))  # no digit or space lies above
    table = {ord(c): ord(str(int(c))) for c in re.findall(r"\d", beyond)}
    table.update({ord(c): 0x20 for c in re.findall(r"\s", beyond)})
    table.update({c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)})
    table.update({ord(c): 0x2D for c in _DASHES})
    return table


@cache
def _fold_res() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(runs of characters beyond Latin-1 folded one for one, runs of spaces, runs of spaces and invisible
    characters, an invisible character). Invisible: the characters text shows nothing for (``unseen``: a soft
    hyphen from HTML's &shy;, a zero-width space, a direction mark, an invisible "times", a tag character), so a
    number split by them reads as one."""
    invisible = unseen.char_class(unseen.codes())
    return (re.compile(unseen.char_class(_fold_table()) + "+"), re.compile(" {2,}"),
            re.compile(f"[ {invisible[1:-1]}]{{2,}}|{invisible}"), unseen.pattern())


@dataclass(frozen=True, slots=True)
class _Folded:
    """A folded text and where its offsets lie in the original: from folded[f_pos[i]] on, the two run in step
    from original[o_pos[i]] until the next break."""

    text: str
    f_pos: list[int]
    o_pos: list[int]

    def start(self, f: int) -> int:
        i = bisect_right(self.f_pos, f) - 1
        return self.o_pos[i] + f - self.f_pos[i]

    def end(self, f: int) -> int:
        i = max(0, bisect_left(self.f_pos, f) - 1)
        return self.o_pos[i] + f - self.f_pos[i]


@cache
def _quote_marks_re() -> re.Pattern[str]:
    """The "> " marks opening a line of a quoted mail reply (after a line break)."""
    return re.compile(f"(?<=[{_LINE_BREAKS}])[ \t]*(?:>[ \t]*)+")


def _fold(text: str, *, lines: bool = False) -> _Folded | None:
    """The text as the detectors read it, or None when it is already written that way. With ``lines``, line
    breaks stay as they are; without, they are read as spaces too."""
    beyond, spaces, spaces_zw, invisible = _fold_res()
    one_for_one, rx = text, spaces
    if not lines and ">" in text:  # a mail's quoted reply: a line's "> " marks are read as spaces too
        one_for_one = _quote_marks_re().sub(lambda m: " " * len(m.group()), text)
    for c in _INLINE_SPACES if lines else _INLINE_SPACES + _LATIN1_LINE_BREAKS:
        if c in one_for_one:  # str.replace is far faster than a regex or str.translate over a long text
            one_for_one = one_for_one.replace(c, " ")
    if not _is_latin1(one_for_one):
        table = _fold_table()
        if lines:
            table = {**table, 0x2028: 0x2028, 0x2029: 0x2029}
        one_for_one = beyond.sub(lambda m: m.group().translate(table), one_for_one)
        if invisible.search(one_for_one):
            rx = spaces_zw
    elif "\xad" in one_for_one:  # a soft hyphen, the one invisible character in Latin-1
        rx = spaces_zw
    f_pos, o_pos, last, shift = [0], [0], 0, 0
    parts: list[str] = []
    for m in rx.finditer(one_for_one):
        s, e = m.span()
        folded = " " if " " in m.group() else ""  # a run of invisible characters alone goes
        parts += (one_for_one[last:s], folded)
        shift += e - s - len(folded)
        f_pos.append(e - shift)
        o_pos.append(e)
        last = e
    if not parts:
        return None if one_for_one == text else _Folded(one_for_one, f_pos, o_pos)
    parts.append(one_for_one[last:])
    return _Folded("".join(parts), f_pos, o_pos)


def detect(
    text: str,
    detectors: Iterable[str] | None = None,
    *,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
) -> list[Finding]:
    """Runs the named detectors (all by default) and returns non-overlapping findings in text order.

    Where findings of different detectors overlap, the one earlier in DETECTOR_NAMES wins; findings below
    `min_confidence` are dropped before that, so a weak guess never hides a strong one. The detectors read the
    text folded (see `_fold`); offsets and `Finding.text` are those of the text as given.
    """
    names = list(DETECTOR_NAMES) if detectors is None else list(detectors)
    unknown = [n for n in names if n not in DETECTORS]
    if unknown:
        raise UnknownDetector(
            f"Unknown detector(s) {', '.join(map(repr, unknown))}; choose from {', '.join(DETECTOR_NAMES)}."
        )
    if not text:
        return []
    found: list[tuple[Finding, bool]] = []  # (finding, read with line breaks as spaces)
    readings = [(_fold(text, lines=True), False)]
    if any(b in text for b in _LINE_BREAKS) and _ACROSS_LINES.intersection(names):
        readings.append((_fold(text), True))
    for folded, joined in readings:
        for name in names if not joined else _ACROSS_LINES.intersection(names):
            found += [(_unfolded(f, folded, text) if folded else f, joined)
                      for f in DETECTORS[name](folded.text if folded else text) if f.confidence >= min_confidence]
    # Where both readings hold a finding, the one that kept the line breaks wins.
    found.sort(key=lambda fw: (_PRIORITY[fw[0].detector], -fw[0].confidence, fw[1], fw[0].start))
    return _first_come(f for f, _ in found)
