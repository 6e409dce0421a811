"""What the server counts for Prometheus (docs/operations.md, "Health and metrics").

Every metric is declared here, once. The server calls
:class:`~ajedrez.service.metrics.Metrics`, whose methods do nothing: with the HTTP
listener off (the default) counting costs one call. With it on, :func:`enable`
returns :class:`PrometheusMetrics`, backed by ``prometheus_client``.

Metrics always use the library's multiprocess mode: each process (the one server
process, or each worker and the writer process with ``--workers``) writes its values to
files in one directory, and the process serving ``/metrics`` adds them up, so one scrape
shows the whole server whatever its processes. The directory must be named in
``PROMETHEUS_MULTIPROC_DIR`` before ``prometheus_client`` is first imported, which is
why that import happens in :func:`enable` and nowhere else.

Moves, games started and ended, and timeouts are counted from the events of the
transactions this process committed (``Database.on_commit``), so they count what was
stored, never what was only attempted.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ajedrez.domain.values import END_TIMEOUT
from ajedrez.espol import events as ev
from ajedrez.espol.codes import Reply
from ajedrez.service.metrics import Metrics

if TYPE_CHECKING:
    from ajedrez.domain.events import Event

ENV = "PROMETHEUS_MULTIPROC_DIR"
_PASSWORD_CHECKS = frozenset({"PASS", "UNSU"})
_WRONG_PASSWORD = f"{Reply.F_PASINV.value:03d}"
_STORE_UNAVAILABLE = f"{Reply.E_STORAGE.value:03d}"
# Seconds: a command takes from well under a millisecond (a move on SQLite) to seconds (a
# password check that waits its turn).
LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
DELAY_BUCKETS = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


def reply_codes(frames: Iterable[bytes]) -> set[str]:
    """The distinct reply codes of an answer's frames (a multi-part answer counts once)."""
    return {frame[:3].decode("ascii", "replace") for frame in frames if frame[:3].isdigit()}


class PrometheusMetrics(Metrics):
    def __init__(self, directory: str) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        self.directory = directory
        # registry=None: in multiprocess mode the values live in the directory's files,
        # which the scraping process collects; registering is only for one process.
        r: Any = None
        self.connections = Gauge(
            "ajedrez_connections",
            "Client connections open now, by protocol",
            ["protocol"],
            registry=r,
            multiprocess_mode="livesum",
        )
        self.connections_opened = Counter(
            "ajedrez_connections_opened",
            "Client connections accepted, by protocol",
            ["protocol"],
            registry=r,
        )
        self.commands = Counter(
            "ajedrez_commands", "Commands answered, by command", ["command"], registry=r
        )
        self.replies = Counter(
            "ajedrez_replies",
            "Answers sent, by reply code (a multi-part answer counts once)",
            ["code"],
            registry=r,
        )
        self.latency = Histogram(
            "ajedrez_command_seconds",
            "Time from a command's line to its answer, by command",
            ["command"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.moves = Counter("ajedrez_moves_committed", "Moves stored", registry=r)
        self.games_started = Counter(
            "ajedrez_games_started", "Games started (challenges accepted, seeks paired)", registry=r
        )
        self.games_ended = Counter(
            "ajedrez_games_ended", "Games ended, by reason", ["reason"], registry=r
        )
        self.timeouts = Counter(
            "ajedrez_timeouts", "Games ended because a clock ran out", registry=r
        )
        self.events_sent = Counter(
            "ajedrez_events_delivered",
            "Events written to streaming connections (EVEN), live or catching up",
            ["mode"],
            registry=r,
        )
        self.event_lag = Histogram(
            "ajedrez_event_lag_seconds",
            "Time from an event's commit to its writing to a live stream",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.login_failures = Counter(
            "ajedrez_login_failures", "Failed password checks (PASS, UNSU)", registry=r
        )
        self.login_delays = Histogram(
            "ajedrez_login_delay_seconds",
            "Delays imposed on password checks after failures",
            buckets=DELAY_BUCKETS,
            registry=r,
        )
        self.store_errors = Counter(
            "ajedrez_store_errors",
            "Database errors, by where they happened",
            ["where"],
            registry=r,
        )

    def connection_opened(self, protocol: str) -> None:
        self.connections.labels(protocol).inc()
        self.connections_opened.labels(protocol).inc()

    def connection_closed(self, protocol: str) -> None:
        self.connections.labels(protocol).dec()

    def answered(self, command: str, frames: Sequence[bytes], seconds: float) -> None:
        self.commands.labels(command).inc()
        self.latency.labels(command).observe(seconds)
        codes = reply_codes(frames)
        for code in codes:
            self.replies.labels(code).inc()
        if command in _PASSWORD_CHECKS and _WRONG_PASSWORD in codes:
            self.login_failures.inc()
        if _STORE_UNAVAILABLE in codes:
            self.store_errors.labels("command").inc()

    def replied(self, frames: Sequence[bytes]) -> None:
        for code in reply_codes(frames):
            self.replies.labels(code).inc()

    def login_failed(self) -> None:
        self.login_failures.inc()

    def login_delayed(self, seconds: float) -> None:
        self.login_delays.observe(seconds)

    def committed(self, events: Sequence[Event]) -> None:
        for e in events:
            if e.kind == ev.FIN_DE_TURNO:
                self.moves.inc()
            elif e.kind == ev.INICIO_PARTIDA:
                self.games_started.inc()
            elif e.kind == ev.FINALIZACION:
                reason = str(e.fields.get("motivo") or "unknown")
                self.games_ended.labels(reason).inc()
                if reason == END_TIMEOUT:
                    self.timeouts.inc()

    def event_sent(self, at_ms: int, now_ms: int, *, live: bool) -> None:
        self.events_sent.labels("live" if live else "catch-up").inc()
        if live:
            self.event_lag.observe(max(0, now_ms - at_ms) / 1000)

    def store_error(self, where: str) -> None:
        self.store_errors.labels(where).inc()


def prepare(directory: str | None = None) -> str:
    """Name the directory every process of this server writes its metrics to (a new
    private one under the temporary directory unless given), before any of them counts.
    Files of an earlier run there are removed: they would add to this run's totals."""
    if directory is None:
        directory = tempfile.mkdtemp(prefix="ajedrez-metrics-")
    else:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        for name in os.listdir(directory):
            if name.endswith(".db"):
                os.remove(os.path.join(directory, name))
    os.environ[ENV] = directory
    return directory


def enable(directory: str | None) -> Metrics:
    """This process's metrics: counted into ``directory`` (from :func:`prepare`, in this
    process or in the master before it forked this one), or off when it is None."""
    return Metrics() if directory is None else PrometheusMetrics(directory)


def forget_process(directory: str, pid: int) -> None:
    """A process of this server ended: its open connections are gone with it (its
    counters stay in the totals)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]
