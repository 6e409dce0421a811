"""The printed table of a ``bench.latency`` run, and the B/A ratios of two runs' JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def render(report: dict[str, Any]) -> str:
    sc, res = report["scenario"], report["results"]
    lines = [
        f"Ajedrez latency: {sc['database']} {sc['label']}, {sc['samples']} samples per "
        f"command, server {sc['server']['commit'] or sc['server']['source_dir'] or '?'}",
        f"{'command':<12} {'count':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
        f"{'mean ms':>8} {'max ms':>8}  records",
    ]
    for kind, s in res["commands"].items():
        rec = s.get("records")
        lines.append(
            f"{kind:<12} {s['count']:>6} {s['p50_ms']:>8.3f} {s['p95_ms']:>8.3f} "
            f"{s['p99_ms']:>8.3f} {s['mean_ms']:>8.3f} {s['max_ms']:>8.3f}  "
            + (f"{rec['mean']:g}" if rec else "")
        )
    for name, span in res["spans"].items():
        lines.append(
            f"{name}: {span['seconds']} s, loadavg before {span['loadavg_before']!r}, "
            f"machine busy {span['machine_busy_percent']}%, server CPU "
            f"{span['server_cpu_percent']}%"
        )
    lines.append(f"events: {res['events']}")
    return "\n".join(lines)


def compare(base_path: Path, other_path: Path) -> str:
    base = json.loads(base_path.read_text())
    other = json.loads(other_path.read_text())
    lines = [
        f"ratio {other_path.name} / {base_path.name}",
        f"{'command':<12} {'p50 A':>8} {'p50 B':>8} {'ratio':>6}  {'p95 A':>8} {'p95 B':>8} "
        f"{'ratio':>6}  {'p99 A':>8} {'p99 B':>8} {'ratio':>6}",
    ]
    for kind, a in base["results"]["commands"].items():
        b = other["results"]["commands"].get(kind)
        if b is None:
            continue
        cells = []
        for pct in ("p50_ms", "p95_ms", "p99_ms"):
            ratio = b[pct] / a[pct] if a[pct] else float("nan")
            cells.append(f"{a[pct]:>8.3f} {b[pct]:>8.3f} {ratio:>6.2f}")
        lines.append(f"{kind:<12} " + "  ".join(cells))
    return "\n".join(lines)
