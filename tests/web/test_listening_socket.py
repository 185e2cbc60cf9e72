"""``listening_socket``: the socket ``ingest`` and ``console`` hand to uvicorn. Connections
accepted on it must have Nagle's algorithm off, which asyncio sets only for sockets created with
their protocol named: with a plain ``socket.socket()`` every reply waited ~40 ms for the
client's delayed ACK (found by ``bench/gate_latency.py``)."""

from __future__ import annotations

import asyncio
import socket

from verdictflow.web.listeners import listening_socket


def accepted_nodelay(sock: socket.socket) -> int:
    async def go() -> int:
        flags: list[int] = []

        def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            raw = writer.get_extra_info("socket")
            flags.append(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connection, sock=sock)
        port = sock.getsockname()[1]
        async with server:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(100):
                if flags:
                    break
                await asyncio.sleep(0.01)
            writer.close()
        return flags[0]

    return asyncio.run(go())


def test_connections_accepted_on_it_have_nagle_off() -> None:
    assert accepted_nodelay(listening_socket("127.0.0.1", 0)) != 0


def test_the_plain_socket_it_replaces_left_nagle_on() -> None:
    """The control: the cause of the 40 ms, so the test above cannot pass by accident."""
    plain = socket.socket()
    plain.bind(("127.0.0.1", 0))
    assert accepted_nodelay(plain) == 0
