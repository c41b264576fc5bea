"""The vault: real Secret Service (run under scripts/with-keyring) and the encrypted-file fallback."""

from __future__ import annotations

import base64
import json
import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from vault import (
    RedactingFilter,
    Vault,
    VaultCorrupt,
    VaultLocked,
    VaultUnavailable,
    WrongPassphrase,
    agent_namespace,
    person_namespace,
    provider_key,
    redact,
    vault_file,
)

FAST = 2 ** 14  # scrypt cost for tests; the default is 2**17


def test_namespace_helpers_build_names_and_refuse_tricks() -> None:
    assert person_namespace("pod1", "alice") == "pod1/person/alice"
    assert agent_namespace("pod1", "alice", "helper") == "pod1/person/alice/agent/helper"
    assert provider_key("openai") == "provider/openai"
    for bad in ("", "a/b", "..", "a..b", " x", "x\n"):
        with pytest.raises(ValueError):
            person_namespace("pod1", bad)
    with pytest.raises(ValueError):
        Vault(person_namespace("pod1", "alice")).get("../bob/provider/openai")


def test_keyring_backend_namespaces_people_apart(secure_keyring: str) -> None:
    pod = f"pod-{uuid.uuid4().hex[:8]}"
    alice = Vault.open(person_namespace(pod, "alice"))
    bob = Vault.open(person_namespace(pod, "bob"))
    assert alice.backend == "keyring"
    alice.set(provider_key("openai"), "sk-alice-1234")
    assert alice.get(provider_key("openai")) == "sk-alice-1234"
    assert bob.get(provider_key("openai")) is None
    agent = Vault.open(agent_namespace(pod, "alice", "helper"))
    assert agent.get(provider_key("openai")) is None
    alice.delete(provider_key("openai"))
    assert alice.get(provider_key("openai")) is None
    # The old public API keeps working.
    legacy = Vault(f"{pod}/person/carol")
    legacy.set("provider/x", "sk-carol-5678")
    assert legacy.get("provider/x") == "sk-carol-5678"
    legacy.delete("provider/x")


def test_file_backend_round_trip_and_never_plaintext(tmp_path: Path) -> None:
    ns = person_namespace("pod1", "alice")
    v = Vault.open(ns, "correct horse battery", tmp_path, backend="file", scrypt_n=FAST)
    assert v.backend == "encrypted-file"
    v.set(provider_key("anthropic"), "sk-ant-secret-0001")
    Vault.open(agent_namespace("pod1", "alice", "helper"), "correct horse battery", tmp_path, backend="file",
               scrypt_n=FAST).set("token", "agent-token-0002")
    path = vault_file(tmp_path, ns)
    raw = path.read_bytes()
    assert b"sk-ant-secret-0001" not in raw and b"agent-token-0002" not in raw and b"anthropic" not in raw
    assert (os.stat(path).st_mode & 0o777) == 0o600
    again = Vault.open(ns, "correct horse battery", tmp_path, backend="file")
    assert again.get(provider_key("anthropic")) == "sk-ant-secret-0001"
    assert again.get("agent/helper/token") == "agent-token-0002"
    again.delete(provider_key("anthropic"))
    assert Vault.open(ns, "correct horse battery", tmp_path, backend="file").get(provider_key("anthropic")) is None
    # Another person has another file and passphrase.
    assert vault_file(tmp_path, person_namespace("pod1", "bob")) != path


def test_file_backend_errors_say_what_to_do(tmp_path: Path) -> None:
    ns = person_namespace("pod1", "alice")
    Vault.open(ns, "correct horse battery", tmp_path, backend="file", scrypt_n=FAST).set("k", "value-1234")
    with pytest.raises(WrongPassphrase, match="does not unlock"):
        Vault.open(ns, "wrong horse battery", tmp_path, backend="file")
    with pytest.raises(VaultLocked, match="locked: enter your passphrase"):
        Vault.open(ns, None, tmp_path, backend="file")
    with pytest.raises(VaultUnavailable, match="set one"):
        Vault.open(person_namespace("pod1", "nobody"), None, tmp_path, backend="file")
    with pytest.raises(ValueError, match="at least 8"):
        Vault.open(person_namespace("pod1", "dan"), "short", tmp_path, backend="file")
    path = vault_file(tmp_path, ns)
    data = json.loads(path.read_text())
    ct = bytearray(base64.b64decode(data["ciphertext"]))
    ct[0] ^= 1
    data["ciphertext"] = base64.b64encode(bytes(ct)).decode()
    path.write_text(json.dumps(data))
    with pytest.raises(VaultCorrupt, match="integrity check although the passphrase is right"):
        Vault.open(ns, "correct horse battery", tmp_path, backend="file")
    path.write_text("not json at all")
    with pytest.raises(VaultCorrupt, match="damaged"):
        Vault.open(ns, "correct horse battery", tmp_path, backend="file")
    assert issubclass(VaultCorrupt, VaultUnavailable) and issubclass(WrongPassphrase, VaultLocked)


def test_change_passphrase(tmp_path: Path) -> None:
    ns = person_namespace("pod1", "alice")
    v = Vault.open(ns, "first passphrase", tmp_path, backend="file", scrypt_n=FAST)
    v.set("k", "value-5678")
    v.change_passphrase("second passphrase")
    with pytest.raises(WrongPassphrase):
        Vault.open(ns, "first passphrase", tmp_path, backend="file")
    assert Vault.open(ns, "second passphrase", tmp_path, backend="file").get("k") == "value-5678"


def test_a_killed_writers_copy_of_a_deleted_key_is_swept(tmp_path: Path) -> None:
    """A writer killed between writing its temporary copy and renaming it left `<vault>.tmp<pid>`: the keys as they
    were, under the passphrase of then. Deleting the key, or changing the passphrase, left that copy on disk."""
    import subprocess
    import sys

    ns = person_namespace("pod1", "alice")
    v = Vault.open(ns, "first passphrase", tmp_path, backend="file", scrypt_n=FAST)
    v.set("old", "sk-old-key-0a1b2c3d")
    path = vault_file(tmp_path, ns)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = path.with_name(path.name + f".tmp{int(dead.stdout)}")
    left.write_bytes(path.read_bytes())  # what the killed writer had written
    other = path.with_name(path.name + ".tmpnotes")  # not a writer's: left alone
    other.write_text("mine")
    v.delete("old")
    assert not left.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == sorted([path.name, path.name + ".lock",
                                                                                  other.name])


@pytest.fixture
def no_keyring() -> Iterator[None]:
    import keyring
    from keyring.backends import fail

    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        yield
    finally:
        keyring.set_keyring(before)


def test_auto_falls_back_to_the_file_only_with_a_passphrase(tmp_path: Path, no_keyring: None) -> None:
    ns = person_namespace("pod1", "alice")
    with pytest.raises(VaultUnavailable, match="No secure keyring"):
        Vault.open(ns)
    with pytest.raises(VaultUnavailable, match="set one"):
        Vault.open(ns, data_dir=tmp_path)
    v = Vault.open(ns, "correct horse battery", tmp_path, scrypt_n=FAST)
    assert v.backend == "encrypted-file"
    v.set("k", "value-9012")
    with pytest.raises(VaultLocked):
        Vault.open(ns, data_dir=tmp_path)
    with pytest.raises(VaultUnavailable):
        Vault.open(ns, "correct horse battery", tmp_path, backend="keyring")
    assert not any(p.suffix not in (".hvault", ".lock") for p in (tmp_path / "vault").iterdir())


def test_secrets_from_the_file_are_redacted_in_logs(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    v = Vault.open(person_namespace("pod1", "erin"), "correct horse battery", tmp_path, backend="file", scrypt_n=FAST)
    v.set("k", "sk-erin-redact-3456")
    log = logging.getLogger("hearth.test.vault")
    log.addFilter(RedactingFilter())
    with caplog.at_level(logging.INFO, logger="hearth.test.vault"):
        log.info("calling with %s", "sk-erin-redact-3456")
    assert "sk-erin-redact-3456" not in caplog.text and "[secret hidden]" in caplog.text
    assert redact("x sk-erin-redact-3456 y") == "x [secret hidden] y"
