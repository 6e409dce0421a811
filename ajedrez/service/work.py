"""Where each of the service's operations runs. The service decides, per operation; a
front end asks (``WORK[operation]``) and runs its request there.

LOOP: on the event loop, answered at once; it touches no database (a stream is handed to
the process's event hub, which reads the store).
QUEUE: on the event loop, handing the store one unit of work (a read of a game, a move)
whose future completes when the store has done it. These are what a waiting player sends
after every move; a thread hand-off would cost more than they do.
THREAD: on a command thread; the operation may block on the database.
PASSWORD: on the few threads that run the (deliberately slow) password hash, once the
login gate lets it (a login, closing an account). A login with a token (FICH) waits for
the gate as well, but runs on a command thread: it hashes with SHA-256, not argon2.
SUBSCRIPTION: on the threads that hash sign-up passwords, so a flood of requests never
takes a login's turn.
"""

from __future__ import annotations

from enum import Enum

from ajedrez.store import eager


class Work(Enum):
    LOOP = "loop"
    QUEUE = "queue"
    THREAD = "thread"
    PASSWORD = "password"
    SUBSCRIPTION = "subscription"


# Operations that do not run on a command thread. Every other one does.
WORK: dict[str, Work] = {
    "help": Work.LOOP,
    "quit": Work.LOOP,
    "stream": Work.LOOP,
    "game": Work.QUEUE,
    "moves": Work.QUEUE,
    "move": Work.QUEUE,
    "log_in": Work.PASSWORD,
    "close_account": Work.PASSWORD,
    "sign_up": Work.SUBSCRIPTION,
}


def work_of(operation: str) -> Work:
    return WORK.get(operation, Work.THREAD)


# A callback as soon as an operation's work is done: for the store's queued work, from the
# code that completes it, a turn of the loop sooner than asyncio would (store/eager.py).
when_done = eager.when_done
