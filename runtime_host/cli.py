"""`python -m runtime_host`: the same Pod as the app, headless, for scripts, servers and tests."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import sqlite3
import sys
from collections.abc import Iterator
from typing import Any, TextIO

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# Failed tries in a row (nothing embedded between them) that `models set embedding` waits through when trying again
# may clear the failure (a rate limit, a server error, a timeout): memory's waits between them, 0.5 s doubling (or
# the provider's Retry-After), come to about 8 s before the fifth.
REEMBED_TRIES = 5

# What the CLI prints comes partly from strangers and models (mail subjects, page titles, answers, snippets). A
# terminal escape sequence, a C1 control code or a direction override in it would act on the terminal: clear it,
# write the clipboard (OSC 52), plant a hidden link (OSC 8), make a line read otherwise. None reaches it.
_TERMINAL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]"
                       "|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class _AsText:
    """A stream whose writes reach the terminal as text only (``_TERMINAL``); on standard output a carriage return
    starts a new line rather than overwriting the one shown (standard error keeps it for progress counts)."""

    def __init__(self, stream: TextIO, *, keep_cr: bool):
        self._stream, self._keep_cr = stream, keep_cr

    def write(self, text: str) -> int:
        text = _TERMINAL.sub("", text)
        if not self._keep_cr and "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _printed_as_text() -> Iterator[None]:
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _AsText(out, keep_cr=False), _AsText(err, keep_cr=True)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def _at_least_one(text: str) -> int:
    """An argument that counts something: a whole number of 1 or more, else argparse's usage error."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return n


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m runtime_host", description="Hearth's pod, headless.")
    p.add_argument("--person", help="act as this person (default: the first person)")
    p.add_argument("--passphrase-stdin", action="store_true",
                   help="read the person's passphrase from the first line of standard input")
    sub = p.add_subparsers(dest="cmd", required=True)

    pe = sub.add_parser("person", aliases=["people"], help="the people who share this Hearth").add_subparsers(
        dest="action", required=True)
    pea = pe.add_parser("add", help="add a person (with --passphrase-stdin to protect them with a passphrase)")
    pea.add_argument("name")
    pea.add_argument("--passphrase-stdin", action="store_true", default=argparse.SUPPRESS,
                     help="read their passphrase from the first line of standard input")
    per = pe.add_parser("rename", help="give the current person (--person, else the first) a new name")
    per.add_argument("name")
    pel = pe.add_parser("list", help="list people")
    pel.add_argument("--json", action="store_true")
    prm = pe.add_parser("remove", help="remove a person with everything theirs (needs --yes): yourself (--person "
                                       "YOU --passphrase-stdin), or anyone else as the person who set Hearth up")
    prm.add_argument("name")
    prm.add_argument("--yes", action="store_true", help="yes, remove them (this cannot be undone)")
    pe.add_parser("set-passphrase", help="protect the current person (and, without a keyring, their keys) with a "
                                         "passphrase: the old one (if any) and the new one on standard input")

    from runtime_host.providers.vendors import VENDORS

    vendor_names = ", ".join(n for n, v in VENDORS.items() if v.kind != "embedded")
    prov = sub.add_parser("provider", help="model providers").add_subparsers(dest="action", required=True)
    pa = prov.add_parser("add", help=f"add or update a provider; a known vendor ({vendor_names}) needs only its name "
                                     "and key. The address and key are checked before anything is saved.")
    pa.add_argument("name")
    pa.add_argument("--kind", default=None,
                    help="wire format: openai-compatible (also Ollama, LM Studio, llama.cpp), openai, anthropic, gemini "
                         "(default: the vendor's, else openai-compatible)")
    pa.add_argument("--base-url", default=None, help="the API address (default: the vendor's)")
    pa.add_argument("--model", default=None, help="default model (default: the vendor's)")
    pa.add_argument("--key-from-stdin", action="store_true", help="read the API key from standard input into the OS keyring")
    pa.add_argument("--no-check", action="store_true", help="save without asking the server for its models first")
    pl = prov.add_parser("list", help="list providers")
    pl.add_argument("--json", action="store_true")
    pv = prov.add_parser("vendors", help="the vendors Hearth knows by name (for `provider add NAME`)")
    pv.add_argument("--json", action="store_true")
    pc = prov.add_parser("check", help="ask a saved provider for its models with its key (nothing is changed)")
    pc.add_argument("name")
    pc.add_argument("--json", action="store_true")
    pr = prov.add_parser("remove", help="remove a provider and its key (refused while an agent uses it)")
    pr.add_argument("name")

    ag = sub.add_parser("agent", help="agents").add_subparsers(dest="action", required=True)
    aa = ag.add_parser("add", help="add an agent")
    aa.add_argument("name")
    aa.add_argument("--provider")
    aa.add_argument("--model")
    aa.add_argument("--profile", help="start from a shipped profile (see `agent profiles`)")
    aa.add_argument("--system", default=None, help="system prompt (the agent's role and personality)")
    aa.add_argument("--toolkits", default=None, help="comma-separated toolkits (default: clock,math or the profile's)")
    ae = ag.add_parser("edit", help="change an agent's provider, model, instructions or toolkits")
    ae.add_argument("name")
    ae.add_argument("--provider")
    ae.add_argument("--model")
    ae.add_argument("--system")
    ae.add_argument("--toolkits")
    ae.add_argument("--safety", help='the safety policy as JSON, e.g. \'{"egress": {"email": "block"}, "reversible": true}\'')
    ae.add_argument("--fallbacks", help="comma-separated provider or provider/model, tried in order when the "
                                        "primary is rate-limited or unreachable")
    ad = ag.add_parser("delete", help="delete an agent with its conversations and schedules (needs --yes)")
    ad.add_argument("name")
    ad.add_argument("--yes", action="store_true", help="yes, delete it (this cannot be undone)")
    al = ag.add_parser("list", help="list agents and their workers")
    al.add_argument("--json", action="store_true")
    ap = ag.add_parser("profiles", help="the agent profiles Hearth ships")
    ap.add_argument("--json", action="store_true")

    ch = sub.add_parser("chat", help="send one message to an agent and print the answer as it streams")
    ch.add_argument("agent")
    ch.add_argument("message", help="the message; - reads it from standard input")
    ch.add_argument("--conversation", help="conversation id (default: the agent's latest)")
    ch.add_argument("--new", action="store_true", help="start a new conversation")
    ch.add_argument("--model", help="use provider or provider/model for this message only")

    mo = sub.add_parser("models", help="providers, what they can do, and the model for each role")
    mo_sub = mo.add_subparsers(dest="action")
    mo.add_argument("--json", action="store_true")
    ms = mo_sub.add_parser("set", help="choose the model for a role (extraction, ingest, ask_memory, import, embedding)")
    ms.add_argument("role")
    ms.add_argument("model", help="provider or provider/model; for embedding: local/static, local/minilm or provider/model")

    sc = sub.add_parser("schedule", help="scheduled runs of agents").add_subparsers(dest="action", required=True)
    sca = sc.add_parser("add", help="run AGENT with PROMPT whenever CRON is due")
    sca.add_argument("agent")
    sca.add_argument("cron", help="5-field cron (minute hour day month weekday) or @hourly/@daily/@weekly/@monthly")
    sca.add_argument("prompt")
    sca.add_argument("--catch-up", default="once", choices=["once", "skip"],
                     help="after the machine was off: run once on wake (default), or skip")
    sca.add_argument("--tz", default=None, help="IANA time zone (default: this machine's)")
    sca.add_argument("--name", default="")
    scl = sc.add_parser("list", help="schedules with their next runs")
    scl.add_argument("--json", action="store_true")
    for verb in ("pause", "resume", "delete"):
        sv = sc.add_parser(verb, help=f"{verb} one schedule")
        sv.add_argument("schedule_id")
    tk = sub.add_parser("tick", help="run what is due now (or at --now) once and exit (for OS schedulers)")
    tk.add_argument("--now", help="ISO time with offset, e.g. 2026-03-29T01:30:00+00:00")

    ta = sub.add_parser("tasks", help="hand-offs between agents")
    ta.add_argument("--json", action="store_true")
    ta.add_argument("--state")
    td = sub.add_parser("task", help="approve or reject a proposed hand-off").add_subparsers(dest="action", required=True)
    for verb in ("approve", "reject"):
        tv = td.add_parser(verb)
        tv.add_argument("task_id")
    ca = sub.add_parser("cards", help="mail waiting for your approval, and approved mail that failed to send")
    ca.add_argument("--json", action="store_true")
    rp = sub.add_parser("rule-problems", help="what your mail rules could not do: which rule, which mail, why, "
                                              "and what to do")
    rp.add_argument("--json", action="store_true")
    cd = sub.add_parser("card", help="approve (send), reject, or retry a mail card whose send failed").add_subparsers(
        dest="action", required=True)
    for verb in ("approve", "reject", "retry"):
        cv = cd.add_parser(verb)
        cv.add_argument("card_id")

    rn = sub.add_parser("run", help="start a background run, detached from any chat")
    rn.add_argument("agent")
    rn.add_argument("prompt")
    rn.add_argument("--detach", action="store_true", help="return at once; the run goes on in its own process")
    rs = sub.add_parser("runs", help="background and scheduled runs with their state")
    rs.add_argument("--json", action="store_true")
    rt = sub.add_parser("run-turn", help="(internal) host one detached run until it ends")
    rt.add_argument("turn_id")

    me = sub.add_parser("memory", help="the memory wiki: pipelines, search, pages, proposals, forgetting")
    me_sub = me.add_subparsers(dest="action", required=True)
    me_sub.add_parser("produce", help="pull new chat and mail into the memory inbox (keep or skip)")
    me_sub.add_parser("ingest", help="write wiki pages from the inbox")
    me_sub.add_parser("nightly", help="merge duplicates, re-synthesise, rebuild the index")
    msr = me_sub.add_parser("search", help="search what you may see")
    msr.add_argument("query")
    msr.add_argument("-k", type=_at_least_one, default=10, help="how many results (1 or more; default 10)")
    msr.add_argument("--mode", choices=["hybrid", "keyword", "meaning"], default="hybrid")
    mpg = me_sub.add_parser("pages", help="list wiki pages")
    mpg.add_argument("--json", action="store_true")
    me_sub.add_parser("verify", help="find sources whose bytes no longer match their checksum")
    mas = me_sub.add_parser("ask", help="the Ask memory model answers a question from memory, with citations")
    mas.add_argument("question")
    me_sub.add_parser("proposals", help="agent edits waiting for you on verified pages")
    me_sub.add_parser("held", help="notes held back because they read as orders to the assistant")
    mrl = me_sub.add_parser("release", help="keep a held note after all (it is stored and reaches pages at the next ingest)")
    mrl.add_argument("id", type=int)
    mdc = me_sub.add_parser("discard", help="throw a held note away")
    mdc.add_argument("id", type=int)
    mdl = me_sub.add_parser("delete", help="delete one source of yours from memory, its claims off every page "
                                           "(its id from `memory search`; needs --yes)")
    mdl.add_argument("id")
    mdl.add_argument("--yes", action="store_true", help="yes, delete it (this cannot be undone)")
    mfa = me_sub.add_parser("forget-agent", help="delete everything one agent learned (needs --yes)")
    mfa.add_argument("name")
    mfa.add_argument("--yes", action="store_true", help="yes, forget it (this cannot be undone)")
    mfm = me_sub.add_parser("forget-me", help="delete everything remembered about you (needs --yes)")
    mfm.add_argument("--yes", action="store_true", help="yes, forget it all (this cannot be undone)")

    fo = sub.add_parser("folder", help="watched folders: your notes, documents and mail exports in your memory")
    fo_sub = fo.add_subparsers(dest="action", required=True)
    foa = fo_sub.add_parser("add", help="watch a folder and import it now (only you see what it imports)")
    foa.add_argument("path")
    foa.add_argument("--no-scan", action="store_true", help="import on the next memory run instead of now")
    fol = fo_sub.add_parser("list", help="your watched folders with their file counts")
    fol.add_argument("--json", action="store_true")
    for_ = fo_sub.add_parser("remove", help="stop watching a folder and delete what it imported")
    for_.add_argument("folder", help="the folder's path or id")
    fos = fo_sub.add_parser("status", help="each file of a folder: indexed, skipped or failed, with the reason")
    fos.add_argument("folder", help="the folder's path or id")
    fos.add_argument("--only", choices=["indexed", "skipped", "failed"])
    fos.add_argument("--json", action="store_true")
    forr = fo_sub.add_parser("rescan", help="read what changed in a folder now (all your folders without one)")
    forr.add_argument("folder", nargs="?")

    from runtime_host.speech.cli import add_transcribe_parser

    add_transcribe_parser(sub)

    mc = sub.add_parser("mcp", help="MCP servers whose tools agents may use once you allow them").add_subparsers(
        dest="action", required=True)
    mca = mc.add_parser("add", help="add a server: its command after --, or --url for streamable HTTP")
    mca.add_argument("name")
    mca.add_argument("--url")
    mca.add_argument("argv", nargs=argparse.REMAINDER)
    mcl = mc.add_parser("list", help="servers and the tools they list")
    mcl.add_argument("--json", action="store_true")
    mcw = mc.add_parser("allow", help="allow a server's tools (all it lists now, or --tool ...) for one agent")
    mcw.add_argument("server")
    mcw.add_argument("agent")
    mcw.add_argument("--tool", action="append")
    mcr = mc.add_parser("refresh", help="list a server's tools again (new ones stay unreachable until allowed)")
    mcr.add_argument("name")

    sv = sub.add_parser("serve", help="host the pod headless with an authenticated HTTP contract (v1)")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8765)
    sv.add_argument("--new-token", action="store_true", help="make a new access token, print it once, and exit")

    st = sub.add_parser("stop", help="stop a turn at once (what it wrote so far is kept)")
    st.add_argument("turn_id", nargs="?", help="the turn (see `turns`); or --agent for all of one agent's turns")
    st.add_argument("--agent", help="stop every unfinished turn of this agent")
    tu = sub.add_parser("turns", help="turns with their steps as a tree")
    tu.add_argument("--json", action="store_true")
    tu.add_argument("--conversation")
    co = sub.add_parser("conversations", help="your conversations: list, search, rename, export, delete").add_subparsers(
        dest="action", required=True)
    col = co.add_parser("list", help="an agent's conversations, newest first (scheduled runs marked)")
    col.add_argument("agent")
    col.add_argument("--json", action="store_true")
    cos = co.add_parser("search", help="full-text search over all your conversations")
    cos.add_argument("query")
    cos.add_argument("--json", action="store_true")
    cor = co.add_parser("rename", help="give a conversation a title")
    cor.add_argument("conversation_id")
    cor.add_argument("title")
    coe = co.add_parser("export", help="print a conversation as Markdown (or --json)")
    coe.add_argument("conversation_id")
    coe.add_argument("--json", action="store_true")
    cod = co.add_parser("delete", help="delete a conversation with its messages and steps (needs --yes)")
    cod.add_argument("conversation_id")
    cod.add_argument("--yes", action="store_true", help="really delete (it cannot be undone)")
    cod.add_argument("--forget", action="store_true",
                     help="also delete what memory learned from it (pages citing it are rewritten)")
    return p


async def _conversations(me: Any, args: argparse.Namespace) -> int:
    if args.action == "list":
        rows = me.list_conversations(args.agent)
        if args.json:
            _print_json(rows)
        for c in [] if args.json else rows:
            kind = f"run of {c['schedule'] or 'a schedule'}" if c["schedule_id"] else c["origin"]
            print(f"{c['id']}\t{kind}\t{c['messages']} messages\t{c['title']}")
    elif args.action == "search":
        hits = me.search_conversations(args.query)
        if args.json:
            _print_json(hits)
        for h in [] if args.json else hits:
            print(f"{h['conversation_id']}\t{h['agent']}\t{h['title']}\t{h['snippet']}")
        if not hits and not args.json:
            print(f"No message holds {args.query!r}.")
    elif args.action == "rename":
        print(f"Renamed to {me.rename_conversation(args.conversation_id, args.title)['title']!r}.")
    elif args.action == "export":
        if args.json:  # a model's direction character or C1 control written as its escape, not dropped
            _print_json(json.loads(me.export_conversation(args.conversation_id, "json")))
        else:
            print(me.export_conversation(args.conversation_id, "markdown"))
    elif args.action == "delete":
        if not args.yes:
            print("Deleting a conversation cannot be undone: add --yes (export it first to keep a copy).",
                  file=sys.stderr)
            return EXIT_USAGE
        if args.forget:
            n = await me.delete_conversation_and_forget(args.conversation_id)
            print(f"Deleted, and forgot {n} memory source(s) learned from it.")
        else:
            await me.delete_conversation(args.conversation_id)
            print("Deleted. What memory learned from it stays (add --forget to delete that too).")
    return EXIT_OK


def _print_json(obj: Any) -> None:
    """``obj`` as JSON; a character the terminal would act on (a C1 control, a direction character) is written as
    its JSON escape, so the output reads back exactly and the terminal shows it as text (``unseen.as_json``)."""
    from unseen import as_json

    print(as_json(obj, indent=2))


def _message_text(arg: str) -> str:
    """The message `chat` was given (- reads standard input) as text: as the terminal's own encoding says, else its
    bytes read the way watched folders read a file (UTF-8, a byte order mark, else Windows-1252), saying on stderr
    how when it was not plain UTF-8."""
    import codecs
    import locale
    import os

    from runtime_host.folders import decode_text

    if arg != "-":
        if not any("\udc80" <= c <= "\udcff" for c in arg):
            return arg  # read in the terminal's own encoding (KOI8-R, say) as typed
        data = os.fsencode(arg)  # decoded with surrogateescape: encoding it back gives the bytes that were typed
    else:
        data = sys.stdin.buffer.read()
        own = locale.getpreferredencoding(False)
        if codecs.lookup(own).name != "utf-8":
            try:
                return data.decode(own).replace("\r\n", "\n")  # the terminal's own encoding, as typed
            except UnicodeDecodeError:
                pass
    text, note = decode_text(data)
    if note:
        print(f"note: the message was {note}.", file=sys.stderr)
    return text.replace("\r\n", "\n")


async def _chat(me: Any, args: argparse.Namespace) -> int:
    streamed: list[str] = []

    def on_event(ev: dict[str, Any]) -> None:
        if ev.get("type") == "delta" and ev.get("parent_id") is None and ev.get("turn_id") == run_id[0]:
            streamed.append(ev["text"])
            sys.stdout.write(ev["text"])
            sys.stdout.flush()
        elif ev.get("type") == "step.started" and ev.get("kind") == "tool" and ev.get("turn_id") == run_id[0]:
            print(f"\n[tool] {ev['name']}({json.dumps(ev.get('arguments'), ensure_ascii=False)})", file=sys.stderr)
        elif ev.get("type") == "turn.resuming" and ev.get("turn_id") == run_id[0]:
            print(f"\n[worker restarted: {ev.get('reason')}; resuming the turn]", file=sys.stderr)

    run_id: list[str | None] = [None]
    me.subscribe(on_event)
    message = _message_text(args.message)
    run = await me.start_turn(args.agent, message, conversation_id=args.conversation, new_conversation=args.new,
                               model=args.model)
    run_id[0] = run.turn_id
    result = await run.future
    if streamed and not "".join(streamed).endswith("\n"):
        sys.stdout.write("\n")
    if result.ok:
        if not streamed and result.text:
            print(result.text)
        return EXIT_OK
    print(f"error: {result.error}", file=sys.stderr)
    return EXIT_FAILED


def _split(csv: str | None) -> list[str] | None:
    return None if csv is None else [t.strip() for t in csv.split(",") if t.strip()]


def _detach(me: Any, turn_id: str) -> None:
    import subprocess

    logs = me.home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"run-{turn_id}.log", "ab") as log:
        subprocess.Popen([sys.executable, "-m", "runtime_host", "run-turn", turn_id], stdin=subprocess.DEVNULL,
                         stdout=log, stderr=log, start_new_session=True, close_fds=True)


async def _run_turn_host(me: Any, turn_id: str) -> int:
    run = await me.resume_turn(turn_id)
    if run is None:
        print(f"error: run {turn_id} is not waiting to run (finished, or owned by another live process).", file=sys.stderr)
        return EXIT_FAILED
    result = await run.future
    if result.ok:
        print(result.text)
        return EXIT_OK
    print(f"error: {result.error}", file=sys.stderr)
    return EXIT_FAILED


def _provider(me: Any, args: argparse.Namespace) -> int:
    from runtime_host.providers import ProviderError
    from runtime_host.providers.vendors import VENDORS

    if args.action == "vendors":
        rows = [{"name": v.name, "label": v.label, "kind": v.kind, "base_url": v.base_url, "model": v.default_model,
                 "needs_key": v.needs_key, "key_page": v.key_page} for v in VENDORS.values() if v.kind != "embedded"]
        if args.json:
            _print_json(rows)
        else:
            for r in rows:
                print(f"{r['name']}\t{r['label']}\t{r['base_url']}\t{r['model'] or '-'}")
        return EXIT_OK
    if args.action == "list":
        rows = me.list_providers()
        if args.json:
            _print_json(rows)
        else:
            for r in rows:
                print(f"{r['name']}\t{r['kind']}\t{r['base_url']}\t{r['model']}\t{'key' if r['has_key'] else 'no key'}")
        return EXIT_OK
    if args.action == "remove":
        me.remove_provider(args.name)
        print(f"Provider {args.name!r} removed, with its key.")
        return EXIT_OK
    if args.action == "check":
        if me.provider(args.name) is None:
            print(f"error: no provider named {args.name!r}; see `provider list`.", file=sys.stderr)
            return EXIT_USAGE
        try:
            result = me.check_provider(args.name)
        except ProviderError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_FAILED
        if args.json:
            _print_json({"name": args.name, "models": result.models, "key_tested": result.key_tested})
        else:
            print(result.summary(args.name))
        return EXIT_OK
    # add (or update)
    v = VENDORS.get(args.name)
    saved = me.provider(args.name)
    base_url = args.base_url or (saved["base_url"] if saved else None) or (v.base_url if v else None)
    if not base_url:
        known = ", ".join(n for n, x in VENDORS.items() if x.kind != "embedded")
        print(f"error: {args.name!r} is not a vendor Hearth knows ({known}); give its address with --base-url.",
              file=sys.stderr)
        return EXIT_USAGE
    kind = args.kind or (saved["kind"] if saved else None) or (v.kind if v else "openai-compatible")
    model = args.model if args.model is not None else (saved["model"] if saved else (v.default_model if v else ""))
    key = None
    if args.key_from_stdin:
        key = sys.stdin.readline().strip()
        if not key:
            print("error: --key-from-stdin was given but standard input was empty.", file=sys.stderr)
            return EXIT_USAGE
    elif v is not None and v.needs_key and not (saved and saved["has_key"]):
        print(f"note: {v.label} needs a key; add it with `provider add {args.name} --key-from-stdin`"
              + (f" (get one at {v.key_page})." if v.key_page else "."), file=sys.stderr)
    if not args.no_check and (key or not (v and v.needs_key)):
        try:
            result = me.check_provider(args.name, kind=kind, base_url=base_url, key=key)
        except ProviderError as exc:
            print(f"error: not saved: {exc} (Use --no-check to save it anyway.)", file=sys.stderr)
            return EXIT_FAILED
        print(result.summary(args.name))
        if model and result.models and model not in result.models:
            print(f"note: {model!r} is not in that list; pick one of those with --model.", file=sys.stderr)
    info = me.add_provider(args.name, kind=kind, base_url=base_url, model=model, key=key)
    print(f"Provider {info['name']!r} saved ({info['kind']}, {info['base_url']}, model {info['model'] or 'default'})"
          + ("; key stored in the OS keyring." if key else "."))
    return EXIT_OK


def _schedule(me: Any, args: argparse.Namespace) -> int:
    from runtime_host import schedule

    if args.action == "add":
        tz = args.tz or schedule.local_zone()
        try:
            info = me.add_schedule(args.agent, args.cron, args.prompt, tz=tz, catch_up=args.catch_up, name=args.name)
        except schedule.CronError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        print(f"Scheduled {info['agent']!r}: {info['description']} ({tz}); next: {', '.join(info['next_runs'][:3])}")
        print(info["id"])
        return EXIT_OK
    if args.action == "list":
        rows = me.schedules()
        if args.json:
            _print_json(rows)
        else:
            for r in rows:
                print(f"{r['id']}\t{r['agent']}\t{r['description']}\t{'paused' if r['paused'] else ''}\t{r['prompt'][:40]}")
        return EXIT_OK
    if args.schedule_id not in {r["id"] for r in me.schedules()}:
        print(f"error: no schedule {args.schedule_id!r} of yours; see `schedule list`.", file=sys.stderr)
        return EXIT_USAGE
    if args.action == "delete":
        me.delete_schedule(args.schedule_id)  # its past runs stay in the ledger
    else:
        schedule.set_paused(me.store.engine, args.schedule_id, args.action == "pause")
    print(f"Schedule {args.schedule_id} {args.action}d.")
    return EXIT_OK


async def _reembed(me: Any) -> int:
    """Re-embeds memory with the embedding role's model, printing progress (the window does this in the
    background; a command waits, as its process ends when it returns). Waits through failures that trying again may
    clear (a provider asking to slow down, a server error), saying each, up to REEMBED_TRIES in a row; fails (exit 1)
    on the others, or after those: the choice is kept, but memory does not search by it yet."""
    mem = await me.in_memory_thread(lambda: me.memory)
    switching = me.memory_host.embedding_changed()
    if switching is not None:
        await asyncio.wrap_future(switching)
    shown = None
    seen = in_a_row = 0  # memory's failures counted so far; those since anything was embedded
    done_then = -1
    while True:
        st = mem.embedding_status(me.person_scopes())  # the items of the scopes this person reads, no one else's
        line = f"Re-embedding memory with {st['model']}: {st['done']}/{st['total']}"
        if line != shown and st["total"]:
            print(line, flush=True)
            shown = line
        if not st["running"]:
            break
        failures = int(st.get("failures") or 0)
        if st["error"] and failures != seen:
            if not st.get("passing"):  # a key refused, no such model, vectors of the wrong size: trying cannot clear it
                break
            in_a_row = (0 if st["done"] != done_then else in_a_row) + (failures - seen if failures > seen else failures)
            seen, done_then = failures, st["done"]
            if in_a_row >= REEMBED_TRIES:
                break
            print(f"{st['why']} Trying again in {float(st.get('retry_s') or 0):g} s (this command gives up after "
                  f"{REEMBED_TRIES} failed tries in a row).", file=sys.stderr, flush=True)
        await asyncio.sleep(0.5)
    if st["error"]:  # the choice is saved: memory tries again whenever Hearth runs
        print(f"Memory could not get search vectors from {st['model']}: {st['why']} The choice is kept: Hearth tries "
              f"again whenever it runs, and search finds notes by their words meanwhile." if st.get("why")
              else st["error"], file=sys.stderr)
        return EXIT_FAILED
    done = f"{st['total']} items re-embedded" if st["total"] else "nothing needed re-embedding"
    print(f"Memory search by meaning now uses {st['model']} ({done}).")
    if st.get("note"):  # notes the model refused one by one: found by their words alone
        print(st["note"])
    return EXIT_OK


def _scopes_named(me: Any, report: Any) -> Any:
    """A report with every scope named as the person reads it ("Me", "Shared"), never by its internal id."""
    if isinstance(report, dict):
        return {k: me.scope_label(v) if k == "scope" and isinstance(v, str) else _scopes_named(me, v)
                for k, v in report.items()}
    if isinstance(report, list):
        return [_scopes_named(me, v) for v in report]
    return report


def _say_damaged_notes(me: Any, bad: list[Any], then: str = "") -> None:
    """Names each note whose file is missing or changed on disk, then says what to do, once."""
    from wiki_engine.sources import said_of

    lines = said_of(bad, me.scope_label)
    lines[-1] = f"{lines[-1]} {then}".rstrip()
    print("\n".join(lines), file=sys.stderr)


async def _memory(me: Any, args: argparse.Namespace) -> int:
    from runtime_host.memory_jobs import MemoryModelError

    mine = me.restore_redactions  # the person's own reversibly redacted values put back, for them alone
    try:
        if args.action == "produce":
            _print_json(_scopes_named(me, await me.memory_produce()))
        elif args.action == "ingest":
            out = await me.memory_ingest()
            _print_json(_scopes_named(me, out))
            if out.get("unreadable"):
                _say_damaged_notes(me, out["unreadable"], "Until then it waits in the inbox; the other notes were ingested.")
        elif args.action == "nightly":
            _print_json(_scopes_named(me, await me.memory_nightly()))
        elif args.action == "search":
            hits = await me.memory_search(args.query, k=args.k, mode=args.mode)
            _print_json([{"id": h.id, "kind": h.kind, "scope": me.scope_label(h.scope), "title": mine(h.title),
                          "score": round(h.score, 4), "snippet": mine(h.snippet)} for h in hits])
        elif args.action == "pages":
            rows = []
            for scope in me.person_scopes():
                pages, corrupt = await me.in_memory_thread(lambda scope=scope: me.memory.list_pages(scope))
                rows += [{"scope": me.scope_label(scope), "title": mine(p.title), "category": mine(p.category),
                          "verified": p.verified, "updated": p.updated} for p in pages]
                rows += [{"scope": me.scope_label(scope), "corrupt": c} for c in corrupt]
            if args.json:
                _print_json(rows)
            else:
                for r in rows:
                    print(f"{r['scope']}\t{r.get('title') or r.get('corrupt')}\t{'verified' if r.get('verified') else ''}")
                if not rows:
                    from runtime_host.memory_jobs import NO_INGEST_MODEL

                    print("No wiki pages yet. " + ("They are written from your memory at the next ingest; "
                                                   "`memory ingest` writes them now." if me.has_memory_model("ingest")
                                                   else NO_INGEST_MODEL))
        elif args.action == "ask":
            if not args.question.strip():
                print("error: type a question, e.g. memory ask \"When is Clara's birthday?\"", file=sys.stderr)
                return EXIT_USAGE
            from runtime_host.person import source_line

            result = await me.ask_memory(args.question)
            if not result.ok:
                print(f"error: {result.error}", file=sys.stderr)
                return EXIT_FAILED
            # the model's words marked as its own and indented, under Hearth's list its own heading (as the window
            # shows them): an answer's line "[1] … (note, …, Me)" never passes for a source Hearth lists
            if result.answered_by:
                print(f"The answer by {result.answered_by}, from what memory holds:")
                print("\n".join(f"  {line}" if line.strip() else "" for line in mine(result.text).splitlines()))
            else:  # Hearth's own words ("Memory does not say: …")
                print(mine(result.text))
            found = {h.id: h for h in result.hits}
            if result.citations:
                print("Sources:")
            said = await me.memory_said([found[ref] for ref in result.citations.values()])  # as in the window
            for n, ref in sorted(result.citations.items()):
                h = found[ref]  # a citation is always one of the hits the model was shown
                if h.kind == "page":
                    print(f"[{n}] {mine(h.title or h.snippet)} (page, {me.scope_label(h.scope)})")
                    continue
                # a source by its words, who said it ("mail from Ana <…>") and when: a conversation's share its title
                words, about = source_line(mine(h.snippet or h.title),
                                           mine(said.get(ref) or result.cited_as.get(n, "source")), h.ts)
                print(f"[{n}] {words} ({about}, {me.scope_label(h.scope)})")
        elif args.action == "verify":
            bad = await me.memory_verify()
            if bad:
                _say_damaged_notes(me, bad)
                return EXIT_FAILED
            print("Every source matches its checksum.")
        elif args.action == "proposals":
            _print_json([{**{k: mine(v) if isinstance(v, str) and k != "scope" else v for k, v in vars(p).items()},
                          "scope": me.scope_label(p.scope)} for p in await me.memory_proposals()])
        elif args.action == "held":
            from runtime_host.memory_jobs import held_from

            held = await me.memory_held()
            for q, who in zip(held, held_from(me, held), strict=True):  # "from you", "mail from Ana <ana@…>", …
                text = " ".join(mine(q.text).split())
                wrote = " · ".join(mine(v) for v in (q.author, q.subject) if v)
                print(f"#{q.id}\t{me.scope_label(q.scope)}\t{mine(who)}\t{mine(q.reason)}"
                      + (f"\n\t{wrote}" if wrote else "") + f"\n\t{text[:300]}{'…' if len(text) > 300 else ''}")
            if not held:
                print("Nothing is held back.")
        elif args.action == "release":
            sid = await me.memory_release(args.id)
            print(f"Kept held note #{args.id} as source {sid[:12]}; it reaches your pages at the next ingest.")
        elif args.action == "discard":
            await me.memory_discard(args.id)
            print(f"Discarded held note #{args.id}.")
        elif args.action == "delete" and not args.yes:
            print("error: deleting a source from memory cannot be undone (its claims leave every page that cites it): "
                  "add --yes to do it.", file=sys.stderr)
            return EXIT_USAGE
        elif args.action == "delete":
            try:
                deleted = await me.memory_delete_source(args.id)
            except LookupError:  # gone meanwhile (the window, a folder removed), or never there
                print(f"error: memory holds no source {args.id!r} (`memory search` lists ids). Nothing was deleted.",
                      file=sys.stderr)
                return EXIT_FAILED
            print(f"Source deleted; {len(deleted)} page(s) will be written again without it." + (
                f" {len(deleted.moved)} page(s) you verified had a title naming what it said: kept, titled by their "
                "category." if deleted.moved else ""))
        elif args.action in ("forget-agent", "forget-me") and not args.yes:
            what = f"everything {args.name} learned" if args.action == "forget-agent" else "everything remembered about you"
            also = "" if args.action == "forget-agent" else ", and stops watching your folders"
            print(f"error: this forgets {what} for good (sources, pages, what waits to be kept and agent notes{also}); "
                  "add --yes to do it.", file=sys.stderr)
            return EXIT_USAGE
        elif args.action == "forget-agent":
            print(f"Forgot {await me.memory_forget_agent(args.name)} item(s) learned by {args.name}.")
        elif args.action == "forget-me":
            watched = len(me.folders.list_folders())
            n = await me.memory_forget_me()
            print(f"Forgot {n} item(s) about you" + (f"; stopped watching {watched} folder(s) (their files stay where "
                                                   "they are; `folder add` imports one anew)." if watched else "."))
    except MemoryModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except asyncio.CancelledError:  # Ctrl+C (asyncio.run then exits 130), a model's answer not waited for
        if args.action in ("produce", "ingest", "nightly"):
            print(f"Stopped: what this run finished is kept; the next run (`memory {args.action}`, or the schedule's) "
                  "goes on from there.", file=sys.stderr)
        raise
    return EXIT_OK


async def _folder(me: Any, args: argparse.Namespace) -> int:
    from runtime_host.folders import FolderError, one_line, progress_said
    from runtime_host.folders import safe_name as shown  # a folder's own name forges no line either

    shown_progress = 0  # the length of the progress line shown now (0: none)

    def progress(ev: dict[str, Any]) -> None:
        nonlocal shown_progress
        if ev["phase"] == "importing" and ev["total"]:  # as the window says it: within a mail export too
            said = progress_said(ev)
            print(f"\r{said.ljust(shown_progress)}", end="", file=sys.stderr, flush=True)  # a longer line's end cleared
            shown_progress = len(said)

    def end_progress_line() -> None:  # what is said next (a report, an error, a warning) starts a line of its own
        nonlocal shown_progress
        if shown_progress:
            print("", file=sys.stderr, flush=True)
            shown_progress = 0

    def report(rep: Any) -> None:
        end_progress_line()
        print(f"{shown(rep.path)}: {rep.indexed} indexed, {rep.skipped} skipped, {rep.failed} failed, {rep.unchanged} "
              f"unchanged, {f'{rep.moved} moved, ' if rep.moved else ''}{rep.removed} removed ({rep.seconds:.1f} s)."
              f"{' ' + rep.note if rep.note else ''}")

    async def scan(fid: str) -> None:
        try:
            rep = await me.folders.scan(fid, on_progress=progress)
        except asyncio.CancelledError:  # Ctrl+C (asyncio.run then exits 130): under the progress line, one line
            end_progress_line()
            print("Stopped: the files imported so far are kept; `folder rescan` imports the rest.", file=sys.stderr)
            raise
        except BaseException:
            end_progress_line()
            raise
        report(rep)

    try:
        if args.action == "add":
            folder = me.folders.add(args.path)
            print(f"Watching {shown(folder.path)} (id {folder.id}); only you see what it imports.")
            if not args.no_scan:
                await scan(folder.id)
        elif args.action == "list":
            rows = [f.to_dict() for f in me.folders.list_folders()]
            if args.json:
                _print_json(rows)
            elif not rows:
                print("No watched folders. Add one with `folder add PATH`.")
            for r in rows if not args.json else []:
                counts = ", ".join(f"{n} {s}" for s, n in sorted(r["files"].items())) or "not scanned yet"
                print(f"{r['id']}\t{shown(r['path'])}\t{counts}{chr(9) + r['note'] if r['note'] else ''}")
        elif args.action == "remove":
            out = await me.folders.remove(args.folder)
            print(f"No longer watching {shown(out['path'])}; {out['sources_deleted']} imported source(s) deleted.")
        elif args.action == "status":
            rows = me.folders.files(args.folder, args.only)
            if args.json:
                _print_json([r.to_dict() for r in rows])
            else:
                folder = me.folders.find(args.folder)
                if folder.note:  # an import cut short, a drive not there: said first, beside the file rows
                    print(f"{shown(folder.path)}: {shown(folder.note)}", file=sys.stderr)
                for r in rows:
                    print(f"{r.status}\t{r.rel}{chr(9) + one_line(r.reason) if r.reason else ''}")
        elif args.action == "rescan":
            folders = [me.folders.find(args.folder)] if args.folder else me.folders.list_folders()
            for f in folders:
                await scan(f.id)
    except FolderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


async def _remove_person(me: Any, args: argparse.Namespace, passphrase: str | None) -> int:
    """`person remove NAME --yes`: as `agent delete`, it says what goes and needs --yes. A person removes themselves
    with the passphrase that unlocked them; the person who set Hearth up removes another by naming them."""
    goes = await me.what_removal_takes(args.name)
    name = goes["name"]
    if not args.yes:
        print(f"error: removing {name} deletes {goes['conversations']} conversation(s), {goes['agents']} agent(s), "
              f"{goes['inboxes']} inbox(es) and {goes['notes']} memory note(s) for good; add --yes to do it.",
              file=sys.stderr)
        return EXIT_USAGE
    await me.remove_person(name, passphrase if goes["self"] and goes["has_passphrase"] else name)
    print(f"{name} was removed from this Hearth with everything theirs: {goes['conversations']} conversation(s), "
          f"{goes['agents']} agent(s), {goes['inboxes']} inbox(es), {goes['notes']} memory note(s).")
    return EXIT_OK


async def _amain(args: argparse.Namespace) -> int:
    from runtime_host.pod import Pod

    pod = Pod()
    try:
        passphrase = sys.stdin.readline().rstrip("\n") if args.passphrase_stdin else None
        if args.cmd == "person" and args.action == "add":
            info = pod.add_person(args.name, passphrase)
            print(f"Person {info['name']!r} added" + (" with a passphrase." if passphrase else "."))
            return EXIT_OK
        if args.person is not None and not args.person.strip():
            names = ", ".join(p.name for p in pod.store.list_people())
            print(f"error: --person needs a name (people here: {names}).", file=sys.stderr)
            return EXIT_USAGE
        target = args.person if args.person is not None else pod.store.default_person().name
        me = pod.unlock(target, passphrase, by="the CLI")  # raises with a clear message when locked
        if args.cmd == "person" and args.action == "set-passphrase":
            new = sys.stdin.readline().rstrip("\n")
            me.set_passphrase(new, old=passphrase)
            print(f"{target} is now protected by a passphrase.")
            return EXIT_OK
        if args.cmd == "person" and args.action == "remove":
            return await _remove_person(me, args, passphrase)
        if args.cmd == "person" and args.action == "rename":
            name = me.rename(args.name)
            print(f"{target} is now called {name}" + (f": use --person {name!r} from now on." if args.person else "."))
            return EXIT_OK
        if args.cmd == "person":
            rows = me.people()
            if args.json:
                _print_json(rows)
            else:
                for r in rows:
                    print(f"{r['name']}{'  (passphrase)' if r['has_passphrase'] else ''}{'  *' if r['current'] else ''}"
                          f"{'  (being removed)' if r['removing'] else ''}")
            return EXIT_OK
        if args.cmd == "provider":
            return _provider(me, args)
        if args.cmd == "agent":
            if args.action == "profiles":
                profiles = me.profiles()
                if args.json:
                    _print_json(list(profiles.values()))
                else:
                    for name, p in profiles.items():
                        print(f"{name}\t{p['title']}: {p['role']}")
                return EXIT_OK
            if args.action == "delete":
                me.find_agent(args.name)
                if not args.yes:
                    print(f"error: deleting {args.name} removes its conversations and schedules for good; "
                          "add --yes to do it.", file=sys.stderr)
                    return EXIT_USAGE
                await me.delete_agent(args.name)
                print(f"Agent {args.name!r} deleted with its conversations and schedules.")
                return EXIT_OK
            if args.action == "edit":
                try:
                    safety = json.loads(args.safety) if args.safety else None
                except json.JSONDecodeError as exc:
                    print(f"error: --safety is not JSON ({exc}).", file=sys.stderr)
                    return EXIT_USAGE
                info = me.edit_agent(args.name, provider=args.provider, model=args.model, system=args.system,
                                      toolkits=_split(args.toolkits), fallbacks=_split(args.fallbacks), safety=safety)
                print(f"Agent {info['name']!r} updated.")
                return EXIT_OK
            if args.action == "add":
                info = me.add_agent(args.name, provider=args.provider, model=args.model, system=args.system,
                                     toolkits=_split(args.toolkits), profile=args.profile)
                print(f"Agent {info['name']!r} added" + (f" (provider {info['provider']})." if info["provider"] else
                      " without a provider: add one with `provider add` and `agent add --provider`."))
                return EXIT_OK
            rows = me.list_agents()
            if args.json:
                _print_json(rows)
            else:
                for r in rows:
                    print(f"{r['name']}\t{r['provider'] or '-'}\t{r['worker']['state']}")
            return EXIT_OK
        if args.cmd == "chat":
            return await _chat(me, args)
        if args.cmd == "models":
            if args.action == "set":
                me.set_role_model(args.role, args.model)
                print(f"The {args.role} role now uses {args.model}.")
                return await _reembed(me) if args.role == "embedding" else EXIT_OK
            info = me.models()
            if args.json:
                _print_json(info)
            else:
                for p in info["providers"]:
                    tools = "tools" if p["supports_tools"] else "no tools"
                    print(f"provider {p['name']}\t{p['kind']}\t{p['model'] or '-'}\t{tools}")
                for role, r in info["roles"].items():
                    where = f"same as {r['inherits']}" if "inherits" in r else (
                        "/".join(str(x) for x in (r["provider"], r.get("model")) if x) if r.get("provider") else
                        f"chosen by {r['shared_by']} for everyone ({r['model']})" if "shared_by" in r
                        else "not set")
                    print(f"role {role}\t{where}\t({r['source']})")
            return EXIT_OK
        if args.cmd == "memory":
            return await _memory(me, args)
        if args.cmd == "folder":
            return await _folder(me, args)
        if args.cmd == "mcp":
            if args.action == "add":
                argv = [a for a in args.argv if a != "--"]
                info = await me.mcp.add_server(me.person_id, args.name, command=argv or None, url=args.url)
                print(f"MCP server {info['name']!r} added; it lists: {', '.join(info['tools']) or 'no tools'}. "
                      f"Allow them for an agent with `mcp allow {info['name']} AGENT`.")
            elif args.action == "list":
                rows = me.mcp.servers(me.person_id)
                if args.json:
                    _print_json([{"name": r["name"], "transport": r["transport"],
                                  "tools": [t["name"] for t in r["tools"]]} for r in rows])
                else:
                    for r in rows:
                        print(f"{r['name']}\t{r['transport']}\t{', '.join(t['name'] for t in r['tools'])}")
            elif args.action == "allow":
                allowed = me.allow_mcp(args.agent, args.server, args.tool)
                print(f"{args.agent} may now use: {', '.join(allowed) or 'nothing'}")
            elif args.action == "refresh":
                print(", ".join(await me.mcp.refresh(me.person_id, args.name)))
            return EXIT_OK
        if args.cmd == "serve":
            from runtime_host import serve

            if args.new_token:
                print(serve.new_token(me))
                print("Keep this token: it is shown once. Only its hash is stored.", file=sys.stderr)
                return EXIT_OK
            await serve.serve(pod, args.host, args.port)
            return EXIT_OK
        if args.cmd == "tasks":
            rows = me.list_tasks(args.state)
            if args.json:
                _print_json(rows)
            else:
                for t in rows:
                    print(f"{t['id']}\t{t['state']}\t{t['creator']} -> {t['owner']}\t{t['title']}")
            return EXIT_OK
        if args.cmd == "task":
            out = await me.decide_task(args.task_id, args.action == "approve")
            print(f"Task {out['id']} is now {out['state']}.")
            if out["state"] == "active":
                run = me.turn_driver.active.get(out["turn_id"])
                if run is not None:
                    await run.future  # the receiving agent works while this command waits
            return EXIT_OK
        if args.cmd == "cards":
            rows = me.mail.cards(me.person_id)
            if args.json:
                _print_json(rows)
            else:
                from unseen import direction_shown, has_direction

                for c in rows:  # as the window's card shows it: a direction character written out (\u202e), not obeyed
                    state = "waiting" if c["state"] == "pending" else (
                        f"NOT SENT: {c['error']} (retry: `card retry {c['id']}`)")
                    hidden = [k for k in ("to", "subject", "body") if has_direction(c[k])]
                    warn = (f"\tHIDDEN DIRECTION CHARACTERS in its {', '.join(hidden)} (shown as \\u202e and the "
                            "like): approving sends them, and the words around them read in another order"
                            if hidden else "")
                    print(direction_shown(f"{c['id']}\t{c['to']}\t{c['subject']}\t{state}\t{c['why']}") + warn)
            return EXIT_OK
        if args.cmd == "rule-problems":
            problems = [{**p, "inbox": a.address} for a in me.mail.accounts(me.person_id)
                        for p in me.mail.rule_problems(a.id, me.person_id)]
            if args.json:
                _print_json(problems)
                return EXIT_OK
            print("\n".join(f"{p['inbox']}\t{p['text']}" for p in problems)
                  or "Your mail rules carried out everything they were asked to.")
            return EXIT_OK
        if args.cmd == "card":
            fn = {"approve": me.mail.approve, "reject": me.mail.reject, "retry": me.mail.retry}[args.action]
            out = await fn(args.card_id, me.person_id)
            print(f"Card {out['id']}: {out['state']}" + (f" ({out['error']})" if out.get("error") else ""))
            return EXIT_OK if out["state"] in ("sent", "rejected") else EXIT_FAILED
        if args.cmd == "schedule":
            return _schedule(me, args)
        if args.cmd == "tick":
            from datetime import UTC, datetime

            try:
                now = datetime.fromisoformat(args.now) if args.now else datetime.now(UTC)
            except ValueError:
                print(f"error: --now {args.now!r} is not an ISO time such as 2026-03-29T01:30:00+00:00.", file=sys.stderr)
                return EXIT_USAGE
            if now.tzinfo is None:
                print("error: --now needs a UTC offset (e.g. +00:00) so the instant is unambiguous.", file=sys.stderr)
                return EXIT_USAGE
            me.ensure_memory_timers()
            out = await me.tick(now)
            # wait for the turns it started, so the OS scheduler's run is complete when this exits
            for run in list(me.turn_driver.active.values()):
                await run.future
            _print_json(out)
            return EXIT_OK
        if args.cmd == "run":
            turn_id = me.create_background_run(args.agent, args.prompt)
            if args.detach:
                _detach(me, turn_id)
                print(turn_id)
                return EXIT_OK
            return await _run_turn_host(me, turn_id)
        if args.cmd == "run-turn":
            return await _run_turn_host(me, args.turn_id)
        if args.cmd == "runs":
            rows = me.runs()
            if args.json:
                _print_json(rows + [{**r, "origin": "schedule", "ledger": True} for r in me.schedule_ledger()])
            else:
                for r in rows:
                    print(f"{r['id']}\t{r['agent']}\t{r['origin']}\t{r['status']}\t{r['prompt'][:50]}")
            return EXIT_OK
        if args.cmd == "stop":
            if bool(args.turn_id) == bool(args.agent):
                print("error: name one turn (`stop TURN_ID`) or one agent (`stop --agent NAME`).", file=sys.stderr)
                return EXIT_USAGE
            outs = ([await me.stop_turn(args.turn_id, "you (CLI)")] if args.turn_id
                    else await me.stop_turns(args.agent, "you (CLI)"))
            if not outs:
                print(f"{args.agent} has no unfinished turn.")
            failed = False
            for out in outs:
                failed |= out["status"] in ("pending", "running")
                print(f"Turn {out['turn_id']}: {out['status']}" + (f" ({out['error']})" if out.get("error") else ""))
            return EXIT_FAILED if failed else EXIT_OK
        if args.cmd == "conversations":
            return await _conversations(me, args)
        if args.cmd == "turns":
            rows = me.turns(args.conversation)
            if args.json:
                _print_json(rows)
            else:
                for t in rows:
                    print(f"{t['id']}\t{t['status']}\t{t['model'] or '-'}\t{len(t['steps'])} steps\t"
                          f"{t['note'] or t['error'] or ''}")
            return EXIT_OK
    finally:
        await pod.close()
    return EXIT_USAGE


def _not_utf8(args: argparse.Namespace) -> str | None:
    """The first argument that is not UTF-8 text (a name from a Latin-1 terminal, an old drive or a zip made on
    Windows), shown with \\x escapes; None when all are."""
    for key, value in vars(args).items():
        if key == "message" and args.cmd == "chat":  # words, not a name: read as its bytes say (_message_text)
            continue
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str):
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    from runtime_host.folders import safe_name

                    return safe_name(v)
    return None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.cmd == "people":  # `people remove NAME` reads as well as `person remove NAME`
        args.cmd = "person"
    odd = _not_utf8(args)
    if odd is not None:
        print(f"error: '{odd}' is not UTF-8 text, and Hearth keeps names, paths and words as UTF-8. Type it in UTF-8 "
              "(or rename the file or folder to a UTF-8 name) and try again.", file=sys.stderr)
        return EXIT_USAGE
    if args.cmd == "transcribe":
        from runtime_host.speech.cli import run_transcribe

        with _printed_as_text():  # a received file's name is a stranger's text too
            return run_transcribe(args)
    from runtime_host.logs import setup_console_logging
    from runtime_host.store import StoreError
    from vault import VaultUnavailable

    with _printed_as_text():
        setup_console_logging()  # its log lines (which may quote a mail or a model) reach the terminal as text too
        try:
            return asyncio.run(_amain(args))
        except (StoreError, VaultUnavailable) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except sqlite3.DatabaseError as exc:  # a damaged database file (memory's catalog says which and what to do)
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_FAILED
        except KeyboardInterrupt:
            return 130
