"""The pre-tool-call guard: one per agent binding, it decides every tool call before it runs.

A `Guard` knows the agent's folders (its scratch, read-write; the public wiki and its person's private
slice, read-only), the files no agent may touch (the pod database, keyrings, config and environment
files, /etc, /proc, ~/.ssh, ~/.gnupg, ...), the agent's `Allowlist`, and the shape of every tool's
arguments. `check(tool, arguments)` returns a `Decision`; every decision also goes to the audit callback
as a small dict without argument values. It fails closed: an unknown tool, an unknown argument, a value
of the wrong type, or a path it cannot interpret for sure is denied.

Paths are judged after every interpretation a tool, a shell or an OS could give them: `..`, symlinks
(realpath of the existing prefix), case (case-insensitive filesystems compare casefolded; forbidden
files are also matched by inode, so a differently-cased alias or a hard link is still caught), Unicode
(NFC/NFKC, fullwidth solidus, zero-width and bidi characters), percent-encoding (repeated, overlong
UTF-8), NUL and control bytes, backslashes, `file://`, `~`, `$VAR`, `${VAR}`, `%VAR%`, and globs (the
fixed prefix must be allowed and every real match is checked). Shell commands are split the way a POSIX
shell would (quotes, backslashes), refuse the constructs whose result cannot be known beforehand
(command and process substitution, `$'..'`, here-docs, eval, nested shells and interpreters, env dumps),
and every word is checked as a path. The bubblewrap sandbox (`runtime_host.sandbox`) is the second wall.
"""

from __future__ import annotations

import fnmatch
import glob as _glob
import os
import re
import shlex
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote_to_bytes, urlsplit

from runtime_host.allowlist import Allowlist, Decision

__all__ = ["Decision", "Guard", "ToolShape", "DEFAULT_SHAPES", "ArgKind", "Access", "shape_from_schema",
           "shapes_for_tools"]

Access = Literal["read", "write"]
# What an argument is, for the guard:
#   text / int / number / bool / enum  plain values, type-checked only
#   path_read / path_write             a file path the tool will read / create or change
#   wiki_page                          a wiki page name (read under the public wiki or the private slice)
#   shell                              a shell command line
#   url                                an http(s) URL (file: and other schemes are refused)
#   scan                               any JSON value from an untrusted schema (MCP): every string that looks
#                                      like a path is checked as a read
ArgKind = Literal["text", "int", "number", "bool", "enum", "path_read", "path_write", "wiki_page", "shell",
                  "url", "scan"]

MAX_TEXT = 200_000
MAX_PATH = 4096
MAX_SHELL = 8192
MAX_GLOB_VISITS = 20000
MAX_CANDIDATES = 96

AuditFn = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class ToolShape:
    """How the guard reads one tool's arguments. `name` is the name the model calls."""

    name: str
    toolkit: str
    args: Mapping[str, str]
    required: frozenset[str] = frozenset()
    action: str = ""  # the allowlist action; defaults to `name`
    enums: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    writes_wiki: bool = False  # a tool that would write wiki pages itself: always denied

    @property
    def allow_action(self) -> str:
        return self.action or self.name


def _shape(name: str, toolkit: str, args: dict[str, str], required: Iterable[str] = (), **kw: Any) -> ToolShape:
    return ToolShape(name, toolkit, args, frozenset(required), **kw)


# Built-in tools (runtime_host.tools) and the ones the wiki and shell toolkits will carry. A tool missing
# here is denied until its shape is registered (Guard(shapes=...) or Guard.register).
DEFAULT_SHAPES: dict[str, ToolShape] = {s.name: s for s in [
    _shape("current_time", "clock", {"timezone": "text"}),
    _shape("calculate", "math", {"expression": "text"}, ["expression"]),
    _shape("append_note", "notes", {"text": "text"}, ["text"]),
    _shape("read_notes", "notes", {"last": "int"}),
    _shape("delegate", "delegate", {"task": "text"}, ["task"]),
    _shape("wiki_search", "wiki", {"query": "text", "limit": "int"}, ["query"]),
    _shape("wiki_read", "wiki", {"page": "wiki_page"}, ["page"]),
    _shape("wiki_propose", "wiki", {"page": "wiki_page", "text": "text", "reason": "text"}, ["page", "text"]),
    _shape("wiki_write", "wiki", {"page": "wiki_page", "text": "text"}, ["page", "text"], writes_wiki=True),
    _shape("wiki_edit", "wiki", {"page": "wiki_page", "text": "text"}, ["page", "text"], writes_wiki=True),
    _shape("wiki_delete", "wiki", {"page": "wiki_page"}, ["page"], writes_wiki=True),
    _shape("run_shell", "shell", {"command": "shell", "timeout": "int"}, ["command"]),
    _shape("ask_partner", "partners", {"partner": "text", "message": "text"}, ["partner", "message"]),
    _shape("hand_off", "tasks", {"agent": "text", "title": "text", "description": "text", "size": "enum"},
           ["agent", "title", "description"], enums={"size": ("small", "medium", "large")}),
    _shape("wait_for_task", "tasks", {"task_id": "text", "timeout_s": "number"}, ["task_id"]),
    _shape("read_file", "files", {"path": "path_read", "max_chars": "int"}, ["path"]),
    _shape("list_files", "files", {"path": "path_read"}),
    _shape("write_file", "files", {"path": "path_write", "text": "text"}, ["path", "text"]),
    _shape("web_fetch", "web", {"url": "url"}, ["url"]),
    _shape("web_search", "web", {"query": "text", "limit": "int"}, ["query"]),
    _shape("remember", "memory", {"fact": "text", "scope": "enum", "importance": "number"}, ["fact"],
           enums={"scope": ("agent", "person", "public")}),
    _shape("search_memory", "memory", {"query": "text", "k": "int"}, ["query"]),
    _shape("list_mail", "mail", {"limit": "int"}),
    _shape("read_mail", "mail", {"mail_id": "text"}, ["mail_id"]),
    _shape("draft_mail", "mail", {"to": "text", "subject": "text", "body": "text", "why": "text"},
           ["to", "subject", "body", "why"]),
]}


def shapes_for_tools(tools: Iterable[Any]) -> dict[str, ToolShape]:
    """Shapes for concrete tools (objects with .name, .toolkit, .parameters, like runtime_host.tools.Tool):
    the hand-written shape when there is one, else one derived from the schema with `shape_from_schema`
    (strings are scanned for paths: a new built-in is judged conservatively until it gets its own shape)."""
    out: dict[str, ToolShape] = {}
    for t in tools:
        known = DEFAULT_SHAPES.get(t.name)
        out[t.name] = known if known is not None and known.toolkit == t.toolkit else \
            shape_from_schema(t.name, t.toolkit, t.parameters)
    return out


def shape_from_schema(name: str, toolkit: str, schema: Mapping[str, Any], *, action: str | None = None,
                      path_args: Mapping[str, Access] | None = None) -> ToolShape:
    """A shape from a JSON schema (an MCP tool's inputSchema, a @tool's parameters), failing closed.

    Integers, numbers, booleans and enums are type-checked; every other property is `scan` (each string
    in it that looks like a path is checked as a read) unless `path_args` names it as a read or write path.
    """
    props = schema.get("properties") or {}
    if not isinstance(props, Mapping):
        raise ValueError(f"the schema of tool {name!r} has no usable properties")
    args: dict[str, str] = {}
    enums: dict[str, tuple[Any, ...]] = {}
    for pname, prop in props.items():
        prop = prop if isinstance(prop, Mapping) else {}
        if path_args and pname in path_args:
            args[pname] = "path_write" if path_args[pname] == "write" else "path_read"
        elif "enum" in prop and isinstance(prop["enum"], list):
            args[pname], enums[pname] = "enum", tuple(prop["enum"])
        elif prop.get("type") == "integer":
            args[pname] = "int"
        elif prop.get("type") == "number":
            args[pname] = "number"
        elif prop.get("type") == "boolean":
            args[pname] = "bool"
        else:
            args[pname] = "scan"
    required = frozenset(r for r in schema.get("required") or [] if isinstance(r, str))
    return ToolShape(name, toolkit, args, required, action or name, enums)


# ---- forbidden things --------------------------------------------------------------------------------

# Basename patterns (compared casefolded, trailing dots/spaces and NTFS streams stripped).
FORBIDDEN_NAMES: tuple[str, ...] = (
    "pod.db", "pod.db-*", "pod.db.*", ".env", ".env.*", "*.env", ".envrc", "environ", ".netrc", "_netrc", ".pgpass",
    ".git-credentials", ".npmrc", ".pypirc", "*.keyring", "*.keystore", "keyring*.cfg", "login.keyring",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.pem", "*.p12", "*.pfx", "*.vault", "*.hvault",
    "credentials", "credentials.json", "secrets.json", "*.kdbx",
)
# Directory names that may not appear anywhere in a resolved path.
FORBIDDEN_DIR_NAMES: tuple[str, ...] = (".ssh", ".gnupg", "keyrings", ".aws", ".kube", ".docker", ".password-store")
# System trees (absolute, realpath'd at construction).
FORBIDDEN_SYSTEM: tuple[str, ...] = ("/etc", "/proc", "/sys", "/dev", "/root", "/boot", "/var/lib", "/run")

# Shell words that are refused wherever they appear (interpreters, nested shells, environment dumps).
SHELL_DENY_ANYWHERE = frozenset({
    "env", "printenv", "eval", "exec", "source", "sh", "bash", "dash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish",
    "busybox", "sudo", "su", "doas", "pkexec", "python", "python2", "python3", "perl", "ruby", "node", "nodejs", "deno",
    "bun", "php", "lua", "tclsh", "wish", "pwsh", "powershell", "cmd", "cmd.exe", "osascript", "nc", "ncat", "netcat",
    "socat", "telnet", "xargs", "parallel", "nsenter", "unshare", "chroot", "mount", "bwrap", "docker", "podman",
    "secret-tool", "keyring", "gnome-keyring-daemon", "gpg", "gpg2", "ssh", "scp", "sftp", "ssh-add", "ssh-agent",
    "strace", "gdb", "ltrace", "sqlite3", "awk", "gawk", "mawk", "nawk",
})
# Refused in command position only (they also have harmless meanings as words).
SHELL_DENY_COMMAND = frozenset({"set", "export", "declare", "typeset", "local", "readonly", "compgen", ".", "command",
                                "builtin", "alias", "trap", "enable", "hash", "type", "ulimit", "umask", "kill", "time",
                                "coproc", "function", "select", "let", "shopt", "history", "fc", "jobs", "disown",
                                "wait", "getopts", "read", "mapfile", "readarray", "pushd", "popd", "dirs", "crontab",
                                "at", "systemctl", "launchctl", "expect", "script", "screen", "tmux", "vim", "vi",
                                "nvim", "emacs", "ed", "ex", "less", "more", "man", "git", "watch", "nohup", "setsid"})
# Commands whose path arguments are written (so each must be writable).
SHELL_WRITERS = frozenset({"cp", "mv", "tee", "touch", "rm", "rmdir", "mkdir", "ln", "dd", "install", "rsync",
                           "truncate", "chmod", "chown", "chgrp", "shred", "unlink", "patch", "split", "csplit",
                           "tar", "unzip", "gzip", "gunzip", "zip", "bzip2", "xz", "sed", "sort", "curl", "wget",
                           "mktemp", "mkfifo", "mknod", "setfacl", "chattr", "find"})
# Commands that read whole folder trees whatever their options.
SHELL_TREE_READERS = frozenset({"rg", "ag", "ack", "tar", "zip", "rsync", "grep-r", "cpio", "7z", "duplicity"})
_SHELL_OPS = {";", "&&", "||", "|", "&", "(", ")", ";;", "|&", "\n"}
_REDIRECT_WRITE = {">", ">>", ">|", "&>", "&>>", "<>"}
_REDIRECT_READ = {"<"}
_SHELL_REFUSED = [  # matched against the command's active text (single-quoted text blanked out)
    (re.compile(r"`"), "command substitution with backquotes"),
    (re.compile(r"\$\("), "command substitution $(...)"),
    (re.compile(r"[<>]\("), "process substitution"),
    (re.compile(r"\$'"), "ANSI-C quoting $'...'"),
    (re.compile(r'\$"'), 'locale quoting $"..."'),
    (re.compile(r"<<"), "a here-document or here-string"),
    (re.compile(r"\$\{(?![A-Za-z0-9_]+\})"), "a parameter expansion with operators ${...}"),  # any but ${NAME}
    (re.compile(r"\$\["), "arithmetic expansion"),
]
# Mentions that deny a shell command wherever they appear (raw text and words after quote removal).
_SHELL_MARKERS = re.compile(
    r"pod\.db|environ|\.ssh|\.gnupg|keyring|\.netrc|\.pgpass|id_rsa|id_dsa|id_ecdsa|id_ed25519|\.git-credentials"
    r"|hearth_home|ld_preload|ld_library_path|bash_env|prompt_command|pythonstartup|/dev/(?:tcp|udp)"
    r"|(?<![\w.-])/(?:etc|proc|sys|root|boot|run)(?![\w.-])"
    r"|(^|[^a-z0-9_])\.env(rc)?($|[^a-z0-9_])")
# Leading VAR=value assignments a command may carry; any other variable could change what runs.
_SAFE_ASSIGN = re.compile(r"^(LC_[A-Z]+|LANG|LANGUAGE|TZ|COLUMNS|LINES|NO_COLOR|TERM)=")
# find/-style options that run other programs.
_SHELL_EXEC_OPTS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "--exec", "--to-command", "--use-compress-program",
                              "--checkpoint-action", "--info-script", "--new-volume-script", "--rsh-command"})
# Variables a path or command may expand: folders, never values that could be secrets.
SAFE_VARS = frozenset({"HOME", "USER", "LOGNAME", "PWD", "TMPDIR", "TMP", "TEMP", "XDG_CONFIG_HOME",
                       "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "USERPROFILE",
                       "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "SYSTEMROOT", "WINDIR", "HOMEDRIVE", "HOMEPATH"})
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*)|([0-9@*#?$!-]))")
_WIN_VAR = re.compile(r"%([A-Za-z_][A-Za-z0-9_()]*)%")
# Characters some program may take for '/', '\\' or '.': refused in paths and commands.
_LOOKALIKE_WORDS = ("SOLIDUS", "SLASH", "FULL STOP", "DOT LEADER", "ONE DOT", "REVERSE SOLIDUS", "SET MINUS")
_PCT = re.compile(r"%[0-9A-Fa-f]{2}")
_GLOB_MAGIC = re.compile(r"[*?\[]")
_NAME_CHARS = re.compile(r"[\w.\-+@#,]")


class _Deny(Exception):
    def __init__(self, rule: str, reason: str):
        super().__init__(reason)
        self.rule, self.reason = rule, reason


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _norm_name(name: str) -> str:
    return name.split(":", 1)[0].rstrip(" .").casefold()


def _case_insensitive(path: str) -> bool:
    """True when the filesystem holding `path` (an existing folder) ignores case."""
    p = path
    while p and p != os.sep:
        base = os.path.basename(p)
        if base.swapcase() != base:
            alt = os.path.join(os.path.dirname(p), base.swapcase())
            try:
                return os.path.exists(alt) and os.path.samefile(alt, p)
            except OSError:
                return False
        p = os.path.dirname(p)
    return False


class Guard:
    """Decides tool calls for one agent. Build one per worker binding (see `for_binding`)."""

    def __init__(self, *, agent: str, scratch: str | Path, public_wiki: str | Path, private_slice: str | Path | None,
                 data_dir: str | Path, allowlist: Allowlist, audit: AuditFn | None = None,
                 shapes: Mapping[str, ToolShape] | None = None, home: str | Path | None = None,
                 env: Mapping[str, str] | None = None, extra_forbidden: Iterable[str | Path] = ()):
        self.agent = agent
        self.allowlist = allowlist
        self.audit = audit
        self.shapes: dict[str, ToolShape] = dict(DEFAULT_SHAPES if shapes is None else shapes)
        self.scratch = os.path.realpath(scratch)
        self.data_dir = os.path.realpath(data_dir)
        self.wiki_dir = os.path.realpath(os.path.join(data_dir, "wiki"))
        self.rw_roots = [self.scratch]
        self.household = os.path.realpath(public_wiki)  # the household's pages: everyone's agents read them
        self.ro_roots = [self.household] + ([os.path.realpath(private_slice)] if private_slice else [])
        self.env = dict(os.environ if env is None else env)
        self.home = os.path.realpath(home if home is not None else self.env.get("HOME") or os.path.expanduser("~"))
        self.env.setdefault("HOME", self.home)
        self.env["PWD"] = self.scratch  # the worker's (and its shell's) working folder
        forbidden = [os.path.join(self.data_dir, n) for n in ("pod.db", "vault")]
        forbidden += [os.path.join(self.home, n) for n in
                      (".ssh", ".gnupg", ".config", ".local/share/keyrings", ".netrc", ".pgpass", ".aws",
                       ".git-credentials", ".docker", ".kube", ".password-store", ".python_history",
                       ".bash_history")]
        for var, sub in (("XDG_CONFIG_HOME", ""), ("XDG_DATA_HOME", "keyrings"), ("XDG_RUNTIME_DIR", "")):
            if self.env.get(var):
                forbidden.append(os.path.join(self.env[var], sub) if sub else self.env[var])
        forbidden += list(FORBIDDEN_SYSTEM) + [str(p) for p in extra_forbidden]
        roots = self.rw_roots + self.ro_roots
        # A forbidden tree that holds an allowed root (a data dir under /root, say) is left to the
        # containment rule; everything else in it stays forbidden.
        self.forbidden_paths = sorted(
            p for p in {os.path.realpath(p) for p in forbidden} | {os.path.abspath(p) for p in forbidden}
            if not any(_under(r, p) or _under(r.casefold(), p.casefold()) for r in roots)
        )
        self._ci: dict[str, bool] = {}
        self._inodes: tuple[float, set[tuple[int, int]]] = (0.0, set())

    @classmethod
    def for_binding(cls, binding: Mapping[str, Any], data_dir: str | Path, allowlist: Allowlist,
                    audit: AuditFn | None = None, **kw: Any) -> Guard:
        """The guard for a worker binding: {"person", "agent", "scratch", ...} as the Pod sends it."""
        person = str(binding["person"])
        if not person or "/" in person or person in (".", ".."):
            raise ValueError(f"the binding's person id {person!r} cannot name a folder")
        data = Path(data_dir)
        return cls(agent=str(binding["agent"]), scratch=binding["scratch"], public_wiki=data / "wiki" / "public",
                   private_slice=data / "wiki" / "private" / person, data_dir=data, allowlist=allowlist,
                   audit=audit, **kw)

    def register(self, shape: ToolShape) -> None:
        """Adds or replaces a tool shape (an MCP tool listed at runtime, a new built-in)."""
        self.shapes[shape.name] = shape

    # ---- the entry point
    def check(self, tool_name: str, arguments: Any) -> Decision:
        try:
            decision = self._check(tool_name, arguments)
        except _Deny as d:
            decision = Decision(False, d.rule, d.reason)
        except Exception as exc:  # fail closed on anything unexpected, and say so
            decision = Decision(False, "guard.error", f"the guard could not judge this call ({type(exc).__name__}); "
                                                      "it is refused to be safe")
        self._audit(tool_name, decision)
        return decision

    def _audit(self, tool_name: Any, decision: Decision) -> None:
        if self.audit is None:
            return
        from vault import redact

        self.audit({"type": "guard.decision", "agent": self.agent, "tool": redact(str(tool_name))[:200],
                    "rule": decision.rule, "allowed": decision.allowed, "reason": redact(decision.reason)})

    def _check(self, tool_name: str, arguments: Any) -> Decision:
        if not isinstance(tool_name, str) or tool_name not in self.shapes:
            raise _Deny("tool.unknown", f"there is no tool {str(tool_name)[:80]!r} known to the guard; "
                                        "unknown tools are refused")
        shape = self.shapes[tool_name]
        allowed = self.allowlist.check(shape.toolkit, shape.allow_action)
        if not allowed:
            return allowed
        if shape.writes_wiki:
            raise _Deny("wiki.write", "agents never write wiki pages: propose the change with wiki_propose and a "
                                      "person or the ingest applies it")
        if not isinstance(arguments, dict) or not all(isinstance(k, str) for k in arguments):
            raise _Deny("args.shape", f"the arguments of {tool_name} must be a JSON object")
        if "__invalid_json__" in arguments:
            raise _Deny("args.shape", f"the arguments of {tool_name} were not valid JSON")
        unknown = sorted(set(arguments) - set(shape.args))
        if unknown:
            raise _Deny("args.unknown", f"{tool_name} has no argument(s) {unknown}; unknown arguments are refused")
        missing = sorted(shape.required - set(arguments))
        if missing:
            raise _Deny("args.missing", f"{tool_name} needs argument(s) {missing}")
        for name, value in arguments.items():
            self._check_arg(shape, name, shape.args[name], value)
        return Decision(True, "ok", f"{tool_name} with these arguments stays inside {self.agent}'s folders")

    def _check_arg(self, shape: ToolShape, name: str, kind: str, value: Any) -> None:
        where = f"{shape.name}.{name}"
        if kind == "text":
            if not isinstance(value, str) or len(value) > MAX_TEXT:
                raise _Deny("args.type", f"{where} must be text of at most {MAX_TEXT} characters")
        elif kind == "int":
            if not isinstance(value, int) or isinstance(value, bool):
                raise _Deny("args.type", f"{where} must be an integer")
        elif kind == "number":
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise _Deny("args.type", f"{where} must be a number")
        elif kind == "bool":
            if not isinstance(value, bool):
                raise _Deny("args.type", f"{where} must be true or false")
        elif kind == "enum":
            if value not in shape.enums.get(name, ()):
                raise _Deny("args.type", f"{where} must be one of {list(shape.enums.get(name, ()))}")
        elif kind in ("path_read", "path_write"):
            if not isinstance(value, str):
                raise _Deny("args.type", f"{where} must be a path string")
            self.check_path(value, "write" if kind == "path_write" else "read")
        elif kind == "wiki_page":
            if not isinstance(value, str):
                raise _Deny("args.type", f"{where} must be a page name")
            self._check_page(value)
        elif kind == "shell":
            if not isinstance(value, str):
                raise _Deny("args.type", f"{where} must be a command line")
            self.check_shell(value)
        elif kind == "url":
            if not isinstance(value, str):
                raise _Deny("args.type", f"{where} must be a URL")
            self._check_url(value)
        elif kind == "scan":
            self._scan(value, where, depth=0)
        else:
            raise _Deny("args.shape", f"{where} has an argument kind {kind!r} the guard does not know")

    # ---- public helpers (raise nothing; return a Decision)
    def reads_household(self, path: Any) -> bool:
        """Whether a file a tool opened at ``path`` (from the agent's folder, as the tool named it) is in the
        household's wiki: pages any person of the household writes, screened as they are given
        (runtime_host/household.py)."""
        if not isinstance(path, str) or not path:
            return False
        return self._contained(os.path.realpath(os.path.join(self.scratch, path)), self.household)

    def path_decision(self, raw: str, access: Access = "read") -> Decision:
        try:
            self.check_path(raw, access)
        except _Deny as d:
            return Decision(False, d.rule, d.reason)
        return Decision(True, "ok", "inside the agent's folders")

    def shell_decision(self, command: str) -> Decision:
        try:
            self.check_shell(command)
        except _Deny as d:
            return Decision(False, d.rule, d.reason)
        return Decision(True, "ok", "the command only names the agent's folders")

    # ---- paths
    def check_path(self, raw: str, access: Access, bases: Iterable[str] | None = None) -> None:
        """Raises _Deny unless every interpretation of `raw` stays where `access` is allowed."""
        if len(raw) > MAX_PATH:
            raise _Deny("path.too_long", f"a path of {len(raw)} characters is refused (at most {MAX_PATH})")
        if raw.strip() == "":
            raise _Deny("path.empty", "an empty path names nothing")
        for cand in self._candidates(raw):
            for base in (bases or [self.scratch]):
                self._check_one(cand, access, base)

    def _screen_text(self, s: str, what: str) -> None:
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            raise _Deny(f"{what}.encoding", f"the {what} holds bytes that are not valid UTF-8") from None
        for ch in s:
            o = ord(ch)
            if o < 0x20 or 0x7F <= o < 0xA0:
                if what == "shell" and ch in "\t\n":
                    continue
                raise _Deny(f"{what}.control", f"the {what} contains a control character (U+{o:04X}) such as NUL")
            if o == 0xFFFD:
                raise _Deny(f"{what}.encoding", f"the {what} contains U+FFFD, the mark of a broken encoding")
            if o > 0x7F and unicodedata.category(ch) in ("Cf", "Co", "Cs", "Cn", "Zl", "Zp"):
                raise _Deny(f"{what}.unicode",
                            f"the {what} contains an invisible or formatting character (U+{o:04X}); refused")
        for ch in set(s):
            if ord(ch) > 0x7F and any(w in unicodedata.name(ch, "") for w in _LOOKALIKE_WORDS):
                raise _Deny(f"{what}.unicode", f"the {what} contains {unicodedata.name(ch)} (U+{ord(ch):04X}), which "
                                               "looks like a path separator or a dot; write it with ordinary characters")
        if unicodedata.normalize("NFKC", s) != unicodedata.normalize("NFC", s):
            raise _Deny(f"{what}.unicode", f"the {what} uses look-alike compatibility characters (such as a "
                                           "fullwidth slash or a ligature); write it with ordinary characters")

    def _candidates(self, raw: str) -> list[str]:
        self._screen_text(raw, "path")
        seen: set[str] = set()
        todo = [raw, unicodedata.normalize("NFC", raw), unicodedata.normalize("NFD", raw)]
        out: list[str] = []
        while todo:
            s = todo.pop()
            if s in seen:
                continue
            seen.add(s)
            if len(seen) > MAX_CANDIDATES:
                raise _Deny("path.too_complex", "the path has too many possible readings to judge; write it plainly")
            self._screen_text(s, "path")
            out.append(s)
            todo.extend(self._readings(s))
        return out

    def _readings(self, s: str) -> list[str]:
        """Other strings a tool, a shell or an OS could turn `s` into (one step)."""
        out: list[str] = []
        if _PCT.search(s):
            data = unquote_to_bytes(s)
            try:
                out.append(data.decode("utf-8"))
            except UnicodeDecodeError:
                raise _Deny("path.encoding", "the path's percent-encoding does not decode to valid UTF-8 "
                                             "(an overlong or broken sequence)") from None
        if "\\" in s:
            out.append(s.replace("\\", "/"))
            out.append(re.sub(r"\\(.)", r"\1", s))  # a shell's backslash escapes
        low = s[:8].casefold()
        if low.startswith("file:"):
            rest = s[5:]
            if rest.startswith("//"):
                rest = rest[2:]
                host, _, path = rest.partition("/")
                if host not in ("", "localhost"):
                    raise _Deny("path.url", f"a file URL on another host ({host!r}) is refused")
                rest = "/" + path
            out.append(rest)
        if "$" in s:
            out.append(self._expand_vars(s))
        if _WIN_VAR.search(s):
            out.append(_WIN_VAR.sub(lambda m: self._env_value(m.group(1)), s))
        if s.startswith("~"):
            out.append(self._expand_tilde(s))
        # Windows drops trailing dots and spaces from each name and reads "name:stream" as the file "name".
        parts = s.split("/")
        win = "/".join(p if p in (".", "..") or re.fullmatch(r"[A-Za-z]:", p) else p.split(":", 1)[0].rstrip(" .") or p
                       for p in parts)
        if win != s:
            out.append(win)
        if re.match(r"^[A-Za-z]:[\\/]", s):  # a Windows drive path: judge its rest as absolute
            out.append("/" + s[3:])
        return out

    def _env_value(self, name: str) -> str:
        if name not in SAFE_VARS and name.upper() not in SAFE_VARS:
            raise _Deny("path.env", f"the variable {name!r} may hold a secret or is unknown to the guard; only "
                                    "folder variables such as HOME may appear in a path or command")
        if name in self.env:
            return self.env[name]
        raise _Deny("path.env", f"the path uses the variable {name!r}, whose value the guard cannot know; "
                                "write the path out")

    def _expand_vars(self, s: str) -> str:
        def sub(m: re.Match[str]) -> str:
            name = m.group(1) or m.group(2) or m.group(3)
            return self._env_value(name)

        return _VAR.sub(sub, s)  # a '$' not followed by a name stays literal, as in a shell

    def _expand_tilde(self, s: str) -> str:
        head, sep, rest = s.partition("/")
        user = head[1:]
        if not user:
            home = self.env.get("HOME") or self.home
        else:
            try:
                import pwd

                home = pwd.getpwnam(user).pw_dir
            except (KeyError, ImportError):
                raise _Deny("path.env", f"the path starts with ~{user}, a home folder the guard cannot find") from None
        return home + sep + rest

    def _check_one(self, cand: str, access: Access, base: str) -> None:
        path = cand if os.path.isabs(cand) else os.path.join(base, cand)
        if _GLOB_MAGIC.search(cand):
            self._check_glob(path, access)
        resolved = os.path.realpath(path)
        lexical = os.path.normpath(path)
        self._check_forbidden(lexical, cand)
        self._check_forbidden(resolved, cand)
        self._check_inside(resolved, access, cand)
        if not os.path.lexists(path):
            # What a case-insensitive filesystem (anywhere on the way) would open instead.
            twin = _case_twin(path)
            if twin != path:
                real_twin = os.path.realpath(twin)
                self._check_forbidden(real_twin, cand)
                self._check_inside(real_twin, access, cand)

    def _check_forbidden(self, path: str, shown: str) -> None:
        parts = [p for p in path.split(os.sep) if p]
        for part in parts:
            n = _norm_name(part)
            if n in FORBIDDEN_DIR_NAMES:
                raise _Deny("path.forbidden", f"{shown!r} goes through {part!r}, which holds keys or credentials")
        if parts:
            n = _norm_name(parts[-1])
            for pat in FORBIDDEN_NAMES:
                if fnmatch.fnmatchcase(n, pat):
                    raise _Deny("path.forbidden", f"{shown!r} names a database, key, config or environment file "
                                                  f"({parts[-1]!r}); agents may never read or write those")
        for fp in self.forbidden_paths:
            if _under(path, fp) or _under(path.casefold(), fp.casefold()):
                raise _Deny("path.forbidden", f"{shown!r} is inside {fp}, which no agent may touch")
        # The same file by another name (a case-insensitive mount, a hard link): compare inodes.
        try:
            st = os.stat(path)
        except OSError:
            return
        if (st.st_dev, st.st_ino) in self._forbidden_inodes():
            raise _Deny("path.forbidden", f"{shown!r} is the same file as a protected one")

    def _forbidden_inodes(self) -> set[tuple[int, int]]:
        now = time.monotonic()
        if now - self._inodes[0] < 0.5:
            return self._inodes[1]
        out: set[tuple[int, int]] = set()
        for fp in self.forbidden_paths:
            for p in [fp] + (_glob.glob(_glob.escape(fp) + "-*") if fp.endswith("pod.db") else []):
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                out.add((st.st_dev, st.st_ino))
        self._inodes = (now, out)
        return out

    def _contained(self, path: str, root: str) -> bool:
        if _under(path, root):
            return True
        ci = self._ci.get(root)
        if ci is None:
            ci = self._ci[root] = os.path.isdir(root) and _case_insensitive(root)
        return ci and _under(path.casefold(), root.casefold())

    def _check_inside(self, resolved: str, access: Access, shown: str) -> None:
        if access == "write":
            if self._contained(resolved, self.wiki_dir):
                raise _Deny("wiki.write", f"{shown!r} is in the wiki; agents propose changes with wiki_propose "
                                          "and never write pages")
            if any(self._contained(resolved, r) for r in self.rw_roots):
                return
            if any(self._contained(resolved, r) for r in self.ro_roots):
                raise _Deny("path.read_only", f"{shown!r} may be read but not written by {self.agent}")
            raise _Deny("path.outside", f"{shown!r} resolves to {resolved}, outside {self.agent}'s own folder")
        if any(self._contained(resolved, r) for r in self.rw_roots + self.ro_roots):
            return
        raise _Deny("path.outside", f"{shown!r} resolves to {resolved}, outside the folders {self.agent} may read "
                                    "(its own folder, the public wiki, its person's private wiki)")

    def _check_glob(self, path: str, access: Access) -> None:
        parts = path.split(os.sep)
        first = next(i for i, p in enumerate(parts) if _GLOB_MAGIC.search(p))
        if any(p == ".." for p in parts[first:]):
            raise _Deny("glob.traversal", "a glob may not climb with '..' after a wildcard")
        for comp in parts[first:]:
            if comp in ("*", "**", "?*", "*?"):
                continue
            for pat in FORBIDDEN_NAMES + FORBIDDEN_DIR_NAMES:
                if "*" not in pat and fnmatch.fnmatchcase(pat, comp.casefold()):
                    raise _Deny("glob.forbidden", f"the pattern {comp!r} could match {pat!r}, a protected file")
        prefix = os.sep.join(parts[:first]) or os.sep
        resolved_prefix = os.path.realpath(prefix)
        self._check_forbidden(resolved_prefix, prefix)
        self._check_inside(resolved_prefix, access, prefix)
        budget = [MAX_GLOB_VISITS]
        for match in self._expand(prefix, [p for p in parts[first:] if p], access, budget):
            real = os.path.realpath(match)
            self._check_forbidden(os.path.normpath(match), match)
            self._check_forbidden(real, match)
            self._check_inside(real, access, match)

    def _expand(self, folder: str, comps: list[str], access: Access, budget: list[int]) -> Iterator[str]:
        """The real matches of a glob below `folder`, as any glob library could produce them (hidden files
        included, symlinks followed), visiting a bounded number of entries. A folder the walk would enter
        must itself be allowed, so a wildcard cannot carry the walk out through a symlink."""
        if not comps:
            yield folder
            return
        comp, rest = comps[0], comps[1:]
        if not _GLOB_MAGIC.search(comp):
            yield from self._expand(os.path.join(folder, comp), rest, access, budget)
            return
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        if comp == "**":
            yield from self._expand(folder, rest, access, budget)
        for entry in entries:
            budget[0] -= 1
            if budget[0] < 0:
                raise _Deny("glob.too_broad", f"the pattern reaches more than {MAX_GLOB_VISITS} files; narrow it")
            if comp != "**" and not fnmatch.fnmatchcase(entry.name, comp):
                continue
            path = os.path.join(folder, entry.name)
            descend = (comp == "**") or bool(rest)
            if not descend:
                yield path
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                is_dir = False
            if not is_dir:
                if comp == "**" and not rest:
                    yield path
                continue
            real = os.path.realpath(path)
            self._check_forbidden(real, path)
            self._check_inside(real, access, path)
            if comp == "**":
                yield from self._expand(path, comps, access, budget)
            else:
                yield from self._expand(path, rest, access, budget)

    # ---- wiki pages and URLs
    def _check_page(self, page: str) -> None:
        if len(page) > 300 or page.strip() == "":
            raise _Deny("wiki.page", "a page name is 1-300 characters")
        self._screen_text(page, "path")
        if os.path.isabs(page) or page.startswith(("~", "\\")) or re.match(r"^[A-Za-z]:", page):
            raise _Deny("wiki.page", f"{page!r} is a path, not a page name")
        if any(c in page for c in "$%`*?[]\\"):
            raise _Deny("wiki.page", f"{page!r} has characters a page name never has")
        parts = page.replace("\\", "/").split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise _Deny("wiki.page", f"{page!r} is not a clean page name (no empty, '.' or '..' parts)")
        name = page if page.endswith(".md") else page + ".md"
        errors: list[_Deny] = []
        for root in self.ro_roots:
            try:
                self.check_path(name, "read", bases=[root])
                return
            except _Deny as d:
                errors.append(d)
        raise errors[0] if errors else _Deny("wiki.page", "no wiki folder is readable by this agent")

    def _check_url(self, url: str) -> None:
        self._screen_text(url, "url")
        try:
            parts = urlsplit(url)
        except ValueError:
            raise _Deny("url.invalid", "the URL cannot be parsed") from None
        if parts.scheme.casefold() not in ("http", "https") or not parts.netloc:
            raise _Deny("url.scheme", f"only http and https URLs can be fetched, not {parts.scheme or 'a bare path'!r}")

    def _scan(self, value: Any, where: str, depth: int) -> None:
        if depth > 8:
            raise _Deny("args.shape", f"{where} nests too deep to judge")
        if isinstance(value, bool | int | float) or value is None:
            return
        if isinstance(value, str):
            if len(value) > MAX_TEXT:
                raise _Deny("args.type", f"{where} is too long")
            self._screen_text(value, "path")
            low = value.casefold()
            looks = (any(c in value for c in "/\\~$%") or value.startswith(".") or
                     any(m in low for m in ("pod.db", "environ", ".env", "keyring", ".ssh", ".gnupg")))
            if looks:
                self.check_path(value, "read")
            return
        if isinstance(value, list):
            for i, v in enumerate(value[:1000]):
                self._scan(v, f"{where}[{i}]", depth + 1)
            if len(value) > 1000:
                raise _Deny("args.shape", f"{where} has too many items")
            return
        if isinstance(value, dict):
            for k, v in list(value.items())[:1000]:
                self._scan(str(k), f"{where}.key", depth + 1)
                self._scan(v, f"{where}.{k}", depth + 1)
            return
        raise _Deny("args.type", f"{where} has a value of an unexpected type")

    # ---- shell
    def check_shell(self, command: str) -> None:
        """Raises _Deny unless the command line only names paths this agent may use."""
        if len(command) > MAX_SHELL:
            raise _Deny("shell.too_long", f"a command of {len(command)} characters is refused (at most {MAX_SHELL})")
        if not command.strip():
            raise _Deny("shell.empty", "the command is empty")
        self._screen_text(command, "shell")
        active = _active_text(command)
        for pattern, what in _SHELL_REFUSED:
            if pattern.search(active):
                raise _Deny("shell.construct", f"the command uses {what}, whose result cannot be checked beforehand")
        self._shell_markers(command)
        lexer = shlex.shlex(command, posix=True, punctuation_chars="();<>|&")
        lexer.whitespace_split = True
        lexer.commenters = ""
        try:
            tokens = list(lexer)
        except ValueError as exc:
            raise _Deny("shell.syntax", f"the command cannot be split into words ({exc})") from None
        self._shell_markers("\n".join(tokens))
        # Simple commands: split at operators; each word keeps whether a redirection writes or reads it.
        commands: list[list[tuple[str, str]]] = [[]]
        pending = ""
        for tok in tokens:
            if tok and set(tok) <= set("();|&\n"):
                commands.append([])
                pending = ""
                continue
            if tok and set(tok) <= set("<>&|"):
                pending = "read" if tok == "<" else "write"
                continue
            commands[-1].append((tok, pending or "arg"))
            pending = ""
        if pending:
            raise _Deny("shell.syntax", "the command ends with a redirection and no file")
        bases = [self.scratch]
        for words in commands:
            if words:
                bases = self._check_simple_command(words, bases)

    def _check_simple_command(self, words: list[tuple[str, str]], bases: list[str]) -> list[str]:
        i = 0
        while i < len(words) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[i][0]):
            if not _SAFE_ASSIGN.match(words[i][0]):
                raise _Deny("shell.assign", f"setting {words[i][0].split('=', 1)[0]} for a command is not allowed "
                                            "(it could change which program runs or what it loads)")
            i += 1
        cmd_word = words[i][0] if i < len(words) else ""
        cmd = os.path.basename(cmd_word).casefold()
        if cmd in SHELL_DENY_COMMAND:
            raise _Deny("shell.command", f"the command {cmd_word!r} is not available to agents")
        if "/" in cmd_word and not (_under(os.path.realpath(cmd_word), "/usr") or
                                    _under(os.path.realpath(cmd_word), "/bin")):
            raise _Deny("shell.exec", f"{cmd_word!r} is not a system program; agents may not run files by path")
        for w, _ in words:
            if w in _SHELL_EXEC_OPTS or w.startswith(tuple(o + "=" for o in _SHELL_EXEC_OPTS if o.startswith("--"))):
                raise _Deny("shell.command", f"the option {w!r} runs another program, which agents may not do")
        if cmd == "cd":
            targets = [w for w, _ in words[i + 1:] if not w.startswith("-")]
            if not targets:
                raise _Deny("shell.cd", "cd without a folder goes to the home folder, outside the agent's folders")
            self.check_path(targets[0], "read", bases=bases)
            bases = bases + [os.path.realpath(os.path.join(b, targets[0])) for b in bases]
        recursive = cmd in SHELL_TREE_READERS or (cmd in ("grep", "egrep", "fgrep", "cp", "ls", "chmod", "chown") and any(
            w in ("-r", "-R", "-a", "--recursive", "--dereference-recursive", "--archive") or
            (re.fullmatch(r"-[A-Za-z]+", w) is not None and ("r" in w or "R" in w)) for w, _ in words[i + 1:]))
        writer = cmd in SHELL_WRITERS or any(w in ("-i", "--in-place", "-delete", "-fprint", "-fprintf", "-fls")
                                             or (cmd == "sed" and w.startswith("-i")) for w, _ in words)
        for n, (word, role) in enumerate(words):
            for alt in _brace_expand(word):
                if os.path.basename(alt).casefold() in SHELL_DENY_ANYWHERE or alt.casefold() in SHELL_DENY_ANYWHERE:
                    raise _Deny("shell.command", f"{alt!r} (an interpreter, a nested shell or an environment dump) "
                                                 "is not available to agents")
                if n == i:
                    continue  # the program: a name looked up on PATH, or a system path checked above
                if role == "write" and alt == "/dev/null":
                    continue
                access: Access = "write" if role == "write" or (writer and n > i) else "read"
                for piece in _shell_pieces(alt):
                    self.check_path(piece, access, bases=bases)
                    if recursive:
                        for base in bases:
                            self._check_tree(os.path.join(base, piece))
        return bases

    def _check_tree(self, folder: str) -> None:
        """A folder a command reads recursively must hold no protected file and no way out."""
        if not os.path.isdir(folder):
            return
        budget = MAX_GLOB_VISITS
        for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
            for name in dirnames + filenames:
                budget -= 1
                if budget < 0:
                    raise _Deny("path.tree", f"{folder!r} holds too many files to read recursively; narrow it")
                p = os.path.join(dirpath, name)
                self._check_forbidden(os.path.normpath(p), p)
                if os.path.islink(p):
                    real = os.path.realpath(p)
                    self._check_forbidden(real, p)
                    self._check_inside(real, "read", p)

    def _shell_markers(self, text: str) -> None:
        low = unicodedata.normalize("NFKC", text).casefold()
        for variant in {low, low.replace("\\", ""), low.replace("'", "").replace('"', "")}:
            m = _SHELL_MARKERS.search(variant)
            if m:
                raise _Deny("shell.forbidden", f"the command mentions {m.group(0).strip()!r}, which agents may not "
                                               "touch (databases, keys, config, environment, system folders)")


def _active_text(command: str) -> str:
    """The command with single-quoted text and backslash-escaped characters blanked (they expand nothing)."""
    out: list[str] = []
    state = ""
    i = 0
    while i < len(command):
        ch = command[i]
        if state == "'":
            if ch == "'":
                state = ""
                out.append(ch)
            else:
                out.append("_")
        elif ch == "\\":
            out.append("__")
            i += 1
        elif state == '"':
            if ch == '"':
                state = ""
            out.append(ch)
        elif ch in "'\"":
            state = ch
            out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _case_twin(path: str) -> str:
    """`path` with each component that does not exist replaced by an entry of its folder equal to it
    ignoring case (what a case-insensitive filesystem would open); components with no such entry stay."""
    cur = os.sep if path.startswith(os.sep) else ""
    for part in [p for p in path.split(os.sep) if p]:
        nxt = os.path.join(cur, part) if cur else part
        if part not in (".", "..") and not os.path.lexists(nxt):
            try:
                folded = part.casefold()
                match = next((n for n in os.listdir(cur or ".") if n.casefold() == folded), None)
            except OSError:
                match = None
            if match is not None:
                nxt = os.path.join(cur, match) if cur else match
        cur = nxt
    return cur


def _brace_expand(word: str, limit: int = 256) -> list[str]:
    """Bash brace expansion ({a,b}, {1..3}) of one word, enough to see every path it could name."""
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    inner = m.group(1)
    if "," in inner:
        alts = inner.split(",")
    elif re.fullmatch(r"-?\d+\.\.-?\d+", inner):
        a, b = (int(x) for x in inner.split(".."))
        step = 1 if b >= a else -1
        alts = [str(x) for x in range(a, b + step, step)][:limit]
    elif re.fullmatch(r"[A-Za-z]\.\.[A-Za-z]", inner):
        a, b = ord(inner[0]), ord(inner[-1])
        step = 1 if b >= a else -1
        alts = [chr(x) for x in range(a, b + step, step)]
    else:
        alts = ["{" + inner + "}"]
        rest = _brace_expand(word[m.end():], limit)
        return [word[:m.start()] + alts[0] + r for r in rest][:limit]
    out: list[str] = []
    for alt in alts:
        out.extend(_brace_expand(word[:m.start()] + alt + word[m.end():], limit))
        if len(out) > limit:
            raise _Deny("shell.too_complex", "the command's brace expansion names too many words to judge")
    return out


def _shell_pieces(word: str) -> list[str]:
    """Every part of a shell word that a program could take as a path: the word, option values
    (`--file=/x`, `-f/x`), list items (`a:b`, `a,b`), and any path starting inside the word."""
    pieces = {word}
    if word.startswith("-"):
        run = re.match(r"^-+[A-Za-z0-9]*", word)
        if run:
            for k in range(1, run.end() + 1):
                if word[k:]:
                    pieces.add(word[k:])
    for sep in ("=", ":", ","):
        if sep in word:
            pieces.update(p for p in word.split(sep) if p)
            head, _, tail = word.partition(sep)
            if tail:
                pieces.add(tail)
    for idx, ch in enumerate(word):
        if ch in "/~$%" and idx > 0 and not _NAME_CHARS.match(word[idx - 1]):
            pieces.add(word[idx:])
    return [p for p in pieces if p.strip()]
