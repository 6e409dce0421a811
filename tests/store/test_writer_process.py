"""The writer process's link (``store/writer_process.py``): framing, outcomes, and a
writer loop served on a thread with workers' links connected to it over a real socket.
The process itself, under ``--workers`` on PostgreSQL, is tested in ``test_workers.py``."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from ajedrez.domain.errors import Failure, Refusal, StorageError
from ajedrez.domain.views import MoveRecord
from ajedrez.store import writer_process as wp
from ajedrez.store.moves import MoveJob, Moves


def test_frames_are_cut_where_they_end_and_a_partial_one_waits():
    data = wp._frame([1, "a"]) + wp._frame([2, {"b": None}])
    buffer = bytearray(data + wp._frame([3, "c"])[:5])
    assert wp._frames(buffer) == [[1, "a"], [2, {"b": None}]]
    assert len(buffer) == 5  # the third frame's start stays for the next read
    buffer += wp._frame([3, "c"])[5:]
    assert wp._frames(buffer) == [[3, "c"]]
    assert buffer == bytearray()


def test_an_oversized_frame_is_refused():
    buffer = bytearray(wp._LENGTH.pack(wp.MAX_FRAME + 1) + b"x")
    with pytest.raises(ValueError, match="frame of"):
        wp._frames(buffer)


def test_outcomes_cross_the_link_as_they_were():
    refused = wp._decode(wp._encode(Failure(Refusal.NOT_YOUR_TURN, "it is your opponent's turn")))
    assert isinstance(refused, Failure)
    assert (refused.kind, refused.reason) == (Refusal.NOT_YOUR_TURN, "it is your opponent's turn")
    failed = wp._decode(wp._encode(StorageError("disk full")))
    assert isinstance(failed, StorageError) and str(failed) == "disk full"
    # Anything else is the writer's own fault: the worker learns only that the write failed.
    other = wp._decode(wp._encode(KeyError("secret detail")))
    assert isinstance(other, StorageError) and "secret" not in str(other)
    assert wp._decode(wp._encode(None)) is None


def test_a_move_job_travels_as_its_payload(db):
    moves = Moves.of(db)
    job = MoveJob(moves, 7, 42, MoveRecord(3, "g1f3", 0, "0621", 0), None)
    copy = moves.job_from_payload(wp._frames(bytearray(wp._frame(job.payload())))[0])
    assert copy == job


@pytest.fixture
def writer() -> Iterator[tuple[bytes, list[list[Any]]]]:
    """A writer loop on a thread: each job returns its payload doubled, except a payload
    of "refuse" (a Failure) and "boom" (an unexpected exception)."""
    address = wp.writer_address()
    listener = wp.open_writer_listener(address)
    batches: list[list[Any]] = []

    def make_job(payload: Any):  # type: ignore[no-untyped-def]
        def job(_tx: Any) -> Any:
            if payload == "refuse":
                raise Failure(Refusal.ILLEGAL_MOVE, "illegal move")
            if payload == "boom":
                raise RuntimeError("boom")
            return payload * 2

        job.payload = payload  # type: ignore[attr-defined]
        return job

    def run_batch(jobs: Sequence[Any]) -> list[Any]:
        batches.append([job.payload for job in jobs])
        out: list[Any] = []
        for job in jobs:
            try:
                out.append(job(None))
            except Exception as e:
                out.append(e)
        return out

    stop = threading.Event()
    thread = threading.Thread(
        target=wp.serve_writes, args=(run_batch, listener, make_job, 3, stop), daemon=True
    )
    thread.start()
    yield address, batches
    stop.set()
    thread.join(10)
    assert not thread.is_alive()
    listener.close()


def test_workers_links_get_each_answer_from_shared_batches(writer):
    address, batches = writer

    async def scenario() -> list[object]:
        first, second = wp.WriterClient(address), wp.WriterClient(address)
        await first.connect()
        await second.connect()
        a, b = first.usable(), second.usable()
        assert a is not None and b is not None
        sent = [a.submit(1), b.submit("x"), a.submit("refuse"), b.submit("boom"), a.submit(5)]
        try:
            return await asyncio.gather(*sent, return_exceptions=True)
        finally:
            first.close()
            second.close()

    answers = asyncio.run(scenario())
    assert answers[0] == 2 and answers[1] == "xx" and answers[4] == 10
    assert isinstance(answers[2], Failure) and answers[2].kind is Refusal.ILLEGAL_MOVE
    assert isinstance(answers[3], StorageError)
    # Batches of at most three, each possibly holding both links' jobs.
    assert sorted(p for batch in batches for p in batch if isinstance(p, int)) == [1, 5]
    assert all(len(batch) <= 3 for batch in batches)


def test_a_broken_link_fails_what_it_waited_for_and_is_not_used(writer):
    address, _ = writer

    async def scenario() -> tuple[object, object]:
        client = wp.WriterClient(address)
        await client.connect()
        link = client.usable()
        assert link is not None
        waiting = link.submit(3)
        assert link._transport is not None
        link._transport.abort()  # as when the writer process dies
        outcome = (await asyncio.gather(waiting, return_exceptions=True))[0]
        usable = client.usable()
        client.close()
        return outcome, usable

    outcome, usable = asyncio.run(scenario())
    assert isinstance(outcome, StorageError) and "send it again" in str(outcome)
    assert usable is None  # the worker writes by itself until a new link is up


def test_no_writer_listening_leaves_the_worker_writing_by_itself():
    address = wp.writer_address()  # nobody listens there

    async def scenario() -> object:
        client = wp.WriterClient(address)
        await client.connect()
        return client.usable()

    assert asyncio.run(scenario()) is None


def test_the_writer_answers_only_its_own_user(monkeypatch):
    a, b = socket.socketpair(socket.AF_UNIX)
    try:
        assert wp._same_user(a)
        monkeypatch.setattr(wp.os, "getuid", lambda: 12345)
        assert not wp._same_user(a)
    finally:
        a.close()
        b.close()
