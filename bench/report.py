"""What the reports of every bench command share (the scenario's database, server and
command line, the JSON file, progress lines) and the printed table of a load run (its
JSON report holds the same figures and more)."""

from __future__ import annotations

import json
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import make_url

from bench.server_proc import ServerProcess

COMMAND_ORDER = ("JGDA", "STAT", "SPAR", "JUEG", "TRAN", "ACEP", "PPEN", "REND", "USER", "PASS")


def render_table(report: dict[str, Any]) -> str:
    sc, res = report["scenario"], report["results"]
    lines = [
        f"Ajedrez load: {sc['clients']} clients ({sc['games_at_once']} games at once), "
        f"{sc['database']}, poll {sc['poll_command'].upper()} every {sc['poll_interval']:g} s, "
        f"window {res['window_seconds']:.1f} s after {sc['warmup']:g} s warm-up" + _paced(sc, res),
        f"moves: {res['moves']} = {res['moves_per_second']:.1f} moves/s"
        + _ceiling(res)
        + _late(res)
        + f"; games started {res['games_started']}, ended {_ends(res['game_ends'])}",
        "",
        _command_table(res["commands"]),
        "",
        f"errors in the window: {_errors(res['errors'])}; players failed: {res['players_failed']}",
    ]
    lines += [f"  {f}" for f in res["player_failures_sample"]]
    lines.append(_cpu_line(res))
    login = res["login"]
    lines += [
        "",
        f"login phase: {login['seconds']:.1f} s, {login['failed']} failed",
        _command_table(login["commands"]),
    ]
    lines += [f"  {f}" for f in login["failures_sample"]]
    return "\n".join(lines)


def _ceiling(res: dict[str, Any]) -> str:
    ceiling = res.get("poll_bound_moves_per_second")
    return f" (the polling pace allows at most ~{ceiling:.0f})" if ceiling else ""


def _paced(sc: dict[str, Any], res: dict[str, Any]) -> str:
    pace = res.get("pace")
    if not sc.get("rate") or not pace:
        return ""
    return (
        f", paced at {sc['rate']:g} moves/s offered "
        f"(one move per game every {pace['interval_per_game_seconds'] * 1000:.1f} ms)"
    )


def _late(res: dict[str, Any]) -> str:
    """Achieved ~= offered and few late moves: the server kept up with the pace."""
    pace = res.get("pace")
    if not pace:
        return ""
    return f" ({pace['offered_moves_per_second']:g} offered; {pace['moves_late']} sent late)"


def _ends(ends: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in ends.items()) or "none"


def _errors(errors: dict[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in errors.items()) or "none"


def _cpu_line(res: dict[str, Any]) -> str:
    parts = [
        f"machine CPU busy {res['machine_cpu_busy_percent']:.0f}%",
        f"load generator {res['load_generator_cpu_percent']:.0f}% of a core",
    ]
    server = res.get("server")
    if server:
        if server.get("cpu_percent") is not None:
            parts.append(f"server {server['cpu_percent']:.0f}% of a core")
            parts.append(f"other processes {res['other_processes_cpu_percent']:.0f}%")
        parts.append(
            f"server peak RSS {server['peak_rss_mib']:.1f} MiB, "
            f"peak threads {server['peak_threads']}"
        )
    return "; ".join(parts)


def _command_table(commands: dict[str, dict[str, Any]]) -> str:
    header = (
        f"{'command':<11} {'count':>8} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} "
        f"{'max ms':>9}  replies"
    )
    rows = [header, "-" * len(header)]
    for name in sorted(commands, key=_order):
        c = commands[name]
        replies = " ".join(f"{code}:{n}" for code, n in c["replies"].items())
        rows.append(
            f"{name:<11} {c['count']:>8} {c['p50_ms']:>9.2f} {c['p95_ms']:>9.2f} "
            f"{c['p99_ms']:>9.2f} {c['max_ms']:>9.2f}  {replies}"
        )
    return "\n".join(rows)


def _order(name: str) -> tuple[int, str]:
    base = name.split("+")[0]  # "JGDA+wake" right after "JGDA"
    return (COMMAND_ORDER.index(base) if base in COMMAND_ORDER else len(COMMAND_ORDER), name)


def write_json(path: Path, report: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}", file=sys.stderr)


def log(text: str) -> None:
    """A progress line: on stderr, so that stdout holds the report alone."""
    print(text, file=sys.stderr, flush=True)


def command_line(module: str) -> str:
    """The command that ran, as it could be typed again."""
    return shlex.join(["python", "-m", module, *sys.argv[1:]])


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def database_fields(database_url: str | None) -> dict[str, str | None]:
    """The scenario's database: its kind and its URL with the password hidden."""
    if database_url is None:
        return {"database": None, "database_url": None}
    url = make_url(database_url)
    return {
        "database": url.get_backend_name(),
        "database_url": url.render_as_string(hide_password=True),
    }


def server_fields(
    server: ServerProcess | None, address: str, source_dir: Path | None
) -> dict[str, Any]:
    """The scenario's server: started by the run (with its arguments) or attached to."""
    return {
        "started_by_bench": server is not None,
        "address": address,
        "args": server.args[1:] if server else None,
        "source_dir": str(source_dir) if source_dir else None,
    }
