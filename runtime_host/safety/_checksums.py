"""Check-digit algorithms used by the detectors: Luhn, IBAN mod 97, ABA routing, Verhoeff, and national-id checks.
Stdlib only."""

from __future__ import annotations

# IBAN length per country (ISO 13616 registry, SWIFT release 2024).
IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
    "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25,
    "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18,
    "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33,
    "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}


def luhn_valid(digits: str) -> bool:
    """True when a string of digits passes the Luhn (mod 10) check."""
    if not digits.isdigit():
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def iban_valid(compact: str) -> bool:
    """True when an IBAN without spaces has a known country, that country's length and a mod-97 remainder of 1."""
    s = compact.upper()
    if len(s) < 5 or IBAN_LENGTHS.get(s[:2]) != len(s) or not s[2:4].isdigit() or not s.isalnum():
        return False
    rearranged = s[4:] + s[:4]
    remainder = 0
    for ch in rearranged:
        value = int(ch, 36)  # 0-9 -> 0-9, A-Z -> 10-35
        remainder = (remainder * (100 if value > 9 else 10) + value) % 97
    return remainder == 1


_V_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 0, 6, 7, 8, 9, 5), (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7), (4, 0, 1, 2, 3, 9, 5, 6, 7, 8), (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2), (7, 6, 5, 9, 8, 2, 1, 0, 4, 3), (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)
_V_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 5, 7, 6, 2, 8, 3, 0, 9, 4), (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7), (9, 4, 5, 3, 1, 2, 6, 8, 7, 0), (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5), (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)


def aba_routing_valid(digits: str) -> bool:
    """True for a US ABA routing number: nine digits, a Federal Reserve prefix (00-12, 21-32, 61-72, 80) and
    3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) a multiple of 10."""
    if len(digits) != 9 or not digits.isdigit():
        return False
    prefix = int(digits[:2])
    if not (prefix <= 12 or 21 <= prefix <= 32 or 61 <= prefix <= 72 or prefix == 80):
        return False
    d = [int(c) for c in digits]
    return (3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + d[2] + d[5] + d[8]) % 10 == 0


def verhoeff_valid(digits: str) -> bool:
    """True when a string of digits passes the Verhoeff check (used by India's Aadhaar)."""
    if not digits.isdigit():
        return False
    c = 0
    for i, ch in enumerate(reversed(digits)):
        c = _V_D[c][_V_P[i % 8][ord(ch) - 48]]
    return c == 0


def us_ssn_valid(area: str, group: str, serial: str) -> bool:
    """US SSN issuance rules: area not 000, 666 or 9xx; group not 00; serial not 0000."""
    return area != "000" and area != "666" and area[0] != "9" and group != "00" and serial != "0000"


_NINO_BAD_PREFIX = frozenset({"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"})


def uk_nino_prefix_valid(prefix: str) -> bool:
    """UK National Insurance prefix rules (HMRC): no D, F, I, Q, U, V; second letter not O; some pairs never issued."""
    p = prefix.upper()
    return (
        len(p) == 2
        and p[0] not in "DFIQUV"
        and p[1] not in "DFIQUVO"
        and p not in _NINO_BAD_PREFIX
    )


_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def es_dni_valid(number: str, letter: str) -> bool:
    """Spanish DNI (8 digits) or NIE (X/Y/Z + 7 digits) control letter."""
    n = number.upper()
    if n[:1] in ("X", "Y", "Z"):
        n = str("XYZ".index(n[0])) + n[1:]
    return n.isdigit() and _DNI_LETTERS[int(n) % 23] == letter.upper()


_CF_ODD = dict(zip("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                   (1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14,
                    16, 10, 22, 25, 24, 23)))


def it_codice_fiscale_valid(code: str) -> bool:
    """Italian codice fiscale (16 characters) check letter."""
    c = code.upper()
    if len(c) != 16 or not c.isalnum():
        return False
    total = 0
    for i, ch in enumerate(c[:15]):
        total += _CF_ODD[ch] if i % 2 == 0 else (int(ch) if ch.isdigit() else ord(ch) - 65)
    return chr(65 + total % 26) == c[15]


def fi_hetu_valid(ddmmyy: str, individual: str, check: str) -> bool:
    """Finnish personal identity code check character (mod 31)."""
    return "0123456789ABCDEFHJKLMNPRSTUVWXY"[int(ddmmyy + individual) % 31] == check.upper()


def nl_bsn_valid(digits: str) -> bool:
    """Dutch BSN eleven-test (9 digits, weights 9..2 and -1)."""
    if len(digits) != 9 or not digits.isdigit() or digits == "000000000":
        return False
    total = sum(int(d) * w for d, w in zip(digits[:8], range(9, 1, -1))) - int(digits[8])
    return total % 11 == 0


def fr_nir_valid(body13: str, key: str) -> bool:
    """French NIR (social security number) key: 97 - (13 digits mod 97). Corsica 2A/2B map to 19/18."""
    b = body13.upper().replace("2A", "19", 1) if body13[5:7].upper() == "2A" else body13
    b = b.upper().replace("2B", "18", 1) if body13[5:7].upper() == "2B" else b
    if not b.isdigit() or not key.isdigit():
        return False
    return 97 - int(b) % 97 == int(key)


def plausible_date(yy: str, mm: str, dd: str) -> bool:
    """Month 1-12 and day 1-31 (used for date-based ids; no calendar lookup)."""
    m, d = int(mm), int(dd)
    return 1 <= m <= 12 and 1 <= d <= 31
