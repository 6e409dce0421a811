"""Exceptions that cross layers. Free of SQLAlchemy, so the protocol layer can catch them."""

from __future__ import annotations

from ajedrez.protocol.codes import Reply


class Failure(Exception):
    """The command was refused (8xx/9xx): bad parameters, not allowed now, stale data."""

    def __init__(self, code: Reply, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class Conflict(Exception):
    """A unique key or other constraint refused a write; the transaction was rolled back."""


class StorageError(Exception):
    """The database could not do the work (unreachable, locked too long, I/O fault)."""


class TransientStorageError(StorageError):
    """The database rolled the transaction back to break a deadlock or a serialization
    conflict; running the same command again is safe and normally succeeds."""


# How many times a command (or a queued write) is run again after a TransientStorageError.
TRANSIENT_RETRIES = 3
