"""Several jobs at once, for the tests of races: one helper, used by every tier."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def run_together(jobs: list[Callable[[], Any]], timeout: float = 120) -> list[Any]:
    """Run each job in its own thread, all released at once; return results in order.

    A job that raises fails the test with that exception; one that never returns fails it
    after ``timeout`` seconds."""
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=timeout)
            results[i] = jobs[i]()
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a job run together with others did not return"
    if errors:
        raise errors[0]
    return results
