"""Where the client finds its server, user and data: options, environment, config file.

Precedence, highest first: command-line option, environment variable (``AJEDREZ_SERVER``,
``AJEDREZ_USER``, ``AJEDREZ_DATA_DIR``), the config file (``client.toml`` in the
platform's user config directory, or ``--config`` / ``AJEDREZ_CONFIG``), the default.
The password is never read from or written to any file.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from ajedrez.client.errors import host_port
from ajedrez.client.protocol import DEFAULT_PORT

APP = "ajedrez"
DEFAULT_HOST = "127.0.0.1"
CONFIG_KEYS = ("server", "user", "data_dir", "timeout", "tls", "tls_ca")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


class ConfigError(Exception):
    """A bad option, environment variable or config file; the message says which."""


@dataclass(frozen=True)
class Settings:
    host: str
    port: int
    user: str | None
    data_dir: Path
    config_path: Path
    timeout: float
    tls: bool = False  # connect to the server's TLS listener
    tls_ca: Path | None = None  # CA file to verify it with (default: the system's)

    @property
    def server(self) -> str:
        return host_port(self.host, self.port)


def default_config_path(env: Mapping[str, str]) -> Path:
    if env.get("AJEDREZ_CONFIG"):
        return Path(env["AJEDREZ_CONFIG"]).expanduser()
    return Path(platformdirs.user_config_dir(APP)) / "client.toml"


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP)) / "client"


def load_config(path: Path) -> dict[str, object]:
    if not path.exists():
        return {}
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read the config file {path}: {e}") from None
    unknown = sorted(set(data) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(unknown)} in {path}; known: {', '.join(CONFIG_KEYS)}"
        )
    return data


def save_config(path: Path, values: Mapping[str, object]) -> None:
    """Write ``values`` (merged into the existing file) as TOML. Never a password."""
    current = load_config(path)
    current.update({k: v for k, v in values.items() if v is not None})
    lines = ["# ajedrez client settings (see docs/client.md); no password is kept here"]
    for key in CONFIG_KEYS:
        if key in current:
            value = current[key]
            if isinstance(value, bool):
                lines.append(f"{key} = {'true' if value else 'false'}")
            elif isinstance(value, int | float):
                lines.append(f"{key} = {value}")
            else:
                text = str(value).replace("\\", "\\\\").replace('"', '\\"')
                lines.append(f'{key} = "{text}"')
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def parse_server(text: str) -> tuple[str, int]:
    """``host``, ``host:port``, ``[v6addr]``, ``[v6addr]:port`` or a bare IPv6 address,
    optionally as an ``espol://`` URL (the protocol's own scheme) -> (host, port).

    Any other scheme (``http://``, ``https://``) is refused, saying what form is wanted:
    ESPOL is not HTTP, and such a URL usually names a web page rather than the server.
    """
    text = text.strip()
    if not text:
        raise ConfigError("empty server address")
    rest = text
    scheme = _SCHEME.match(rest)
    if scheme:
        if scheme.group(1).lower() != "espol":
            raise ConfigError(
                f"invalid server address {text!r}: {scheme.group(1)}:// is not ESPOL; give "
                f"HOST[:PORT] (chess.example.org, chess.example.org:{DEFAULT_PORT}, "
                f"[::1]:{DEFAULT_PORT}) or espol://HOST[:PORT]"
            )
        rest = rest[scheme.end() :].rstrip("/")  # a URL copied with its trailing slash
    if rest.startswith("["):
        host, closed, after = rest[1:].partition("]")
        if not closed or (after and not after.startswith(":")):
            raise ConfigError(
                f"invalid server address {text!r}: an IPv6 address is written "
                f"[ADDRESS] or [ADDRESS]:PORT, e.g. [::1]:{DEFAULT_PORT}"
            )
        port_text = after.removeprefix(":")
        if after == ":":
            raise ConfigError(f"no port after the colon in server address {text!r}")
    elif rest.count(":") == 1:
        host, _, port_text = rest.partition(":")
    else:
        host, port_text = rest, ""
    if not host or any(c in host for c in "/@ "):
        raise ConfigError(
            f"invalid server address {text!r}: HOST[:PORT], e.g. chess.example.org:"
            f"{DEFAULT_PORT} or [::1]:{DEFAULT_PORT}"
        )
    if not port_text:
        return host, DEFAULT_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError(f"invalid port in server address {text!r}: a number from 1 to 65535")
    return host, int(port_text)


def resolve(
    *,
    server: str | None,
    user: str | None,
    data_dir: str | None,
    config: str | None,
    timeout: float | None,
    env: Mapping[str, str],
    tls: bool | None = None,
    tls_ca: str | None = None,
) -> Settings:
    path = Path(config).expanduser() if config else default_config_path(env)
    file = load_config(path)

    def pick(option: object, var: str, key: str) -> object:
        if option is not None:
            return option
        if env.get(var):
            return env[var]
        return file.get(key)

    server_text = pick(server, "AJEDREZ_SERVER", "server") or f"{DEFAULT_HOST}:{DEFAULT_PORT}"
    host, port = parse_server(str(server_text))
    user_value = pick(user, "AJEDREZ_USER", "user")
    data = pick(data_dir, "AJEDREZ_DATA_DIR", "data_dir")
    timeout_value = timeout if timeout is not None else file.get("timeout", 30.0)
    if not isinstance(timeout_value, int | float) or timeout_value <= 0:
        raise ConfigError(f"invalid timeout {timeout_value!r} in {path}: a positive number")
    return Settings(
        host=host,
        port=port,
        user=str(user_value) if user_value else None,
        data_dir=Path(str(data)).expanduser() if data else default_data_dir(),
        config_path=path,
        timeout=float(timeout_value),
        tls=bool(tls if tls else file.get("tls", False)) or bool(tls_ca or file.get("tls_ca")),
        tls_ca=Path(str(tls_ca or file.get("tls_ca"))).expanduser()
        if (tls_ca or file.get("tls_ca"))
        else None,
    )
