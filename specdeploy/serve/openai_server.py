"""The OpenAI-compatible endpoint's server: its own thread and event loop beside tritonserver
(openai_frontend.py describes the endpoint, openai_routes.py answers its requests)."""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web

from specdeploy.serve.openai_frontend import Served
from specdeploy.serve.openai_routes import routes


class Frontend:
    """The endpoint running in a thread of its own (its own event loop), stopped with `stop()`."""

    def __init__(self, served: Served, host: str, port: int) -> None:
        self.served, self.host, self.port = served, host, port
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="specdeploy-openai", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self, timeout: float = 30.0) -> Frontend:
        self.thread.start()
        self.ready.wait(timeout)
        if self.error is not None:
            raise self.error
        return self

    def stop(self) -> None:
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        # a client that leaves cancels its handler, and so its Triton call (aiohttp 3.9.0's handler_cancellation, #7056)
        runner = web.AppRunner(routes(self.served), handler_cancellation=True)
        try:
            self.loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, self.host, self.port)
            self.loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # port 0: the one bound
        except BaseException as exc:  # noqa: BLE001 - handed to start()
            self.error = exc
            self.ready.set()
            return
        self.ready.set()
        try:
            self.loop.run_forever()
        finally:
            self.loop.run_until_complete(runner.cleanup())
            self.loop.close()
