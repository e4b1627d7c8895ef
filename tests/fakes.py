"""Deterministic stand-ins shared by several test packages (imported as ``tests.fakes``)."""

import zlib

import numpy as np


def hashing_embed(texts: list[str], dim: int = 32) -> np.ndarray:
    """Bag of hashed character bigrams: deterministic, fast, and similar texts land nearby."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        padded = f"^{text}$"
        for first, second in zip(padded, padded[1:], strict=False):
            out[row, zlib.crc32((first + second).encode()) % dim] += 1.0
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)


class ScriptedJSONServer:
    """A JSON-over-HTTP server on 127.0.0.1 for tests of clients of paid or external APIs.

    Each POST is answered by ``script(body, count) -> (status, payload, delay_s)``, where
    ``count`` is the number of requests received so far, this one included; ``payload`` is
    sent as JSON, or as it is when it is ``bytes``, and a fourth item, when given, is the
    Content-Type. Request bodies, paths and headers (names lower-cased) are recorded in order.
    A GET is answered by ``get(path) -> (status, payload)`` (not recorded), or 501 without
    ``get``. Use it as a context manager.
    """

    def __init__(self, script, get=None):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.script = script
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server naming)
                import json
                import time

                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.bodies.append(body)
                    outer.paths.append(self.path)
                    outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                    count = len(outer.bodies)
                status, payload, delay, *content_type = outer.script(body, count)
                time.sleep(delay)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", (content_type or ["application/json"])[0])
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802 (http.server naming)
                import json

                if outer.get is None:
                    self.send_error(501)
                    return
                status, payload = outer.get(self.path)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.get = get
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``.../v1``)."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


def chat_completion(content: str, model: str, *, usage: dict | None = None, id: str = "x") -> dict:
    """A minimal chat.completion response whose only choice says ``content``."""
    reply = {
        "id": id, "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
    }
    if usage is not None:
        reply["usage"] = usage
    return reply


def live_descendants() -> set[int]:
    """Pids of this process's live (non-zombie) descendants: to prove no server was left behind."""
    import psutil

    alive = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                alive.add(child.pid)
        except psutil.NoSuchProcess:
            pass
    return alive
