"""The client session over plain HTTP (httpx) that NeMo Gym's sessions and ORS's
wire session build on (``rollouts.drivers.nemo_gym``, ``rollouts.drivers.ors``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rollouts.drivers.base import ClientSession, DriverError

OnResponse = Callable[[Any, str], None]
"""Called with every HTTP response of an HTTP session and what it answered
(``/step``...): the load test counts 5xx there (and refuses any non-200)."""


TIMEOUT = 300.0
"""Seconds an HTTP session waits for one answer."""


class HTTPSession(ClientSession):
    """A session over plain HTTP with httpx: its own client (its cookie jar holds
    NeMo Gym's session cookie) unless one is handed in (then it is left open)."""

    name: ClassVar[str] = ""
    """The framework, in error messages."""

    def __init__(
        self,
        url: str,
        http: Any = None,
        on_response: OnResponse | None = None,
        timeout: float = TIMEOUT,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self._own = http is None
        self.http = http
        self.on_response = on_response

    def _post(self, path: str, what: str = "", **kwargs: Any) -> Any:
        if self.http is None:
            import httpx

            self.http = httpx.Client(base_url=self.url, timeout=self.timeout)
        response = self.http.post(path, **kwargs)
        if self.on_response is not None:
            self.on_response(response, what or path)
        return response

    def _json(self, path: str, **kwargs: Any) -> Any:
        response = self._post(path, **kwargs)
        if response.status_code != 200:
            raise DriverError(
                f"{self.name} {path} answered {response.status_code}: {response.text[:500]}"
            )
        return response.json()

    def close(self) -> None:
        if self._own and self.http is not None:
            http, self.http = self.http, None
            http.close()
