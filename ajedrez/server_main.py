"""``ajedrez-server`` / ``python -m ajedrez``: start the daemon (contract section 5)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from types import FrameType

from . import __version__
from .reactor import Reactor
from .server import DEFAULT_HOST, DEFAULT_PORT, Limits, Server
from .service import Accounts, Games
from .storage.db import Database, redact, resolve_url
from .storage.migrate import upgrade

log = logging.getLogger("ajedrez")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ajedrez-server", description="Ajedrez correspondence-chess server (ESPOL 2.0)."
    )
    p.add_argument(
        "--database-url",
        help="SQLAlchemy URL (default: $AJEDREZ_DATABASE_URL, else the embedded SQLite file "
        "$XDG_DATA_HOME/ajedrez/ajedrez.sqlite3, i.e. ~/.local/share/ajedrez/ajedrez.sqlite3)",
    )
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on ({DEFAULT_HOST})")
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"TCP port ({DEFAULT_PORT}; 0 = any free)"
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=Limits.max_connections,
        help=f"connections served at once ({Limits.max_connections})",
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=Limits.idle_timeout,
        help=f"seconds of client silence before the connection closes ({Limits.idle_timeout:g})",
    )
    p.add_argument(
        "--transport",
        choices=["asyncio", "threads"],
        default="asyncio",
        help="asyncio: one event loop for every connection and --command-threads threads "
        "for the commands; threads: one thread per connection (asyncio; see "
        "docs/performance.md)",
    )
    p.add_argument(
        "--command-threads",
        type=int,
        default=16,
        help="with --transport asyncio: threads running commands at once (16)",
    )
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    url = resolve_url(args.database_url)
    try:
        db = Database(url)
        log.info("database %s: bringing the schema up to date", redact(url))
        upgrade(db)
    except Exception as e:  # one line for the operator, whatever the driver raised
        log.error("cannot open the database %s: %s", redact(url), _one_line(e))
        return 1
    limits = Limits(max_connections=args.max_connections, idle_timeout=args.idle_timeout)
    try:
        if args.transport == "asyncio":
            return asyncio.run(_serve_reactor(args, db, limits))
        return _serve_threads(args, db, limits)
    finally:
        db.dispose()
        log.info("server stopped")


def _serve_threads(args: argparse.Namespace, db: Database, limits: Limits) -> int:
    try:
        server = Server(Accounts(db), Games(db), args.host, args.port, limits)
    except OSError as e:
        return _cannot_listen(args, e)

    def _on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        server.stop()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    _listening(*server.address)
    server.serve_forever()
    return 0


async def _serve_reactor(args: argparse.Namespace, db: Database, limits: Limits) -> int:
    reactor = Reactor(Accounts(db), Games(db), args.host, args.port, limits, args.command_threads)
    try:
        address = await reactor.start()
    except OSError as e:
        return _cannot_listen(args, e)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, _stop_reactor, reactor, signum)
    _listening(*address)
    await reactor.serve_until_stopped()
    return 0


def _stop_reactor(reactor: Reactor, signum: int) -> None:
    log.info("received %s, stopping", signal.Signals(signum).name)
    reactor.stop()


def _listening(host: str, port: int) -> None:
    log.info("ajedrez %s listening on %s:%d", __version__, host, port)


def _cannot_listen(args: argparse.Namespace, e: OSError) -> int:
    log.error("cannot listen on %s:%s: %s", args.host, args.port, e.strerror or e)
    return 1


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
