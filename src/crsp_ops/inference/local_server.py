r"""A small, real OpenAI-compatible chat server over a local HF model (no vLLM or SGLang needed).

Serves tests and CPU users, and speaks both vLLM's and SGLang's request fields (steering too).

    python -m crsp_ops.inference.local_server --model models/base --port 8000

Design: docs/design/inference.md#local_server.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from crsp_ops.inference.server_protocol import (
    KNOWN_FIELDS,
    BadRequestError,
    ChatRequest,
    chat_response,
    error_body,
    parse_chat_request,
    token_id_form,
)
from crsp_ops.inference.server_top_logprobs import step_logprobs, top_alternatives
from crsp_ops.inference.transformers_backend import TransformersBackend, completion_to_choice
from crsp_ops.steering.table import load_table_and_count

logger = logging.getLogger(__name__)

LOGPROBS_MODES = {"processed_logprobs": "processed", "raw_logprobs": "raw"}


class LocalChatService:
    """Request → response logic of the server, apart from HTTP (callable in-process).

    Args:
        backend: a ``TransformersBackend`` (its ``token_clusters`` decide whether it steers).
        served_model: the model name clients must send (or omit).
        n_clusters: cluster ids in the steering table (deltas must have exactly this length).
        default_max_tokens: ``max_tokens`` when a request gives none.
    """

    def __init__(
        self,
        backend: Any,
        served_model: str,
        n_clusters: int | None = None,
        default_max_tokens: int = 256,
    ) -> None:
        self.backend = backend
        self.served_model = served_model
        self.n_clusters = n_clusters
        self.default_max_tokens = default_max_tokens
        self._lock = threading.Lock()  # one generate at a time: the model is not thread-safe

    @property
    def steerable(self) -> bool:
        """True when started with a token→cluster table."""
        return self.backend.token_clusters is not None

    def models(self) -> dict[str, Any]:
        """The ``/v1/models`` body."""
        return {
            "object": "list",
            "data": [{"id": self.served_model, "object": "model", "created": 0,
                      "owned_by": "crsp_ops"}],
        }

    def chat(self, body: Any) -> dict[str, Any]:
        """Answer one chat-completions request body.

        Raises:
            BadRequestError: a malformed request (400) or an unknown model (404).
        """
        request = parse_chat_request(body, self.served_model, self.default_max_tokens)
        ignored = sorted(set(body) - KNOWN_FIELDS)
        if ignored:  # vLLM accepts unknown fields and only logs them
            logger.info("fields were present in the request but ignored: %s", ignored)
        deltas = self._usable_deltas(request)
        backend = self.backend
        if request.chat_template_kwargs:  # as vLLM: unchecked, a variable nobody reads is moot
            backend = backend.with_chat_template_kwargs(request.chat_template_kwargs)
        with self._lock:
            try:
                [completion] = backend.generate([list(request.messages)], request.params,
                                                deltas=deltas)
            except ValueError as error:  # e.g. deltas the table rejects
                raise BadRequestError(str(error)) from error
            choice = self._choice(request, completion, deltas)
        return chat_response(request, choice, completion.prompt_token_ids, self.served_model)

    def _usable_deltas(self, request: ChatRequest) -> list[float] | None:
        if request.deltas is None:
            return None
        if not self.steerable:
            logger.warning(
                "steering deltas received but the server has no --token-clusters table: ignored"
            )
            return None
        if self.n_clusters is not None and len(request.deltas) != self.n_clusters:
            raise BadRequestError(
                f"{len(request.deltas)} steering deltas for a table of {self.n_clusters} clusters"
            )
        return list(request.deltas)

    def _choice(
        self, request: ChatRequest, completion: Any, deltas: list[float] | None
    ) -> dict[str, Any]:

        choice = completion_to_choice(completion, self.backend.tokenizer)
        logprobs = choice.get("logprobs")
        if not request.logprobs or logprobs is None:
            return choice
        top_ids = None
        if request.top_logprobs and completion.token_ids:

            steps = step_logprobs(
                self.backend.model, completion, request.params, completion.logprob_semantics,
                self.backend.token_clusters, deltas,
            )
            entries, top_ids = top_alternatives(steps, request.top_logprobs, self.backend.tokenizer)
            for item, alternatives in zip(logprobs["content"], entries, strict=True):
                item["top_logprobs"] = alternatives
        if request.tokens_as_token_ids:
            choice["logprobs"] = token_id_form(logprobs, completion.token_ids, top_ids)
        return choice


def make_handler(service: LocalChatService) -> type[BaseHTTPRequestHandler]:
    """An HTTP handler class bound to ``service``."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "crsp-local-server/0.1"

        def do_GET(self) -> None:  # noqa: N802 (http.server naming)
            path = self.path.split("?", 1)[0]
            if path == "/health":
                self._send(HTTPStatus.OK, {})
            elif path == "/v1/models":
                self._send(HTTPStatus.OK, service.models())
            else:
                self._send(HTTPStatus.NOT_FOUND, error_body(f"no route {path}", 404))

        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            path = self.path.split("?", 1)[0]
            if path != "/v1/chat/completions":
                self._send(HTTPStatus.NOT_FOUND, error_body(f"no route {path}", 404))
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"null")
                except (json.JSONDecodeError, UnicodeDecodeError) as error:
                    raise BadRequestError(f"request body is not valid JSON: {error}") from error
                self._send(HTTPStatus.OK, service.chat(body))
            except BadRequestError as error:
                self._send(error.status, error_body(str(error), error.status, error.param))
            except Exception as error:  # noqa: BLE001 - a 500 with a message, never a hang
                logger.exception("chat completion failed")
                self._send(HTTPStatus.INTERNAL_SERVER_ERROR, error_body(repr(error), 500))

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib name)
            # One access-log line per request, as vLLM/uvicorn write (tests wait on these).
            logger.info("%s " + format, self.address_string(), *args)

    return Handler


def build_service(args: argparse.Namespace) -> LocalChatService:
    """Load the model (and the steering table) named on the command line."""
    table, n_clusters = None, None
    if args.token_clusters:

        table, n_clusters = load_table_and_count(args.token_clusters)
    backend = TransformersBackend.from_pretrained(
        args.model, device=args.device, dtype=args.dtype, token_clusters=table,
        logprob_semantics=LOGPROBS_MODES[args.logprobs_mode], batch_size=1,
    )
    return LocalChatService(
        backend, args.served_model_name or str(args.model), n_clusters, args.default_max_tokens
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="saved HF model directory")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--token-clusters", default=None,
                        help="token_clusters.npy (or its directory) to enable steering")
    parser.add_argument("--served-model-name", default=None, help="default: the --model value")
    parser.add_argument("--device", default="cpu", help="auto | cpu | cuda[:N]")
    parser.add_argument("--dtype", default="auto", help="torch dtype name, or auto")
    parser.add_argument("--logprobs-mode", default="processed_logprobs",
                        choices=sorted(LOGPROBS_MODES), help="as vLLM's --logprobs-mode")
    parser.add_argument("--default-max-tokens", type=int, default=256)
    parser.add_argument("--log-level", default="INFO")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Load the model, then serve until SIGTERM or Ctrl-C."""
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    started = time.monotonic()
    service = build_service(args)
    # Bind only once the model is loaded: /health answering means ready to serve.
    httpd = ThreadingHTTPServer((args.host, args.port), make_handler(service))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # unwind and close the socket
    logger.info(
        "serving %s on http://%s:%d (steering %s, loaded in %.1fs)", service.served_model,
        args.host, args.port, "on" if service.steerable else "off", time.monotonic() - started,
    )
    try:
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()


if __name__ == "__main__":
    main()
