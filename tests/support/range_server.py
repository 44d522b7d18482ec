"""A small HTTP server on 127.0.0.1 that honours Range requests (Python's http.server
does not), for reading files over HTTP through fsspec in tests and benchmarks.

It serves the files of one folder (GET and HEAD; a single ``bytes=a-b``, ``a-`` or
``-n`` range gives 206 with Content-Range, anything else the whole file) from a
daemon thread, one thread per connection, and counts what it served: requests and
body bytes per path, so a test can say what a read cost, and the most requests served at once (a
per-request delay stands for network latency).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import Counter
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: fsspec (aiohttp) reuses connections

    def do_HEAD(self):
        self._serve(body=False)

    def do_GET(self):
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        path = self.server.root / self.path.lstrip("/").split("?")[0]
        if not path.is_file():
            self.send_error(404)
            return
        size = path.stat().st_size
        start, end = self._range(size)
        if start is None:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        partial = "Range" in self.headers and (start, end) != (0, size)
        self.send_response(206 if partial else 200)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start))
        if partial:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        self.end_headers()
        # counted before sending: a client that has its answer sees it counted
        self.server.count(self.path, end - start if body else 0)
        if body:
            # in flight until the answer starts: a client cannot have sent its next
            # request before then, so only requests made together overlap here
            with self.server.in_flight():
                with open(path, "rb") as f:
                    f.seek(start)
                    data = f.read(end - start)
                time.sleep(self.server.delay)  # a slow network: overlapping requests show
            self.wfile.write(data)

    def _range(self, size: int):
        """(start, end) of the body, end exclusive; (None, None) when unsatisfiable."""
        match = _RANGE.match(self.headers.get("Range", "").strip())
        if not match or match.groups() == ("", ""):
            return 0, size
        first, last = match.groups()
        if first == "":  # the last n bytes
            return max(0, size - int(last)), size
        start = int(first)
        end = size if last == "" else min(size, int(last) + 1)
        return (start, end) if start < size else (None, None)

    def log_message(self, *args):  # quiet
        pass


class RangeServer(ThreadingHTTPServer):
    """Serves `root` on 127.0.0.1 (a free port); use as a context manager."""

    daemon_threads = True

    def __init__(self, root: os.PathLike, delay: float = 0.0):
        """`delay`: seconds each GET waits before its body (latency)."""
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = Path(root)
        self.delay = delay
        self._lock = threading.Lock()
        self.requests: Counter = Counter()
        self.bytes: Counter = Counter()
        self._in_flight = 0
        self.max_in_flight = 0  # the most GETs served at once
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/{name}"

    def count(self, path: str, nbytes: int) -> None:
        with self._lock:
            self.requests[path] += 1
            self.bytes[path] += nbytes

    def reset_counts(self) -> None:
        with self._lock:
            self.requests.clear()
            self.bytes.clear()
            self.max_in_flight = 0

    @contextmanager
    def in_flight(self):
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1

    def __enter__(self) -> "RangeServer":
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=10)
