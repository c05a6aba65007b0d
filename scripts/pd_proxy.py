#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""A minimal prefill-then-decode proxy for one prefill and one decode vLLM instance (1P1D).

Each ``/v1/completions`` or ``/v1/chat/completions`` request goes first to the prefill
instance with ``max_tokens`` 1 (its connector then holds the prompt's KV, e.g. vLLM's
``ExampleConnector`` in a shared directory), then unchanged to the decode instance, whose
answer (streamed or not) is the client's. The same routing as vLLM's disaggregated-serving
proxy examples (``examples/disaggregated/disaggregated_serving/`` in vLLM's sources), in a
few lines of FastAPI and httpx (both installed with vLLM). docs/pd-disaggregation.md shows
how to run it.

Faults end the request, never hang it: an instance that does not accept the connection within
``--connect-timeout`` seconds, or does not answer within ``--timeout``, gives a 502 (503 for
an instance that answers with an error) whose message names the instance, its URL and the
cause.

Usage: ``python scripts/pd_proxy.py --port 8000 --prefill http://127.0.0.1:8100
--decode http://127.0.0.1:8200``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse


class InstanceError(Exception):
    """One instance failed a request: ``status`` for the client, ``message`` naming it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "pd_proxy_error",
                                   "code": status}}, status_code=status)


def build_app(prefill: str, decode: str, timeout: float = 300.0,
              connect_timeout: float = 5.0) -> FastAPI:
    """The proxy app over the two instances' base URLs (``http://host:port``)."""
    app = FastAPI()
    limits = httpx.Timeout(timeout, connect=connect_timeout)

    async def post(client: httpx.AsyncClient, role: str, url: str, path: str,
                   body: dict[str, Any]) -> httpx.Response:
        try:
            resp = await client.post(url + path, json=body)
        except httpx.TimeoutException as err:
            raise InstanceError(502, f"{role} instance {url} timed out "
                                     f"({type(err).__name__}: {err})") from err
        except httpx.HTTPError as err:
            raise InstanceError(502, f"{role} instance {url} unreachable "
                                     f"({type(err).__name__}: {err})") from err
        if resp.status_code != 200:
            raise InstanceError(503 if resp.status_code >= 500 else resp.status_code,
                                f"{role} instance {url} answered {resp.status_code}: "
                                f"{resp.text[:500]}")
        return resp

    async def route(request: Request, path: str) -> Response:
        try:
            body = await request.json()
        except ValueError as err:  # json.JSONDecodeError and a body that is not UTF-8
            return _error(400, f"request body is not valid JSON ({err})")
        if not isinstance(body, dict):
            return _error(400, f"request body must be a JSON object, got {type(body).__name__}")
        first = {**body, "max_tokens": 1, "stream": False}
        first.pop("max_completion_tokens", None)
        first.pop("stream_options", None)
        async with httpx.AsyncClient(timeout=limits) as client:
            try:
                await post(client, "prefill", prefill, path, first)
                if not body.get("stream"):
                    resp = await post(client, "decode", decode, path, body)
                    return Response(resp.content, media_type="application/json")
            except InstanceError as err:
                return _error(err.status, err.message)

        async def relay():
            async with httpx.AsyncClient(timeout=limits) as stream_client:
                try:
                    async with stream_client.stream("POST", decode + path, json=body) as resp:
                        async for chunk in resp.aiter_bytes():
                            yield chunk
                except httpx.HTTPError as err:
                    msg = {"error": {"message": f"decode instance {decode} failed mid-stream "
                                                f"({type(err).__name__}: {err})"}}
                    yield f"data: {json.dumps(msg)}\n\n".encode()

        return StreamingResponse(relay(), media_type="text/event-stream")

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        return await route(request, "/v1/completions")

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        return await route(request, "/v1/chat/completions")

    @app.get("/v1/models")
    async def models() -> Response:
        """The decode instance's model list (both instances serve the same model)."""
        async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, connect=connect_timeout)) as c:
            try:
                r = await c.get(decode + "/v1/models")
            except httpx.HTTPError as err:
                return _error(502, f"decode instance {decode} unreachable "
                                   f"({type(err).__name__}: {err})")
        return Response(r.content, status_code=r.status_code, media_type="application/json")

    @app.get("/health")
    async def health() -> Response:
        async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, connect=connect_timeout)) as c:
            for role, url in (("prefill", prefill), ("decode", decode)):
                try:
                    r = await c.get(url + "/health")
                except httpx.HTTPError as err:
                    return _error(503, f"{role} instance {url} unreachable "
                                       f"({type(err).__name__}: {err})")
                if r.status_code != 200:
                    return _error(503, f"{role} instance {url} unhealthy ({r.status_code})")
        return Response(status_code=200)

    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--prefill", required=True, help="prefill instance base URL")
    parser.add_argument("--decode", required=True, help="decode instance base URL")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds an instance may take to answer")
    parser.add_argument("--connect-timeout", type=float, default=5.0,
                        help="seconds an instance may take to accept the connection")
    args = parser.parse_args(argv)
    app = build_app(args.prefill.rstrip("/"), args.decode.rstrip("/"), args.timeout,
                    args.connect_timeout)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
