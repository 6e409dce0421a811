"""The results of a ``bench.load`` run: every figure of its window, as the JSON report
holds them and ``bench/report.py`` prints them."""

from __future__ import annotations

import argparse
import os
from typing import Any

from bench.host import CpuSpan
from bench.players import Pair
from bench.server_proc import Watcher
from bench.stats import Recorder


def build_results(
    args: argparse.Namespace,
    recorder: Recorder,
    window: CpuSpan,
    pairs: list[Pair],
    login_failures: list[str],
    login_seconds: float,
    watcher: Watcher | None,
) -> dict[str, Any]:
    elapsed = window.seconds
    events = recorder.events["measure"]
    expected = {("SPAR", "839")} if args.poll_command == "spar" or args.wait == "notify" else set()
    failures = [f for pair in pairs for f in pair.failures]
    polling = args.wait == "poll" and args.poll_interval > 0
    ceiling = len(pairs) / (args.poll_interval / 2) if polling else None
    return {
        "window_seconds": round(elapsed, 3),
        "moves": events["moves"],
        "moves_per_second": round(events["moves"] / elapsed, 1) if elapsed > 0 else 0.0,
        "poll_bound_moves_per_second": round(ceiling, 1) if ceiling else None,
        "pace": _pace(args.rate, len(pairs), events["paced_late"]),
        "games_started": events["games_started"],
        "game_ends": {k[4:]: v for k, v in sorted(events.items()) if k.startswith("end_")},
        "events_by_phase": {p: dict(sorted(e.items())) for p, e in recorder.events.items()},
        "jgda_refused": events["jgda_refused"],
        "errors": recorder.errors("measure", expected),
        "errors_all_phases": _all_errors(recorder, expected),
        "commands": {s.command: s.as_dict() for s in recorder.summaries("measure")},
        "login": {
            "seconds": round(login_seconds, 2),
            "failed": len(login_failures),
            "failures_sample": login_failures[:5],
            "commands": {s.command: s.as_dict() for s in recorder.summaries("login")},
        },
        "players_failed": sum(recorder.events[p]["players_failed"] for p in recorder.events),
        "player_failures_sample": failures[:5],
        "pairs_playing": len(pairs),
        "load_generator_cpu_percent": window.own_cpu_percent,
        "machine_cpu_busy_percent": window.machine_busy_percent,
        "other_processes_cpu_percent": _others(window),
        "loadavg_at_end": os.getloadavg()[0],
        "server": None
        if watcher is None
        else {
            **watcher.as_dict(),
            "cpu_percent": window.server_cpu_percent,
        },
    }


def _pace(rate: float | None, pairs: int, late: int) -> dict[str, Any] | None:
    """The schedule the pairs followed, and how many moves in the window went out behind
    it (the first ones of each new game, and all of them once the server falls behind)."""
    if rate is None or not pairs:
        return None
    return {
        "offered_moves_per_second": rate,
        "interval_per_game_seconds": round(pairs / rate, 6),
        "moves_late": late,
    }


def _others(window: CpuSpan) -> float | None:
    """CPU (percent of one core) used by everything but this process and the server."""
    if window.server_cpu is None:
        return None
    all_cores = window.machine_busy * (os.cpu_count() or 1)
    return round(max(0.0, all_cores - window.server_cpu - window.own_cpu) * 100, 1)


def _all_errors(recorder: Recorder, expected: set[tuple[str, str]]) -> dict[str, dict[str, int]]:
    return {p: e for p in recorder.events if (e := recorder.errors(p, expected))}
