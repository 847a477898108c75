"""A real HTTP/1.1 server on 127.0.0.1 with scripted misbehaviour, for tests and benchmarks.

It runs an asyncio server in a background thread (``LoopbackServer``) or as a process of
its own (``python tests/loopback.py --images N --latency 0.05``, used by ``bench/urls.py``).
Handlers write raw bytes, so they can do what real hosts do wrong: hang after the
headers, send an endless body, drop the connection, redirect in a loop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import socket
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from PIL import ExifTags, Image

Handler = Callable[["Request", asyncio.StreamWriter], Awaitable[None]]


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)


def response_bytes(
    status: int,
    body: bytes = b"",
    content_type: str = "application/octet-stream",
    headers: dict[str, str] | None = None,
) -> bytes:
    lines = [
        f"HTTP/1.1 {status} X",
        f"Content-Length: {len(body)}",
        f"Content-Type: {content_type}",
    ]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def static(
    body: bytes,
    content_type: str = "image/jpeg",
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> Handler:
    payload = response_bytes(status, body, content_type, headers)

    async def handler(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(payload)

    return handler


def redirect(location: str, status: int = 302) -> Handler:
    return static(b"", "text/plain", status, {"Location": location})


def sequence(*handlers: Handler) -> Handler:
    """The n-th request gets the n-th handler; later ones get the last."""
    calls = Counter[str]()

    async def handler(request: Request, writer: asyncio.StreamWriter) -> None:
        index = min(calls[request.path], len(handlers) - 1)
        calls[request.path] += 1
        await handlers[index](request, writer)

    return handler


def delayed(seconds: float, inner: Handler) -> Handler:
    async def handler(request: Request, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(seconds)
        await inner(request, writer)

    return handler


async def hang_after_headers(request: Request, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: 100000\r\n\r\n")
    await writer.drain()
    await asyncio.sleep(3600)


async def endless_body(request: Request, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nConnection: close\r\n\r\n")
    chunk = b"\xff" * 65536
    while True:
        writer.write(chunk)
        await writer.drain()


def trickle(body: bytes, interval: float = 1.0, content_type: str = "image/jpeg") -> Handler:
    """Send the headers at once, then ``body`` one byte every ``interval`` seconds: never
    silent long enough for a read timeout, never finished in time."""

    async def handler(request: Request, writer: asyncio.StreamWriter) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}"
        writer.write(head.encode() + b"\r\n\r\n")
        await writer.drain()
        for byte in body:
            await asyncio.sleep(interval)
            writer.write(bytes([byte]))
            await writer.drain()

    return handler


def jpeg_bytes(image: Image.Image, quality: int = 90) -> bytes:
    out = io.BytesIO()
    image.convert("RGB").save(out, "JPEG", quality=quality)
    return out.getvalue()


#: For each EXIF orientation, the turn that stores an upright picture so that a viewer
#: applying the orientation shows it upright again.
EXIF_STORED_AS = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_90,  # shown after a quarter turn clockwise
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_270,
}


def exif_rotated_jpeg(image: Image.Image, orientation: int = 6, quality: int = 90) -> bytes:
    """A real camera-style JPEG: ``image`` stored turned (or mirrored), with the EXIF
    ``Orientation`` tag that tells a viewer to show it as ``image``."""
    exif = Image.Exif()
    exif[ExifTags.Base.Orientation] = orientation
    out = io.BytesIO()
    stored = image.convert("RGB").transpose(EXIF_STORED_AS[orientation])
    stored.save(out, "JPEG", quality=quality, exif=exif)
    return out.getvalue()


def encode(image: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


class LoopbackServer:
    """HTTP server on 127.0.0.1 in a background thread; ``routes`` maps path -> handler.

    ``latency`` delays every response (seconds). ``hits`` counts requests per path;
    ``most_in_flight`` is the most requests it was answering at one time (how concurrent
    a client was, without timing it). Unknown paths get 404.
    """

    def __init__(self, routes: dict[str, Handler] | None = None, latency: float = 0.0) -> None:
        self.routes: dict[str, Handler] = dict(routes or {})
        self.latency = latency
        self.hits: Counter[str] = Counter()
        self.user_agents: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._shutdown)
        self._thread.join(10)

    def _shutdown(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._server is not None:
            self._server.close()
        self._loop.call_later(0.05, self._loop.stop)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await serve_connection(reader, writer, self._dispatch)
        finally:
            self._tasks.discard(task)

    async def _dispatch(self, request: Request, writer: asyncio.StreamWriter) -> None:
        self.hits[request.path] += 1
        self.user_agents.append(request.headers.get("user-agent", ""))
        if self.latency:
            await asyncio.sleep(self.latency)
        handler = self.routes.get(request.path.split("?", 1)[0], static(b"no", "text/plain", 404))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await handler(request, writer)
        finally:
            self.in_flight -= 1


async def serve_connection(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    dispatch: Callable[[Request, asyncio.StreamWriter], Awaitable[None]],
) -> None:
    """Serve keep-alive HTTP/1.1 requests (no request bodies) on one connection."""
    with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    key, value = line.split(":", 1)
                    headers[key.strip().lower()] = value.strip()
            await dispatch(Request(method, path, headers), writer)
            await writer.drain()
    with contextlib.suppress(Exception):
        writer.close()


# -- the benchmark's server, as a process of its own --------------------------------------


def bench_images(count: int) -> list[bytes]:
    """``count`` distinct small JPEGs (96x96, about 2 kB)."""
    images = []
    for i in range(count):
        image = Image.new("RGB", (96, 96), ((i * 37) % 256, (i * 91) % 256, (i * 53) % 256))
        image.putpixel((i % 96, (i // 96) % 96), (255, 255, 255))
        images.append(jpeg_bytes(image, 85))
    return images


async def _bench_main(port: int, latency: float, distinct: int, hosts: int) -> None:
    bodies = [response_bytes(200, body, "image/jpeg") for body in bench_images(distinct)]

    async def dispatch(request: Request, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(latency)
        name = request.path.rsplit("/", 1)[-1].split(".", 1)[0]
        writer.write(bodies[int(name) % distinct] if name.isdigit() else response_bytes(404))

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_connection(reader, writer, dispatch)

    if not port:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    addresses = [f"127.0.0.{i}" for i in range(1, hosts + 1)]
    server = await asyncio.start_server(serve, addresses, port, backlog=4096)
    print(f"listening {port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--distinct", type=int, default=256)
    parser.add_argument("--hosts", type=int, default=1, help="serve on 127.0.0.1 .. 127.0.0.N")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_bench_main(args.port, args.latency, args.distinct, args.hosts))


def noise_jpeg(seed: int, size: int = 96) -> bytes:
    """A distinct photo-sized JPEG: random noise has a random perceptual hash."""
    import numpy as np

    pixels = np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8)
    return jpeg_bytes(Image.fromarray(pixels))


class Switchable:
    """A route whose response (``body``, ``status``) a test changes between runs."""

    def __init__(self, body: bytes, status: int = 200) -> None:
        self.body, self.status = body, status

    async def __call__(self, request: Request, writer: object) -> None:
        await static(self.body, "image/jpeg", self.status)(request, writer)  # type: ignore[arg-type]
