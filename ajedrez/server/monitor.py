"""The optional HTTP listener for operators: ``/healthz`` and ``/metrics``.

Off unless ``metrics_port`` is set; on ``metrics_host`` (loopback by default), as what it
shows is for the operator's monitoring, not for players. It runs in a thread of its own
in the process that serves it (the one server process, or the master with
``--workers``), so a busy event loop never delays a scrape, and a scrape never delays a
move.

``/healthz`` answers 200 ``ok`` when the database answers and its schema is at the
newest migration this release knows, else 503 with the reason on one line: what a load
balancer or ``systemd``'s watchdog script needs. ``/metrics`` is the Prometheus text
format of every process's values (metrics.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

log = logging.getLogger("ajedrez.monitor")

# (healthy, the reason when not): asked once per /healthz request, from the HTTP thread.
Health = Callable[[], tuple[bool, str]]
# A header, not a list of them: wsgiref adds Content-Length to the list it is given, so
# each response needs a list of its own.
_TEXT = ("Content-Type", "text/plain; charset=utf-8")


class _Quiet(WSGIRequestHandler):
    """No line on stderr per request: scrapes come every few seconds."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Monitor:
    def __init__(self, host: str, port: int, health: Health, directory: str) -> None:
        from prometheus_client import CollectorRegistry, make_wsgi_app, multiprocess
        from prometheus_client.exposition import ThreadingWSGIServer

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
        self._metrics = make_wsgi_app(registry)
        self._health = health
        self.server = make_server(
            host, port, self._app, server_class=ThreadingWSGIServer, handler_class=_Quiet
        )
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="monitor", daemon=True
        )
        self._thread.start()
        host, port = self.address
        log.info("health and metrics on http://%s:%d/healthz and /metrics", host, port)

    def stop(self) -> None:
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join()
            self._thread = None
        self.server.server_close()

    def close_in_child(self) -> None:
        """In a process forked from the one serving: let go of the listening socket."""
        self.server.socket.close()

    def _app(self, environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            start("405 Method Not Allowed", [_TEXT, ("Allow", "GET, HEAD")])
            return [b"only GET and HEAD\n"]
        if path == "/metrics":
            return self._metrics(environ, start)  # type: ignore[no-any-return]
        if path == "/healthz":
            try:
                healthy, reason = self._health()
            except Exception as e:  # the check itself failed: that is the answer
                healthy, reason = False, f"health check failed: {_one_line(e)}"
            if healthy:
                start("200 OK", [_TEXT])
                return [b"ok\n"]
            start("503 Service Unavailable", [_TEXT])
            return [reason.encode() + b"\n"]
        start("404 Not Found", [_TEXT])
        return [b"not found: try /healthz or /metrics\n"]


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
