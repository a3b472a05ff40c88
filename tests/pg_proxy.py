"""A TCP proxy on loopback in front of the PostgreSQL server, that cuts a connection at
COMMIT: a real lost connection, at the one moment a client cannot know what happened.

Every byte passes both ways, untouched, until the proxy is armed (:meth:`CommitCutter.arm`).
Then, on the first connection that sends ``COMMIT`` (the simple-query message psycopg sends
to end a transaction) after the marker it was armed with, it either lets the COMMIT through
and waits for the server's ``CommandComplete`` of it, and then drops both sides instead of
passing that answer on (the server *has* committed: ``committed=True``), or drops both sides
before the COMMIT reaches the server (it never commits: ``committed=False``). Optionally it
then refuses the next few connections (accepts and closes them at once), as a server that
cannot be reached for a moment.

Connections go without TLS (``sslmode=disable`` in :meth:`CommitCutter.url`), so that the
proxy sees the messages.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from urllib.parse import urlsplit, urlunsplit

#: the simple-query message ``COMMIT`` (type, int32 length, text, NUL)
COMMIT_QUERY = b"Q\x00\x00\x00\x0bCOMMIT\x00"
#: the server's answer that it committed (``CommandComplete`` with tag ``COMMIT``)
COMMIT_DONE = b"C\x00\x00\x00\x0bCOMMIT\x00"


class _Pair:
    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.marked = False  # the arming marker was seen on this connection
        self.cutting = False  # its COMMIT went through: drop at the server's answer
        self.closed = False

    def close(self) -> None:
        self.closed = True
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()


class CommitCutter:
    """The proxy (see the module docstring). A context manager; ``cuts`` counts cuts made."""

    def __init__(self, server_url: str) -> None:
        parts = urlsplit(server_url)
        self.server_url = server_url
        self.target = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._armed: tuple[bytes, bool, int] | None = None
        self._refuse = 0
        self._pairs: list[_Pair] = []
        self.cuts = 0
        self.refused = 0
        self.cut_done = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._accept, name="commit-cutter", daemon=True)
        self._thread.start()

    def url(self, url: str) -> str:
        """``url`` (of the proxied server) through the proxy, without TLS."""
        parts = urlsplit(url)
        netloc = f"{parts.username + '@' if parts.username else ''}127.0.0.1:{self.port}"
        query = parts.query + ("&" if parts.query else "") + "sslmode=disable"
        return urlunsplit(parts._replace(netloc=netloc, query=query))

    def arm(self, *, after: bytes = b"", committed: bool = True, refuse: int = 0) -> None:
        """Cut the first COMMIT sent on a connection after ``after`` was sent on it (b"":
        any COMMIT), once; then refuse the next ``refuse`` connections."""
        with self._lock:
            self._armed = (after, committed, refuse)
            self.cut_done.clear()

    def stop_refusing(self) -> None:
        """Let the next connections through again (the server is reachable again)."""
        with self._lock:
            self._refuse = 0

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                refuse = self._refuse > 0
                if refuse:
                    self._refuse -= 1
                    self.refused += 1
            if refuse:
                client.close()
                continue
            try:
                server = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            pair = _Pair(client, server)
            with self._lock:
                self._pairs.append(pair)
            for target in (self._upstream, self._downstream):
                threading.Thread(target=target, args=(pair,), daemon=True).start()

    def _upstream(self, pair: _Pair) -> None:
        """Client to server: watch for the marker and the COMMIT."""
        tail = b""
        while True:
            try:
                data = pair.client.recv(65536)
            except OSError:
                data = b""
            if not data:
                pair.close()
                return
            window = tail + data
            tail = window[-64:]
            with self._lock:
                armed = self._armed
                if armed is not None and not pair.marked and (not armed[0] or armed[0] in window):
                    pair.marked = True
                cut = armed is not None and pair.marked and COMMIT_QUERY in window
                if cut:
                    assert armed is not None
                    self._armed = None
                    if armed[1]:
                        pair.cutting = True
                    self._refuse = armed[2]
            if cut and not pair.cutting:  # before the server sees it: nothing commits
                self._cut(pair)
                return
            try:
                pair.server.sendall(data)
            except OSError:
                pair.close()
                return

    def _downstream(self, pair: _Pair) -> None:
        """Server to client: hold back the answer to a COMMIT being cut."""
        held = b""
        while True:
            try:
                data = pair.server.recv(65536)
            except OSError:
                data = b""
            if not data:
                pair.close()
                return
            if pair.cutting:
                held += data
                if COMMIT_DONE in held:  # the server committed; the client never hears it
                    self._cut(pair)
                    return
                continue
            try:
                pair.client.sendall(data)
            except OSError:
                pair.close()
                return

    def _cut(self, pair: _Pair) -> None:
        pair.close()
        with self._lock:
            self.cuts += 1
        self.cut_done.set()

    def close(self) -> None:
        self._stopped = True
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            pairs = list(self._pairs)
        for pair in pairs:
            pair.close()

    def __enter__(self) -> CommitCutter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
