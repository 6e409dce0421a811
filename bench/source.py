"""The source tree under test: its git commit and state, and snapshots of a revision for
the server to run from, so that edits to the working tree during a run cannot change the
server being measured."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def git(*argv: str) -> str | None:
    """``git ARGV`` in the repository; its output, or None when git fails or is missing."""
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), *argv], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def head() -> str | None:
    return git("rev-parse", "HEAD")


def dirty() -> bool:
    """Whether tracked files differ from HEAD."""
    return bool(git("status", "--porcelain", "--untracked-files=no"))


def make_snapshot(rev: str) -> tuple[Path, str]:
    """``git archive REV`` extracted into /tmp/ajedrez-<short commit> (reused if there)."""
    commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    if commit is None:
        raise SystemExit(f"{rev}: not a commit of {REPO}")
    target = Path(tempfile.gettempdir()) / f"ajedrez-{commit[:7]}"
    if not (target / "ajedrez" / "__main__.py").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(
            ["git", "-C", str(REPO), "archive", commit], stdout=subprocess.PIPE
        )
        subprocess.run(["tar", "-x", "-C", str(target)], stdin=archive.stdout, check=True)
        assert archive.stdout is not None
        archive.stdout.close()
        if archive.wait() != 0:
            raise SystemExit("git archive failed")
    link_installed_names(target)
    return target, commit


def link_installed_names(source: Path) -> None:
    """Make ``source``'s own admin/ and migrations/ importable as ajedrez.admin and
    ajedrez.migrations, as an installed wheel maps them. Otherwise the editable install
    of the working tree supplies them, and a server run from the snapshot would migrate
    with the working tree's migrations."""
    for name in ("admin", "migrations"):
        link = source / "ajedrez" / name
        if (source / name).is_dir() and not link.exists():
            link.symlink_to(Path("..") / name)
