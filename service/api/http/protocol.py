"""uvicorn's HTTP protocol with its one answer of its own, the 400 for a request it cannot
parse, in the API's JSON (``{"detail": ...}``, as every other error) instead of plain text."""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from service.api.http.compact_json import dumps

# uvicorn's --http, as an import string (a worker process loads it by name).
HTTP = "service.api.http.protocol:JSONErrorsProtocol"


class JSONErrorsProtocol(HttpToolsProtocol):
    """httptools' protocol answering a malformed request with an ErrorOut body."""

    def send_400_response(self, msg: str) -> None:
        body = dumps({"detail": f"malformed HTTP request: {msg}"})
        content = [STATUS_LINE[400]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
                b"connection: close\r\n",
                b"\r\n",
                body,
            ]
        )
        self.transport.write(b"".join(content))
        self.transport.close()
