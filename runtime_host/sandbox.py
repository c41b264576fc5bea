"""The bubblewrap sandbox for workers: a mount namespace that holds only the worker's own folders.

`bwrap_command` wraps a worker's command line so the child sees /usr (read-only, with the /lib, /lib64,
/bin, /sbin links), fresh /proc, /dev and /tmp, the Python installation and the Hearth sources it runs
(read-only), the folders it is given (read-only or read-write), and nothing else: no /etc, no /home, no
/root, no data dir beyond its binds, no other agent's folder. All namespaces are unshared (network too,
unless `share_net`: model calls need it, and then only the few /etc files name resolution and TLS read
are bound), the environment is cleared to what the caller passes, it gets its own session (no terminal
injection) and dies with its parent. `sandbox_available()` says whether bubblewrap works here, and
`sandbox_status()` says why not, for the UI. Linux only; elsewhere the guard alone applies.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import site
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

# Files under /etc a networked worker needs for DNS and TLS; nothing else of /etc is visible.
NET_ETC_FILES: tuple[str, ...] = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf",
                                  "/etc/host.conf", "/etc/ssl/certs", "/etc/ca-certificates", "/etc/pki/tls/certs")
# Hearth's code a worker runs: memory's guard (wiki_engine, and unseen, its list of invisible characters) screens the
# household's pages it reads (household.py).
DEFAULT_PACKAGES: tuple[str, ...] = ("runtime_host", "vault", "wiki_engine", "unseen")
_ROOT_LINKS: tuple[str, ...] = ("/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")


class SandboxError(Exception):
    """The sandbox command cannot be built as asked; the message says what to fix."""


def _minimal(paths: Iterable[str]) -> list[str]:
    """Drops paths that lie inside another path of the set."""
    out: list[str] = []
    for p in sorted(set(paths), key=lambda x: (x.count(os.sep), x)):
        if not any(p == q or p.startswith(q.rstrip(os.sep) + os.sep) for q in out):
            out.append(p)
    return out


def real_python() -> str:
    """The interpreter to run in the sandbox: the venv's python when in a venv (so its site-packages load),
    never a pyenv shim (a bash script that needs the whole pyenv tree and a shell)."""
    exe = sys.executable
    if os.path.basename(os.path.dirname(exe)) == "shims" or not os.path.exists(exe):
        exe = os.path.realpath(exe)
    return exe


def python_ro_paths(packages: Iterable[str] = DEFAULT_PACKAGES) -> list[str]:
    """What a sandboxed Python needs read-only: the real installation prefix, the venv and its
    site-packages, and the source folders of `packages` (an editable install maps them elsewhere)."""
    paths = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), os.path.abspath(sys.prefix),
             os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}
    if getattr(sys, "frozen", False):  # a bundle: the executable's own folder holds everything it runs
        paths.add(os.path.dirname(os.path.realpath(sys.executable)))
    for sp in site.getsitepackages() + [site.getusersitepackages()]:
        if os.path.isdir(sp) and (sp.startswith(sys.prefix) or sp.startswith(sys.base_prefix)):
            paths.add(os.path.realpath(sp))
    for pkg in packages:
        spec = importlib.util.find_spec(pkg)
        if spec is None:
            raise SandboxError(f"The package {pkg!r} cannot be found, so it cannot be made visible in the sandbox.")
        for loc in spec.submodule_search_locations or ([os.path.dirname(spec.origin)] if spec.origin else []):
            paths.add(os.path.realpath(loc))
    return _minimal(p for p in paths if p and p != os.sep and os.path.exists(p))


def _resolve_program(cmd0: str) -> str:
    found = cmd0 if os.sep in cmd0 else shutil.which(cmd0)
    if not found:
        raise SandboxError(f"The program {cmd0!r} is not on PATH.")
    if os.path.basename(os.path.dirname(found)) == "shims":  # a pyenv shim: bash, needs the pyenv tree
        return os.path.realpath(real_python())
    return found


def bwrap_command(base_cmd: list[str], *, ro_paths: Iterable[str | Path] = (), rw_paths: Iterable[str | Path] = (),
                  python_prefix: str | Path | Iterable[str | Path] | None = None, share_net: bool = False,
                  env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
                  bwrap: str = "bwrap") -> list[str]:
    """The argv that runs `base_cmd` inside bubblewrap, seeing only the given folders.

    ro_paths / rw_paths: folders (or files) bound at the same path, read-only / read-write. A missing
    read-only path is skipped (it stays invisible); a missing read-write path is an error.
    python_prefix: read-only Python paths; None means `python_ro_paths()`.
    env: the child's whole environment (everything else is cleared); default PATH, LANG, HOME=cwd.
    cwd: the child's working folder; default the first rw path.
    """
    if not base_cmd:
        raise SandboxError("There is no command to run in the sandbox.")
    rw = [os.path.abspath(p) for p in rw_paths]
    for p in rw:
        if not os.path.exists(p):
            raise SandboxError(f"The read-write folder {p} does not exist; create it before starting the worker.")
    if python_prefix is None:
        py = python_ro_paths()
    elif isinstance(python_prefix, str | Path):
        py = [os.path.realpath(python_prefix)]
    else:
        py = [os.path.realpath(p) for p in python_prefix]
    ro = [os.path.abspath(p) for p in ro_paths]
    workdir = os.path.abspath(cwd) if cwd is not None else (rw[0] if rw else "/tmp")

    args = [bwrap, "--unshare-all"]
    if share_net:
        args.append("--share-net")
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]
    child_env = dict(env) if env is not None else {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": workdir}
    for k, v in sorted(child_env.items()):
        if not k or "=" in k or "\0" in k or "\0" in v:
            raise SandboxError(f"The environment variable {k!r} cannot be passed to the sandbox.")
        args += ["--setenv", k, v]
    args += ["--ro-bind", "/usr", "/usr"]
    for link in _ROOT_LINKS:
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    if share_net:
        for f in NET_ETC_FILES:
            args += ["--ro-bind-try", f, f]

    # Parents before children, so a read-write folder inside a read-only tree stays writable.
    binds: list[tuple[str, str, str]] = []  # (dest, src, flag)
    for p in _minimal(py):
        binds.append((p, p, "--ro-bind"))
    for p in ro:
        binds.append((p, os.path.realpath(p), "--ro-bind-try"))
        if os.path.realpath(p) != p:
            binds.append((os.path.realpath(p), os.path.realpath(p), "--ro-bind-try"))
    for p in rw:
        binds.append((p, os.path.realpath(p), "--bind"))
        if os.path.realpath(p) != p:
            binds.append((os.path.realpath(p), os.path.realpath(p), "--bind"))
    order = {"--ro-bind": 0, "--ro-bind-try": 1, "--bind": 2}
    for dest, src, flag in sorted(binds, key=lambda b: (b[0].rstrip(os.sep).count(os.sep), order[b[2]], b[0])):
        args += [flag, src, dest]

    args += ["--chdir", workdir, "--"]
    return args + [_resolve_program(base_cmd[0])] + list(base_cmd[1:])


@functools.lru_cache(maxsize=1)
def sandbox_status() -> tuple[bool, str]:
    """(available, why): whether bubblewrap can start a sandbox here, and a sentence for the UI."""
    if not sys.platform.startswith("linux"):
        return False, "The sandbox needs Linux (bubblewrap); on this system the guard alone keeps agents in their folders."
    exe = shutil.which("bwrap")
    if exe is None:
        return False, ("bubblewrap is not installed, so agents run without a sandbox and the guard alone applies. "
                       "Install it (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap).")
    true = shutil.which("true") or "/usr/bin/true"
    try:
        cmd = bwrap_command([true], python_prefix=[], bwrap=exe, cwd="/tmp")
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired, SandboxError) as exc:
        return False, f"bubblewrap could not start ({exc}); agents run without a sandbox and the guard alone applies."
    if res.returncode != 0:
        err = (res.stderr or "").strip().splitlines()
        return False, (f"bubblewrap is installed but cannot create a sandbox ({err[-1] if err else res.returncode}); "
                       "user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1). Agents run "
                       "without a sandbox and the guard alone applies.")
    return True, "Agents run in a bubblewrap sandbox that holds only their own folders."


def sandbox_available() -> bool:
    """True when bubblewrap works on this machine (checked once per process)."""
    return sandbox_status()[0]
