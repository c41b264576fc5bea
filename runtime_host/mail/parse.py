"""Turns raw RFC 5322 bytes into plain, bounded, untrusted text: headers, body text, attachment list.

Robust on purpose: legacy and missing charsets (iso-8859-1 read as windows-1252 as browsers do,
shift_jis, undeclared 8-bit), malformed MIME (the parser's defects are reported, never raised),
huge mail (body text capped, attachment contents never kept, only listed: a forwarded mail attached and a
version in a form other than plain text or HTML too), and a message that
was read only in part. Every cut is said in `notes`. Nothing here interprets the text: it is data
for rules and, wrapped as untrusted by the Pod, for agents.
"""

from __future__ import annotations

import codecs
import email
import email.parser
import email.policy
import functools
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC
from email.header import Header, decode_header
from email.message import Message
from email.utils import getaddresses, parsedate_to_datetime
from typing import Any

from runtime_host.mail.htmltext import html_to_text

TEXT_CAP_CHARS = 200_000  # body text kept per message
HEADER_CAP_CHARS = 2_000  # per header value
MAX_HEADERS = 200
# Labels that lie in practice: mail tagged iso-8859-1 or ascii is usually windows-1252 (WHATWG does the same)
_CHARSET_ALIASES = {"iso-8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252", "us-ascii": "cp1252",
                    "ascii": "cp1252", "iso8859-1": "cp1252", "x-sjis": "shift_jis", "sjis": "shift_jis",
                    "shift-jis": "shift_jis", "ks_c_5601-1987": "cp949", "gb2312": "gb18030", "gbk": "gb18030",
                    "unknown-8bit": "", "x-unknown": "", "unknown": ""}


@dataclass
class Attachment:
    filename: str
    content_type: str
    size: int  # decoded bytes (estimated from the encoded size when the part was cut off)
    cut_off: bool = False


@dataclass
class ParsedMail:
    """One message as Hearth keeps it. `text` is untrusted: wrap it before an agent sees it."""

    message_id: str
    subject: str
    from_addr: str  # as written, e.g. 'Ana Díaz <ana@example.org>'
    from_email: str  # just the address, lower case
    to: list[str]
    cc: list[str]
    reply_to: str
    date: str | None  # ISO 8601 when the Date header parses
    headers: dict[str, list[str]]  # lower-case name -> decoded values, in order
    text: str
    attachments: list[Attachment] = field(default_factory=list)
    size: int = 0  # bytes on the server
    notes: list[str] = field(default_factory=list)  # what was cut or guessed, for people
    text_truncated: bool = False

    def header(self, name: str) -> str:
        return " ".join(self.headers.get(name.lower(), []))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def for_agent(self) -> str:
        """A plain-text rendering of the message (headers, text, attachment list, notes) to wrap as untrusted."""
        lines = [f"From: {self.from_addr}", f"To: {', '.join(self.to)}"]
        if self.cc:
            lines.append(f"Cc: {', '.join(self.cc)}")
        lines += [f"Subject: {self.subject}", f"Date: {self.date or 'unknown'}", "", self.text]
        if self.attachments:
            lines += ["", "Attachments:"] + [
                f"- {a.filename} ({a.content_type}, {a.size} bytes{', cut off' if a.cut_off else ''})"
                for a in self.attachments]
        if self.notes:
            lines += ["", "Notes:"] + [f"- {n}" for n in self.notes]
        return "\n".join(lines)


# ---- charsets -----------------------------------------------------------------------------------

def _codec(label: str | None) -> str | None:
    if not label:
        return None
    lab = label.strip().strip('"').lower()
    lab = _CHARSET_ALIASES.get(lab, lab)
    if not lab:
        return None
    try:
        info = codecs.lookup(lab)
    except LookupError:
        return None
    # Python also knows bytes-to-bytes codecs by name (base64, rot13, zlib, hex...): a label for them is no charset
    return info.name if info._is_text_encoding else None


def _cp1252_bytes(err: UnicodeError) -> tuple[str, int]:
    """A decoding error handler: the bytes the declared charset cannot read, read as windows-1252 instead."""
    assert isinstance(err, UnicodeDecodeError)
    return err.object[err.start : err.end].decode("cp1252", errors="replace"), err.end


_AS_CP1252 = "hearth-cp1252"
codecs.register_error(_AS_CP1252, _cp1252_bytes)


@functools.cache
def _single_byte(codec: str) -> bool:
    """Whether ``codec`` reads each byte as one letter (windows-1252, koi8-r...), not as part of a CJK pair."""
    try:
        read = bytes(range(128, 256)).decode(codec, errors="replace")
    except (LookupError, UnicodeError):  # punycode, idna: no charset a mail is written in
        return False
    return len(read) == 128 and sum(ch != "\ufffd" for ch in read) >= 96


# a letter of 3 or 4 bytes in UTF-8 (U+0800 on), and what no text holds: control codes, private use
_LONG_UTF8 = re.compile(r"[\u0800-\U0010ffff]")
_NO_TEXT = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ue000-\uf8ff\U000f0000-\U0010ffff]")


def _utf8_under(data: bytes, codec: str) -> str | None:
    """``data`` read as UTF-8 when it is UTF-8 under another label (a server that labels every mail with its own
    charset), else None. Text in a one-byte charset (windows-1252, koi8-r) is never valid UTF-8 in practice: "Café"
    in UTF-8 read as windows-1252 is "CafÃ©". A CJK charset's pairs can be by chance ("通知" in GB2312 is UTF-8
    "֪ͨ"), so there UTF-8 needs stronger evidence: the label cannot read the bytes, or they hold a letter of 3 or
    4 bytes and nothing read as UTF-8 is a control code or private use."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    try:
        data.decode(codec)
    except (LookupError, UnicodeError):
        return text
    if _single_byte(codec) or (_LONG_UTF8.search(text) and not _NO_TEXT.search(text)):
        return text
    return None


def decode_bytes(data: bytes, declared: str | None, notes: list[str] | None = None, where: str = "text") -> str:
    """Bytes to text: the declared charset if it works, else UTF-8, else windows-1252; says what it guessed.
    Never raises: a label Python reads but no mail is written in (punycode, idna...) counts as unknown."""
    codec = _codec(declared)
    if codec and not codec.startswith(("utf-", "ascii")) and not data.isascii():
        text = _utf8_under(data, codec)
        if text is not None:
            if notes is not None:
                notes.append(f"{where}: labelled {declared} but written in UTF-8; read as UTF-8")
            return text
    if codec:
        try:
            return data.decode(codec)
        except UnicodeDecodeError:
            # bytes the label cannot read ("café" from an old client under a UTF-8 label): read as windows-1252
            try:
                text = data.decode(codec, errors=_AS_CP1252)
            except (LookupError, UnicodeError):
                codec = None
            else:
                if notes is not None:
                    notes.append(f"{where}: not valid {declared}; the bytes that are not were read as windows-1252")
                return text
        except (LookupError, UnicodeError):
            codec = None
    if declared and codec is None and notes is not None and declared.lower() not in _CHARSET_ALIASES:
        notes.append(f"{where}: unknown charset {declared!r}; read as UTF-8 or windows-1252")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        if notes is not None:
            notes.append(f"{where}: charset not declared and not UTF-8; read as windows-1252")
        return data.decode("cp1252", errors="replace")


# <meta charset="koi8-r"> or <meta http-equiv="Content-Type" content="text/html; charset=windows-1251">
_META_CHARSET = re.compile(rb"<meta\s[^>]*?charset\s*=\s*[\"']?\s*([a-z0-9_.:-]+)", re.IGNORECASE)


def meta_charset(html: bytes) -> str | None:
    """The charset an HTML document names in a <meta> in its first 1,024 bytes, where a browser looks for it when
    nothing else names one (a UTF-16 label there reads as UTF-8, as in browsers: the bytes that said it are ASCII)."""
    found = _META_CHARSET.search(html[:1024])
    if not found:
        return None
    label = found.group(1).decode("ascii")
    return "utf-8" if label.lower().startswith(("utf-16", "utf16")) else label


def _unescape_header_bytes(value: str) -> str:
    """compat32 keeps raw 8-bit header bytes as surrogates: decode them as UTF-8, else windows-1252."""
    if not any("\udc80" <= ch <= "\udcff" for ch in value):
        return value
    raw = value.encode("ascii", errors="surrogateescape")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


class _Read8bit(email.policy.Compat32):
    """compat32, with a header written in raw 8-bit (RFC 6532: "filename=\"Rechnung März.pdf\"") read as text
    (UTF-8, else windows-1252) instead of handed over as a Header object: every ``part.get()`` and what reads
    through it (file names, parameters, content types) is a str with the sender's letters."""

    def header_fetch_parse(self, name: str, value: Any) -> Any:
        return _unescape_header_bytes(value) if isinstance(value, str) else value


_POLICY = _Read8bit()


def _one_line(s: str) -> str:
    """A folded header on one line: its lines joined by one space, read once (a substitution around each line
    break read a long run of spaces again from each one: a subject of 100,000 spaces took a minute)."""
    return " ".join(part for line in s.split("\n") if (part := line.strip()))


def header_text(value: Any) -> str:
    """A header value as readable text: RFC 2047 encoded words decoded, raw 8-bit bytes guessed."""
    if value is None:
        return ""
    if isinstance(value, Header):  # compat32 hands 8-bit headers over as 'unknown-8bit' Header objects
        try:
            s = "".join(decode_bytes(chunk, cs) if isinstance(chunk, bytes) else chunk
                        for chunk, cs in decode_header(value))
        except Exception:  # noqa: BLE001
            s = str(value)
        return _one_line(s)[:HEADER_CAP_CHARS]
    s = _unescape_header_bytes(str(value))
    if "=?" in s:
        try:
            s = "".join(decode_bytes(chunk, cs) if isinstance(chunk, bytes) else chunk
                        for chunk, cs in decode_header(s))
        except Exception:  # noqa: BLE001 - a broken encoded word stays as written
            pass
    return _one_line(s)[:HEADER_CAP_CHARS]


# ---- format=flowed (RFC 3676) ------------------------------------------------------------------

def unflow(text: str, delsp: bool = False) -> str:
    """Plain text sent as format=flowed, as the sender's client shows it: a line that ends in a space goes on in the
    next one of the same quote depth (with delsp=yes that space is not part of the text: a word may be split there).
    Quote marks (">") are read off each line and put back once per joined line, a space-stuffed line loses its
    leading space, and the signature line "-- " stands alone: it never flows, and a flowed line before it ends there.
    `text` has "\n" line ends. Read in one pass."""
    out: list[str] = []
    para: list[str] = []  # the pieces of the line being joined
    depth = 0
    for line in text.split("\n"):
        d = len(line) - len(line.lstrip(">"))
        body = line[d:]
        if body.startswith(" "):  # space-stuffed (or the space after quote marks)
            body = body[1:]
        signature = body == "-- "
        if para and (d != depth or signature):  # a flowed line before a change of quote depth or a "-- " ends there
            out.append(">" * depth + (" " if depth else "") + "".join(para))
            para = []
        depth = d
        flowed = body.endswith(" ") and not signature
        if flowed and delsp:
            body = body[:-1]
        para.append(body)
        if not flowed:
            out.append(">" * depth + (" " if depth else "") + "".join(para))
            para = []
    if para:
        out.append(">" * depth + (" " if depth else "") + "".join(para))
    return "\n".join(out)


# ---- the message -------------------------------------------------------------------------------

def _filename(part: Message) -> str | None:
    """The part's file name; one written (RFC 2231) in a charset Python cannot read with is read as unknown."""
    try:
        return part.get_filename()
    except (LookupError, UnicodeError):  # filename*=punycode''%E9...: the standard library raises
        value = part.get_param("filename", header="content-disposition") or part.get_param("name")
        if isinstance(value, tuple):
            return decode_bytes(bytes(value[2], "raw-unicode-escape"), None).strip()
        return None


def _is_attachment(part: Message) -> bool:
    """Whether the part is a file to list, not text to read: one sent as an attachment or with a file name, one
    not of text (an attached mail, message/rfc822, included: its words are not the sender's), and text Hearth does
    not read as a mail's words (a calendar invite, a vCard; text/plain and text/html are its words)."""
    if part.get_content_disposition() == "attachment":
        return True
    if _filename(part):
        return True
    return part.get_content_type() not in ("text/plain", "text/html") and part.get_content_maintype() != "multipart"


def _payload_bytes(part: Message, notes: list[str], where: str) -> bytes:
    try:
        data = part.get_payload(decode=True)
    except Exception as exc:  # noqa: BLE001 - malformed transfer encoding
        notes.append(f"{where}: could not decode ({exc}); kept as written")
        raw = part.get_payload()
        return raw.encode("ascii", "surrogateescape") if isinstance(raw, str) else b""
    if data is None:
        raw = part.get_payload()
        if isinstance(raw, str):
            return raw.encode("ascii", "surrogateescape")
        return b""
    return data if isinstance(data, bytes) else b""


def _attachment(part: Message, notes: list[str]) -> Attachment:
    """The part listed as a file: its name, type and size, its contents not kept."""
    fname = header_text(_filename(part) or "") or "(no name)"
    enc = (part.get("Content-Transfer-Encoding") or "").strip().lower()
    payload = part.get_payload()
    if isinstance(payload, list):  # an attached mail (or parts sent as one file): its size as written
        dsize = 0
        for inner in payload:
            try:
                dsize += len(inner.as_bytes(policy=email.policy.compat32))
            except Exception:  # noqa: BLE001 - a size is a courtesy; the listing stands without it
                pass
    elif isinstance(payload, str) and enc == "base64":  # size without decoding megabytes
        chars = len(payload) - sum(payload.count(w) for w in ("\n", "\r", " ", "\t"))
        dsize = max(0, chars * 3 // 4 - payload.rstrip()[-2:].count("="))
    else:
        dsize = len(_payload_bytes(part, notes, f"attachment {fname!r}"))
    return Attachment(fname, part.get_content_type(), dsize)


class _Body:
    """A message's parts read as a mail client shows them: its text/plain and text/html parts in order (of a
    multipart/alternative, one version), every other part listed as a file. Text comes out as (from HTML, text)."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.attachments: list[Attachment] = []
        self.defects: set[str] = set()
        self.blank_plain = False  # a plain-text part with no words was passed over
        self.last_listed = False  # the last part read was listed (cut off, when the message was read only in part)

    def read(self, part: Message, top: bool = False) -> list[tuple[bool, str]]:
        self.defects.update(type(d).__name__ for d in part.defects)
        # before the parts inside: an attached mail is a file, and its words are not the sender's (the mail itself is
        # read, even one whose headers call it an attachment or a mail inside)
        if _is_attachment(part) and not (top and part.is_multipart()):
            self.attachments.append(_attachment(part, self.notes))
            self.last_listed = True
            return []
        if part.is_multipart():
            inner = [p for p in part.get_payload() if isinstance(p, Message)]
            if part.get_content_type() == "multipart/alternative":
                return self._one_of(inner)
            return [text for p in inner for text in self.read(p)]
        if part.get_content_maintype() != "text":  # a multipart whose boundary never comes: nothing to read
            return []
        self.last_listed = False
        return [self._text(part)]

    def _one_of(self, versions: list[Message]) -> list[tuple[bool, str]]:
        """multipart/alternative: one message in several forms, of which a client shows one. The plain version with
        words is read (the last, if more), else the last with words (the HTML one). Files inside any version are
        listed; a version in a form Hearth does not read (AMP, a watch's HTML, a calendar invite) is listed too."""
        reads = [self.read(v) for v in versions]
        worded = [r for r in reads if any(t.strip() for _, t in r)]
        plain = [r for r in worded if not any(html for html, _ in r)]
        return (plain or worded or [[]])[-1]

    def _text(self, part: Message) -> tuple[bool, str]:
        ctype = part.get_content_type()
        data = _payload_bytes(part, self.notes, f"{ctype} part")
        charset = part.get_content_charset()
        if charset is None and ctype == "text/html":  # named only inside the HTML, as browsers read it
            charset = meta_charset(data)
        body = decode_bytes(data, charset, self.notes, f"{ctype} part")
        body = body.replace("\r\n", "\n").replace("\r", "\n")
        if ctype == "text/plain" and str(part.get_param("format") or "").lower() == "flowed":
            body = unflow(body, delsp=str(part.get_param("delsp") or "").lower() == "yes")
        body = body.strip("\n").rstrip()
        if ctype == "text/plain" and not body.strip():
            self.blank_plain = True
        return ctype == "text/html", body


def _addresses(values: list[str]) -> list[str]:
    out = []
    for name, addr in getaddresses(values):
        if not addr and not name:
            continue
        out.append(f"{name} <{addr}>" if name and addr else (addr or name))
    return out


def unreadable_mail(raw: bytes, *, size: int, why: str, text_cap: int = TEXT_CAP_CHARS) -> ParsedMail:
    """What is kept of a message `parse_message` failed on (a fault in Hearth, not in the mail): its header lines
    and the rest as written, with a note that says so. Reads no MIME and decodes no encoded words, so never raises."""
    head, _, rest = raw.replace(b"\r\n", b"\n").partition(b"\n\n")
    headers: dict[str, list[str]] = {}
    for line in re.split(r"\n(?![ \t])", decode_bytes(head, None))[:MAX_HEADERS]:
        name, colon, value = line.partition(":")
        if colon and name.strip():
            headers.setdefault(name.strip().lower(), []).append(_one_line(value)[:HEADER_CAP_CHARS])
    from_values = headers.get("from", [])
    try:
        from_email = getaddresses(from_values[:1])[0][1].lower() if from_values else ""
    except Exception:  # noqa: BLE001 - the address stays unknown; the header is still kept as written
        from_email = ""
    text = decode_bytes(rest[: text_cap * 4], None).replace("\x00", "")[:text_cap]
    return ParsedMail(
        message_id=headers.get("message-id", [""])[0].strip(), subject=headers.get("subject", [""])[0],
        from_addr=from_values[0] if from_values else "", from_email=from_email, to=headers.get("to", []),
        cc=headers.get("cc", []), reply_to=headers.get("reply-to", [""])[0], date=None, headers=headers, text=text,
        size=size, notes=[f"Hearth could not read this mail ({why}), so it is kept as it came from the server, "
                          "codes and all; the error is in Hearth's log"])


def parse_message(raw: bytes, *, size: int | None = None, partial: bool = False,
                  text_cap: int = TEXT_CAP_CHARS) -> ParsedMail:
    """Parses raw message bytes; never raises on bad input. `partial`: only the first len(raw) of
    `size` bytes were read (the rest is listed as cut off)."""
    notes: list[str] = []
    total = size if size is not None else len(raw)
    if partial:
        notes.append(f"message is {total:,} bytes; only the first {len(raw):,} were read, so text and "
                      "attachments after that point are missing")
    body = _Body()
    try:
        msg = email.message_from_bytes(raw, policy=_POLICY)
        texts = body.read(msg, top=True)
    except RecursionError:  # parts nested deeper than Python's parser follows: the headers are still read
        msg = email.parser.BytesParser(policy=_POLICY).parsebytes(raw, headersonly=True)
        body, texts = _Body(), []
        body.notes.append("its parts are nested deeper than Hearth reads, so only its headers were kept")
    notes += body.notes
    headers: dict[str, list[str]] = {}
    for i, (k, v) in enumerate(msg.items()):
        if i >= MAX_HEADERS:
            notes.append(f"only the first {MAX_HEADERS} headers were kept")
            break
        headers.setdefault(k.lower(), []).append(header_text(v))

    attachments = body.attachments
    if partial and body.last_listed:
        attachments[-1].cut_off = True
    defects = body.defects | {type(d).__name__ for d in msg.defects}
    if defects:
        notes.append("malformed MIME, read as far as possible: " + ", ".join(sorted(defects)))
    read = [(html, html_to_text(t) if html else t) for html, t in texts]
    read = [(html, t) for html, t in read if t.strip()]
    if read and all(html for html, _ in read):  # a plain part left blank beside the HTML one: no client shows it
        notes.append(("the plain-text part is empty" if body.blank_plain else "no plain-text part") +
                     "; text taken from the HTML part")
    elif any(html for html, _ in read):
        notes.append("some of the text taken from an HTML part")
    body_text = "\n\n".join(t for _, t in read)
    body_text = body_text.replace("\x00", "")
    truncated = len(body_text) > text_cap
    if truncated:
        notes.append(f"body text cut to the first {text_cap:,} of {len(body_text):,} characters")
        body_text = body_text[:text_cap]
    if attachments:
        big = sum(a.size for a in attachments)
        notes.append(f"{len(attachments)} attachment(s), {big:,} bytes: listed, contents not kept")

    date_iso = None
    raw_date = msg.get("Date")
    if raw_date:
        try:
            sent = parsedate_to_datetime(header_text(raw_date))
            sent.astimezone(UTC)  # a time past the calendar in UTC ("31 Dec 9999 23:59:59 -1200") is no time
            date_iso = sent.isoformat()
        except (TypeError, ValueError, IndexError, OverflowError):
            notes.append("Date header could not be read")
    from_values = headers.get("from", [])
    froms = getaddresses(from_values)
    return ParsedMail(
        message_id=header_text(msg.get("Message-ID")).strip(),
        subject=headers.get("subject", [""])[0],
        from_addr=from_values[0] if from_values else "",
        from_email=(froms[0][1].lower() if froms else ""),
        to=_addresses(headers.get("to", [])),
        cc=_addresses(headers.get("cc", [])),
        reply_to=headers.get("reply-to", [""])[0],
        date=date_iso,
        headers=headers,
        text=body_text,
        attachments=attachments,
        size=total,
        notes=notes,
        text_truncated=truncated,
    )
