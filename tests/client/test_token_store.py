"""Where the client keeps its login tokens (``client/tokens.py``): the keyring only when
the ``keyring`` package is there with a usable backend, else a file for the owner only."""

from __future__ import annotations

import stat
import sys
import types
from pathlib import Path

import pytest

from ajedrez.client.tokens import FileStore, KeyringStore, Token, token_key, token_store


def fake_keyring(backend_module: str, priority: float = 5) -> types.ModuleType:
    """A stand-in for the ``keyring`` package whose backend lives in ``backend_module``."""
    backend = type("Keyring", (), {"priority": priority, "__module__": backend_module})()
    saved: dict[tuple[str, str], str] = {}
    module = types.ModuleType("keyring")
    module.get_keyring = lambda: backend  # type: ignore[attr-defined]
    module.get_password = lambda service, key: saved.get((service, key))  # type: ignore[attr-defined]
    module.set_password = lambda service, key, value: saved.__setitem__((service, key), value)  # type: ignore[attr-defined]
    module.delete_password = lambda service, key: saved.pop((service, key))  # type: ignore[attr-defined]
    module.saved = saved  # type: ignore[attr-defined]
    return module


def test_without_the_keyring_package_the_file_is_used(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "keyring", None)  # import keyring fails
    store = token_store(tmp_path / "cfg", {})
    assert isinstance(store, FileStore)
    key = token_key("::1", 1995, "ana")
    assert key == "ana@[::1]:1995"
    assert store.get(key) is None
    store.put(key, Token(7, "s" * 43))
    assert stat.S_IMODE((tmp_path / "cfg" / "tokens.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "cfg").stat().st_mode) == 0o700
    store.put("bob@h:1", Token(8, "t" * 43))
    assert FileStore(store.path).get(key) == Token(7, "s" * 43)
    assert store.forget(key) and not store.forget(key)
    assert store.get("bob@h:1") == Token(8, "t" * 43)
    store.forget("bob@h:1")
    assert not store.path.exists()
    assert [p.name for p in (tmp_path / "cfg").iterdir()] == []  # no temporary file left


@pytest.mark.parametrize(
    "backend, priority",
    [("keyring.backends.fail", 0), ("keyring.backends.null", -1), ("some.backend", 0)],
)
def test_a_keyring_that_cannot_keep_secrets_is_passed_over(
    tmp_path: Path, monkeypatch, backend: str, priority: float
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "keyring", fake_keyring(backend, priority))
    assert isinstance(token_store(tmp_path, {}), FileStore)


def test_a_usable_keyring_keeps_the_token_unless_turned_off(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    module = fake_keyring("keyring.backends.SecretService")
    monkeypatch.setitem(sys.modules, "keyring", module)
    store = token_store(tmp_path, {})
    assert isinstance(store, KeyringStore)
    store.put("ana@h:1995", Token(3, "x" * 43))
    assert module.saved == {("ajedrez", "ana@h:1995"): "3:" + "x" * 43}  # type: ignore[attr-defined]
    assert store.get("ana@h:1995") == Token(3, "x" * 43)
    assert store.forget("ana@h:1995") and not store.forget("ana@h:1995")
    assert not (tmp_path / "tokens.json").exists()
    assert isinstance(token_store(tmp_path, {"AJEDREZ_KEYRING": "no"}), FileStore)


def test_a_damaged_file_or_entry_keeps_no_token(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("not json")
    store = FileStore(path)
    assert store.get("ana@h:1") is None
    path.write_text('{"ana@h:1": "no id here", "bob@h:1": 5}')
    assert store.get("ana@h:1") is None and store.get("bob@h:1") is None
    store.put("ana@h:1", Token(1, "y" * 43))
    assert store.get("ana@h:1") == Token(1, "y" * 43)
