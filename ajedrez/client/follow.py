"""Following the event stream across connections: log in, EVEN from the cursor held,
hand each item to a handler, and when the connection drops (the server restarts, the
network goes, the machine sleeps) connect again after a pause that doubles from 1 s to
60 s, resuming from the cursor the handler holds then."""

from __future__ import annotations

import time
from collections.abc import Callable

from ajedrez.client.app import App
from ajedrez.client.errors import ConnectionLost, MalformedEvent, ServerError, Unreachable
from ajedrez.client.protocol import Client, StreamItem, StreamMark

BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
# Silence after which the connection is asked whether it still works. The server beats
# every 60 s by default; a probe (HELP) finds a connection that a sleeping machine or a
# lost route left dead, whatever the server's heartbeat.
QUIET = 90.0


class Handler:
    """What a follower does with the stream. ``cursor`` is where a new connection
    resumes from (None: from now on); ``done`` ends the following."""

    cursor: int | None = None
    done: bool = False

    def connected(self, client: Client) -> None:
        """Logged in, before EVEN (observe asks OBSV here)."""

    def started(self, client: Client, cursor: int) -> None:
        """EVEN answered 219 with ``cursor``."""

    def item(self, client: Client, item: StreamItem) -> None:
        """One event or mark of the stream, in order."""

    def unreadable(self, error: MalformedEvent) -> None:
        """An event that could not be read; the stream goes on after it."""


def follow(
    app: App,
    handler: Handler,
    *,
    sleep: Callable[[float], None] = time.sleep,
    quiet: float = QUIET,
) -> None:
    """Follow the stream until ``handler.done``; a lost connection, an unreachable
    server or a server that cannot serve now (4xx/5xx) is retried with backoff, anything
    else (a wrong password, a refusal) raised."""
    backoff = BACKOFF_FIRST
    while not handler.done:
        try:
            with app.session() as client:
                handler.connected(client)
                handler.started(client, client.even(handler.cursor))
                while not handler.done:
                    try:
                        item = client.next_event(wait=quiet)
                    except MalformedEvent as e:
                        handler.unreadable(e)
                        continue
                    if item is None:
                        client.ping()
                        continue
                    handler.item(client, item)
                    if isinstance(item, StreamMark) and item.caught_up:
                        backoff = BACKOFF_FIRST
        except (Unreachable, ConnectionLost, ServerError) as e:
            if handler.done:
                return
            app.warn(f"{e}; connecting again in {backoff:g} s")
            app.err.flush()
            sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)
