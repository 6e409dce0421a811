"""Start and stop a server process for a run, and watch a server's memory, threads and CPU.

The figures come from ``/proc/<pid>``: ``VmHWM`` (peak resident set), ``VmRSS``,
``Threads`` and the process's user+system CPU time, so they also work for a server the
benchmark did not start (``--server-pid``).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.source import link_installed_names

LISTENING = re.compile(r"listening on (\S+):(\d+)")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcSample:
    rss_kib: int
    hwm_kib: int
    threads: int
    cpu_seconds: float


def sample(pid: int) -> ProcSample | None:
    """The memory, threads and CPU time of the process and its children (the workers of
    ``--workers N``) now, summed; None once the process is gone."""
    own = _sample_one(pid)
    if own is None:
        return None
    parts = [own] + [p for child in children(pid) if (p := _sample_one(child)) is not None]
    return ProcSample(
        rss_kib=sum(p.rss_kib for p in parts),
        hwm_kib=sum(p.hwm_kib for p in parts),
        threads=sum(p.threads for p in parts),
        cpu_seconds=sum(p.cpu_seconds for p in parts),
    )


def children(pid: int) -> list[int]:
    """The pids of the process's children (the workers of ``--workers N``); [] once gone."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _sample_one(pid: int) -> ProcSample | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = dict(
        line.split(":", 1) for line in status.splitlines() if ":" in line
    )  # "VmHWM:\t  123 kB"
    # /proc/<pid>/stat: the command name may hold spaces; count fields after its ")".
    after = stat.rsplit(")", 1)[1].split()
    utime, stime = int(after[11]), int(after[12])
    return ProcSample(
        rss_kib=_kib(fields.get("VmRSS", "0")),
        hwm_kib=_kib(fields.get("VmHWM", "0")),
        threads=int(fields.get("Threads", "0").strip() or 0),
        cpu_seconds=(utime + stime) / CLOCK_TICKS,
    )


def _kib(value: str) -> int:
    return int(value.strip().split()[0]) if value.strip() else 0


class Watcher:
    """Keeps the peaks of a process's samples (call :meth:`poll` now and then)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_threads = 0
        self.peak_rss_kib = 0
        self.hwm_kib = 0
        self.last: ProcSample | None = None

    def poll(self) -> ProcSample | None:
        now = sample(self.pid)
        if now is not None:
            self.last = now
            self.peak_threads = max(self.peak_threads, now.threads)
            self.peak_rss_kib = max(self.peak_rss_kib, now.rss_kib)
            self.hwm_kib = max(self.hwm_kib, now.hwm_kib)
        return now

    def as_dict(self) -> dict[str, object]:
        return {
            "pid": self.pid,
            "peak_rss_mib": round(self.hwm_kib / 1024, 1),
            "peak_rss_sampled_mib": round(self.peak_rss_kib / 1024, 1),
            "peak_threads": self.peak_threads,
        }


def server_cpu_seconds(watcher: Watcher | None) -> float | None:
    """The server's CPU time now; None without a watcher or once the server is gone."""
    if watcher is None:
        return None
    now = watcher.poll()
    return None if now is None else now.cpu_seconds


class ServerProcess:
    """``python -m ajedrez`` on a free port, its log in a file, stopped with SIGTERM."""

    def __init__(
        self,
        database_url: str,
        extra_args: list[str],
        *,
        source_dir: Path | None,
        log_path: Path,
        python: str = sys.executable,
    ) -> None:
        self.args = [
            python,
            "-m",
            "ajedrez",
            "--database-url",
            database_url,
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            *extra_args,
        ]
        self.source_dir = source_dir
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.exit_code: int | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 120.0) -> tuple[str, int]:
        """Start it and wait for its ``listening on HOST:PORT`` line; returns the address."""
        env = dict(os.environ)
        if self.source_dir is not None:
            link_installed_names(self.source_dir)
            # python -m puts the working directory first on sys.path: that copy wins.
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(self.source_dir), env.get("PYTHONPATH", "")) if p
            )
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                self.args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=self.source_dir,
                env=env,
            )
        return self._wait_listening(timeout)

    def _wait_listening(self, timeout: float) -> tuple[str, int]:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = LISTENING.search(self.log_path.read_text(errors="replace"))
            if found:
                return found.group(1), int(found.group(2))
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}: {self.tail()}")
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the server did not listen within {timeout:g} s: {self.tail()}")

    def stop(self, grace: float = 30.0) -> int | None:
        """SIGTERM, then SIGKILL after ``grace`` seconds; returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            self.exit_code = None if self.proc is None else self.proc.returncode
            return self.exit_code
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.exit_code = self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.exit_code = self.proc.wait()
        return self.exit_code

    def tail(self, lines: int = 5) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(text[-lines:])


def start_or_attach(
    database_url: str,
    server_args: list[str],
    *,
    address: str | None,
    pid: int | None,
    source_dir: Path | None,
    log_path: Path | None,
    log_prefix: str,
    start_timeout: float = 120.0,
) -> tuple[ServerProcess | None, str, int, Watcher | None]:
    """Attach to the server at ``address`` (HOST:PORT; watched if its ``pid`` is given),
    or, without one, start a server logging to ``log_path`` or a new temporary file.
    Returns the started server (None when attached), its address and its watcher."""
    if address is not None:
        host, _, port_text = address.rpartition(":")
        return None, host, int(port_text), Watcher(pid) if pid else None
    if log_path is None:
        fd, name = tempfile.mkstemp(prefix=log_prefix, suffix=".log")
        os.close(fd)
        log_path = Path(name)
    server = ServerProcess(database_url, server_args, source_dir=source_dir, log_path=log_path)
    try:
        host, port = server.start(timeout=start_timeout)
    except BaseException:
        server.stop()
        raise
    print(f"server pid {server.pid} on {host}:{port}, log {log_path}", file=sys.stderr)
    return server, host, port, Watcher(server.pid)


def stop_server(server: ServerProcess | None, watcher: Watcher | None, *, tail: int = 0) -> None:
    """Stop a server this run started (nothing when attached), reporting its exit code and,
    with ``tail``, the last lines of its log."""
    if server is None:
        return
    if watcher is not None:
        watcher.poll()  # the last VmHWM, before the process is gone
    code = server.stop()
    log_tail = f"; log tail: {server.tail(tail)}" if tail else ""
    print(f"server stopped, exit code {code}{log_tail}", file=sys.stderr)


def with_defaults(server_args: list[str], defaults: list[tuple[str, str]]) -> list[str]:
    """``server_args`` plus each (option, value) of ``defaults`` they do not set already
    (as ``--option value`` or ``--option=value``)."""
    out = list(server_args)
    for option, value in defaults:
        if not any(a.split("=", 1)[0] == option for a in server_args):
            out += [option, value]
    return out


class PySpy:
    """``py-spy record`` on the server for the measured window (raw collapsed stacks)."""

    def __init__(self, pid: int, output: Path, duration: float, *, gil_only: bool) -> None:
        exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        fmt = "flamegraph" if output.suffix == ".svg" else "raw"
        self.args = [exe, "record", "--pid", str(pid), "--duration", str(max(1, int(duration)))]
        # --subprocesses: with --workers the master only waits; the workers do the work.
        self.args += ["--format", fmt, "--output", str(output), "--nonblocking", "--subprocesses"]
        if gil_only:
            self.args.append("--gil")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        Path(self.args[self.args.index("--output") + 1]).parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def wait(self, timeout: float = 30.0) -> str:
        """Wait for it to write its file; returns its stderr (empty when all went well)."""
        if self.proc is None:
            return ""
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            _, err = self.proc.communicate()
        return err.decode(errors="replace").strip() if self.proc.returncode else ""
