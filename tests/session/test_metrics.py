"""What the metrics count, in memory: labels from request lines, reply codes, and the
committed events that become moves, games and timeouts (ajedrez/server/metrics.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, values
from prometheus_client.multiprocess import MultiProcessCollector

from ajedrez.domain import events
from ajedrez.espol.codes import Reply
from ajedrez.espol.commands import command_name
from ajedrez.espol.framing import encode_records, encode_reply
from ajedrez.server import metrics
from ajedrez.server.metrics import Metrics, PrometheusMetrics, reply_codes


@dataclass(frozen=True)
class Pair:
    white_id: int
    black_id: int


@pytest.fixture
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PrometheusMetrics]:
    """Metrics written to a directory of this test's own, as a server process writes them.
    The library picks how values are kept when it is imported; the server names the
    directory before that (metrics.prepare), a test process after, so it is set here."""
    monkeypatch.setenv(metrics.ENV, str(tmp_path))
    monkeypatch.setattr(values, "ValueClass", values.get_value_class())
    yield PrometheusMetrics(str(tmp_path))


def scrape(directory: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=directory)
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in registry.collect()
        for s in family.samples
    }


def test_a_request_line_is_labelled_by_its_command_only() -> None:
    assert command_name(b"JGDA:P0000001:1:e2e4:1:1234:0") == "JGDA"
    assert command_name(b"PASS:secret") == "PASS"
    assert command_name(b"HELP") == "HELP"
    # What a client makes up never becomes a label of its own.
    assert command_name(b"XYZW:1") == "unknown"
    assert command_name(b"\xff\xfe garbage") == "unknown"
    assert command_name(b"A" * 5000) == "unknown"
    assert command_name(b"") == "unknown"


def test_a_multi_part_answer_counts_once() -> None:
    frames = encode_records(Reply.S_TRAN, [f"r{i}" for i in range(5000)])
    assert len(frames) > 1
    assert reply_codes(frames) == {f"{Reply.S_TRAN.value:03d}"}
    assert reply_codes([encode_reply(Reply.F_PASINV, "no"), b"", b"xy"]) == {"815"}


def test_off_counts_nothing_and_never_fails() -> None:
    off = Metrics()
    off.answered("JGDA", [encode_reply(Reply.E_STORAGE)], 0.1)
    off.committed([])
    off.event_sent(0, 1, live=True)


def test_committed_events_become_moves_games_and_timeouts(
    counted: PrometheusMetrics, tmp_path: Path
) -> None:
    players = Pair(1, 2)
    counted.committed(
        [
            events.game_started(1, 7, (1, "ana"), (2, "bea"), "none", 2, False),
            events.move_played(2, players, 7, 1, (1, "e2e4", 0, "e4"), "bea", "fen"),
            events.move_played(3, players, 7, 2, (2, "e7e5", 0, "e5"), "ana", "fen"),
            events.game_ended(4, players, 7, 2, "timeout"),
            events.game_ended(5, players, 8, 3, "agreement"),
        ]
    )
    s = scrape(str(tmp_path))
    assert s[("ajedrez_moves_committed_total", frozenset())] == 2
    assert s[("ajedrez_games_started_total", frozenset())] == 1
    assert s[("ajedrez_timeouts_total", frozenset())] == 1
    assert s[("ajedrez_games_ended_total", frozenset({("reason", "timeout")}))] == 1
    assert s[("ajedrez_games_ended_total", frozenset({("reason", "agreement")}))] == 1


def test_answers_count_commands_codes_logins_and_store_errors(
    counted: PrometheusMetrics, tmp_path: Path
) -> None:
    counted.answered("PASS", [encode_reply(Reply.F_PASINV, "wrong password")], 0.3)
    counted.answered("USER", [encode_reply(Reply.F_PASINV, "not a password check")], 0.001)
    counted.answered("JGDA", [encode_reply(Reply.E_STORAGE, "unavailable")], 0.002)
    counted.login_delayed(4.0)
    counted.event_sent(1_000, 1_020, live=True)
    counted.event_sent(1_000, 9_000, live=False)  # catching up: no lag
    s = scrape(str(tmp_path))
    assert s[("ajedrez_login_failures_total", frozenset())] == 1
    assert s[("ajedrez_replies_total", frozenset({("code", "815")}))] == 2
    assert s[("ajedrez_store_errors_total", frozenset({("where", "command")}))] == 1
    assert s[("ajedrez_command_seconds_count", frozenset({("command", "PASS")}))] == 1
    assert s[("ajedrez_login_delay_seconds_count", frozenset())] == 1
    assert s[("ajedrez_event_lag_seconds_count", frozenset())] == 1
    assert s[("ajedrez_event_lag_seconds_sum", frozenset())] == pytest.approx(0.02)
    assert s[("ajedrez_events_delivered_total", frozenset({("mode", "catch-up")}))] == 1


def test_connections_of_a_process_that_ended_are_forgotten(
    counted: PrometheusMetrics, tmp_path: Path
) -> None:
    import os

    counted.connection_opened("espol")
    counted.connection_opened("espol-tls")
    counted.connection_closed("espol-tls")
    s = scrape(str(tmp_path))
    assert s[("ajedrez_connections", frozenset({("protocol", "espol")}))] == 1
    assert s[("ajedrez_connections", frozenset({("protocol", "espol-tls")}))] == 0
    metrics.forget_process(str(tmp_path), os.getpid())
    s = scrape(str(tmp_path))
    assert ("ajedrez_connections", frozenset({("protocol", "espol")})) not in s
    assert s[("ajedrez_connections_opened_total", frozenset({("protocol", "espol")}))] == 1
