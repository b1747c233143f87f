"""A reverse proxy on loopback that sets `X-Forwarded-For` as nginx does, for tests of what daphne
(`--proxy-headers`) and Agora make of it. Requests and WebSocket upgrades pass through unchanged
otherwise: the first request head of a connection is rewritten (a WebSocket upgrade is the only
request on its connection), then bytes are copied both ways.

`mode="overwrite"` is the documented nginx sample (`proxy_set_header X-Forwarded-For
$remote_addr;`): whatever the client sent is dropped. `mode="append"` is nginx's
`$proxy_add_x_forwarded_for`: the client's own header, then the address the proxy saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading


class ForwardingProxy:
    def __init__(self, upstream_port: int, mode: str = "overwrite") -> None:
        assert mode in ("overwrite", "append")
        self.upstream_port, self.mode = upstream_port, mode
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ForwardingProxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self._loop
        ).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc) -> None:
        async def shut() -> None:
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def rewrite(self, head: bytes, peer: str) -> bytes:
        lines = head.split(b"\r\n")
        kept, sent = [lines[0]], []
        for line in lines[1:]:
            name, _sep, value = line.partition(b":")
            if name.strip().lower() in (b"x-forwarded-for", b"x-forwarded-proto"):
                if name.strip().lower() == b"x-forwarded-for":
                    sent.append(value.strip().decode("latin-1"))
                continue
            kept.append(line)
        forwarded = ", ".join([*sent, peer]) if self.mode == "append" else peer
        kept += [f"X-Forwarded-For: {forwarded}".encode(), b"X-Forwarded-Proto: https"]
        return b"\r\n".join(kept)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            writer.close()
            return
        peer = writer.get_extra_info("peername")[0]
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        up_writer.write(self.rewrite(head[:-4], peer) + b"\r\n\r\n")
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        with contextlib.suppress(Exception):
            writer.close()
