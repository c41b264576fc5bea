"""A person's conversations as the window and the CLI meet them: listed (scheduled runs grouped under their
schedule), read with their turns' steps, renamed, deleted, exported (Markdown, JSON), searched in full text,
branched, and answered again (regenerate, edit and resend). Qt-free; each function takes the PersonPod of the
person asking (`me`)."""

from __future__ import annotations

import json
import time
from typing import Any

from sqlalchemy import text

from runtime_host.store import (
    BRANCH_MARK,
    HEARTH_ORIGINS,
    TITLE_GIVEN,
    TITLE_MADE_BRANCH,
    Conversation,
    Message,
    StoreError,
)

ACTIVE = ("pending", "running")
RUN_OF = {"schedule": "a scheduled run", "mail": "a mail rule's run (it holds the mail)", "handoff": "a hand-off",
          "background": "a background run"}  # the runs Hearth starts (HEARTH_ORIGINS), as a person reads them


def _instances(me: Any) -> dict[str, str]:
    """The person's agent instances: id -> name."""
    return {i.id: i.name for i, _ in me.store.list_agents(me.person_id)}


def own(me: Any, conversation_id: str) -> tuple[Conversation, str]:
    """The conversation and its agent's name, if it belongs to the person (else StoreError; audited when the
    conversation is someone else's)."""
    conv = me.store.get_conversation(conversation_id)
    agents = _instances(me)
    what = "That conversation does not exist (it may have been deleted)."
    if conv is not None and conv.instance_id not in agents:
        raise me.refuse(me.person_id, what, f"tried to reach conversation {conversation_id} of another person")
    if conv is None:
        raise StoreError(what)
    return conv, agents[conv.instance_id]


def list_for(me: Any, agent: str) -> list[dict[str, Any]]:
    """The agent's conversations, newest first, each with its origin (chat, schedule, background, mail,
    handoff) and, for a scheduled run, its schedule's id and name."""
    from runtime_host import schedule

    inst, _ = me.find_agent(agent)
    with me.store.engine.connect() as c:
        rows = c.execute(text(
            "SELECT c.id, c.title, c.created_at, c.updated_at,"
            " (SELECT t.origin FROM turn t WHERE t.conversation_id = c.id ORDER BY t.created_at LIMIT 1) AS origin,"
            " (SELECT sr.schedule_id FROM schedule_runs sr JOIN turn t2 ON sr.turn_id = t2.id"
            "   WHERE t2.conversation_id = c.id LIMIT 1) AS schedule_id,"
            " (SELECT COUNT(*) FROM message m WHERE m.conversation_id = c.id) AS messages"
            " FROM conversation c WHERE c.instance_id = :i ORDER BY c.updated_at DESC"), {"i": inst.id}).all()
    # a schedule the person deleted still names its past runs (they stay in the ledger too)
    names = {s.id: (s.name or s.prompt or "")[:60] for s in schedule.list_schedules(
        me.store.engine, me.person_id, deleted=True)} if any(r._mapping["schedule_id"] for r in rows) else {}
    out = []
    for r in rows:
        m = r._mapping
        out.append({"id": m["id"], "title": m["title"] or "New conversation", "created_at": m["created_at"],
                    "updated_at": m["updated_at"], "origin": m["origin"] or "chat", "messages": m["messages"],
                    "schedule_id": m["schedule_id"], "schedule": names.get(m["schedule_id"], "") if m["schedule_id"] else ""})
    return out


def last_chat(me: Any, agent: str) -> str | None:
    """The person's last chat with the agent (not a scheduled or background run), or None."""
    return next((c["id"] for c in list_for(me, agent) if c["origin"] in ("chat", "telegram")), None)


def origins(me: Any, conversation_id: str) -> dict[str, str]:
    """Who started the turn that said each message of the conversation: "chat" or "telegram" (the person), or one
    of HEARTH_ORIGINS (a run Hearth started: its prompt is Hearth's words, a mail rule's holding a stranger's mail).
    A branch's copy has no turn: the message it copies tells. A message neither tells of is left out."""
    with me.store.engine.connect() as c:
        rows = c.execute(text(
            "SELECT m.id, t.origin FROM message m LEFT JOIN message o ON o.id = m.copied_from"
            " JOIN turn t ON t.id = COALESCE(o.turn_id, m.turn_id) WHERE m.conversation_id = :c"),
            {"c": conversation_id}).all()
    return {r[0]: r[1] for r in rows}


def read(me: Any, conversation_id: str) -> dict[str, Any]:
    """Messages in order, each with its turn, who started that turn (`origins`) and whether it is Hearth's words
    (``by_hearth``: a run's prompt, not the person's); turns with their status, note and step tree."""
    conv, agent = own(me, conversation_id)
    turns = me.turns(conversation_id)
    said_by = origins(me, conversation_id)
    msgs = [{"id": m.id, "role": m.role, "content": m.content, "turn_id": m.turn_id, "created_at": m.created_at,
             "origin": said_by.get(m.id, "chat"), "by_hearth": m.role == "user" and said_by.get(m.id) in HEARTH_ORIGINS}
            for m in me.store.list_messages(conversation_id)]
    return {"id": conv.id, "title": conv.title or "New conversation", "agent": agent, "created_at": conv.created_at,
            "updated_at": conv.updated_at, "messages": msgs, "turns": turns}


def turn_messages(me: Any, turn_id: str) -> list[dict[str, Any]]:
    turn = me.store.get_turn(turn_id)
    if turn is None:
        return []
    own(me, turn.conversation_id)
    with me.store.engine.connect() as c:  # by its turn alone: a long conversation is not read for this
        rows = c.execute(text("SELECT id, role, content, turn_id, created_at FROM message"
                              " WHERE conversation_id = :c AND turn_id = :t"), {"c": turn.conversation_id, "t": turn_id}).all()
    return sorted((dict(r._mapping) for r in rows), key=lambda m: (0 if m["role"] == "user" else 1, m["created_at"]))


def rename(me: Any, conversation_id: str, title: str) -> dict[str, Any]:
    from vault import redact

    title = redact(" ".join(title.split()))[:120]
    if not title:
        raise StoreError("A conversation needs a title.")
    own(me, conversation_id)
    with me.store.session() as s:
        conv = s.get(Conversation, conversation_id)
        conv.title = title  # type: ignore[union-attr]
        conv.title_auto = TITLE_GIVEN  # type: ignore[union-attr]  # never made again from the first message
        s.add(conv)
        s.commit()
    me.emit({"type": "conversation.changed", "conversation_id": conversation_id, "person": me.person_id})
    return {"id": conversation_id, "title": title}


def _live(me: Any, conversation_id: str) -> bool:
    return any(t.status in ACTIVE and me.turn_live(t) for t in me.store.list_turns(conversation_id))


def _delete_turns(c: Any, turn_ids: list[str]) -> None:
    for tid in turn_ids:
        c.execute(text("DELETE FROM turn_step WHERE turn_id = :t"), {"t": tid})
        c.execute(text("DELETE FROM message WHERE turn_id = :t"), {"t": tid})
        c.execute(text("UPDATE schedule_runs SET turn_id = NULL WHERE turn_id = :t"), {"t": tid})
        c.execute(text("DELETE FROM turn WHERE id = :t"), {"t": tid})


def words(store: Any, messages: list[Any], turn_ids: list[str]) -> list[str]:
    """What these messages and these turns' steps (an agent's calls and their results) say: where a reversible
    placeholder may still be shown."""
    return [m.content for m in messages] + [str(t) for tid in turn_ids for step in store.list_steps(tid)
                                            for t in (step.arguments, step.result) if t]


def deletable(me: Any, conversation_id: str) -> None:
    """Raises StoreError unless the conversation is the person's and no answer is being written in it."""
    own(me, conversation_id)
    if _live(me, conversation_id):
        raise StoreError("An answer is being written in this conversation: stop it first, then delete.")


def delete(me: Any, conversation_id: str) -> None:
    """Deletes a conversation with its messages, turns and steps. A conversation with an answer being
    written is refused: stop the answer first."""
    from runtime_host.store import words_of_conversations_gone

    deletable(me, conversation_id)
    with me.store.engine.begin() as c:
        ids = [r[0] for r in c.execute(text("SELECT id FROM turn WHERE conversation_id = :c"), {"c": conversation_id})]
        _delete_turns(c, ids)
        c.execute(text("DELETE FROM message WHERE conversation_id = :c"), {"c": conversation_id})
        c.execute(text("DELETE FROM conversation WHERE id = :c"), {"c": conversation_id})
        words_of_conversations_gone(c, [conversation_id])  # answers waiting in the outbox, kept notifications
    me.store.purge()
    me.emit({"type": "conversation.deleted", "conversation_id": conversation_id, "person": me.person_id})


def _step_line(node: dict[str, Any]) -> str:
    args = node.get("arguments")
    short = ""
    if node["kind"] != "model" and isinstance(args, dict):
        short = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)[:40]}" for k, v in args.items())
    took = ""
    if node.get("finished_at") and node.get("started_at"):
        took = f", {(node['finished_at'] - node['started_at']) * 1000:.0f} ms"
    result = node.get("result") if isinstance(node.get("result"), dict) else {}
    out = str(result.get("output") or result.get("error") or "")[:200].replace("\n", " ")
    return f"{node['kind']} `{node['name']}({short})` {node['status']}{took}" + (f" → {out}" if out else "")


def to_markdown(data: dict[str, Any]) -> str:
    lines = [f"# {data['title']}", "", f"With {data['agent']}, started "
             f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(data['created_at']))}.", ""]
    turns = {t["id"]: t for t in data["turns"]}
    shown: set[str] = set()

    def steps(nodes: list[dict[str, Any]], depth: int) -> None:
        for n in nodes:
            lines.append("  " * depth + "- " + _step_line(n))
            steps(n.get("children") or [], depth + 1)

    for m in data["messages"]:
        who = (("Hearth" if m.get("origin") in HEARTH_ORIGINS else "You") if m["role"] == "user"
               else data["agent"] if m["role"] == "assistant" else m["role"])
        t = turns.get(m["turn_id"] or "")
        if m["role"] == "assistant" and t and t["id"] not in shown and t["steps"]:
            shown.add(t["id"])
            lines += ["<details><summary>Steps</summary>", ""]
            steps(t["steps"], 0)
            lines += ["", "</details>", ""]
        lines += [f"**{who}** · {time.strftime('%Y-%m-%d %H:%M', time.localtime(m['created_at']))}", "",
                  m["content"], ""]
        if t and t.get("note") and m["role"] == "user":
            lines += [f"> {t['note']}", ""]
    return "\n".join(lines).rstrip() + "\n"


def export(me: Any, conversation_id: str, fmt: str = "markdown") -> str:
    """The conversation as Markdown (messages, steps as nested lists) or JSON (everything, steps as trees)."""
    data = read(me, conversation_id)
    if fmt == "json":
        return json.dumps({"format": "hearth.conversation/1", **data}, ensure_ascii=False, indent=2)
    if fmt in ("md", "markdown"):
        return to_markdown(data)
    raise StoreError(f"Unknown export format {fmt!r}: use markdown or json.")


def _like(word: str) -> str:
    return "%" + word.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def search(me: Any, query: str, limit: int = 50) -> list[dict[str, Any]]:
    """Full-text search over every conversation of the current person: messages holding every word of
    the query, newest first, with a snippet around the first word."""
    words = [w for w in query.split() if w][:8]
    agents = _instances(me)
    if not words or not agents:
        return []
    conds = " AND ".join(f"LOWER(m.content) LIKE :w{i} ESCAPE '\\'" for i in range(len(words)))
    inst = ", ".join(f":i{i}" for i in range(len(agents)))
    params: dict[str, Any] = {f"w{i}": _like(w) for i, w in enumerate(words)}
    params.update({f"i{i}": a for i, a in enumerate(agents)})
    params["lim"] = limit
    with me.store.engine.connect() as c:
        rows = c.execute(text(
            "SELECT m.id, m.conversation_id, m.role, m.content, m.created_at, c.title, c.instance_id"
            " FROM message m JOIN conversation c ON c.id = m.conversation_id"
            f" WHERE c.instance_id IN ({inst}) AND {conds} ORDER BY m.created_at DESC LIMIT :lim"), params).all()
    out = []
    for r in rows:
        m = r._mapping
        content = m["content"]
        at = content.lower().find(words[0].lower())
        start = max(0, at - 60)
        snippet = ("…" if start else "") + content[start:at + 100].replace("\n", " ") + ("…" if at + 100 < len(content) else "")
        out.append({"message_id": m["id"], "conversation_id": m["conversation_id"], "role": m["role"],
                    "title": m["title"] or "New conversation", "agent": agents[m["instance_id"]],
                    "created_at": m["created_at"], "snippet": snippet})
    return out


def branch(me: Any, conversation_id: str, message_id: str, *, include: bool = True) -> str:
    """A new conversation holding this one's messages up to `message_id` (included or not); returns its id."""
    conv, _agent = own(me, conversation_id)
    msgs = me.store.list_messages(conversation_id)
    idx = next((i for i, m in enumerate(msgs) if m.id == message_id), None)
    if idx is None:
        raise StoreError("That message is not in this conversation any more.")
    keep = msgs[:idx + 1] if include else msgs[:idx]
    if conv.title_auto:  # made from its first message, as the branch's is from its own (made again if edited)
        new = me.store.create_conversation(conv.instance_id, how=TITLE_MADE_BRANCH)
    else:
        new = me.store.create_conversation(conv.instance_id, title=f"{conv.title or 'Conversation'}{BRANCH_MARK}"[:120])
    with me.store.session() as s:
        base = time.time() - len(keep) * 0.001
        for i, m in enumerate(keep):  # copies keep their order; their turns stay with the original
            s.add(Message(conversation_id=new.id, role=m.role, content=m.content, created_at=base + i * 0.001,
                          copied_from=m.copied_from or m.id))
        s.commit()
    me.store.title_again(new.id)
    me.emit({"type": "conversation.changed", "conversation_id": new.id, "person": me.person_id})
    return new.id


MARKS = ("schedule_runs", "tasks")  # what names a run by its turn: a schedule's ledger row, a hand-off's task


def _marks(c: Any, turn_id: str) -> list[tuple[str, str]]:
    """The rows (table, id) that name this turn as their run's."""
    return [(table, r[0]) for table in MARKS
            for r in c.execute(text(f"SELECT id FROM {table} WHERE turn_id = :t"), {"t": turn_id})]


async def answer_again(me: Any, conversation_id: str, message_id: str, new_text: str | None = None) -> Any:
    """Regenerate (an answer, or the person's message it answered) or edit and resend (a person's message
    with `new_text`). The last exchange is replaced in place; an earlier one continues in a branch, so
    nothing later is lost. Returns the started run. A run Hearth started (a schedule's, a mail rule's, a
    hand-off's) stays that run when regenerated: the same origin, its ledger row or task pointing to the new
    turn, so its prompt never becomes the person's words; its prompt, not the person's, cannot be edited."""
    conv, agent = own(me, conversation_id)
    if _live(me, conversation_id):
        raise StoreError("An answer is being written in this conversation: stop it first.")
    msgs = me.store.list_messages(conversation_id)
    idx = next((i for i, m in enumerate(msgs) if m.id == message_id), None)
    if idx is None:
        raise StoreError("That message is not in this conversation any more.")
    while idx >= 0 and msgs[idx].role != "user":  # an answer: start again from the message it answered
        idx -= 1
    if idx < 0:
        raise StoreError("There is no message of yours before this answer to send again.")
    prompt = msgs[idx]
    origin = origins(me, conversation_id).get(prompt.id, "chat")
    if new_text is not None and origin in HEARTH_ORIGINS:
        raise StoreError(f"This message is Hearth's prompt for {RUN_OF.get(origin, 'a run Hearth started')}, not "
                         "yours, so it cannot be edited: Regenerate its answer to run it again, or Branch from here "
                         "and write your own message.")
    text_out = (new_text if new_text is not None else prompt.content).strip()
    if not text_out:
        raise StoreError("The message is empty.")
    from runtime_host.safety.policy import mapping_ids
    from runtime_host.sizes import message_problem
    from runtime_host.turns import MessageTooLarge

    problem = message_problem(text_out)
    if problem is not None:  # refused before the exchange it replaces is deleted
        raise MessageTooLarge(problem)
    later = [m for m in msgs[idx + 1:] if m.role == "user" and m.turn_id != prompt.turn_id]
    marks: list[tuple[str, str]] = []  # of the turn redone in place: they follow the turn that redoes it
    if later:  # not the last exchange: keep it all, continue in a branch
        target = branch(me, conversation_id, prompt.id, include=False)
    else:
        target = conversation_id
        said = words(me.store, msgs[idx:], [prompt.turn_id] if prompt.turn_id else [])
        # the real values its placeholders show, written down to check before anything goes: a process killed
        # after the delete still has them taken out of the keyring (at the next memory run) once nothing shows them
        me.store.check_mappings(me.person_id, set().union(*map(mapping_ids, said)))
        with me.store.engine.begin() as c:
            if prompt.turn_id:
                marks = _marks(c, prompt.turn_id)
                _delete_turns(c, [prompt.turn_id])
            for m in msgs[idx:]:
                c.execute(text("DELETE FROM message WHERE id = :m"), {"m": m.id})
        me.store.title_again(conversation_id)  # its first message edited: a title made from it goes with it
        me.store.purge()  # an edited message's earlier text (a pasted password, say) leaves the files too
        await me.pod.memory_host.forget_messages(me.person_id, [m.id for m in msgs[idx:]], conversation_id, said)  # and memory
    run = await me.start_turn(agent, text_out, conversation_id=target, origin=origin)
    with me.store.engine.begin() as c:
        for table, row in marks:
            c.execute(text(f"UPDATE {table} SET turn_id = :t WHERE id = :r"), {"t": run.turn_id, "r": row})
    return run
