"""The optional HTTP listener for operators: ``/healthz`` and ``/metrics``, on aiohttp.

Off unless ``metrics_port`` is set; on ``metrics_host`` (loopback by default), as what it
shows is for the operator's monitoring, not for players. It runs on an asyncio loop of
its own, in a thread of the process that serves it (the one server process, or the master
with ``--workers``, which has no loop of its own): measured under load, a scrape served on
the server's busy loop waited some 30-40 ms at the median for that loop's turns, against
5 ms from its own thread (``docs/performance.md``, "Metrics"). Either way the blocking
work, the database query of ``/healthz`` and the reading of every process's files for
``/metrics``, runs in the listener's own small thread pool, never on a loop.

What a scrape costs the players is bounded: every process's files are read at most once a
second (:data:`RENDER_SECONDS`) and scrapes meanwhile are answered from that reading (each
form asked written once); http_guard.py caps the connections, the time to send a request
and its head's size (docs/security.md, "The health and metrics listener").

``/healthz`` answers 200 ``ok`` when the database answers and its schema is at the
newest migration this release knows, else 503 with the reason on one line: what a load
balancer or ``systemd``'s watchdog script needs. ``/metrics`` is the Prometheus text
format of every process's values (metrics.py).

The parts are there for any other HTTP front end of the server to reuse: :class:`Checks`
gives the two routes, :func:`monitor_app` the monitor's whole application, and
:class:`WebServer` serves an application on a listening socket, on the running loop
(``await start()``) or on a loop of its own in a thread (``start_thread()``); it never
touches the process's signal handlers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gzip
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from ajedrez.server.http_guard import Guard, HttpLimits
from ajedrez.server.prefork import open_listener

log = logging.getLogger("ajedrez.monitor")

# (healthy, the reason when not): asked once per /healthz request, from a thread of the
# listener's pool.
Health = Callable[[], tuple[bool, str]]
# Two: a health check that waits for a database that does not answer leaves a thread
# for the scrapes meanwhile; scrapes beyond that wait their turn rather than add threads.
POOL_THREADS = 2
# How long a stop waits for requests in progress (a scrape takes milliseconds).
STOP_GRACE_SECONDS = 2.0
BACKLOG = 128
# A reading of every process's metrics files (the costly part of a scrape) answers the
# scrapes of this long: a flood of scrapes costs one reading a second, however many come
# and whatever they ask.
RENDER_SECONDS = 1.0
# The answers kept for the current reading, one per form asked (format, gzip, name[]
# filter); forms beyond these are written from the reading each time, never kept, so odd
# name[] lists cannot grow the cache.
RENDERINGS_KEPT = 8

Rendering = tuple[bytes, dict[str, str]]


def _text(status: int, body: str, **headers: str) -> web.Response:
    # content_type and charset give "text/plain; charset=utf-8".
    return web.Response(status=status, text=body, content_type="text/plain", headers=headers)


class Checks:
    """The handlers of ``/healthz`` and ``/metrics``; each runs its blocking part in
    ``pool`` (default: a pool of :data:`POOL_THREADS` of its own). ``clock``: seconds, for
    the age of a reading of the files; ``renders`` counts those readings."""

    def __init__(
        self,
        health: Health,
        directory: str,
        pool: concurrent.futures.Executor | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # Only now: metrics.prepare has named the directory (PROMETHEUS_MULTIPROC_DIR).
        from prometheus_client import CollectorRegistry, multiprocess

        self.registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(self.registry, path=directory)  # type: ignore[no-untyped-call]
        self._health = health
        self._own_pool = pool is None
        self.pool = pool or concurrent.futures.ThreadPoolExecutor(
            POOL_THREADS, thread_name_prefix="monitor"
        )
        self._clock = clock
        # The last reading of the files, as a registry the encoders take; its time; and
        # the answers written from it, by (format, gzipped, names). One lock: scrapes that
        # come together wait for one reading rather than make one each.
        self._reading = _Reading()
        self._readings = CollectorRegistry(auto_describe=False)
        self._readings.register(self._reading)
        self._read_at: float | None = None
        self._rendered: dict[tuple[str, bool, tuple[str, ...]], Rendering] = {}
        self._rendering = threading.Lock()
        self.renders = 0

    def routes(self) -> list[web.RouteDef]:
        """GET (and HEAD, which aiohttp answers with the same headers and no body)."""
        return [web.get("/healthz", self.healthz), web.get("/metrics", self.metrics)]

    def close(self) -> None:
        if self._own_pool:
            self.pool.shutdown(wait=False, cancel_futures=True)

    async def healthz(self, request: web.Request) -> web.Response:
        healthy, reason = await asyncio.get_running_loop().run_in_executor(self.pool, self._check)
        if healthy:
            return _text(200, "ok\n")
        return _text(503, reason + "\n")

    def _check(self) -> tuple[bool, str]:
        try:
            return self._health()
        except Exception as e:  # the check itself failed: that is the answer
            return False, f"health check failed: {_one_line(e)}"

    async def metrics(self, request: web.Request) -> web.Response:
        body, headers = await asyncio.get_running_loop().run_in_executor(
            self.pool,
            self._collect,
            ",".join(request.headers.getall("Accept", [])),
            request.headers.get("Accept-Encoding", ""),
            request.query.getall("name[]", []),
        )
        return web.Response(body=body, headers=headers)

    def _collect(self, accept: str, accept_encoding: str, names: list[str]) -> Rendering:
        """What prometheus_client's own WSGI app answered: the format the scraper asks
        for (Prometheus text, or OpenMetrics), only the metrics named by ``name[]``
        when given, gzipped when accepted; from a reading of the files at most
        :data:`RENDER_SECONDS` old."""
        from prometheus_client.exposition import choose_encoder, gzip_accepted

        encoder, content_type = choose_encoder(accept)
        zipped = gzip_accepted(accept_encoding)
        key = (content_type, zipped, tuple(names))
        with self._rendering:
            now = self._clock()
            if self._read_at is None or now - self._read_at >= RENDER_SECONDS:
                self._reading.families = list(self.registry.collect())
                self._read_at = now
                self._rendered.clear()
                self.renders += 1
            kept = self._rendered.get(key)
            if kept is not None:
                return kept
            readings = self._readings
            registry: Any = readings.restricted_registry(names) if names else readings
            output = encoder(registry)
            headers = {"Content-Type": content_type}
            if zipped:
                output = gzip.compress(output)
                headers["Content-Encoding"] = "gzip"
            if len(self._rendered) < RENDERINGS_KEPT:
                self._rendered[key] = (output, headers)
            return output, headers


class _Reading:
    """A collector of the metric families last read from the files."""

    def __init__(self) -> None:
        self.families: list[Any] = []

    def collect(self) -> list[Any]:
        return self.families


@web.middleware
async def _plain_errors(
    request: web.Request, handler: Callable[[web.Request], Any]
) -> web.StreamResponse:
    """The monitor's answers to what it does not serve, in plain text: 405 for any method
    but GET and HEAD (whatever the path), 404 for any other path."""
    if request.method not in ("GET", "HEAD"):
        return _text(405, "only GET and HEAD\n", Allow="GET, HEAD")
    try:
        response: web.StreamResponse = await handler(request)
    except web.HTTPNotFound:
        return _text(404, "not found: try /healthz or /metrics\n")
    return response


def monitor_app(checks: Checks) -> web.Application:
    """The monitor's application: the two routes, and its plain-text 404 and 405."""
    app = web.Application(middlewares=[_plain_errors])
    app.add_routes(checks.routes())
    return app


class WebServer:
    """Serves ``app`` on ``sock`` (already listening) within ``limits`` (http_guard.py):
    on the running loop with :meth:`start` and :meth:`stop`, or on a loop of its own in a
    thread with :meth:`start_thread` and :meth:`stop_thread`. No access log line per
    request, and the process's signal handlers are left alone."""

    def __init__(
        self, app: web.Application, sock: socket.socket, limits: HttpLimits | None = None
    ) -> None:
        self.app = app
        self.sock = sock
        self.limits = limits or HttpLimits()
        self.guard: Guard | None = None
        self._listener: asyncio.Server | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.sock.getsockname()[:2]
        return str(host), int(port)

    async def start(self) -> None:
        runner = web.AppRunner(
            self.app,
            handle_signals=False,
            access_log=None,
            shutdown_timeout=STOP_GRACE_SECONDS,
        )
        await runner.setup()
        assert runner.server is not None
        # The guard, not aiohttp's site, takes each connection: it may refuse it.
        self.guard = Guard(runner.server, self.limits, log)
        self._listener = await asyncio.get_running_loop().create_server(
            self.guard, sock=self.sock, backlog=BACKLOG
        )
        self._runner = runner

    async def stop(self) -> None:
        """Stop listening (the socket is closed) and end the connections."""
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.sock.close()

    def start_thread(self, name: str = "http") -> None:
        """Serve from a thread running an asyncio loop of its own; returns once it serves."""
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._serve_in_thread(ready),), name=name, daemon=True
        )
        self._thread.start()
        ready.result()

    def stop_thread(self) -> None:
        if self._thread is None:
            return
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join()
        self._thread = None

    async def _serve_in_thread(self, ready: concurrent.futures.Future[None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            await self.start()
        except BaseException as e:
            ready.set_exception(e)
            raise
        ready.set_result(None)
        await self._stopping.wait()
        await self.stop()

    def close_in_child(self) -> None:
        """In a process forked from the one serving: let go of the listening socket."""
        self.sock.close()


class Monitor:
    """The /healthz and /metrics listener of one server: listening once constructed (an
    ``OSError`` if it cannot), serving once started."""

    def __init__(
        self,
        host: str,
        port: int,
        health: Health,
        directory: str,
        limits: HttpLimits | None = None,
    ) -> None:
        sock = open_listener(host, port, BACKLOG)
        try:
            self.checks = Checks(health, directory)
        except BaseException:
            sock.close()
            raise
        self.server = WebServer(monitor_app(self.checks), sock, limits)

    @property
    def address(self) -> tuple[str, int]:
        return self.server.address

    def start(self) -> None:
        """Serve from a thread with a loop of its own."""
        self.server.start_thread("monitor")
        self._log_serving()

    def stop(self) -> None:
        self.server.stop_thread()
        self.server.sock.close()  # if it never started
        self.checks.close()

    def close_in_child(self) -> None:
        """In a process forked from the one serving: let go of the listening socket."""
        self.server.close_in_child()

    def _log_serving(self) -> None:
        host, port = self.address
        log.info("health and metrics on http://%s:%d/healthz and /metrics", host, port)


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
