"""The seed listeners' connection (``service/tables.py``) on an event loop with a fake
transport: a client that does not read what it is sent gets nothing more read nor
answered until it does, and is cut off once the idle timeout passes that way; a read
full of packets is answered a packet a turn of the loop, so other connections go on."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from ajedrez.binproto.connection import BinaryConnection
from ajedrez.service.metrics import Metrics
from ajedrez.service.throttle import LoginThrottle

HOVER = b"HOVR\x04\x01"


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.reading = True
        self.closed = False
        self.aborted = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 5000) if name == "peername" else default

    def write(self, data: bytes) -> None:  # type: ignore[override]
        self.written.append(bytes(data))

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True


def fake_host(idle_timeout: float = 60.0) -> Any:
    service = SimpleNamespace(throttle=LoginThrottle())
    limits = SimpleNamespace(login_grace=60.0, idle_timeout=idle_timeout, ipv6_block_size=64)
    return SimpleNamespace(
        service=service,
        metrics=Metrics(),
        limits=limits,
        stopping=False,
        refusal=lambda address: None,
        joined=lambda client: None,
        authenticated=lambda client: None,
        left=lambda client: None,
    )


async def settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


def test_a_client_that_does_not_read_is_answered_nothing_more_until_it_does() -> None:
    async def run() -> None:
        conn = BinaryConnection(fake_host(), "10m")
        transport = FakeTransport()
        conn.connection_made(transport)
        conn.data_received(HOVER)
        await settle()
        assert transport.written == [HOVER]
        conn.pause_writing()  # the client's window is full
        assert not transport.reading
        conn.data_received(HOVER * 3)  # what had come already
        await settle()
        assert transport.written == [HOVER]
        conn.resume_writing()
        await settle()
        assert transport.written == [HOVER] * 4 and transport.reading
        conn.connection_lost(None)
        await settle()

    asyncio.run(run())


def test_a_client_that_reads_nothing_for_the_idle_timeout_is_cut_off() -> None:
    async def run() -> None:
        # The loop's time is the test's: its timers fire when the test moves it on.
        loop = asyncio.get_running_loop()
        now = [loop.time()]
        loop.time = lambda: now[0]  # type: ignore[method-assign]
        conn = BinaryConnection(fake_host(idle_timeout=30.0), "10m")
        transport = FakeTransport()
        conn.connection_made(transport)
        conn.data_received(HOVER)
        await settle()
        conn.pause_writing()
        conn.data_received(HOVER)
        now[0] += 29.0
        await settle()
        assert not transport.aborted
        now[0] += 2.0
        await settle()
        assert transport.aborted  # a close would wait for the client to read
        conn.connection_lost(None)
        await settle()

    asyncio.run(run())


def test_a_read_full_of_packets_is_answered_one_a_turn() -> None:
    async def run() -> None:
        conn = BinaryConnection(fake_host(), "10m")
        transport = FakeTransport()
        conn.connection_made(transport)
        conn.data_received(HOVER * 100)
        turns = 0
        while len(transport.written) < 100 and turns < 1000:
            await asyncio.sleep(0)
            turns += 1
        assert len(transport.written) == 100 and turns >= 50
        conn.connection_lost(None)
        await settle()

    asyncio.run(run())
