"""Without a secure keyring, keys go to an encrypted file unlocked by the person's passphrase, never to a
plaintext file, and Hearth says clearly what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.fake_model import Text

KEY = "sk-nokeyring-Aq7-4411-secret"


def cli(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HEARTH_HOME": str(home), "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    return subprocess.run([sys.executable, "-m", "runtime_host", *args], input=stdin, capture_output=True, text=True,
                          env=env, timeout=90)


def test_no_keyring_means_an_encrypted_file_unlocked_by_the_persons_passphrase(home, fake_model, script) -> None:
    r = cli(home, "provider", "add", "fake", "--base-url", fake_model.base_url, "--model", "f", "--key-from-stdin",
            stdin=KEY + "\n")
    assert r.returncode == 2 and "No secure keyring" in r.stderr and "passphrase" in r.stderr
    r = cli(home, "--passphrase-stdin", "person", "set-passphrase", stdin="\ncorrect horse staple\n")
    assert r.returncode == 0, r.stderr
    r = cli(home, "--passphrase-stdin", "provider", "add", "fake", "--base-url", fake_model.base_url, "--model", "f",
            "--key-from-stdin", stdin="correct horse staple\n" + KEY + "\n")
    assert r.returncode == 0, r.stderr
    assert cli(home, "--passphrase-stdin", "agent", "add", "helper", "--provider", "fake",
               stdin="correct horse staple\n").returncode == 0
    script([Text("works without a keyring")])
    r = cli(home, "--passphrase-stdin", "chat", "helper", "hi", stdin="correct horse staple\n")
    assert r.returncode == 0 and r.stdout.strip() == "works without a keyring", r.stderr
    assert fake_model.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    for f in home.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f"the key is in plain text in {f}"
    wrong = cli(home, "--passphrase-stdin", "chat", "helper", "hi", stdin="wrong passphrase\n")
    assert wrong.returncode == 2 and "does not unlock" in wrong.stderr
