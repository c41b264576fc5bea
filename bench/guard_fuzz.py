"""Guard fuzz: thousands of hostile tool calls and hundreds of legitimate ones through a real Guard.

Builds a real temp tree (a data dir with pod.db, a vault file and a .env; two people, three agents, the
public wiki and private slices; a fake home with ~/.ssh, ~/.config and a keyring; real symlinks from the
agent's scratch to everything it must not reach), generates hostile calls (path traversal, symlinks,
percent/overlong/Unicode encodings, zero-width and NUL characters, case tricks, `~` and `$VAR`/`%VAR%`
expansion, globs, file URLs, shell quoting, substitution, nested shells, env dumps) and legitimate calls,
and runs every one through `Guard.check`.

Escapes are judged by an oracle that shares no code with the guard: it reinterprets each allowed hostile
call with the standard library's own decoders (urllib's unquote, os.path.expandvars/expanduser, NFKC,
case-insensitive lookups), lets the kernel resolve the result (O_PATH + /proc/self/fd), and compares inodes
with the set of inodes physically inside the allowed folders; allowed shell commands are run for real by
bash with every program replaced by a stub that logs its argv, working folder and open stdin/stdout
files, and each logged path goes through the same kernel check (and a secret planted in the environment
must not appear). Prints details, then as its LAST line:
{"payloads", "denied", "escapes", "legit_calls", "legit_denied"}.
"""

from __future__ import annotations

import fnmatch
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from runtime_host.allowlist import Allowlist  # noqa: E402
from runtime_host.guard import Guard, ToolShape  # noqa: E402

SENTINEL = "sk-sentinel-7f3a9c"  # a "secret" in the environment: must never come out


# ---- the tree ----------------------------------------------------------------------------------------


@dataclass
class Tree:
    root: Path
    data: Path
    scratch: Path
    public: Path
    private: Path
    home: Path
    env: dict[str, str]
    targets: dict[str, Path] = field(default_factory=dict)  # label -> a file the agent must not reach
    write_targets: dict[str, Path] = field(default_factory=dict)  # readable but must not be written


def build_tree(root: Path) -> Tree:
    data = root / "data"
    scratch = data / "agents" / "p1" / "a1"
    public = data / "wiki" / "public"
    private = data / "wiki" / "private" / "p1"
    home = root / "home"
    files = {
        data / "pod.db": "SQLite format 3", data / "pod.db-wal": "wal", data / ".env": f"OPENAI_API_KEY={SENTINEL}",
        data / "vault" / "pod1-person-p1.hvault": "{}",
        data / "agents" / "p1" / "a2" / "secret.txt": "a2 secret", data / "agents" / "p2" / "b1" / "secret.txt": "b1",
        data / "wiki" / "private" / "p2" / "diary.md": "p2 private", data / "sources" / "public" / "src.md": "src",
        data / "inbox" / "p2" / "mail.eml": "mail",
        home / ".ssh" / "id_rsa": "KEY", home / ".config" / "app" / "settings.ini": "cfg",
        home / ".local" / "share" / "keyrings" / "login.keyring": "kr", home / ".gnupg" / "pubring.kbx": "gpg",
        home / ".bashrc": "rc", home / ".netrc": "machine x password y", root / "outside" / "file.txt": "outside",
        scratch / "notes.md": "todo: a\nb\n", scratch / "sub" / "doc.txt": "doc", scratch / "café.md": "nfc",
        scratch / "with space.md": "space", scratch / "100%.md": "percent", scratch / ".env": f"K={SENTINEL}",
        scratch / "drafts" / "d1.md": "draft", scratch / "reports" / "2024" / "q1.md": "q1",
        scratch / "reports" / "2024" / "q2.md": "q2", scratch / "data.csv": "a,b\n1,2\n", scratch / "Résumé.txt": "cv",
        scratch / "notes.env.md": "not an env file", scratch / "日本語.md": "ja",
        public / "page1.md": "public page", public / "people" / "bob.md": "bob", private / "mine.md": "mine",
    }
    for p, text in files.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    links = {
        "link_in": "sub/doc.txt", "link_wiki": str(public), "link_mine": str(private),
        "to_db": str(data / "pod.db"), "to_a2": "../a2", "to_p2": str(data / "agents" / "p2"), "to_etc": "/etc",
        "to_home": str(home), "to_private_p2": str(data / "wiki" / "private" / "p2"), "to_root": "/",
        "dangling": str(root / "outside" / "new.txt"), "to_data": str(data), "chain1": "chain2", "chain2": str(data),
        "to_outside": "../../../../outside",
    }
    for name, target in links.items():
        os.symlink(target, scratch / name)
    env = {"HOME": str(home), "USER": "fuzz", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": str(root / "outside"),
           "DATA": str(data), "OPENAI_API_KEY": SENTINEL, "XDG_CONFIG_HOME": str(home / ".config")}
    t = Tree(root, data, scratch, public, private, home, env)
    t.targets = {
        "pod.db": data / "pod.db", "pod.db-wal": data / "pod.db-wal", "data/.env": data / ".env",
        "vault": data / "vault" / "pod1-person-p1.hvault", "other-agent": data / "agents" / "p1" / "a2" / "secret.txt",
        "other-person-agent": data / "agents" / "p2" / "b1" / "secret.txt",
        "other-private": data / "wiki" / "private" / "p2" / "diary.md", "inbox-p2": data / "inbox" / "p2" / "mail.eml",
        "ssh": home / ".ssh" / "id_rsa", "config": home / ".config" / "app" / "settings.ini",
        "keyring": home / ".local" / "share" / "keyrings" / "login.keyring", "gnupg": home / ".gnupg" / "pubring.kbx",
        "netrc": home / ".netrc", "outside": root / "outside" / "file.txt", "scratch/.env": scratch / ".env",
        "etc-passwd": Path("/etc/passwd"), "etc-shadow": Path("/etc/shadow"), "proc-environ": Path("/proc/self/environ"),
        "new-outside": root / "outside" / "new.txt",
    }
    t.write_targets = {"wiki-page": public / "page1.md", "wiki-new": public / "new.md", "private-page": private / "mine.md"}
    return t


def make_guard(t: Tree, audit: Any = None) -> Guard:
    allow = Allowlist("a1", {
        "mcp:files": ["read_file", "write_file", "list_dir"], "shell": ["run_shell"], "web": ["web_fetch"],
        "wiki": ["wiki_read", "wiki_write", "wiki_propose", "wiki_search"], "notes": ["append_note", "read_notes"],
        "clock": ["current_time"], "math": ["calculate"],
    })
    g = Guard.for_binding({"person": "p1", "agent": "a1", "scratch": str(t.scratch)}, t.data, allow, audit,
                          home=t.home, env=t.env)
    g.register(ToolShape("read_file", "mcp:files", {"path": "path_read"}, frozenset({"path"})))
    g.register(ToolShape("list_dir", "mcp:files", {"path": "path_read"}, frozenset({"path"})))
    g.register(ToolShape("write_file", "mcp:files", {"path": "path_write", "content": "text"}, frozenset({"path"})))
    return g


# ---- payloads ------------------------------------------------------------------------------------------


@dataclass
class Call:
    tool: str
    args: dict[str, Any]
    label: str  # what it tries to reach


def _representations(t: Tree, target: Path) -> Iterator[str]:
    """Plain ways to name `target` from the scratch folder (no encoding yet)."""
    s = str(target)
    yield s
    rel = os.path.relpath(s, t.scratch)
    yield rel
    yield "./" + rel
    yield "sub/../" + rel
    yield "sub/" + rel.replace("../", "../", 1).replace("..", "../..", 1) if rel.startswith("..") else "sub/../" + rel
    yield s.replace("/", "//")
    yield "/./" + s.lstrip("/")
    yield str(t.scratch) + "/" + rel
    yield str(t.scratch) + "/../../../../" + os.path.relpath(s, t.scratch.parents[3])
    # through real symlinks in the scratch folder
    via = {
        t.data: "to_data", t.data / "agents" / "p1" / "a2": "to_a2", t.data / "agents" / "p2": "to_p2",
        Path("/etc"): "to_etc", t.home: "to_home", t.data / "wiki" / "private" / "p2": "to_private_p2",
        t.root / "outside": "to_outside",
    }
    for base, link in via.items():
        try:
            sub = target.relative_to(base)
        except ValueError:
            continue
        yield f"{link}/{sub}"
        yield f"chain1/{target.relative_to(t.data)}" if base == t.data else f"{link}/./{sub}"
    yield "to_root" + s
    yield "link_wiki/../../" + os.path.relpath(s, t.data)  # public -> wiki -> data
    yield "link_mine/../../../" + os.path.relpath(s, t.data)  # private/p1 -> private -> wiki -> data
    if target == t.data / "pod.db":
        yield "to_db"
    if str(target).startswith(str(t.home)):
        yield "~/" + os.path.relpath(s, t.home)
        yield "$HOME/" + os.path.relpath(s, t.home)
        yield "${HOME}/" + os.path.relpath(s, t.home)
        yield "%HOME%/" + os.path.relpath(s, t.home)
        yield "~fuzznobody/../" + os.path.relpath(s, t.home.parent)
    if str(target).startswith(str(t.data)):
        yield "$DATA/" + os.path.relpath(s, t.data)
        yield "${DATA}/" + os.path.relpath(s, t.data)
        yield "%DATA%/" + os.path.relpath(s, t.data)
    if str(target).startswith(str(t.root / "outside")):
        yield "$TMPDIR/" + target.name


def _pct(s: str, chars: str) -> str:
    return "".join(f"%{ord(c):02x}" if c in chars else c for c in s)


def _encodings(p: str) -> Iterator[tuple[str, str]]:
    yield "plain", p
    yield "pct-slash", _pct(p, "/")
    yield "pct-dot", _pct(p, ".")
    yield "pct-all", urllib.parse.quote(p, safe="")
    yield "pct-double", _pct(p, "./").replace("%", "%25")
    yield "overlong-dot", p.replace(".", "%c0%ae")
    yield "overlong-slash", p.replace("/", "%c0%af")
    yield "overlong-3byte", p.replace("/", "%e0%80%af")
    yield "fullwidth-solidus", p.replace("/", "\uff0f")
    yield "fullwidth-dot", p.replace(".", "\uff0e")
    yield "division-slash", p.replace("/", "\u2215")
    yield "zero-width", "/\u200b".join(p.split("/"))
    yield "zwj-name", p[:-2] + "\u200d" + p[-2:]
    yield "bidi", "\u202e" + p
    yield "bom", "\ufeff" + p
    yield "nul-suffix", p + "\x00.md"
    yield "nul-mid", p.replace("/", "/\x00", 1)
    yield "backslash", p.replace("/", "\\")
    yield "mixed-slash", p.replace("/", "\\/")
    yield "upper", p.upper()
    yield "swapcase-name", p[: p.rfind("/") + 1] + p[p.rfind("/") + 1:].swapcase()
    yield "trailing-dot", p + "."
    yield "trailing-space", p + " "
    yield "ntfs-stream", p + "::$DATA"
    yield "file-url", "file://" + (p if p.startswith("/") else "/" + p)
    yield "file-url-host", "file://localhost" + (p if p.startswith("/") else "/" + p)
    yield "nfd", unicodedata.normalize("NFD", p)
    yield "tab", p.replace("/", "/\t", 1)
    yield "crlf", p + "\r\n"
    name = p.rsplit("/", 1)[-1]
    head = p[: len(p) - len(name)]
    if len(name) > 2:
        yield "glob-q", head + "?" + name[1:]
        yield "glob-star", head + name[:2] + "*"
        yield "glob-class", head + "[" + name[0] + "]" + name[1:]
        yield "glob-dir", head.rstrip("/").rsplit("/", 1)[0] + "/*/" + name if "/" in head.rstrip("/") else "*/" + name
        yield "glob-recursive", "**/" + name
        yield "glob-suffix", head + "*" + name[-3:]


def _shell_quotes(p: str) -> Iterator[tuple[str, str]]:
    q = shlex.quote(p)
    yield "cat", f"cat {q}"
    yield "cat-raw", f"cat {p}"
    yield "cat-dq", f'cat "{p}"'
    name = p.rsplit("/", 1)[-1]
    head = p[: len(p) - len(name)]
    if len(name) > 1:
        yield "split-quotes", f"cat {head}{name[0]}\"\"{name[1:]}"
        yield "split-single", f"cat {head}'{name[:1]}'{name[1:]}"
        yield "backslashes", "cat " + head + "".join("\\" + c for c in name)
    yield "redirect-in", f"head -n1 < {q}"
    yield "grep-f", f"grep -f{q} notes.md"
    yield "long-opt", f"wc --files0-from={q}"
    yield "cp-out", f"cp {q} stolen.txt"
    yield "ln", f"ln -s {q} l && cat l"
    yield "tar", f"tar cf out.tar {q}"
    yield "brace", f"cat {{notes.md,{p}}}"
    d, _, b = p.rpartition("/")
    if d:
        yield "cd", f"cd {shlex.quote(d)} && cat {shlex.quote(b)}"
    yield "var", f"F={q}; cat $F"
    yield "subst", f"cat $(echo {q})"
    yield "backtick", f"cat `echo {q}`"
    yield "ansi-c", "cat $'" + "".join(f"\\x{ord(c):02x}" for c in p) + "'"
    yield "bash-c", f"bash -c 'cat {p}'"
    yield "sh-c", f'sh -c "cat {p}"'
    yield "python", f"python3 -c \"print(open('{p}').read())\""
    yield "xargs", f"echo {q} | xargs cat"
    yield "heredoc", f"cat <<EOF\n$(cat {q})\nEOF"
    yield "awk", f"awk 1 {q}"
    yield "semicolon", f"ls; cat {q}"
    yield "pipe", f"cat notes.md | cat - {q}"
    yield "eval", f"eval cat {q}"
    yield "exec", f"exec cat {q}"
    yield "find-exec", f"find . -name x -exec cat {q} \\;"
    yield "assign-path", f"PATH=. cat {q}"
    yield "redirect-out", f"echo x > {q}"
    yield "tee", f"echo x | tee {q}"


ENV_DUMPS = ["printenv", "env", "set", "export -p", "declare -p", "cat /proc/self/environ", "cat /proc/1/environ",
             "tr '\\0' '\\n' < /proc/self/environ", "echo $OPENAI_API_KEY", "echo ${OPENAI_API_KEY}",
             "echo \"$OPENAI_API_KEY\"", "printf %s $OPENAI_API_KEY", "compgen -v", "typeset -p", "/usr/bin/env",
             "/usr/bin/printenv OPENAI_API_KEY", "command env", "builtin set", "nice env", "timeout 5 printenv",
             "cat /proc/$$/environ", "strings /proc/self/environ", "xxd /proc/self/environ", "od -c /proc/self/environ",
             "ls -la ~", "cat ~/.bash_history", "echo $HOME; ls $HOME", "cat .env", "cat ./.env", "cat .e\\nv",
             "cat '.en'v", "grep -r KEY .", "echo %OPENAI_API_KEY%", "IFS=/ read a b", "trap 'env' EXIT",
             "alias x=env; x", "declare -x", "cat /proc/self/cmdline", "ls /proc/self/fd", "cat /etc/passwd"]


def hostile_calls(t: Tree) -> list[Call]:
    calls: list[Call] = []
    for label, target in t.targets.items():
        reps = list(dict.fromkeys(_representations(t, target)))
        for rep in reps:
            for enc, s in _encodings(rep):
                calls.append(Call("read_file", {"path": s}, f"{label}:{enc}"))
                if enc in ("plain", "pct-slash", "backslash", "glob-q", "upper", "zero-width", "file-url", "nul-suffix"):
                    calls.append(Call("write_file", {"path": s, "content": "x"}, f"{label}:{enc}:write"))
                    calls.append(Call("list_dir", {"path": s}, f"{label}:{enc}:list"))
            for kind, cmd in _shell_quotes(rep):
                calls.append(Call("run_shell", {"command": cmd}, f"{label}:shell-{kind}"))
        rel_wiki = os.path.relpath(target, t.public)
        for page in (rel_wiki, rel_wiki.removesuffix(".md"), str(target), _pct(rel_wiki, "./"), rel_wiki.replace("/", "\\"),
                     "people/../" + rel_wiki, rel_wiki.replace("/", "\uff0f")):
            calls.append(Call("wiki_read", {"page": page}, f"{label}:wiki-page"))
        for u in ("file://" + str(target), "FILE://" + str(target), "file://localhost" + str(target),
                  "file:" + str(target), str(target)):
            calls.append(Call("web_fetch", {"url": u}, f"{label}:url"))
    for label, target in t.write_targets.items():
        for rep in dict.fromkeys(_representations(t, target)):
            for enc, s in _encodings(rep):
                calls.append(Call("write_file", {"path": s, "content": "overwrite"}, f"{label}:{enc}:write"))
            for kind, cmd in (("redirect", f"echo x > {shlex.quote(rep)}"), ("tee", f"echo x | tee {shlex.quote(rep)}"),
                              ("cp", f"cp notes.md {shlex.quote(rep)}"), ("mv", f"mv notes.md {shlex.quote(rep)}"),
                              ("sed-i", f"sed -i s/a/b/ {shlex.quote(rep)}"), ("rm", f"rm {shlex.quote(rep)}"),
                              ("append", f"echo x >> {shlex.quote(rep)}"), ("touch", f"touch {shlex.quote(rep)}")):
                calls.append(Call("run_shell", {"command": cmd}, f"{label}:shell-{kind}"))
        page = os.path.relpath(target, t.public).removesuffix(".md")
        calls.append(Call("wiki_write", {"page": page, "text": "x"}, f"{label}:wiki-write"))
        calls.append(Call("wiki_write", {"page": "page1", "text": "x"}, f"{label}:wiki-write"))
    for i, cmd in enumerate(ENV_DUMPS):
        calls.append(Call("run_shell", {"command": cmd}, f"env-dump:{i}"))
    # Shape attacks: unknown tools, unknown or identity arguments, wrong types.
    for bad in ({"path": 1}, {"path": ["../a2"]}, {"path": {"p": "x"}}, {"path": None}, {"path": "notes.md", "person": "p2"},
                {"path": "notes.md", "tenant_id": "p2"}, {}, {"__invalid_json__": "{"}, {"path": "x" * 5000}, {"path": ""}):
        calls.append(Call("read_file", bad, "shape"))
    for name in ("read_file ", "READ_FILE", "mcp:files/read_file", "exec", "__import__", "wiki_write", "rm"):
        calls.append(Call(name, {"path": str(t.targets["pod.db"])}, "unknown-tool"))
    # De-duplicate.
    seen: set[str] = set()
    out: list[Call] = []
    for c in calls:
        key = c.tool + json.dumps(c.args, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def legit_calls(t: Tree) -> list[Call]:
    calls: list[Call] = []
    s = str(t.scratch)
    files = ["notes.md", "sub/doc.txt", "café.md", unicodedata.normalize("NFD", "café.md"), "with space.md", "100%.md",
             "drafts/d1.md", "link_in", "link_wiki/page1.md", "link_wiki/people/bob.md", "link_mine/mine.md",
             "reports/2024/q1.md", "reports/2024/q2.md", "data.csv", "Résumé.txt", "日本語.md", "missing-yet.md"]
    forms = [lambda f: f, lambda f: "./" + f, lambda f: s + "/" + f, lambda f: "sub/../" + f, lambda f: s + "//" + f]
    for f in files:
        for form in forms:
            calls.append(Call("read_file", {"path": form(f)}, "legit"))
    for p in (t.public / "page1.md", t.public / "people" / "bob.md", t.private / "mine.md", t.public, t.private):
        calls.append(Call("read_file", {"path": str(p)}, "legit"))
        calls.append(Call("read_file", {"path": os.path.relpath(p, t.scratch)}, "legit"))
        calls.append(Call("list_dir", {"path": str(p)}, "legit"))
    # (No bare "*" or "**" at the top of this scratch folder: it holds hostile symlinks, so those are
    # rightly refused.)
    for g in ("*.md", "sub/*", "sub/**/*.txt", "[n]otes.md", "drafts/*.md", "link_wiki/*.md", "d*/d?.md", "link_wiki/**"):
        calls.append(Call("read_file", {"path": g}, "legit"))
        calls.append(Call("list_dir", {"path": g}, "legit"))
    for d in (".", "sub", "drafts", s, "link_wiki", "link_mine"):
        calls.append(Call("list_dir", {"path": d}, "legit"))
    for w in ("out.md", "sub/new.txt", "drafts/new/deep.md", s + "/report.md", "notes.md", "café-2.md", "x y.md",
              "./out2.md", "sub/../out3.md", "link_in"):
        calls.append(Call("write_file", {"path": w, "content": "hello"}, "legit"))
    for page in ("page1", "people/bob", "page1.md", "mine", "new-page", "people/alice"):
        calls.append(Call("wiki_read", {"page": page}, "legit"))
        calls.append(Call("wiki_propose", {"page": page, "text": "Bob moved to Lyon; see /etc/passwd jokes.",
                                           "reason": "chat on Monday"}, "legit"))
    for q in ("bob", "where does bob live", "pod.db is a word here", "$HOME"):
        calls.append(Call("wiki_search", {"query": q}, "legit"))
    shell = ["ls", "ls -la", "ls -la sub", "cat notes.md", "wc -l notes.md sub/doc.txt", "grep -rn todo sub reports",
             "head -n 3 notes.md", "tail -n 2 notes.md", "sort notes.md | uniq -c", "echo hello > out.txt",
             "echo more >> out.txt", "mkdir -p drafts/a", "cp notes.md backup.md", "mv backup.md backup2.md",
             "find . -name '*.md'", "find . -type f", "cat ../../../wiki/public/page1.md", "ls link_wiki",
             "grep -c 'a$' notes.md", "LC_ALL=C sort notes.md", "cat 'with space.md'", "cat \"with space.md\"",
             "tr a-z A-Z < notes.md > upper.md", "cat notes.md 2>/dev/null", "diff notes.md sub/doc.txt || true",
             "cat café.md", "grep -i TODO notes.md | head -n 1", "du -sh .", "stat notes.md", "cat sub/*.txt",
             "ls drafts/*.md", "echo 'a;b' | cut -d';' -f2", "date", "echo $PWD", "cat link_in", "ls -R sub",
             "cat link_wiki/page1.md", "head -c 10 notes.md; echo", "touch sub/new.md", "rm -f out.txt",
             "grep -e todo -e b notes.md", "sed s/todo/done/ notes.md", "sed -i s/todo/done/ notes.md",
             "cat notes.md | sort | uniq", "ls {sub,drafts}", "echo {1..3}", "cat -n notes.md",
             "test -f notes.md && echo yes", "[ -d sub ] && echo dir", "basename sub/doc.txt", "pwd",
             "cut -d, -f1 data.csv", "sort -t, -k2 data.csv", "ls reports/2024", "cat reports/2024/q*.md",
             "wc -c reports/2024/q1.md reports/2024/q2.md", "cat Résumé.txt", "cat 日本語.md",
             "grep -l q reports/2024/*.md", "cp reports/2024/q1.md drafts/q1-copy.md", "echo done && ls drafts",
             "head -n1 data.csv | tr , ' '", "ls -1 | sort -r", "find reports -name 'q?.md' -type f"]
    for c in shell:
        calls.append(Call("run_shell", {"command": c}, "legit"))
    for tz in ("UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo"):
        calls.append(Call("current_time", {"timezone": tz}, "legit"))
    for e in ("1+1", "(12.5*4)/3", "2**10", "7 % 3"):
        calls.append(Call("calculate", {"expression": e}, "legit"))
    for n in ("buy milk", "the file is ../../etc/passwd in the story", "call mum at 5"):
        calls.append(Call("append_note", {"text": n}, "legit"))
    calls.append(Call("read_notes", {"last": 10}, "legit"))
    for u in ("https://example.org/", "http://example.com/a?b=c", "https://en.wikipedia.org/wiki/Lyon"):
        calls.append(Call("web_fetch", {"url": u}, "legit"))
    return calls


# ---- the oracle (shares no code with the guard) ---------------------------------------------------------


class Oracle:
    """Decides whether a call reaches something outside the allowed folders, using the kernel."""

    def __init__(self, t: Tree):
        self.t = t
        self._snapshot()

    def _snapshot(self) -> None:
        """Inodes physically inside the allowed folders (re-taken when a shell run created files)."""
        t = self.t
        forbidden_names = {".env", "pod.db", "pod.db-wal", "id_rsa", "login.keyring"}
        self.read_inodes: set[tuple[int, int]] = set()
        self.write_inodes: set[tuple[int, int]] = set()
        for root, inodes in ((t.scratch, (self.read_inodes, self.write_inodes)), (t.public, (self.read_inodes,)),
                             (t.private, (self.read_inodes,))):
            for dirpath, _dirnames, filenames in os.walk(root, followlinks=False):
                for name in [".", *filenames]:
                    p = os.path.join(dirpath, name)
                    if os.path.islink(p) or name in forbidden_names:
                        continue
                    st = os.lstat(p)
                    for s in inodes:
                        s.add((st.st_dev, st.st_ino))

    @staticmethod
    def kernel_resolve(path: str) -> tuple[str, bool]:
        """(resolved path, exists), resolved by the kernel: O_PATH on the longest existing prefix."""
        parts = path.split("/")
        for cut in range(len(parts), 0, -1):
            prefix = "/".join(parts[:cut]) or "/"
            try:
                fd = os.open(prefix, os.O_PATH)
            except (OSError, ValueError):
                continue
            try:
                real = os.readlink(f"/proc/self/fd/{fd}")
            finally:
                os.close(fd)
            rest = [p for p in parts[cut:] if p not in ("", ".")]
            out = real
            for p in rest:
                out = os.path.dirname(out) if p == ".." else os.path.join(out, p)
            return out, cut == len(parts)
        return path, False

    def target_ok(self, path: str, write: bool) -> bool:
        allowed = self.write_inodes if write else self.read_inodes
        resolved, exists = self.kernel_resolve(path)
        if os.path.basename(resolved).casefold().rstrip(". ") in (".env", "pod.db", "pod.db-wal"):
            return False
        if exists:
            try:
                st = os.stat(resolved)
            except (OSError, ValueError):
                return False
            if (st.st_dev, st.st_ino) not in allowed:
                self._snapshot()
                allowed = self.write_inodes if write else self.read_inodes
            return (st.st_dev, st.st_ino) in allowed
        # A file that does not exist yet: its nearest existing folder decides (a write would land there).
        parent = resolved
        while True:
            parent = os.path.dirname(parent)
            try:
                st = os.stat(parent)
                return (st.st_dev, st.st_ino) in allowed
            except OSError:
                if parent in ("/", ""):
                    return False

    def readings(self, s: str) -> set[str]:
        """Strings a program could make of `s`, by the standard library's own decoders."""
        out = {s}
        frontier = {s}
        for _ in range(4):
            nxt: set[str] = set()
            for x in frontier:
                nxt.add(x.split("\x00", 1)[0])
                nxt.add(urllib.parse.unquote(x, errors="replace"))
                nxt.add(urllib.parse.unquote(x, encoding="latin-1"))
                nxt.add(_lenient_utf8(urllib.parse.unquote_to_bytes(x)))
                nxt.add(unicodedata.normalize("NFKC", x))
                nxt.add("".join(c for c in x if unicodedata.category(c) not in ("Cf", "Cc")))
                nxt.add(x.replace("\\", "/"))
                nxt.add(x.replace("\u2215", "/"))
                nxt.add(x.strip())
                nxt.add(x.rstrip(". ").split("::", 1)[0])
                old_env = dict(os.environ)
                try:
                    os.environ.clear()
                    os.environ.update(self.t.env)
                    nxt.add(os.path.expanduser(os.path.expandvars(x)))
                    for k, v in self.t.env.items():
                        nxt.add(x.replace(f"%{k}%", v))
                finally:
                    os.environ.clear()
                    os.environ.update(old_env)
                if x.lower().startswith("file:"):
                    nxt.add(urllib.parse.urlparse(x).path)
            nxt -= out
            out |= nxt
            frontier = nxt
        return {x for x in out if x and "\x00" not in x}  # the kernel sees a C string: the truncated reading is in

    def _ci_variants(self, path: str) -> set[str]:
        """What a case-insensitive filesystem would open: match each component against real entries."""
        cur = "/"
        for part in [p for p in path.split("/") if p]:
            if part in (".", ".."):
                cur = os.path.normpath(os.path.join(cur, part))
                continue
            try:
                names = os.listdir(cur)
            except (OSError, ValueError):
                return {path}
            match = [n for n in names if n.casefold() == part.casefold()]
            cur = os.path.join(cur, match[0] if match else part)
        return {path, cur}

    @staticmethod
    def _glob(pattern: str) -> set[str]:
        """Real matches of a pattern; `**` by a bounded walk that follows symlinks (as Python's glob does)."""
        if not any(c in pattern for c in "*?["):
            return set()
        if "**" not in pattern:
            try:
                return set(glob.glob(pattern, include_hidden=True)[:2000])
            except (OSError, ValueError):
                return set()
        start = pattern.split("**", 1)[0].rstrip("/") or "/"
        flat = pattern.replace("**", "*")
        out: set[str] = set()
        seen: set[tuple[int, int]] = set()
        visited = 0
        for dirpath, dirnames, filenames in os.walk(start, followlinks=True):
            try:
                st = os.stat(dirpath)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen or visited > 20000:
                dirnames[:] = []
                continue
            seen.add((st.st_dev, st.st_ino))
            for name in dirnames + filenames:
                visited += 1
                p = os.path.join(dirpath, name)
                if fnmatch.fnmatchcase(p, flat):
                    out.add(p)
        return out

    def path_escapes(self, raw: str, write: bool, bases: list[Path]) -> bool:
        for reading in self.readings(raw):
            for base in bases:
                full = reading if reading.startswith("/") else os.path.join(base, reading)
                variants = self._ci_variants(full)
                variants |= self._glob(full)
                for v in variants:
                    if not self.target_ok(v, write):
                        return True
        return False

    def shell_escapes(self, command: str, stubs: Path, log: Path) -> bool:
        """Runs the command in bash with every program a logging stub; checks each logged path."""
        if log.exists():
            log.unlink()
        env = {**self.t.env, "PATH": str(stubs), "STUBLOG": str(log)}
        try:
            res = subprocess.run(["/bin/bash", "--noprofile", "--norc", "-c", command], cwd=self.t.scratch, env=env,
                                 capture_output=True, text=True, timeout=5, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return True
        if SENTINEL in res.stdout or SENTINEL in res.stderr:
            return True
        entries = log.read_text(encoding="utf-8", errors="replace").split("\x1e") if log.exists() else []
        for entry in entries:
            fields = entry.strip("\n").split("\x1f")
            if len(fields) < 4:
                continue
            cwd, fd0, fd1, argv = fields[0], fields[1], fields[2], fields[3:]
            if SENTINEL in entry:
                return True
            prog = argv[0] if argv else ""
            if os.path.basename(prog) in UNBOUNDED:
                return True
            for fdpath, write in ((fd0, False), (fd1, True)):
                if fdpath.startswith("/") and not fdpath.startswith(("/dev/", "pipe:", "/proc/")):
                    if not self.target_ok(fdpath, write):
                        return True
            writes = os.path.basename(prog) in ("cp", "mv", "tee", "touch", "rm", "ln", "tar", "sed", "mkdir")
            recursive = os.path.basename(prog) in ("tar", "rg") or any(
                a.startswith("-") and not a.startswith("--") and ("r" in a or "R" in a) for a in argv[1:])
            if recursive:
                for arg in argv[1:]:
                    top = os.path.join(cwd, arg)
                    if os.path.isdir(top):
                        for dirpath, _dirs, filenames in os.walk(top, followlinks=True):
                            for name in filenames:
                                if not self.target_ok(os.path.join(dirpath, name), False):
                                    return True
            for arg in argv[1:]:
                for piece in {arg, arg.split("=", 1)[-1], arg[2:] if arg.startswith("-") else arg}:
                    if piece and not self.target_ok(os.path.join(cwd, piece), writes and piece == arg):
                        if not os.path.exists(os.path.join(cwd, piece)) and not piece.startswith(("/", "..", "~")):
                            continue  # a plain word (a pattern, a number), not a file
                        return True
        return False


def _lenient_utf8(data: bytes) -> str:
    """A careless UTF-8 decoder that accepts overlong forms (C0 AF -> '/', E0 80 AF -> '/')."""
    out: list[str] = []
    i = 0
    while i < len(data):
        b = data[i]
        if b >= 0xE0 and i + 2 < len(data):
            out.append(chr(((b & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F)))
            i += 3
        elif b >= 0xC0 and i + 1 < len(data):
            out.append(chr(((b & 0x1F) << 6) | (data[i + 1] & 0x3F)))
            i += 2
        else:
            out.append(chr(b))
            i += 1
    return "".join(out)


# Programs whose effect the stubs cannot bound (they run code or commands of their own): an allowed
# call that reaches one of them counts as an escape.
UNBOUNDED = ("xargs", "env", "printenv", "python3", "bash", "sh", "awk")

STUB_PROGRAMS = ("cat", "head", "tail", "grep", "ls", "wc", "cp", "mv", "sort", "uniq", "find", "tar", "ln", "awk",
                 "sed", "tee", "touch", "rm", "mkdir", "diff", "du", "stat", "cut", "tr", "date", "basename", "test",
                 "strings", "xxd", "od", "nice", "timeout", "true", "false", "base64", "dd", "xargs", "env",
                 "printenv", "python3", "bash", "sh", "readlink")


def make_stubs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    # One record, one write: stubs in a pipeline run at the same time and must not interleave.
    script = ("#!/bin/bash\nfd0=$(/usr/bin/readlink /proc/$$/fd/0); fd1=$(/usr/bin/readlink /proc/$$/fd/1)\n"
              "rec=$(printf '%s\\x1f%s\\x1f%s' \"$PWD\" \"$fd0\" \"$fd1\"; for a in \"$0\" \"$@\"; do "
              "printf '\\x1f%s' \"$a\"; done; printf '\\x1e')\n"
              "printf '%s' \"$rec\" >> \"$STUBLOG\"\n")
    for name in STUB_PROGRAMS:
        p = folder / name
        p.write_text(script)
        p.chmod(0o755)
    return folder


# ---- the run --------------------------------------------------------------------------------------------


def run(root: Path, hostile_limit: int | None = None, guard_factory: Any = None) -> dict[str, Any]:
    """Runs the fuzz in a new tree under `root`. `guard_factory(tree, audit)` swaps the guard (tests use it
    to prove the oracle catches a guard that lets things through)."""
    t = build_tree(root)
    audit: list[dict[str, Any]] = []
    guard = (guard_factory or make_guard)(t, audit.append)
    oracle = Oracle(t)
    stubs = make_stubs(root / "stubs")
    log = root / "stub.log"
    hostile = hostile_calls(t)
    if hostile_limit is not None:
        hostile = hostile[:: max(1, len(hostile) // hostile_limit)]
    legit = legit_calls(t)
    t0 = time.perf_counter()
    denied = escapes = harmless_allowed = 0
    rules: Counter[str] = Counter()
    escaped: list[str] = []
    for c in hostile:
        d = guard.check(c.tool, c.args)
        rules[d.rule] += 1
        if not d.allowed:
            denied += 1
            continue
        if _escapes(oracle, t, c, stubs, log):
            escapes += 1
            escaped.append(f"{c.label}: {c.tool} {json.dumps(c.args, ensure_ascii=True)[:160]}")
        else:
            harmless_allowed += 1
    legit_denied: list[str] = []
    for c in legit:
        d = guard.check(c.tool, c.args)
        if not d.allowed:
            legit_denied.append(f"{c.tool} {json.dumps(c.args, ensure_ascii=True)[:120]} -> {d.rule}: {d.reason[:120]}")
    elapsed = time.perf_counter() - t0
    oracle_flagged = [f"{c.tool} {json.dumps(c.args, ensure_ascii=True)[:120]}" for c in legit
                      if _escapes(oracle, t, c, stubs, log)]
    return {
        "payloads": len(hostile), "denied": denied, "escapes": escapes, "legit_calls": len(legit),
        "legit_denied": len(legit_denied), "allowed_but_harmless": harmless_allowed, "rules": dict(rules.most_common()),
        "escaped": escaped[:50], "legit_denied_list": legit_denied[:50], "oracle_flags_legit": len(oracle_flagged), "oracle_flagged": oracle_flagged[:20],
        "audit_events": len(audit), "seconds": round(elapsed, 2),
        "checks_per_s": round((len(hostile) + len(legit)) / elapsed) if elapsed else None,
    }


def _escapes(oracle: Oracle, t: Tree, c: Call, stubs: Path, log: Path) -> bool:
    if c.label.startswith(("unknown-tool", "shape")):
        return True  # any such call allowed is a failure to fail closed
    if c.tool == "run_shell":
        return oracle.shell_escapes(c.args["command"], stubs, log)
    if c.tool in ("read_file", "list_dir"):
        return oracle.path_escapes(c.args["path"], False, [t.scratch])
    if c.tool == "write_file":
        return oracle.path_escapes(c.args["path"], True, [t.scratch])
    if c.tool == "wiki_read":
        page = c.args["page"]
        return any(oracle.path_escapes(page if page.endswith(".md") else page + ".md", False, [base])
                   for base in (t.public, t.private))
    if c.tool in ("wiki_write", "wiki_edit", "wiki_delete"):
        return True
    if c.tool == "web_fetch":
        return urllib.parse.urlsplit(c.args["url"]).scheme.lower() not in ("http", "https")
    return False


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="hearth-fuzz-") as tmp:
        result = run(Path(tmp))
    detail = {k: v for k, v in result.items() if k not in ("payloads", "denied", "escapes", "legit_calls", "legit_denied")}
    print(json.dumps(detail, indent=1, ensure_ascii=False))
    print(json.dumps({k: result[k] for k in ("payloads", "denied", "escapes", "legit_calls", "legit_denied")}))
    return 0 if result["escapes"] == 0 and result["legit_denied"] == 0 else 1


if __name__ == "__main__":
    if shutil.which("bash") is None:
        sys.exit("bench/guard_fuzz.py needs bash for its shell oracle")
    sys.exit(main())
