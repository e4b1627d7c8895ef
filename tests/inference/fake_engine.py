"""A fake engine on 127.0.0.1: real HTTP, the weight-update routes, call recording, faults.

Answers ``GET /health`` and the in-place weight-update routes of vLLM 0.32.0 (dev mode:
``/pause``, ``/collective_rpc``, ``/reset_prefix_cache``, ``/resume``) and SGLang 0.5.23
(``/update_weights_from_disk``, ``/flush_cache``) with the bodies those engines send. Every
request is recorded (method, path with query, JSON body) in order. A fault per path replaces
the answer: ``{"status": 404}``, ``{"status": 400, "body": {...}}``, ``{"body": {...}}`` (200
with that body, e.g. SGLang's "cache was not flushed") or ``{"sleep": 5}`` (answer late: a
client timeout).

In a thread (``FakeEngine``, for the client-side tests) or as a process (``main``: what a
``generation.server_command`` starts; the calls go to a JSON-lines file, the faults come from a
JSON file, and unknown launch flags are accepted).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SGLANG_NOT_FLUSHED = ("Weights were updated, but the cache was not flushed because requests "
                      "are still running or queued")
ANSWERS = {
    "/pause": {"status": "paused"},
    "/collective_rpc": {"results": [None]},
    "/reset_prefix_cache": {"success": True},
    "/resume": {"status": "resumed"},
    "/update_weights_from_disk": {"success": True, "message": "Succeeded to update model weights.",
                                  "num_paused_requests": 0},
    "/flush_cache": {"success": True},
}


class FakeEngine:
    """The fake engine served from a thread; ``calls`` lists ``(method, path, body)``."""

    def __init__(self, faults: dict | None = None, record=None) -> None:
        self.faults = dict(faults or {})
        self.calls: list[tuple[str, str, object]] = []
        self._record = record
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeEngine:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def paths(self) -> list[str]:
        return [path for _, path, _ in self.calls]

    def _handler(self):
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _answer(self, status: int, body) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                engine._note("GET", self.path, None)
                if self.path == "/health":
                    self._answer(200, {})
                else:
                    self._answer(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                engine._note("POST", self.path, body)
                route = self.path.split("?")[0]
                fault = engine.faults.get(route, {})
                time.sleep(fault.get("sleep", 0))
                if route not in ANSWERS:
                    self._answer(404, {"detail": "Not Found"})
                    return
                status = fault.get("status", 200)
                default = ANSWERS[route] if status == 200 else {"detail": f"error {status}"}
                try:
                    self._answer(status, fault.get("body", default))
                except (BrokenPipeError, ConnectionResetError):  # the client gave up
                    pass

        return Handler

    def _note(self, method: str, path: str, body) -> None:
        self.calls.append((method, path, body))
        if self._record is not None:
            with open(self._record, "a", encoding="utf-8") as handle:
                handle.write(json.dumps([method, path, body]) + "\n")


def recorded(path: Path) -> list[tuple[str, str, object]]:
    """The calls a process-mode fake wrote (health probes left out)."""
    if not path.is_file():
        return []
    calls = [tuple(json.loads(line)) for line in path.read_text().splitlines()]
    return [call for call in calls if call[1] != "/health"]


def main(argv: list[str]) -> None:
    """Serve on ``--port`` until killed (what a server command runs)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--calls", required=True, help="JSON-lines file of received calls")
    parser.add_argument("--faults", default=None, help="JSON file: path -> fault")
    args, _ = parser.parse_known_args(argv)
    faults = json.loads(Path(args.faults).read_text()) if args.faults else {}
    engine = FakeEngine(faults, record=args.calls)
    engine.server.server_close()
    engine.server = ThreadingHTTPServer(("127.0.0.1", args.port), engine._handler())
    with open(args.calls, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(["START", " ".join(sys.argv), None]) + "\n")
    engine.server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
