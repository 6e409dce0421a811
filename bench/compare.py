"""A Markdown table of several runs' JSON reports, one row each (for docs/performance.md).

.venv/bin/python -m bench.compare bench/out/sqlite-10.json bench/out/sqlite-100.json ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HEADER = (
    "| run | clients | db | moves/s | JGDA p50 / p95 / p99 ms | STAT p50 / p95 / p99 ms "
    "| errors in window | players failed | server peak RSS MiB | server CPU | other CPU |"
)


def _latency(results: dict[str, Any], command: str) -> str:
    c = results["commands"].get(command)
    if not c:
        return "-"
    return f"{_ms(c['p50_ms'])} / {_ms(c['p95_ms'])} / {_ms(c['p99_ms'])}"


def _ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _errors(results: dict[str, Any]) -> str:
    errors = results["errors"]
    return ", ".join(f"{k}: {v}" for k, v in errors.items()) or "0"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def row(name: str, report: dict[str, Any]) -> str:
    sc, res = report["scenario"], report["results"]
    server = res.get("server") or {}
    return (
        f"| {name} | {sc['clients']} | {sc['database']} | {res['moves_per_second']:,.1f} "
        f"| {_latency(res, 'JGDA')} | {_latency(res, 'STAT')} | {_errors(res)} "
        f"| {res['players_failed']} | {server.get('peak_rss_mib', '-')} "
        f"| {_pct(server.get('cpu_percent'))} | {_pct(res.get('other_processes_cpu_percent'))} |"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__)
    p.add_argument("reports", type=Path, nargs="+", help="JSON files written by --json")
    args = p.parse_args(argv)
    print(HEADER)
    print("|" + "---|" * (HEADER.count("|") - 1))
    for path in args.reports:
        print(row(path.stem, json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
