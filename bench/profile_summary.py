"""Summarise a py-spy raw profile (collapsed stacks) or ``py-spy dump`` of the server.

    .venv/bin/python -m bench.profile_summary bench/out/server.txt [--rate 100 --seconds 25]
    .venv/bin/python -m bench.profile_summary --dump bench/out/dump1.txt bench/out/dump2.txt

Prints the share of samples by protocol command (the ``Session.do_XXX`` frame on the
stack), by where the innermost time went (SQLite driver, SQLAlchemy, python-chess,
argon2, sockets, the pool, Ajedrez's own code), and the top innermost frames. With
``--rate`` and ``--seconds`` it also prints how busy the sampled threads were: with
``py-spy record --gil`` that is the share of the time the GIL was held.

With ``--dump``, each file is the output of ``py-spy dump --pid PID``: the threads are
counted by command and by what they are doing (waiting for the next request, for the
process-wide write lock, for a pool connection while holding the write lock or not,
inside the driver...).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

_COMMAND = re.compile(r"Session\.do_(\w+) ")
_LINE = re.compile(r"^(.*) (\d+)$")

# (category, substring of a frame): the innermost frame matching decides the category.
CATEGORIES: tuple[tuple[str, str], ...] = (
    ("argon2 (password hash)", "argon2"),
    ("waiting for a pool connection", "QueuePool._do_get"),
    ("SQLite driver: execute/fetch", "do_execute"),
    ("SQLite driver: execute/fetch", "fetchone"),
    ("SQLite driver: execute/fetch", "fetchall"),
    ("SQLite driver: commit", "do_commit"),
    ("socket send/recv", "socket."),
    ("socket send/recv", "sendall"),
    ("python-chess", "chess/"),
    ("SQLAlchemy (compile, results, pool, events)", "sqlalchemy/"),
    ("Ajedrez code", "ajedrez/"),
)


def parse(path: Path) -> list[tuple[list[str], int]]:
    """(frames from outermost to innermost, sample count) per line of a raw profile."""
    stacks = []
    for line in path.read_text().splitlines():
        found = _LINE.match(line.strip())
        if found:
            stacks.append((found.group(1).split(";"), int(found.group(2))))
    return stacks


def category(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, needle in CATEGORIES:
            if needle in frame:
                return name
    return "other (interpreter, threading, stdlib)"


def command(frames: list[str]) -> str:
    for frame in frames:
        found = _COMMAND.search(frame)
        if found:
            return found.group(1)
    return "-"


def table(title: str, counts: Counter[str], total: int, limit: int = 15) -> str:
    rows = [title]
    for key, n in counts.most_common(limit):
        rows.append(f"  {100 * n / total:5.1f}%  {n:>7}  {key}")
    return "\n".join(rows)


def summarise(stacks: list[tuple[list[str], int]]) -> str:
    total = sum(n for _, n in stacks) or 1
    by_command: Counter[str] = Counter()
    by_category: Counter[str] = Counter()
    by_leaf: Counter[str] = Counter()
    by_command_category: Counter[str] = Counter()
    for frames, n in stacks:
        cmd, cat = command(frames), category(frames)
        by_command[cmd] += n
        by_category[cat] += n
        by_leaf[frames[-1]] += n
        by_command_category[f"{cmd} / {cat}"] += n
    return "\n\n".join(
        [
            f"{total} samples",
            table("by command (-: no command: accept loop, recv, set-up):", by_command, total),
            table("by innermost category:", by_category, total),
            table("by command and category:", by_command_category, total, 20),
            table("top innermost frames:", by_leaf, total, 20),
        ]
    )


def dump_threads(text: str) -> list[list[str]]:
    """The stacks (innermost frame first) of every thread in a ``py-spy dump``."""
    threads: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("Thread "):
            threads.append([])
        elif threads and line.startswith("    "):
            threads[-1].append(line.strip())
    return threads


# On SQLite these take the process-wide write lock (sync reads too: TRAN, PPEN, JAUT).
LOCKED_COMMANDS = frozenset(
    {"JGDA", "JUEG", "ACEP", "DECL", "REND", "TBLS", "RTBL", "FINP", "UNSU", "SUBS"}
    | {"TRAN", "PPEN", "JAUT"}
)


def thread_state(frames: list[str], cmd: str) -> str:
    """What one dumped thread (innermost frame first) is doing."""
    joined = "\n".join(frames)
    top = frames[0] if frames else ""
    if "socket.accept" in top:
        return "accept loop"
    if "Server._serve_client" in top and "server.py:108" in top:
        return "waiting for the next request (recv)"
    # _locked_transaction: the lock wait of a server without group commit (a --server-source
    # snapshot older than 41c9f3f), so that dumps of it can be compared.
    if any(f in top for f in ("_locked_transaction", "_enter_write_lock", "_FileLock.acquire")):
        return "waiting for the write lock"
    if "_leave_batch" in top:
        return "waiting for the group commit"
    # Past the lock wait, a locked command holds the lock (the connection comes after it).
    holding = " (holding the write lock)" if cmd in LOCKED_COMMANDS else ""
    if "QueuePool._do_get" in joined:
        return "waiting for a pool connection" + holding
    if "do_commit" in joined:
        return "commit" + holding
    if "do_execute" in joined or "fetch" in top:
        return "in the driver" + holding
    if "argon2" in joined:
        return "hashing a password"
    return "running Python" + holding


def summarise_dumps(paths: list[Path]) -> str:
    out = []
    for path in paths:
        threads = dump_threads(path.read_text())
        states: Counter[str] = Counter()
        for frames in threads:
            cmd = command(list(reversed(frames)))
            states[f"{cmd}: {thread_state(frames, cmd)}"] += 1
        out.append(table(f"{path} ({len(threads)} threads):", states, len(threads) or 1, 30))
    return "\n\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile_summary", description=__doc__)
    p.add_argument("profile", type=Path, nargs="+", help="a py-spy raw profile (--format raw)")
    p.add_argument("--dump", action="store_true", help="the files are `py-spy dump` outputs")
    p.add_argument("--rate", type=float, help="py-spy's samples per second (100)")
    p.add_argument("--seconds", type=float, help="how long py-spy sampled")
    args = p.parse_args(argv)
    if args.dump:
        print(summarise_dumps(args.profile))
        return 0
    stacks = [s for path in args.profile for s in parse(path)]
    print(summarise(stacks))
    if args.rate and args.seconds:
        total = sum(n for _, n in stacks)
        share = total / (args.rate * args.seconds)
        print(f"\nsampled threads busy {100 * share:.0f}% of the time (--gil: GIL held)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
