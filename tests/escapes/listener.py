"""A TCP server on the grading machine's loopback that counts who reaches it:
what a submission's helper would be (a friend's answer server, a place to send
the inputs), and what the lab's code must not reach. The escape `open_socket`
(tests/escapes) and the attack `phone_home` (tests/attacks) connect to it; their
suites start one per batch and check its count."""

from __future__ import annotations

import socket
import threading


class Listener:
    def __init__(self) -> None:
        self.connections = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        # From this process it answers: a count of 0 later means the lab's code
        # could not get here, not that nothing listened.
        with socket.create_connection(("127.0.0.1", self.port), timeout=5):
            pass
        while self.connections == 0:
            self._stop.wait(0.01)
        self.connections = 0

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
