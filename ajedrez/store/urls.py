"""Database URLs: parsed with a message that says what is wrong, shown without their
password, and the embedded default (a SQLite file in the user's data directory)."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import exc, make_url
from sqlalchemy.engine import URL

from ajedrez.domain.errors import StorageError

URL_FORMS = "sqlite:///PATH or postgresql+psycopg://USER@HOST/NAME"


class BadURL(StorageError):
    """The database URL does not parse, or names a kind of database SQLAlchemy lacks."""


def redact(url: str | URL) -> str:
    """The URL as it may appear in logs: never with its password, whatever the text."""
    try:
        parsed = make_url(url)
    except exc.ArgumentError:
        raw = str(url)
        if "@" not in raw:
            return raw
        # Unparsed, the password's extent is unknown: hide all that precedes the host.
        head, _, host = raw.rpartition("@")
        scheme = head.split("//", 1)[0] + "//" if "//" in head else ""
        return f"{scheme}***@{host}"
    if parsed.host and "@" in parsed.host:
        # An unescaped '@' in the password: SQLAlchemy took the password's tail for the host.
        parsed = parsed.set(host=parsed.host.rpartition("@")[2])
    return parsed.render_as_string(hide_password=True)


def parse_url(url: str | URL, source: str = "") -> URL:
    """``url`` parsed, or :class:`BadURL` saying where it came from (``source``, e.g.
    ``from --database-url``)."""
    try:
        parsed = make_url(url)
        parsed.get_dialect()
    except (exc.ArgumentError, exc.NoSuchModuleError):
        where = f" ({source})" if source else ""
        raise BadURL(f"not a database URL: '{redact(url)}'{where}; expected {URL_FORMS}") from None
    return parsed


def sqlite_file(url: str | URL) -> Path | None:
    """The file a SQLite URL names; None for other stores and in-memory databases."""
    parsed = make_url(url)
    db = parsed.database
    if parsed.get_backend_name() != "sqlite" or not db or db == ":memory:":
        return None
    return None if db.startswith("file:") else Path(db).expanduser()


def default_sqlite_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "ajedrez" / "ajedrez.sqlite3"


def default_url() -> str:
    return f"sqlite:///{default_sqlite_path()}"


def resolve_url(cli_value: str | None) -> str:
    """Command line over ``AJEDREZ_DATABASE_URL`` over the embedded default."""
    return cli_value or os.environ.get("AJEDREZ_DATABASE_URL") or default_url()
