"""The embedded Redis of ``up``: closed to clients without its password, restartable in place."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import redis

from service.store.embedded_redis import EmbeddedRedis
from service.store.redis_client import connect

pytestmark = pytest.mark.slow


def test_only_clients_with_the_password_get_in_and_a_restart_keeps_the_data(
    tmp_path: Path,
) -> None:
    server = EmbeddedRedis(tmp_path / "redis", start_timeout_s=10)
    process = server.start()
    try:
        anonymous = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=5)
        with pytest.raises(redis.AuthenticationError):
            anonymous.ping()
        with pytest.raises(redis.AuthenticationError):
            connect(f"redis://:wrong@127.0.0.1:{server.port}/0").ping()
        client = connect(server.url)
        client.set("kept", b"yes")
        assert server.password not in Path(f"/proc/{process.pid}/cmdline").read_text()
        assert stat.S_IMODE(server.config_path.stat().st_mode) == 0o600
        assert stat.S_IMODE(server.directory.stat().st_mode) == 0o700
        assert server.password in server.config_path.read_text()

        url = server.url
        process.kill()
        process.wait()
        process = server.start()  # after a crash: same port, password and files
        assert server.url == url
        assert connect(server.url).get("kept") == b"yes"
        with pytest.raises(redis.AuthenticationError):
            anonymous.ping()
    finally:
        process.kill()
        process.wait()
