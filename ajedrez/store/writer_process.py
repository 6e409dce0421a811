"""PostgreSQL with ``--workers``: one process, the writer, commits every worker's moves.

A worker's moves were committed by a thread of its own (``BatchThread``), which shares
the GIL with the worker's event loop: after each of a batch's round trips to PostgreSQL
it waited for the busy loop to let it run again, and it checked the batch's moves with
python-chess in the time the loop left it. A batch of 13-17 moves took 8-10 ms at the
median at 1,700 moves/s (``docs/performance.md``). Here the workers send their moves to
one writer process instead, which has a GIL of its own, commits whatever has arrived
from all of them in one batch (``Database.write_jobs``, unchanged) and answers each.

Nothing depends on the writer for correctness: it writes through the same transactions,
row locks and checks as a worker would. A worker that has no link to it (not started
yet, gone, restarting) commits its moves with its own thread, as with a single process.

The link is a Unix socket in Linux's abstract namespace, named after the master's pid
and a random token; the writer answers only processes of its own user (``SO_PEERCRED``),
which could read the server's database URL anyway. Frames are a 4-byte length and a JSON
array: ``[id, payload]`` from a worker, ``[id, outcome]`` back, where the outcome is
``["ok", result]``, ``["refused", kind, reason]`` (a :class:`Failure`) or ``["error",
reason]`` (a :class:`StorageError`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from ajedrez.domain.errors import Failure, Refusal, StorageError
from ajedrez.store.eager import Eager, settle

log = logging.getLogger("ajedrez.storage")

_LENGTH = struct.Struct("!I")
MAX_FRAME = 1 << 20  # a move's frame is about 300 bytes
RECONNECT_SECONDS = 1.0
# After SIGTERM the writer serves the workers still linked to it for this long at most
# (they stop first; the master kills anything left after the stop grace).
WRITER_STOP_SECONDS = 30.0
SEND_TIMEOUT_SECONDS = 5.0

Payload = Any
MakeJob = Callable[[Payload], Callable[[Any], Any]]


def writer_address() -> bytes:
    """A fresh abstract socket name for this server's writer."""
    return f"\0ajedrez-writer-{os.getpid()}-{secrets.token_hex(8)}".encode()


def open_writer_listener(address: bytes) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(address)
    sock.listen(64)
    return sock


def _frame(message: object) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return _LENGTH.pack(len(body)) + body


def _frames(buffer: bytearray) -> list[Any]:
    """The complete frames at the start of ``buffer``, removed from it."""
    out = []
    start = 0
    while len(buffer) - start >= _LENGTH.size:
        (length,) = _LENGTH.unpack_from(buffer, start)
        if length > MAX_FRAME:
            raise ValueError(f"a frame of {length} bytes")
        end = start + _LENGTH.size + length
        if end > len(buffer):
            break
        out.append(json.loads(buffer[start + _LENGTH.size : end]))
        start = end
    del buffer[:start]
    return out


def _encode(outcome: object) -> list[Any]:
    if isinstance(outcome, Failure):
        return ["refused", outcome.kind.value, outcome.reason]
    if isinstance(outcome, StorageError):
        return ["error", str(outcome)]
    if isinstance(outcome, BaseException):
        log.error("a write failed in the writer process: %r", outcome)
        return ["error", "internal error in the writer process"]
    return ["ok", outcome]


def _decode(outcome: list[Any]) -> object:
    kind = outcome[0]
    if kind == "ok":
        return outcome[1]
    if kind == "refused":
        return Failure(Refusal(outcome[1]), outcome[2])
    return StorageError(outcome[1])


# -- the worker's side -----------------------------------------------------------------


class WriterLink(asyncio.Protocol):
    """A worker's link to the writer: ``submit`` sends a job's payload, and the future
    it returns completes with the job's result or exception once the writer has
    committed it (or fails if the link breaks first)."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._next_id = 0

    @property
    def up(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    def submit(self, payload: Payload) -> asyncio.Future[Any]:
        assert self._transport is not None
        future = Eager(asyncio.get_running_loop())
        self._next_id += 1
        self._waiting[self._next_id] = future
        self._transport.write(_frame([self._next_id, payload]))
        return future

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        try:
            replies = _frames(self._buffer)
        except ValueError as e:
            log.error("the writer process sent a bad frame (%s); dropping the link", e)
            assert self._transport is not None
            self._transport.abort()
            return
        for request_id, outcome in replies:
            future = self._waiting.pop(request_id, None)
            if future is not None:
                settle(future, _decode(outcome))

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        waiting, self._waiting = self._waiting, {}
        if waiting:
            log.error("the link to the writer process broke with %d moves in flight", len(waiting))
        gone = StorageError("the writer process stopped before confirming the move; send it again")
        for future in waiting.values():
            settle(future, gone)


class WriterClient:
    """A worker's handle on the writer: the link while it is up, and its re-opening."""

    def __init__(self, address: bytes) -> None:
        self.address = address
        self.link: WriterLink | None = None
        self._connecting = False

    async def connect(self) -> None:
        if self._connecting:
            return
        self._connecting = True
        try:
            loop = asyncio.get_running_loop()
            # Connected here: asyncio's and uvloop's own connect want a path, not an
            # abstract name. A Unix socket connects at once or fails.
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self.address)
                sock.setblocking(False)
                _, link = await loop.create_unix_connection(WriterLink, sock=sock)
            except BaseException:
                sock.close()
                raise
            self.link = link
            log.info("linked to the writer process")
        except OSError as e:
            log.warning("cannot reach the writer process (%s); writing moves here", e.strerror or e)
        finally:
            self._connecting = False

    def usable(self) -> WriterLink | None:
        """The link if it is up; otherwise None, and a new link is tried for later."""
        link = self.link
        if link is not None and link.up:
            return link
        if not self._connecting:
            loop = asyncio.get_running_loop()
            self._connecting = True  # until the attempt below starts
            loop.call_later(RECONNECT_SECONDS, self._reconnect)
        return None

    def close(self) -> None:
        """Close the link (at the worker's stop): the writer ends once every link has."""
        link, self.link = self.link, None
        if link is not None:
            link.close()

    def _reconnect(self) -> None:
        self._connecting = False
        asyncio.get_running_loop().create_task(self.connect())


# -- the writer's side -----------------------------------------------------------------


class _Peer:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()


def _same_user(sock: socket.socket) -> bool:
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def serve_writes(
    run_batch: Callable[[Sequence[Callable[[Any], Any]]], list[Any]],
    listener: socket.socket,
    make_job: MakeJob,
    max_batch: int,
    stop: threading.Event,
) -> int:
    """The writer process's loop: every request that has arrived, from every worker,
    runs in one batch (``run_batch``, at most ``max_batch`` jobs a commit), then each
    is answered. Returns once ``stop`` is set (SIGTERM) and the workers have closed
    their links, or ``WRITER_STOP_SECONDS`` after it."""
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    peers: dict[socket.socket, _Peer] = {}
    deadline: float | None = None
    while True:
        if stop.is_set():
            now = time.monotonic()
            deadline = deadline or now + WRITER_STOP_SECONDS
            if not peers or now >= deadline:
                break
        requests: list[tuple[_Peer, int, Payload]] = []
        for key, _ in selector.select(timeout=0.5):
            if key.fileobj is listener:
                _accept(listener, selector, peers)
                continue
            peer = peers[cast(socket.socket, key.fileobj)]
            if not _read(peer):
                _drop(peer, selector, peers)
                continue
            try:
                requests += [(peer, rid, payload) for rid, payload in _frames(peer.buffer)]
            except (ValueError, TypeError) as e:
                log.error("a worker sent a bad frame (%s); closing its link", e)
                _drop(peer, selector, peers)
        for start in range(0, len(requests), max_batch):
            for peer in _run(run_batch, make_job, requests[start : start + max_batch]):
                if peer.sock in peers:
                    _drop(peer, selector, peers)
    selector.close()
    for peer in peers.values():
        peer.sock.close()
    return 0


def _drop(peer: _Peer, selector: selectors.BaseSelector, peers: dict[socket.socket, _Peer]) -> None:
    selector.unregister(peer.sock)
    del peers[peer.sock]
    peer.sock.close()


def _accept(
    listener: socket.socket, selector: selectors.BaseSelector, peers: dict[socket.socket, _Peer]
) -> None:
    try:
        sock, _ = listener.accept()
    except OSError:
        return
    if not _same_user(sock):
        log.warning("refused a link to the writer process from another user")
        sock.close()
        return
    # A worker that stops reading its answers must not stop the writer for the others.
    sock.settimeout(SEND_TIMEOUT_SECONDS)
    peers[sock] = _Peer(sock)
    selector.register(sock, selectors.EVENT_READ)


def _read(peer: _Peer) -> bool:
    try:
        data = peer.sock.recv(1 << 16)
    except (BlockingIOError, InterruptedError):
        return True
    except OSError:
        return False
    if not data:
        return False
    peer.buffer += data
    return True


def _run(
    run_batch: Callable[[Sequence[Callable[[Any], Any]]], list[Any]],
    make_job: MakeJob,
    requests: list[tuple[_Peer, int, Payload]],
) -> list[_Peer]:
    """Run ``requests`` as one batch and answer each; returns the peers that could not
    be answered (gone, or not reading), whose links must close."""
    jobs: list[Callable[[Any], Any]] = []
    outcomes: list[object] = [None] * len(requests)
    runnable: list[int] = []
    for i, (_, _, payload) in enumerate(requests):
        try:
            jobs.append(make_job(payload))
            runnable.append(i)
        except Exception as e:  # a payload this writer cannot read: a worker's bug
            outcomes[i] = StorageError(f"the writer process could not read a move: {e}")
    try:
        done = run_batch(jobs) if jobs else []
    except Exception as e:
        done = [e] * len(jobs)
    for i, outcome in zip(runnable, done, strict=True):
        outcomes[i] = outcome
    replies: dict[_Peer, bytearray] = {}
    for (peer, rid, _), outcome in zip(requests, outcomes, strict=True):
        replies.setdefault(peer, bytearray()).extend(_frame([rid, _encode(outcome)]))
    failed: list[_Peer] = []
    for peer, data in replies.items():
        try:
            peer.sock.sendall(data)
        except OSError:  # the worker's end then fails whatever it waited for
            failed.append(peer)
    return failed
