"""The entry point of the ``ajedrez`` command.

It lives outside :mod:`ajedrez.client` because importing that package (python-chess,
sqlite3, ssl, the protocol library) takes a noticeable fraction of a second: an entry
point inside it could not catch a Ctrl-C that comes while it loads, and Python would print
a ``KeyboardInterrupt`` traceback. Here nothing is imported before the guard but the
standard library's ``signal`` and ``sys``.
"""

from __future__ import annotations

import signal
import sys

# As a shell reports a command killed by SIGINT (128 + 2): the command had not started,
# so it did nothing, and once it has started its own statuses apply (docs/client.md).
EXIT_INTERRUPTED = 130


def main() -> int:
    # A command started with SIGINT ignored (`ajedrez watch &` in a script without job
    # control) inherits that, and Python keeps it: Ctrl-C and `kill -INT` would not
    # stop it. Every command here stops on them.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        from ajedrez.client.cli import main as run

        return run()
    except KeyboardInterrupt:
        # Before `run` handles Ctrl-C itself (while the client loads or reads its
        # arguments): one line, as for any other interruption.
        print("ajedrez: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
