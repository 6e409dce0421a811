"""The verdict and the printed table of a ``bench.idle`` run: the cost of a held
connection and whether the two targets are met."""

from __future__ import annotations

from typing import Any

from bench.idle_memory import Memory

TARGET_RSS_MIB = 1024.0
TARGET_LOGIN_P99_MS = 100.0


def derive(results: dict[str, Any], memory: Memory, connections: int) -> dict[str, Any]:
    """Per-connection cost and the verdict on the two targets."""
    at0 = memory.find("after baseline probes") or {}
    held = memory.find("held, idle") or {}
    steps = [p for p in memory.points if p["label"].endswith(" logged in")]
    n = results["held_logged_in"]
    out: dict[str, Any] = {}
    if held.get("server_rss_mib") is not None and at0.get("server_rss_mib") is not None and n:
        out["server_kib_per_connection"] = round(
            (held["server_rss_mib"] - at0["server_rss_mib"]) * 1024 / n, 2
        )
    if len(steps) >= 2 and steps[0]["server_rss_mib"] is not None:
        first, last = steps[0], steps[-1]
        out["server_kib_per_connection_slope"] = {
            "from": first["held"],
            "to": last["held"],
            "kib": round(
                (last["server_rss_mib"] - first["server_rss_mib"])
                * 1024
                / (last["held"] - first["held"]),
                2,
            ),
        }
    if held.get("client_rss_mib") is not None and at0.get("client_rss_mib") is not None and n:
        out["client_kib_per_connection"] = round(
            (held["client_rss_mib"] - at0["client_rss_mib"]) * 1024 / n, 2
        )
    peak = max((p["server_rss_mib"] or 0.0 for p in memory.points), default=0.0)
    p99 = results["probe_held"]["p99_ms"]
    out["target"] = {
        "connections": connections,
        "all_held": n == connections and results["alive_check"]["alive"] == connections,
        "server_rss_mib_held": held.get("server_rss_mib"),
        "server_rss_peak_sampled_mib": peak,
        "rss_under_1_gib": held.get("server_rss_mib") is not None
        and held["server_rss_mib"] < TARGET_RSS_MIB,
        "probe_p99_ms": p99,
        "probe_p99_under_100_ms": results["probe_held"]["count"] > 0 and p99 < TARGET_LOGIN_P99_MS,
    }
    return out


def line(s: dict[str, Any]) -> str:
    return (
        f"n={s['count']} p50 {s['p50_ms']:.1f} p95 {s['p95_ms']:.1f} p99 {s['p99_ms']:.1f} "
        f"max {s['max_ms']:.1f} ms; {_outcomes(s['outcomes'])}"
    )


def _outcomes(outcomes: dict[str, int]) -> str:
    return " ".join(f"{k}:{v}" for k, v in outcomes.items()) or "none"


def render(report: dict[str, Any]) -> str:
    sc, res = report["scenario"], report["results"]
    d, lp = res["derived"], res["login_phase"]
    t = d["target"]
    lines = [
        f"Ajedrez idle connections: {sc['connections']} held, {sc['database']}, "
        f"login concurrency {sc['login_concurrency']}, probe concurrency "
        f"{sc['probe_concurrency']}",
        "",
        f"{'memory point':<24} {'held':>6} {'srv RSS MiB':>12} {'srv HWM MiB':>12} "
        f"{'threads':>8} {'bench RSS MiB':>14} {'load':>6}",
    ]
    for p in res["memory"]:
        lines.append(
            f"{p['label']:<24} {p['held']:>6} {_num(p['server_rss_mib']):>12} "
            f"{_num(p['server_hwm_mib']):>12} {_num(p['server_threads']):>8} "
            f"{_num(p['client_rss_mib']):>14} {p['loadavg_1min']:>6}"
        )
    slope = d.get("server_kib_per_connection_slope")
    layout = res["server_memory_map_held_mib"]
    if layout:
        lines.append(
            "server RSS held, by mapping (MiB): "
            + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in layout.items())
        )
    lines += [
        "",
        f"server per connection: {_num(d.get('server_kib_per_connection'))} KiB "
        "(held idle - 0 held, / held)"
        + (f"; slope {slope['from']}->{slope['to']}: {slope['kib']} KiB" if slope else ""),
        f"bench process per connection: {_num(d.get('client_kib_per_connection'))} KiB "
        "(not part of the target: the target's memory is the server's)",
        f"login phase: {res['held_logged_in']}/{sc['connections']} in {lp['seconds']:.1f} s "
        f"({_num(lp['logins_per_second'])}/s); each login {line(lp['login'])}",
        "",
        "new login (connect, USER, PASS), ms:",
        f"  with 0 held:    {line(res['probe_baseline'])}; {_cpu(res['probe_baseline'])}",
        f"  with {res['held_logged_in']} held: {line(res['probe_held'])}; "
        + _cpu(res["probe_held"]),
        f"HELP:QUIT on {res['pings']['count']} held sessions, ms: {line(res['pings'])}",
        f"held sessions alive at the end: {res['alive_check']['alive']}/{sc['connections']} "
        f"({_outcomes(res['alive_check']['outcomes'])})",
        "",
        f"target: server RSS {_num(t['server_rss_mib_held'])} MiB < 1024: "
        f"{_yes(t['rss_under_1_gib'])}; new-login p99 {t['probe_p99_ms']:.1f} ms < 100: "
        f"{_yes(t['probe_p99_under_100_ms'])}; all {sc['connections']} held and alive: "
        f"{_yes(t['all_held'])}",
    ]
    return "\n".join(lines)


def _cpu(s: dict[str, Any]) -> str:
    c = s["cpu"]
    return f"machine busy {c['machine_cpu_busy_percent']}%, server {_num(c['server_cpu_percent'])}%"


def _num(v: object) -> str:
    return "-" if v is None else str(v)


def _yes(ok: bool) -> str:
    return "yes" if ok else "NO"
