"""Every server setting in one place: defaults, the TOML file, and the command line.

Precedence: command line over the settings file (``--config``, else ``AJEDREZ_CONFIG``)
over ``AJEDREZ_DATABASE_URL`` (database URL only) over the defaults below.
``docs/operations.md`` lists them all. ``ajedrez-admin`` reads the same file the same way,
so that both open the same database.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from ajedrez.domain.live import SEEKS_PER_PLAYER
from ajedrez.domain.presence import SESSIONS_PER_ACCOUNT
from ajedrez.domain.timecontrol import parse_control
from ajedrez.espol.framing import MAX_LINE
from ajedrez.server import loops
from ajedrez.server.logs import LOG_FORMATS
from ajedrez.service.netblocks import IPV6_BLOCK_SIZE

DEFAULT_PORT = 1995  # the year of ESPOL 2.0; above 1024 so no privileges are needed
DEFAULT_HOST = "127.0.0.1"
# The longest valid line a client can send before login is a SUBS with a 32-character
# name, a 128-character password and a 200-character comment in 4-byte UTF-8: 1,351 bytes.
MAX_LINE_BEFORE_LOGIN = 1400


@dataclass(frozen=True)
class Limits:
    """What one client may cost the server; each limit's effect is in docs/security.md."""

    max_connections: int = 1000
    max_connections_per_address: int = 32
    # The prefix length of the IPv6 network block counted as one client address by every
    # per-address limit (OpenSSH's PerSourceNetBlockSize); 128: each address alone.
    ipv6_block_size: int = IPV6_BLOCK_SIZE
    # Logged-in sessions of one account at once, over every process on the database.
    max_sessions_per_account: int = SESSIONS_PER_ACCOUNT
    idle_timeout: float = 1800.0  # seconds without a byte from the client
    request_deadline: float = 30.0  # seconds to finish a line once its first byte came
    max_line_before_login: int = MAX_LINE_BEFORE_LOGIN
    max_line: int = MAX_LINE  # after login
    stop_grace: float = 10.0  # seconds commands in progress get to finish at shutdown
    login_delay_base: float = 2.0  # the delay after the first failed PASS; doubles after
    login_delay_max: float = 15.0
    login_forget_after: float = 900.0  # seconds after the last failure a record is dropped
    # Failures on one name, from all addresses, within login_name_window seconds, after
    # which the addresses that failed on it share one queue for it (service/throttle.py).
    login_name_budget: int = 30
    login_name_window: float = 3600.0
    max_password_checks: int = 4  # argon2 verifications of PASS and UNSU at once (19 MiB each)
    max_subscription_hashes: int = 1  # SUBS hashing at once, apart from the logins' threads
    login_grace: float = 60.0  # seconds a connection has to log in (OpenSSH's LoginGraceTime)
    max_unauthenticated: int = 256  # connections not logged in at once (OpenSSH's MaxStartups)
    subs_per_address: int = 5  # SUBS from one address per subs_window seconds
    subs_window: float = 3600.0
    max_pending_subscriptions: int = 1000  # requests waiting for the administrator, in all
    max_pending_per_address: int = 3  # ... and from one client address
    max_guests_per_address: int = 16  # guests of the seed listeners held from one address
    # The /healthz and /metrics listener (http_guard.py): connections at once, and seconds
    # a connection has to send a request's head.
    metrics_max_connections: int = 32
    metrics_request_timeout: float = 10.0
    # Requests that make an event for another user (JUEG, DECL, OBSV, OBSF, LICE I/F,
    # TBLS, ATRS, BUSC, BLOQ, BLOR), per account: a burst, then so many a second.
    events_burst: int = 20
    events_per_second: float = 2.0


@dataclass(frozen=True)
class Settings:
    database_url: str | None = None
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    tls_port: int | None = None  # a TLS listener on this port when tls_cert/tls_key are set
    tls_cert: str | None = None
    tls_key: str | None = None
    workers: int = 1  # server processes sharing the listening sockets
    event_loop: str = field(default_factory=loops.default)  # see ajedrez/loops.py
    command_threads: int = 16
    log_level: str = "INFO"
    log_format: str = "text"  # or "json": one object a line (logs.py)
    sqlite_busy_timeout: float = 10.0
    sqlite_group_commit: int = 32  # most SQLite writes sharing one commit (1: one each)
    # PostgreSQL with --workers: one process commits every worker's moves (writer_process.py);
    # false: each worker commits its own, with its writer thread.
    writer_process: bool = True
    # Clocks (docs/protocol.md section 5).
    default_time_control: str = "none"  # for a JUEG that names none
    leave_days: int = 30  # leave per player and calendar year
    token_days: int = 90  # a login token (FICN) lapses after this many days unused
    flag_grace: float = 300.0  # seconds after start-up before any game ends on time
    clock_poll: float = 1.0  # seconds between the scheduler's looks at the next deadline
    clock_min_seconds: int = 10  # the smallest initial bank a time control may have
    clock_max_days: int = 365  # the largest bank, increment or cap
    # Tests only: read the time from this file (ms since 1970) instead of the system.
    clock_file: str | None = None
    # The event stream (docs/protocol.md section 6).
    event_heartbeat: float = 60.0  # seconds between 603s on a streaming connection
    # A stream asked to start further back than this many of its user's events gets 602.
    event_catch_up_limit: int = 1000
    chat_per_minute: int = 10  # CHAT messages a user may send a minute
    seeks_per_player: int = SEEKS_PER_PLAYER  # waiting seeks (BUSC) a user may hold
    event_retention_days: int = 365  # events older are removed (0: kept for ever)
    # The `#` protocol of seed 000 (docs/dialects.md): off unless a port is set; its TLS
    # listener takes tls_cert and tls_key. Its tables' time control (a BUSC control).
    hash_port: int | None = None
    hash_tls_port: int | None = None
    hash_time_control: str = "10m"
    # The binary protocol of seed 004 (docs/dialects.md): the same, on ports of its own.
    binary_port: int | None = None
    binary_tls_port: int | None = None
    binary_time_control: str = "10m"
    # The HTTP listener for /healthz and /metrics (monitor.py): off unless a port is set.
    metrics_port: int | None = None
    metrics_host: str = DEFAULT_HOST
    metrics_dir: str | None = None  # where processes write their metrics (None: a new one)
    # Registration: a SUBS makes the account at once; off, the administrator approves each
    # request (the seed's rule).
    open_signup: bool = False
    limits: Limits = Limits()


_LIMIT_NAMES = {f.name for f in fields(Limits)}
_SETTING_NAMES = {f.name for f in fields(Settings)} - {"limits"}


class SettingsError(Exception):
    pass


CONFIG_ENV = "AJEDREZ_CONFIG"


def config_file(
    cli_value: str | None, environ: Mapping[str, str] = os.environ
) -> tuple[str | None, str]:
    """The settings file, ``--config`` over ``$AJEDREZ_CONFIG``, and which named it (None:
    no file)."""
    if cli_value:
        return cli_value, "--config"
    if environ.get(CONFIG_ENV):
        return environ[CONFIG_ENV], CONFIG_ENV
    return None, ""


def load(path: str | None, overrides: dict[str, Any]) -> Settings:
    """Defaults, then the TOML file (if any), then ``overrides`` (the command line; None
    values mean "not given")."""
    values: dict[str, Any] = {}
    if path:
        try:
            values = tomllib.loads(Path(path).read_text())
        except OSError as e:
            raise SettingsError(f"cannot read {path}: {e.strerror or e}") from e
        except tomllib.TOMLDecodeError as e:
            raise SettingsError(f"{path} is not valid TOML: {e}") from e
    values.update({k: v for k, v in overrides.items() if v is not None})
    unknown = set(values) - _SETTING_NAMES - _LIMIT_NAMES
    if unknown:
        raise SettingsError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    limits = _build(Limits(), {k: v for k, v in values.items() if k in _LIMIT_NAMES})
    settings = _build(Settings(), {k: v for k, v in values.items() if k in _SETTING_NAMES})
    for name in (
        "workers",
        "command_threads",
        "sqlite_group_commit",
        "chat_per_minute",
        "seeks_per_player",
    ):
        if getattr(settings, name) < 1:
            raise SettingsError(f"setting {name} must be at least 1")
    if settings.log_format not in LOG_FORMATS:
        raise SettingsError(f"log_format must be one of {', '.join(LOG_FORMATS)}")
    if settings.event_loop not in loops.EVENT_LOOPS:
        raise SettingsError(f"event_loop must be one of {', '.join(loops.EVENT_LOOPS)}")
    if not loops.available(settings.event_loop):
        raise SettingsError(f"event_loop {settings.event_loop}: that package is not installed")
    for name in ("default_time_control", "hash_time_control", "binary_time_control"):
        try:
            parse_control(getattr(settings, name))
        except ValueError as e:
            raise SettingsError(f"{name}: {e}") from None
    if limits.metrics_max_connections < 1:
        raise SettingsError("setting metrics_max_connections must be at least 1")
    if limits.metrics_request_timeout <= 0:
        raise SettingsError("setting metrics_request_timeout must be above 0")
    if limits.ipv6_block_size > 128:
        raise SettingsError("setting ipv6_block_size must be at most 128")
    if limits.max_sessions_per_account < 1:
        raise SettingsError("setting max_sessions_per_account must be at least 1")
    if settings.token_days < 1:
        raise SettingsError("setting token_days must be at least 1")
    if settings.event_retention_days < 0:
        raise SettingsError("setting event_retention_days must be at least 0")
    if settings.event_catch_up_limit < 1:
        raise SettingsError("setting event_catch_up_limit must be at least 1")
    for name in ("clock_poll", "event_heartbeat"):
        if getattr(settings, name) <= 0:
            raise SettingsError(f"setting {name} must be above 0")
    if limits.events_burst < 1:
        raise SettingsError("setting events_burst must be at least 1")
    if limits.events_per_second <= 0:
        raise SettingsError("setting events_per_second must be above 0")
    if bool(settings.tls_cert) != bool(settings.tls_key):
        raise SettingsError("tls_cert and tls_key go together")
    return replace(settings, limits=limits)


B = TypeVar("B", "Settings", "Limits")


def _build(base: B, values: dict[str, Any]) -> B:
    """``base`` with ``values`` (names of its own fields) checked against the defaults' types."""
    checked: dict[str, Any] = {}
    for name, value in values.items():
        default = getattr(base, name)
        expected = type(default)
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if default is not None and not isinstance(value, expected):
            raise SettingsError(
                f"setting {name} must be {expected.__name__}, not {type(value).__name__}"
            )
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            raise SettingsError(f"setting {name} must not be negative")
        checked[name] = value
    return replace(base, **checked)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Command-line options for every setting; each defaults to None ("not given")."""
    d, lim = Settings(), Limits()
    p.add_argument(
        "--config", help=f"TOML file with any of the settings below (default: ${CONFIG_ENV})"
    )
    p.add_argument(
        "--database-url",
        help="SQLAlchemy URL (default: $AJEDREZ_DATABASE_URL, "
        "else ~/.local/share/ajedrez/ajedrez.sqlite3 under $XDG_DATA_HOME)",
    )
    p.add_argument("--host", help=f"address to listen on ({d.host})")
    p.add_argument("--port", type=int, help=f"TCP port ({d.port}; 0 = any free)")
    p.add_argument("--tls-port", type=int, help="TLS listener port (needs --tls-cert/--tls-key)")
    p.add_argument("--tls-cert", help="PEM certificate chain for the TLS listener")
    p.add_argument("--tls-key", help="PEM private key for the TLS listener")
    p.add_argument(
        "--workers",
        type=int,
        help=f"server processes sharing the listening port; limits apply to each ({d.workers})",
    )
    p.add_argument(
        "--event-loop",
        choices=loops.EVENT_LOOPS,
        help=f"the transport's event loop ({d.event_loop} here)",
    )
    p.add_argument(
        "--command-threads",
        type=int,
        help=f"commands running at once in each process ({d.command_threads})",
    )
    p.add_argument(
        "--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help=f"({d.log_level})"
    )
    p.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        help=f"stderr's lines: text, or json for log shippers, one object a line ({d.log_format})",
    )
    p.add_argument(
        "--sqlite-busy-timeout",
        type=float,
        help=f"seconds a SQLite writer waits for the lock ({d.sqlite_busy_timeout:g})",
    )
    p.add_argument(
        "--sqlite-group-commit",
        type=int,
        help=f"most SQLite writes that share one commit; 1 commits each alone "
        f"({d.sqlite_group_commit})",
    )
    p.add_argument(
        "--writer-process",
        action=argparse.BooleanOptionalAction,
        help="PostgreSQL with --workers: one process commits every worker's moves "
        f"({'on' if d.writer_process else 'off'})",
    )
    p.add_argument(
        "--default-time-control",
        help="the time control of a challenge that names none: none, a preset (3d, 10m, "
        f"iccf-10/50...) or <initial>+<increment>[/<cap>] ({d.default_time_control})",
    )
    p.add_argument("--leave-days", type=int, help=f"leave days per player a year ({d.leave_days})")
    p.add_argument(
        "--token-days",
        type=int,
        help=f"days a login token (FICN) stays good after its last use ({d.token_days})",
    )
    p.add_argument(
        "--flag-grace",
        type=float,
        help="seconds after start-up before any game ends on time, so an administrator can "
        f"give time back after an outage ({d.flag_grace:g})",
    )
    p.add_argument(
        "--clock-poll",
        type=float,
        help=f"seconds between the scheduler's looks at the next deadline ({d.clock_poll:g})",
    )
    p.add_argument(
        "--clock-min-seconds",
        type=int,
        help=f"the smallest initial bank of a time control ({d.clock_min_seconds})",
    )
    p.add_argument(
        "--clock-max-days",
        type=int,
        help=f"the largest bank, increment or cap of a time control ({d.clock_max_days})",
    )
    p.add_argument(
        "--event-heartbeat",
        type=float,
        help="seconds between heartbeats (603) on a connection that streams events "
        f"({d.event_heartbeat:g})",
    )
    p.add_argument(
        "--event-catch-up-limit",
        type=int,
        help="the most of a user's events an EVEN with a cursor replays; further back, "
        f"602 and a sync by fecha ({d.event_catch_up_limit})",
    )
    p.add_argument(
        "--event-retention-days",
        type=int,
        help="days the event stream is kept for clients to resume from; 0 keeps it for "
        f"ever ({d.event_retention_days})",
    )
    p.add_argument(
        "--chat-per-minute",
        type=int,
        help=f"chat messages (CHAT) a user may send a minute ({d.chat_per_minute})",
    )
    p.add_argument(
        "--seeks-per-player",
        type=int,
        help=f"waiting seeks (BUSC) a user may hold at once ({d.seeks_per_player})",
    )
    p.add_argument(
        "--open-signup",
        action=argparse.BooleanOptionalAction,
        help="a subscription request (SUBS) makes the account at once, within the same "
        "limits, instead of waiting for the administrator's approval "
        f"({'on' if d.open_signup else 'off'})",
    )
    p.add_argument(
        "--hash-port",
        type=int,
        help="serve the # protocol of seed 000 (docs/dialects.md) on this port (off unless "
        "set; 0 = any free)",
    )
    p.add_argument(
        "--hash-tls-port",
        type=int,
        help="serve the # protocol over TLS on this port (needs --tls-cert/--tls-key)",
    )
    p.add_argument(
        "--hash-time-control",
        help=f"the time control of the # protocol's tables ({d.hash_time_control})",
    )
    p.add_argument(
        "--binary-port",
        type=int,
        help="serve the binary protocol of seed 004 (docs/dialects.md) on this port (off "
        "unless set; 0 = any free)",
    )
    p.add_argument(
        "--binary-tls-port",
        type=int,
        help="serve the binary protocol over TLS on this port (needs --tls-cert/--tls-key)",
    )
    p.add_argument(
        "--binary-time-control",
        help=f"the time control of the binary protocol's tables ({d.binary_time_control})",
    )
    p.add_argument(
        "--metrics-port",
        type=int,
        help="serve /healthz and /metrics (Prometheus) over HTTP on this port (off unless "
        "set; 0 = any free)",
    )
    p.add_argument(
        "--metrics-host", help=f"address of the /healthz and /metrics listener ({d.metrics_host})"
    )
    p.add_argument(
        "--metrics-dir",
        help="directory where every process writes its metrics (default: a new one under $TMPDIR)",
    )
    p.add_argument(
        "--clock-file",
        help="tests only: read the time (ms since 1970) from this file instead of the system",
    )
    for name, text in (
        ("max_connections", "connections served at once"),
        ("max_connections_per_address", "connections from one client address"),
        ("ipv6_block_size", "prefix length of the IPv6 block counted as one address"),
        ("max_sessions_per_account", "logged-in sessions of one account, on every process"),
        ("idle_timeout", "seconds of client silence before the connection closes"),
        ("request_deadline", "seconds to complete a line once it has begun"),
        ("max_line_before_login", "bytes in a line before login"),
        ("max_line", "bytes in a line after login"),
        ("stop_grace", "seconds commands in progress get at shutdown"),
        ("login_delay_base", "seconds of delay after a first failed PASS"),
        ("login_delay_max", "longest delay after failed PASS"),
        ("login_forget_after", "seconds after which failed logins are forgotten"),
        ("login_name_budget", "failures on one name an hour before its attackers queue"),
        ("login_name_window", "seconds over which failures on one name are counted"),
        ("max_password_checks", "password verifications (PASS, UNSU) running at once"),
        ("max_subscription_hashes", "SUBS password hashes running at once"),
        ("login_grace", "seconds a connection has to log in"),
        ("max_unauthenticated", "connections not logged in at once"),
        ("subs_per_address", "SUBS requests from one address per subs window"),
        ("subs_window", "seconds over which SUBS requests are counted"),
        ("max_pending_subscriptions", "subscription requests pending in all"),
        ("max_pending_per_address", "subscription requests pending from one address"),
        ("max_guests_per_address", "guests of the seed listeners from one address at once"),
        ("metrics_max_connections", "connections to the metrics listener at once"),
        ("metrics_request_timeout", "seconds a metrics connection has to send its request"),
        ("events_burst", "requests notifying other users one account may send at once"),
        ("events_per_second", "such requests an account may send a second past its burst"),
    ):
        default = getattr(lim, name)
        kind = type(default)
        p.add_argument("--" + name.replace("_", "-"), type=kind, help=f"{text} ({default:g})")
