"""``ajedrez-server`` / ``python -m ajedrez``: start the daemon (docs/operations.md)."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import shutil
import signal
import socket
import ssl
import sys
import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from ajedrez import __version__
from ajedrez.binproto.connection import frontend as binary_frontend
from ajedrez.domain.accounts import Accounts
from ajedrez.domain.clocks import Clock, ClockRules, SystemClock
from ajedrez.domain.games import Games
from ajedrez.domain.timecontrol import DAY_MS, parse_control
from ajedrez.espol.connection import Connection
from ajedrez.hashproto.connection import frontend as hash_frontend
from ajedrez.server import logs, loops, metrics, notify
from ajedrez.server.prefork import Listeners, Master, open_listener
from ajedrez.server.reactor import LISTEN_BACKLOG, Listener, Reactor, make_service, tls_context
from ajedrez.server.scheduler import Scheduler
from ajedrez.server.settings import Settings, SettingsError, add_arguments, config_file, load
from ajedrez.server.testclock import FileClock
from ajedrez.service.frontend import Frontend
from ajedrez.service.hub import Hub
from ajedrez.store.db import Database
from ajedrez.store.events import prune_events
from ajedrez.store.migrate import current_revision, revisions, upgrade
from ajedrez.store.moves import Moves
from ajedrez.store.urls import BadURL, redact, resolve_url
from ajedrez.store.writer_process import (
    WriterClient,
    open_writer_listener,
    serve_writes,
    writer_address,
)

if TYPE_CHECKING:
    # The operators' listener (aiohttp, 10 MiB) is imported only when it is asked for.
    from ajedrez.server.monitor import Health, Monitor

log = logging.getLogger("ajedrez")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ajedrez-server",
        description="Ajedrez correspondence-chess server (ESPOL 2.0). Every option can also "
        "be set in the --config TOML file (same name, with underscores); the command line "
        "wins. See docs/operations.md.",
    )
    add_arguments(p)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return p


def main(argv: list[str] | None = None) -> int:
    args = vars(build_parser().parse_args(argv))
    config, _ = config_file(args.pop("config"))
    try:
        settings = load(config, args)
    except SettingsError as e:
        print(f"ajedrez-server: {e}", file=sys.stderr)
        return 2
    logs.setup(settings.log_level, settings.log_format)
    url = resolve_url(settings.database_url)
    try:
        db = _database(url, settings)
        log.info("database %s: bringing the schema up to date", redact(url))
        upgrade(db)
    except BadURL as e:  # says what the URL is, and a URL that does not parse has no parts
        log.error("cannot open the database: %s", e)
        return 1
    except Exception as e:  # one line for the operator, whatever the driver raised
        log.error("cannot open the database %s: %s", redact(url), _one_line(e))
        return 1
    try:
        # Settings give both or neither.
        tls = (
            tls_context(settings.tls_cert, settings.tls_key)
            if settings.tls_cert and settings.tls_key
            else None
        )
    except (OSError, ValueError) as e:
        log.error("cannot load the TLS certificate or key: %s", _one_line(e))
        return 1
    tls_ports = (settings.tls_port, settings.hash_tls_port, settings.binary_tls_port)
    if tls is not None and all(port is None for port in tls_ports):
        log.error("--tls-cert and --tls-key need --tls-port")
        return 1
    for flag, port in (("hash", settings.hash_tls_port), ("binary", settings.binary_tls_port)):
        if tls is None and port is not None:
            log.error("--%s-tls-port needs --tls-cert and --tls-key", flag)
            return 1
    try:
        time = _time(settings)
    except (OSError, ValueError) as e:
        log.error("cannot read the clock file %s: %s", settings.clock_file, _one_line(e))
        return 1
    if settings.flag_grace > 0:
        log.info(
            "start-up grace: no game ends on time in the next %g s; give time back now if "
            "the server was down (ajedrez-admin games extend)",
            settings.flag_grace,
        )
    log.info("event loop: %s", settings.event_loop)
    # Before any process counts anything (metrics.py).
    counted = None if settings.metrics_port is None else metrics.prepare(settings.metrics_dir)
    try:
        return _run(settings, db, url, tls, time, counted)
    finally:
        if counted is not None and settings.metrics_dir is None:
            shutil.rmtree(counted, ignore_errors=True)  # the files of a run that is over


def _run(
    settings: Settings,
    db: Database,
    url: str,
    tls: ssl.SSLContext | None,
    time: Time,
    counted: str | None,
) -> int:
    if settings.workers > 1:
        db.dispose()  # each worker opens its own: no connection may cross a fork
        writer = db.uses_writer_process and settings.writer_process
        return _serve_workers(settings, url, tls, time, counted, writer_process=writer)
    monitor = None
    try:
        if counted is not None:
            monitor = _monitor(settings, counted, lambda: _health(db))
            if monitor is None:
                return 1
        serve = _serve(settings, db, tls, time, scheduler=True, metrics_dir=counted)
        return loops.run(serve, settings.event_loop)
    finally:
        if monitor is not None:
            monitor.stop()
        db.dispose()
        log.info("server stopped")


def _monitor(settings: Settings, directory: str, health: Health) -> Monitor | None:
    """The /healthz and /metrics listener, started; None (logged) if it cannot listen."""
    from ajedrez.server.http_guard import HttpLimits
    from ajedrez.server.monitor import Monitor

    assert settings.metrics_port is not None
    limits = HttpLimits(
        settings.limits.metrics_max_connections, settings.limits.metrics_request_timeout
    )
    try:
        monitor = Monitor(settings.metrics_host, settings.metrics_port, health, directory, limits)
    except OSError as e:
        log.error(
            "cannot serve metrics on %s:%d: %s",
            settings.metrics_host,
            settings.metrics_port,
            e.strerror or e,
        )
        return None
    monitor.start()
    if not _is_loopback(settings.metrics_host):
        host, port = monitor.address
        log.warning(
            "health and metrics on %s:%d are open to other machines, without "
            "authentication: listen on loopback (metrics_host) behind a proxy that "
            "authenticates, or firewall the port",
            host,
            port,
        )
    return monitor


_KNOWN: list[str] = []  # the migrations this release knows, oldest first; read once


def _health(db: Database) -> tuple[bool, str]:
    """/healthz: the database answers and its schema is this release's newest."""
    if not _KNOWN:
        _KNOWN.extend(revisions())
    head = _KNOWN[-1]
    try:
        current = current_revision(db)
    except Exception as e:
        return False, _not_answering(e)
    if current is not None and current not in _KNOWN:
        return False, (
            f"the database was upgraded by a newer release (revision {current}; this release "
            f"knows up to {head}): run that release"
        )
    if current != head:
        return False, (
            f"the database schema is at {current}, this release needs {head}: "
            "run 'ajedrez-admin db upgrade'"
        )
    return True, ""


def _not_answering(e: Exception) -> str:
    return f"the database does not answer: {_one_line(e)}"


Time = tuple[Clock, ClockRules]


def _time(settings: Settings) -> Time:
    """The clock and the clock rules, the start-up grace counted from now (before any
    worker starts, so a worker that is replaced does not start it again)."""
    clock: Clock = FileClock(settings.clock_file) if settings.clock_file else SystemClock()
    rules = ClockRules(
        default_control=parse_control(settings.default_time_control),
        leave_days=settings.leave_days,
        min_bank_ms=settings.clock_min_seconds * 1000,
        max_bank_ms=settings.clock_max_days * DAY_MS,
        flag_after_ms=clock.now_ms() + round(settings.flag_grace * 1000),
        grace_ms=round(settings.flag_grace * 1000),
    )
    return clock, rules


def _database(url: str, settings: Settings) -> Database:
    return Database(
        url,
        busy_timeout=settings.sqlite_busy_timeout,
        group_commit=settings.sqlite_group_commit,
    )


def _serve_workers(
    settings: Settings,
    url: str,
    tls: ssl.SSLContext | None,
    time: Time,
    counted: str | None,
    *,
    writer_process: bool,
) -> int:
    listeners: Listeners = {}
    try:
        for kind, _frontend, port, _tls in _served(settings, tls):
            listeners[kind] = open_listener(settings.host, port, LISTEN_BACKLOG)
    except OSError as e:
        log.error("cannot listen on %s: %s", settings.host, e.strerror or e)
        return 1
    _log_listening([(kind, *sock.getsockname()[:2]) for kind, sock in listeners.items()])

    # PostgreSQL: one process commits every worker's moves (store/writer_process.py).
    writer: tuple[bytes, socket.socket] | None = None
    if writer_process:
        address = writer_address()
        writer = address, open_writer_listener(address)

    # The master serves /healthz and /metrics for every process: the sum of their files.
    monitor = None
    if counted is not None:

        def health() -> tuple[bool, str]:
            try:
                db = _database(url, settings)  # a fresh one: the master keeps no connection
            except Exception as e:
                return False, _not_answering(e)
            try:
                return _health(db)
            finally:
                db.dispose()

        monitor = _monitor(settings, counted, health)
        if monitor is None:
            return 1

    def in_child() -> None:
        if monitor is not None:
            monitor.close_in_child()

    def run_writer() -> int:
        assert writer is not None
        logs.log_as("writer")
        in_child()
        for sock in listeners.values():
            sock.close()
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda _n, _frame: stop.set())
        db = _database(url, settings)
        db.on_commit(metrics.enable(counted).committed)
        try:
            moves = Moves.of(db, *time)
            return serve_writes(
                db.write_jobs, writer[1], moves.job_from_payload, db.group_commit, stop
            )
        finally:
            db.dispose()

    def run_worker(number: int, serving: Callable[[], None]) -> int:
        logs.log_as(f"worker {number}")
        in_child()
        db = _database(url, settings)
        if writer is not None:
            writer[1].close()
            db.writer_process = WriterClient(writer[0])
        try:
            serve = _serve(
                settings,
                db,
                tls,
                time,
                listeners,
                scheduler=number == 1,
                metrics_dir=counted,
                serving=serving,
                slot=f"worker {number}",
            )
            return loops.run(serve, settings.event_loop)
        finally:
            db.dispose()

    log.info("starting %d worker processes", settings.workers)
    master = Master(
        settings.workers,
        listeners,
        run_worker,
        settings.limits.stop_grace,
        run_writer if writer is not None else None,
    )
    if counted is not None:
        master.on_exit = partial(metrics.forget_process, counted)
    try:
        code = master.run()
    finally:
        if monitor is not None:
            monitor.stop()
    log.info("server stopped")
    return code


async def _serve(
    settings: Settings,
    db: Database,
    tls: ssl.SSLContext | None,
    time: Time,
    listeners: Listeners | None = None,
    *,
    scheduler: bool,
    metrics_dir: str | None = None,
    serving: Callable[[], None] | None = None,
    slot: str = "main",
) -> int:
    """Serve until stopped; ``scheduler``: this process ends games on time;
    ``metrics_dir``: where it counts (None: it does not); ``serving``: called once it
    serves (a worker's report to the master); ``slot``: which process it is."""
    lim = settings.limits
    counted = metrics.enable(metrics_dir)
    db.on_commit(counted.committed)
    games = Games(db, *time)
    games.live.chat_per_minute = settings.chat_per_minute
    games.live.seeks_per_player = settings.seeks_per_player
    accounts = Accounts(
        db,
        max_pending=lim.max_pending_subscriptions,
        max_pending_per_address=lim.max_pending_per_address,
        open_signup=settings.open_signup,
        clock=time[0],
    )
    hub = Hub(
        db,
        heartbeat=settings.event_heartbeat,
        metrics=counted,
        clock=time[0],
        catch_up_limit=settings.event_catch_up_limit,
    )
    moves = Moves.of(db, *time)
    service = make_service(
        accounts,
        games,
        moves,
        lim,
        settings.command_threads,
        hub,
        token_lifetime=settings.token_days * 86_400,
    )
    sockets = listeners or {}
    served = [
        Listener(kind, frontend, port, context, sockets.get(kind))
        for kind, frontend, port, context in _served(settings, tls)
    ]
    reactor = Reactor(service, settings.host, served, lim, hub, counted, slot)
    try:
        await hub.start()
        opened = await reactor.start()
    except OSError as e:
        log.error("cannot listen on %s: %s", settings.host, e.strerror or e)
        await hub.stop()
        return 1
    if db.writer_process is not None:
        await db.writer_process.connect()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        # Not loop.add_signal_handler: it learns of a signal through the loop's self-pipe,
        # which a busy server can fill (every command thread's result writes to it), and a
        # signal that finds it full is lost (seen at 1,000 players: a worker missed its
        # SIGTERM). A plain handler runs on this thread at the next bytecode and queues
        # the stop on the loop directly.
        signal.signal(signum, lambda n, _frame: loop.call_soon_threadsafe(_stop, reactor, n))
    if listeners is None:
        _log_listening(opened)
        notify.ready(", ".join(f"listening on {host}:{port}" for _kind, host, port in opened))
    else:
        log.info("serving")
    if serving is not None:
        serving()
    flagger = None
    if scheduler:
        retention = settings.event_retention_days * DAY_MS
        flagger = Scheduler(
            games.time, settings.clock_poll, partial(prune_events, db), retention, counted
        )
    if flagger is not None:
        flagger.start()
    await reactor.serve_until_stopped()
    await hub.stop()
    if flagger is not None:
        await flagger.stop()
    if db.writer_process is not None:
        db.writer_process.close()
    return 0


def _served(
    settings: Settings, tls: ssl.SSLContext | None
) -> list[tuple[str, Frontend, int, ssl.SSLContext | None]]:
    """(kind, front end, port, TLS) of each listener the settings ask for: ESPOL's, then
    the `#` protocol's and the binary protocol's (docs/dialects.md)."""
    served: list[tuple[str, Frontend, int, ssl.SSLContext | None]] = [
        ("plain", Connection, settings.port, None)
    ]
    if tls is not None and settings.tls_port is not None:
        served.append(("tls", Connection, settings.tls_port, tls))
    hash_protocol = hash_frontend(settings.hash_time_control)
    if settings.hash_port is not None:
        served.append(("hash", hash_protocol, settings.hash_port, None))
    if tls is not None and settings.hash_tls_port is not None:
        served.append(("hash-tls", hash_protocol, settings.hash_tls_port, tls))
    binary_protocol = binary_frontend(settings.binary_time_control)
    if settings.binary_port is not None:
        served.append(("binary", binary_protocol, settings.binary_port, None))
    if tls is not None and settings.binary_tls_port is not None:
        served.append(("binary-tls", binary_protocol, settings.binary_tls_port, tls))
    return served


# What the log says of each kind of listener.
_LISTENING = {
    "plain": "listening on",
    "tls": "listening with TLS on",
    "hash": "# protocol (seed 000) listening on",
    "hash-tls": "# protocol (seed 000) listening with TLS on",
    "binary": "binary protocol (seed 004) listening on",
    "binary-tls": "binary protocol (seed 004) listening with TLS on",
}


def _log_listening(listeners: list[tuple[str, str, int]]) -> None:
    for kind, host, port in listeners:
        log.info("ajedrez %s %s %s:%d", __version__, _LISTENING[kind], host, port)
        if kind in ("plain", "hash", "binary") and not _is_loopback(host):
            log.warning(
                "passwords cross the network in clear on %s:%d; give clients the TLS "
                "listener (--tls-cert, --tls-key, --tls-port) instead",
                host,
                port,
            )


def _stop(reactor: Reactor, signum: int) -> None:
    log.info("received %s, stopping", signal.Signals(signum).name)
    notify.stopping()  # a worker has forgotten the socket: only the main process says it
    reactor.stop()


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
