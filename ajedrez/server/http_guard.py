"""What a client may cost an HTTP listener of the server (monitor.py): connections at once,
time to send a request, the size of a request's head, and one log line for each error.

aiohttp parses and answers; this module hands it each accepted connection, or refuses it:

- **Connections at once**: at ``max_connections`` a new connection is answered ``503`` and
  closed at once, having cost an accept and a write; those open are served as before, and
  new ones are taken again as they go. A refusal is logged, at most one line a minute.
- **Time to send a request**: a connection that has not sent a whole request head within
  ``request_timeout`` seconds of opening, or of the end of its previous response, is
  closed (Go's ``ReadHeaderTimeout``, which node_exporter uses). A request being answered
  is never cut.
- **Head size**: a request line or header field of more than :data:`MAX_FIELD` bytes, or
  more than :data:`MAX_HEADERS` fields, is answered ``431`` and the connection closed; what
  it sent is not kept. A connection's head holds at most ~``MAX_FIELD * MAX_HEADERS``
  bytes, so the listener's buffers stay under ``max_connections`` times that.
- **Errors**: a malformed request is one WARNING line, a failure of the listener's own one
  ERROR line, each naming the client and the reason, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage, HttpProcessingError, LineTooLong

# A request line or header field (aiohttp's and nginx's 8 KiB); a scraper's are under 200.
MAX_FIELD = 8190
# Header fields in one request; a scraper sends under 10.
MAX_HEADERS = 32
# Seconds between two log lines about refused connections.
REFUSALS_LOG_EVERY = 60.0
_END_OF_HEAD = (b"\r\n\r\n", b"\n\n")
_BUSY_TEXT = b"too many connections to this listener: try again shortly\n"
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: " + str(len(_BUSY_TEXT)).encode() + b"\r\n"
    b"Retry-After: 1\r\n"
    b"Connection: close\r\n\r\n" + _BUSY_TEXT
)


@dataclass(frozen=True)
class HttpLimits:
    max_connections: int = 32
    request_timeout: float = 10.0  # seconds to send a request's head


class Guard:
    """The protocol factory of a listening socket (``loop.create_server(guard, sock=...)``)
    serving ``server``'s requests within ``limits``."""

    def __init__(self, server: web.Server, limits: HttpLimits, log: logging.Logger) -> None:
        self.server = server
        self.limits = limits
        self.log = log
        self.open = 0  # counted from the accept: a burst of accepts cannot overshoot
        self._refused = 0  # since the last line about them
        self._logged_at: float | None = None

    def __call__(self) -> asyncio.BaseProtocol:
        if self.open >= self.limits.max_connections:
            self._refusal()
            return _Busy()
        self.open += 1
        return _Handler(self)

    def closed(self) -> None:
        self.open -= 1

    def _refusal(self) -> None:
        self._refused += 1
        now = asyncio.get_running_loop().time()
        if self._logged_at is not None and now - self._logged_at < REFUSALS_LOG_EVERY:
            return
        self.log.warning(
            "%d connection(s) open, the most allowed (metrics_max_connections): %d new "
            "one(s) answered 503 and closed%s",
            self.open,
            self._refused,
            "" if self._logged_at is None else f" in the last {REFUSALS_LOG_EVERY:g} s",
        )
        self._logged_at = now
        self._refused = 0


class _Busy(asyncio.Protocol):
    """A connection beyond the cap: answered and closed without reading it."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(_BUSY)
        transport.close()


class _Handler(web.RequestHandler):
    """aiohttp's connection handler with the guard's deadline, 431 and log lines."""

    __slots__ = ("_counted", "_deadline", "_guard", "_head_tail")

    def __init__(self, guard: Guard) -> None:
        options: dict[str, Any] = {
            "access_log": None,
            "keepalive_timeout": guard.limits.request_timeout,
            "max_line_size": MAX_FIELD,
            "max_field_size": MAX_FIELD,
            "max_headers": MAX_HEADERS,
            # A body nobody reads (a POST to /metrics) closes the connection after the
            # answer instead of holding it while it comes.
            "lingering_time": 0,
        }
        super().__init__(guard.server, loop=asyncio.get_running_loop(), **options)
        self._guard = guard
        self._deadline: asyncio.TimerHandle | None = None
        self._head_tail = b""
        self._counted = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._deadline = asyncio.get_running_loop().call_later(
            self._guard.limits.request_timeout, self._too_slow
        )

    def data_received(self, data: bytes) -> None:
        # Only the first request's head is watched here: after a response, aiohttp's
        # keep-alive timer (set to the same timeout) closes a connection that sends
        # no whole request.
        if self._deadline is not None:
            seen = self._head_tail + data
            if any(end in seen for end in _END_OF_HEAD):
                self._deadline.cancel()
                self._deadline = None
            else:
                self._head_tail = seen[-3:]
        super().data_received(data)

    def _too_slow(self) -> None:
        self._deadline = None
        self._guard.log.debug(
            "closing a connection that sent no whole request in %g s",
            self._guard.limits.request_timeout,
        )
        self.force_close()

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._counted:
            self._counted = False
            self._guard.closed()
        super().connection_lost(exc)

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if _head_too_large(exc):
            status = 431
            message = (
                f"request line or header field over {MAX_FIELD} bytes, or over "
                f"{MAX_HEADERS} header fields"
            )
        return super().handle_error(request, status, exc, message)

    def log_exception(self, *args: Any, **kw: Any) -> None:
        """What aiohttp logs with a traceback, as one line: a client's malformed request
        as a warning, the listener's own failure as an error."""
        exc = kw.get("exc_info")
        if exc is True or exc is None:
            exc = sys.exc_info()[1]
        where = _peer(self.transport)
        if isinstance(exc, HttpProcessingError):
            reason = "request head too large" if _head_too_large(exc) else _reason(exc)
            self._guard.log.warning("bad request from %s: %s", where, reason)
        else:
            what = _reason(exc) if isinstance(exc, BaseException) else str(args[0])
            self._guard.log.error("error answering a request from %s: %s", where, what)


def _head_too_large(exc: BaseException | None) -> bool:
    return isinstance(exc, LineTooLong) or (
        isinstance(exc, BadHttpMessage) and "Too many headers" in exc.message
    )


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "message", "") or str(exc)
    text = str(text).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first[:200]}" if first else type(exc).__name__


def _peer(transport: asyncio.BaseTransport | None) -> str:
    peer = transport.get_extra_info("peername") if transport is not None else None
    return str(peer[0]) if isinstance(peer, tuple) and peer else "a client"
