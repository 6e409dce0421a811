"""Where the client keeps its login tokens (FICN's secret; docs/client.md, "Logging in
once"): the operating system's keyring through the ``keyring`` package when it is
installed and has a usable backend, else ``tokens.json`` beside the config file, made
for the owner only (0600, in a 0700 directory) and written whole by a rename.

One token per server address and user, kept as ``<id>:<secret>``: the id lets
``ajedrez logout`` revoke it on the server. ``AJEDREZ_KEYRING=no`` keeps it in the file
even where a keyring exists (a headless machine whose keyring asks for a password).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ajedrez.client.errors import host_port

SERVICE = "ajedrez"  # the keyring's service name
FILE_NAME = "tokens.json"


@dataclass(frozen=True)
class Token:
    id: int
    secret: str

    def encode(self) -> str:
        return f"{self.id}:{self.secret}"

    @classmethod
    def decode(cls, text: str) -> Token | None:
        """None for anything that is not ``<id>:<secret>`` (a damaged or foreign entry)."""
        head, sep, secret = text.partition(":")
        if not sep or not head.isdigit() or not secret:
            return None
        return cls(int(head), secret)


def token_key(host: str, port: int, user: str) -> str:
    """A token's key: the user at the server's address (as the local data's is)."""
    return f"{user}@{host_port(host, port)}"


class TokenStore(Protocol):
    where: str  # said to the user: "the system keyring", or the file's path

    def get(self, key: str) -> Token | None: ...
    def put(self, key: str, token: Token) -> None: ...
    def forget(self, key: str) -> bool: ...


class KeyringStore:
    def __init__(self, keyring: Any) -> None:
        self.keyring = keyring
        self.where = "the system keyring"

    def get(self, key: str) -> Token | None:
        text = self.keyring.get_password(SERVICE, key)
        return Token.decode(text) if text else None

    def put(self, key: str, token: Token) -> None:
        self.keyring.set_password(SERVICE, key, token.encode())

    def forget(self, key: str) -> bool:
        if self.keyring.get_password(SERVICE, key) is None:
            return False
        self.keyring.delete_password(SERVICE, key)
        return True


class FileStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path)

    def _load(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # unreadable: as if empty; the next login writes it anew
        return (
            {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}
        )

    def _save(self, data: dict[str, str]) -> None:
        # Made 0600 before the secret is written, then renamed over the old file: no
        # moment when another user could read it, nor a half-written file.
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self.path.parent, prefix=".tokens-", suffix=".tmp")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(name, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(name)
            raise

    def get(self, key: str) -> Token | None:
        text = self._load().get(key)
        return Token.decode(text) if text else None

    def put(self, key: str, token: Token) -> None:
        data = self._load()
        data[key] = token.encode()
        self._save(data)

    def forget(self, key: str) -> bool:
        data = self._load()
        if data.pop(key, None) is None:
            return False
        if data:
            self._save(data)
        else:
            self.path.unlink(missing_ok=True)
        return True


def usable_keyring() -> Any | None:
    """The ``keyring`` module when it is installed and its backend can keep a secret;
    None otherwise (not installed, or only its fail or null backend: no keyring daemon,
    a container, a server). Not a dependency of this client: used where it is."""
    try:
        import keyring  # type: ignore[import-not-found,unused-ignore]
    except Exception:  # not installed, or broken on import: the file will do
        return None
    try:
        backend = keyring.get_keyring()
        module = type(backend).__module__
        if module.startswith(("keyring.backends.fail", "keyring.backends.null")):
            return None
        if float(getattr(backend, "priority", 1)) <= 0:
            return None
    except Exception:
        return None
    return keyring


def token_store(config_dir: Path, env: Mapping[str, str]) -> TokenStore:
    """The keyring where one is usable (and not turned off), else the file."""
    if env.get("AJEDREZ_KEYRING", "").lower() not in ("no", "0", "false", "off"):
        keyring = usable_keyring()
        if keyring is not None:
            return KeyringStore(keyring)
    return FileStore(config_dir / FILE_NAME)
