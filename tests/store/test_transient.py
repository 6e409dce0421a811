"""Deadlocks and serialization failures are retried, not reported as outages."""

from __future__ import annotations

import threading

from sqlalchemy import update

from ajedrez.domain.errors import TRANSIENT_RETRIES, TransientStorageError
from ajedrez.espol.codes import Reply
from ajedrez.espol.session import Session
from ajedrez.service.service import Service
from ajedrez.store.models import User


class FlakyGames:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def ranking(self) -> list[tuple[str, int]]:
        self.calls += 1
        if self.calls <= self.failures:
            raise TransientStorageError("deadlock detected")
        return [("ana", 3)]


def _logged_in(games: FlakyGames) -> Session:
    from ajedrez.domain.accounts import Caller

    session = Session(Service(accounts=None, games=games, moves=None))  # type: ignore[arg-type]
    session.caller = Caller(1, "ana")
    return session


def test_a_transient_failure_is_retried_and_succeeds() -> None:
    games = FlakyGames(failures=TRANSIENT_RETRIES)
    outcome = _logged_in(games).handle_line(b"SRNK")
    assert outcome.replies == [b"2050\x00\x05ana:3"]
    assert games.calls == TRANSIENT_RETRIES + 1


def test_a_persistent_transient_failure_becomes_e_storage() -> None:
    games = FlakyGames(failures=100)
    outcome = _logged_in(games).handle_line(b"SRNK")
    assert outcome.replies[0][:4] == b"%d0" % Reply.E_STORAGE
    assert not outcome.close


def test_writers_locking_in_opposite_orders(db, new_user) -> None:
    """PostgreSQL breaks the deadlock: one writer gets TransientStorageError, the other
    commits. SQLite never deadlocks: its write lock serialises the two, both commit."""
    first, second = new_user(), new_user()
    holding = [threading.Event(), threading.Event()]
    errors: list[BaseException] = []
    committed: list[int] = []

    def writer(me: int, order: tuple[str, str]) -> None:
        try:
            with db.write() as tx:
                tx.conn.execute(update(User).where(User.name == order[0]).values(wins=User.wins))
                holding[me].set()
                holding[1 - me].wait(3)  # on SQLite the other cannot start: time out, go on
                tx.conn.execute(update(User).where(User.name == order[1]).values(wins=User.wins))
            committed.append(me)
        except BaseException as e:
            errors.append(e)

    threads = [
        threading.Thread(target=writer, args=(0, (first, second))),
        threading.Thread(target=writer, args=(1, (second, first))),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if db.is_sqlite:
        assert errors == [] and sorted(committed) == [0, 1]
    else:
        assert len(committed) == 1 and len(errors) == 1
        assert isinstance(errors[0], TransientStorageError), errors
