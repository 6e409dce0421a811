"""Ctrl-C and the installed ``ajedrez`` command: quiet whenever it comes, and never
ignored because the command was started with SIGINT ignored."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import termios
from pathlib import Path

from tests.support.common import ROOT, wait_for

# The command as installed (the console script), not `python -m`: what a user runs.
AJEDREZ = str(Path(sys.executable).parent / "ajedrez")
PIPE_SIZE = 4096  # the smallest pipe Linux makes (one page)
IMPORT_LINE = "import time:"


def _interruptible() -> None:
    # The SIGINT a test sends stands for Ctrl-C; the suite may itself run with SIGINT
    # ignored (a background job), which a child would inherit.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _pending(fd: int) -> int:
    """Bytes written into the pipe ``fd`` reads and not read yet."""
    buf = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    return int.from_bytes(buf, sys.byteorder)


def _blocked_writing(pid: int) -> bool:
    return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text()


def test_ctrl_c_while_the_command_loads_says_one_line_and_exits_130(tmp_path: Path):
    # Stopped while it loads, deterministically: Python reports each import it finishes
    # on stderr (PYTHONPROFILEIMPORTTIME), and stderr is a one-page pipe this test stops
    # reading once the entry point has loaded; the command then blocks writing the
    # report of a later import, in the middle of loading the client, and SIGINT comes
    # there, before the command handles Ctrl-C itself.
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AJEDREZ_")}
    env["PYTHONPROFILEIMPORTTIME"] = "1"
    proc = subprocess.Popen(
        [AJEDREZ, "--data-dir", str(tmp_path), "--user", "ana", "games"],
        cwd=ROOT,
        env=env,
        preexec_fn=_interruptible,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=write_end,
    )
    os.close(write_end)
    try:
        seen = b""
        while b" ajedrez.client_command\n" not in seen:
            chunk = os.read(read_end, 64)  # small reads: leave the rest in the pipe
            assert chunk, seen.decode()
            seen += chunk
        assert wait_for(
            lambda: _pending(read_end) > PIPE_SIZE - 128 and _blocked_writing(proc.pid), 30
        )
        proc.send_signal(signal.SIGINT)
        with os.fdopen(read_end, "rb") as rest:
            err = (seen + rest.read()).decode()
        rc = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    said = [line for line in err.splitlines() if IMPORT_LINE not in line]
    assert (rc, said) == (130, ["ajedrez: interrupted"]), said


def test_watch_started_with_sigint_ignored_still_stops_on_sigint(machine, new_user):
    ana = new_user("ana")
    a = machine(ana)
    proc = subprocess.Popen(
        [AJEDREZ, "--server", a.address, "--user", ana, "--data-dir", str(a.data_dir), "watch"],
        cwd=ROOT,
        env=a.env(a.password),
        # As `ajedrez watch &` in a script without job control starts it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert "Up to date" in proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 0  # watch ends normally on Ctrl-C
    assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
