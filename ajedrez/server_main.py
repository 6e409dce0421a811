"""``ajedrez-server`` / ``python -m ajedrez``: start the daemon (contract section 5)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from types import FrameType

from . import __version__
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
        server = Server(Accounts(db), Games(db), args.host, args.port, limits)
    except OSError as e:
        log.error("cannot listen on %s:%s: %s", args.host, args.port, e.strerror or e)
        db.dispose()
        return 1

    def _on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        server.stop()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    host, port = server.address
    log.info("ajedrez %s listening on %s:%d", __version__, host, port)
    try:
        server.serve_forever()
    finally:
        db.dispose()
        log.info("server stopped")
    return 0


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
