"""How big things may get: one incoming message, one model answer, one tool result, and the history a
worker is sent with a turn. Stdlib only (the worker imports it).

The pipe to a worker carries JSON lines of at most 8 MiB (`protocol.MAX_LINE_BYTES`). Whatever a
conversation holds, what travels on that pipe is bounded here, so no conversation can grow past it:
older messages go as a clipped excerpt (the whole text stays in the conversation), the oldest ones
by reference only, and large tool results are cut with a note that says so.
"""

from __future__ import annotations

import json
from typing import Any

MiB = 1024 * 1024
MAX_MESSAGE_BYTES = 1 * MiB        # one message a person (or a channel) sends
MAX_ANSWER_BYTES = 6 * MiB         # one model answer; the rest is cut off with a note
MAX_TOOL_RESULT_BYTES = 256 * 1024  # one tool result as the model and the steps see it
HISTORY_BYTES = 3 * MiB            # the conversation sent to a worker with one turn
OLD_MESSAGE_BYTES = 64 * 1024      # each earlier message of that history
STEPS_BYTES = 3 * MiB              # the written steps sent with a resumed turn
OLD_STEP_BYTES = 16 * 1024         # each step result once the steps would pass STEPS_BYTES


def json_size(value: Any) -> int:
    """Bytes `value` takes on the pipe (JSON, UTF-8, as protocol.encode writes it)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr).encode("utf-8", "surrogatepass"))


def human(n: int) -> str:
    if n >= MiB:
        return f"{n / MiB:.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n} bytes"


def message_problem(text: str) -> str | None:
    """Why no turn can carry this message (too large, or holding a character that cannot be stored), or None
    when it fits. Checked before anything of the message is written."""
    size = json_size(text)
    if size > MAX_MESSAGE_BYTES:
        return (f"This message is {human(size)}; Hearth takes at most {human(MAX_MESSAGE_BYTES)} in one message. "
                "Nothing was sent: shorten it or split it into several messages.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: half of a UTF-16 pair, or a byte that was not text
        return (f"This message has a broken character (at character {exc.start + 1:,}) that is not text and "
                "cannot be stored. Nothing was sent: remove that character (or paste the text again from where "
                "it came) and send it again.")
    return None


def clip(text: str, limit: int, what: str = "text", where: str = "") -> str:
    """`text` cut so its JSON form fits in `limit` bytes, ending with a note that says what was left out."""
    size = json_size(text)
    if size <= limit:
        return text
    note = (f"\n\n[… cut off by Hearth: this {what} is {human(size)} ({len(text):,} characters); only the first "
            f"{{n:,}} characters are shown here{'; ' + where if where else ''}.]")
    budget = max(0, limit - json_size(note) - 16)
    n = min(len(text), budget)
    while n > 0:
        # JSON may spend up to 6 bytes on one character: shrink until the head fits.
        head_size = json_size(text[:n])
        if head_size <= budget:
            break
        n = max(0, int(n * budget / head_size) - 1)
    return text[:n] + note.format(n=n)


def bound_history(messages: list[dict[str, Any]], current: int = 1) -> list[dict[str, Any]]:
    """The history sent to a worker, at most HISTORY_BYTES: the last `current` messages (this turn's) as
    whole as fits, earlier ones clipped to OLD_MESSAGE_BYTES each, and the oldest left out with a note."""
    if json_size(messages) <= HISTORY_BYTES:
        return messages
    out: list[dict[str, Any]] = []
    used = 0
    cur = messages[-current:] if current else []
    # This turn's messages share at most two thirds of the budget.
    share = max(OLD_MESSAGE_BYTES, (HISTORY_BYTES * 2 // 3) // max(1, len(cur)))
    for m in cur:
        m = {**m, "content": clip(str(m.get("content") or ""), share, "message",
                                  "the whole message is kept in the conversation")}
        used += json_size(m)
        out.append(m)
    older = messages[:-current] if current else list(messages)
    kept: list[dict[str, Any]] = []
    for m in reversed(older):
        m = {**m, "content": clip(str(m.get("content") or ""), OLD_MESSAGE_BYTES, "earlier message",
                                  "the whole message is kept in the conversation")}
        size = json_size(m)
        if used + size > HISTORY_BYTES - 1024:
            break
        used += size
        kept.append(m)
    left_out = len(older) - len(kept)
    kept.reverse()
    if left_out:
        kept.insert(0, {"role": "user", "content": f"[Hearth: {left_out} earlier message(s) of this conversation are "
                        "not included here to keep it within size; they are kept in the conversation.]"})
    return kept + out


def bound_steps(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The written steps sent with a resumed turn, at most STEPS_BYTES: results of older steps are clipped."""
    if json_size(steps) <= STEPS_BYTES:
        return steps
    out = []
    for s in steps:
        res = s.get("result")
        if isinstance(res, dict):
            res = {k: clip(v, OLD_STEP_BYTES, "step result", "the whole result is kept in the turn's steps")
                   if isinstance(v, str) else v for k, v in res.items()}
        args = s.get("arguments")
        if args is not None and json_size(args) > OLD_STEP_BYTES:
            args = {"_clipped": clip(json.dumps(args, ensure_ascii=False, default=repr), OLD_STEP_BYTES, "argument list")}
        out.append({**s, "result": res, "arguments": args})
    return out
