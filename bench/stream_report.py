"""The figures of a ``bench.stream`` run, from what its client processes returned, and
the printed table (the JSON report holds the same figures and more)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench.stats import percentile

ONE_PROCESS_TARGET_MS = 50.0  # p99, commit to the opponent's event, one server process
ACROSS_PROCESSES_TARGET_MS = 250.0  # the same across processes (workers, two servers)
OBSERVERS_TARGET_MS = 200.0  # p99, a move to the last of the observers
CLIENT_BUSY_PERCENT = 85.0  # a client process above this share of a core may be the limit
OTHERS_BUSY_PERCENT = 25.0  # other processes above this share of a core: not a quiet machine
BEAT_BURST_GAP = 1.0  # seconds between two heartbeat bursts


def dist(values: list[float]) -> dict[str, Any]:
    """Count, p50/p90/p99 (nearest rank), max and mean of values in milliseconds."""
    ms = sorted(values)
    return {
        "count": len(ms),
        "p50_ms": round(percentile(ms, 50), 2),
        "p90_ms": round(percentile(ms, 90), 2),
        "p99_ms": round(percentile(ms, 99), 2),
        "max_ms": round(ms[-1], 2) if ms else 0.0,
        "min_ms": round(ms[0], 2) if ms else 0.0,
        "mean_ms": round(sum(ms) / len(ms), 2) if ms else 0.0,
    }


def derive(
    plays: list[dict[str, Any]], duration: float, observers: int, streams: bool
) -> dict[str, Any]:
    """Every figure of the window from the client processes' ``play`` results."""
    rows = [row for p in plays for row in p["rows"]]
    counts: Counter[str] = Counter()
    for p in plays:
        counts.update(p["counts"])
    delivery: dict[str, Any] = {
        "jgda": dist([r[2] for r in rows]),
        "spar": dist([r[7] for r in rows if r[7] is not None]),
    }
    if streams:
        with_event = [r for r in rows if r[5] is not None and r[4] is not None]
        delivery["event_minus_ms"] = dist([r[5] * 1000.0 - r[4] for r in with_event])
        delivery["event_minus_ack"] = dist([(r[5] - r[3]) * 1000.0 for r in with_event])
        delivery["event_before_ack"] = sum(1 for r in with_event if r[5] < r[3])
    known = [(r[6] - r[3]) * 1000.0 for r in rows if r[6] is not None]
    delivery["known_minus_ack"] = dist(known)
    return {
        "moves": counts["moves"],
        "moves_per_second": round(counts["moves"] / duration, 1) if duration > 0 else 0.0,
        "moves_recorded": len(rows),
        "counts": dict(sorted(counts.items())),
        "delivery": delivery,
        "observers": _observers(plays, rows, observers) if observers else None,
        "heartbeats": _beats([b for p in plays for b in p["beats"]]),
        "pairs_playing": sum(p["pairs_playing"] for p in plays),
        "pairs_failed": sum(p["pairs_failed"] for p in plays),
        "failures_sample": [f for p in plays for f in p["failures_sample"]][:10],
        "clients": [
            {
                "lag": dist([x * 1000.0 for x in p["lags"]]),
                "connections_open": p["connections_open"],
            }
            for p in plays
        ],
    }


def _observers(plays: list[dict[str, Any]], rows: list[Any], observers: int) -> dict[str, Any]:
    """Per move of the watched game: until the last observer had it; and every delivery."""
    merged: dict[int, tuple[int, list[float]]] = {}
    for p in plays:
        for ply, (ms, walls) in p["observed"].items():
            entry = merged.setdefault(int(ply), (ms, []))
            entry[1].extend(walls)
    games = [g for p in plays for g in p["watched_games"]]
    acks = {r[1]: r[3] for r in rows if games and r[0] == games[0]}
    last_ms: list[float] = []
    last_ack: list[float] = []
    every: list[float] = []
    short = 0
    for ply, (ms, walls) in sorted(merged.items()):
        last = max(walls)
        last_ms.append(last * 1000.0 - ms)
        if ply in acks:
            last_ack.append((last - acks[ply]) * 1000.0)
        every.extend(w * 1000.0 - ms for w in walls)
        short += len(walls) < observers
    return {
        "game": games[0] if games else None,
        "games_of_the_pair": games,
        "moves": len(merged),
        "deliveries": len(every),
        "moves_missing_an_observer": short,
        "last_minus_ms": dist(last_ms),
        "last_minus_ack": dist(last_ack),
        "every_minus_ms": dist(every),
    }


def _beats(beats: list[float]) -> list[dict[str, Any]]:
    """Heartbeat (603) bursts in the window: how many, and how long the server took to
    send them all (first to last arrival)."""
    bursts: list[list[float]] = []
    for wall in sorted(beats):
        if bursts and wall - bursts[-1][-1] < BEAT_BURST_GAP:
            bursts[-1].append(wall)
        else:
            bursts.append([wall])
    return [{"count": len(b), "spread_ms": round((b[-1] - b[0]) * 1000.0, 1)} for b in bursts]


# -- the table -------------------------------------------------------------------------------


def render(report: dict[str, Any]) -> str:
    sc, res = report["scenario"], report["results"]
    w = res["window"]
    lines = [
        f"Ajedrez event streams: {sc['connections']} connections "
        f"({sc['active_pairs']} pairs playing, {sc['observers']} observers, "
        f"{sc['connections'] - 2 * sc['active_pairs'] - sc['observers']} idle), "
        f"{'every one streaming (EVEN)' if sc['streams'] else 'none streaming (--no-streams)'}",
        f"server: {sc['topology']}, {sc['database']}; "
        + (
            f"paced at {sc['rate']:g} moves/s"
            if sc["rate"]
            else "moves as fast as answered (closed loop)"
        )
        + f"; window {sc['duration']:g} s after {sc['warmup']:g} s warm-up; "
        f"{sc['client_processes']} client process(es)",
        "",
        f"moves: {w['moves']} = {w['moves_per_second']:.1f} moves/s"
        + (f" ({sc['rate']:g} offered)" if sc["rate"] else "")
        + f"; {_counts(w['counts'])}",
        "",
        _table(w, sc),
    ]
    obs = w.get("observers")
    if obs:
        lines += ["", *_observer_lines(obs, sc)]
    lines += ["", *_other_lines(report)]
    return "\n".join(lines)


def _counts(counts: dict[str, int]) -> str:
    keep = [k for k in counts if not k.startswith("event ") and k not in ("moves", "601", "603")]
    return ", ".join(f"{k} {counts[k]}" for k in keep) or "no errors"


def _row(name: str, d: dict[str, Any]) -> str:
    return (
        f"{name:<44} {d['count']:>7} {d['p50_ms']:>8.2f} {d['p90_ms']:>8.2f} "
        f"{d['p99_ms']:>8.2f} {d['max_ms']:>9.2f}"
    )


def _header() -> list[str]:
    head = f"{'':<44} {'count':>7} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>9}"
    return [head, "-" * len(head)]


def _table(w: dict[str, Any], sc: dict[str, Any]) -> str:
    d = w["delivery"]
    rows = _header()
    if sc["streams"]:
        rows.append(_row("FIN_DE_TURNO at the opponent - event's <ms>", d["event_minus_ms"]))
        rows.append(_row("FIN_DE_TURNO at the opponent - mover's 208", d["event_minus_ack"]))
    else:
        rows.append(_row("opponent's SPAR answered - mover's 208", d["known_minus_ack"]))
    rows.append(_row("JGDA (sent to 208)", d["jgda"]))
    if d["spar"]["count"]:
        rows.append(_row("SPAR (sent to 207)", d["spar"]))
    if sc["streams"]:
        target = ACROSS_PROCESSES_TARGET_MS if sc["across_processes"] else ONE_PROCESS_TARGET_MS
        p99 = d["event_minus_ms"]["p99_ms"]
        where = "across processes" if sc["across_processes"] else "one server process"
        rows.append(
            f"target: p99 <= {target:g} ms ({where}): "
            f"{'met' if d['event_minus_ms']['count'] and p99 <= target else 'NOT met'} "
            f"(p99 {p99:.1f} ms); the event came before the 208 in {d['event_before_ack']} moves"
        )
    return "\n".join(rows)


def _observer_lines(obs: dict[str, Any], sc: dict[str, Any]) -> list[str]:
    rows = [
        f"observers: {sc['observers']} watching {obs['game']}: {obs['moves']} moves, "
        f"{obs['deliveries']} deliveries, {obs['moves_missing_an_observer']} moves not "
        f"delivered to every observer",
        *_header(),
        _row("last observer - event's <ms> (per move)", obs["last_minus_ms"]),
        _row("last observer - mover's 208 (per move)", obs["last_minus_ack"]),
        _row("every delivery - event's <ms>", obs["every_minus_ms"]),
    ]
    p99 = obs["last_minus_ms"]["p99_ms"]
    rows.append(
        f"target: p99 <= {OBSERVERS_TARGET_MS:g} ms to the last observer: "
        f"{'met' if obs['moves'] and p99 <= OBSERVERS_TARGET_MS else 'NOT met'} (p99 {p99:.1f} ms)"
    )
    if len(obs["games_of_the_pair"]) > 1:
        rows.append(f"  the watched game ended in the run: only {obs['game']}'s moves are counted")
    return rows


def _other_lines(report: dict[str, Any]) -> list[str]:
    res = report["results"]
    m = res["memory"]
    lines = [
        "memory (server RSS, MiB; thread arenas = glibc's per-thread heaps, mostly argon2's):",
        *(
            f"  {p['label']:<26} {p['server_rss_mib']:>8.1f}  (thread arenas "
            f"{p['server_thread_arenas_mib']:.1f}); clients {p['clients_rss_mib']:.1f}, "
            f"this process {p['own_rss_mib']:.1f}"
            for p in m["points"]
        ),
    ]
    per = m.get("per_connection")
    if per:
        lines.append(
            f"  per connection: {per['total_kib']:.1f} KiB from nothing connected to "
            f"{per['label']} ({per['without_arenas_kib']:.1f} KiB without thread arenas)"
            + (
                f"; EVEN itself {per['even_kib']:.1f} KiB"
                if per.get("even_kib") is not None
                else ""
            )
            + f"; the client processes {per['client_kib']:.1f} KiB"
        )
    login = res["login"]
    lines.append(
        f"login phase (not measured): {login['ok']} logged in in {login['seconds']:.1f} s "
        f"({login['per_second']:.1f}/s), failed {login['failed'] or 'none'}; "
        f"connect+USER+PASS p50 {login['latency']['p50_ms']:.0f} ms, "
        f"p99 {login['latency']['p99_ms']:.0f} ms"
    )
    setup = res["setup"]
    lines.append(
        "setup: "
        + "; ".join(f"{k} {v['ok']} ok in {v['seconds']:.1f} s" for k, v in setup.items() if v)
    )
    cpu = res["cpu"]
    lines.append(
        f"CPU over the window: machine {cpu['machine_busy_percent']:.0f}% busy; server "
        f"{cpu['server_percent']:.0f}% of a core; clients "
        + ", ".join(f"{c:.0f}%" for c in cpu["clients_percent"])
        + f"; PostgreSQL {cpu['database_percent']:.0f}%; others {cpu['others_percent']:.0f}%"
        + f"; load average {cpu['loadavg']}"
    )
    w = res["window"]
    lags = ", ".join(
        f"p99 {c['lag']['p99_ms']:.1f} / max {c['lag']['max_ms']:.1f} ms" for c in w["clients"]
    )
    lines.append(f"client event loop lag (per process): {lags}")
    lines += [f"WARNING: {text}" for text in res.get("warnings", [])]
    beats = w["heartbeats"]
    if beats:
        lines.append(
            "heartbeat bursts in the window: "
            + ", ".join(f"{b['count']} sent over {b['spread_ms']:.0f} ms" for b in beats)
        )
    if w["failures_sample"]:
        lines.append("failures:")
        lines += [f"  {f}" for f in w["failures_sample"]]
    return lines
