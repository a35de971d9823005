"""What a newcomer meets in the first hour: mistakes name their fix, results read in one line."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

import memkit
from memkit import ConfigError, LLMError, Memory
from memkit.testing import HashEmbedder, ScriptedLLM


def _memory(config: dict[str, object], **components: object) -> Memory:
    return Memory({"vector_store": "memory", **config}, embedder=HashEmbedder(), **components)  # type: ignore[arg-type]


def test_a_misspelled_llm_key_is_refused_not_forwarded() -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'modle' in llm\.config.*did you mean 'model'\?"):
        _memory({"llm": {"config": {"modle": "ollama/llama3.1", "api_base": "http://127.0.0.1:9"}}})
    # real litellm parameters and provider options pass
    _memory({"llm": {"config": {"model": "ollama/llama3.1", "top_p": 0.9, "keep_alive": "5m",
                                "extra_headers": {"x": "y"}, "vertex_project": "p"}}}).close()


@pytest.mark.parametrize(("config", "message"), [
    ({"vectorstore": {"provider": "memory"}},
     r"unknown key 'vectorstore' in the config; did you mean 'vector_store'\?"),
    ({"search": {"mdoe": "vector"}}, r"unknown key 'mdoe' in search; did you mean 'mode'\? valid keys: .*mode"),
    ({"vector_store": {"provider": "sqlite", "config": {"db_path": "x.db"}}},
     r"unknown key 'db_path' in vector_store\.config \(sqlite\); did you mean 'path'\? valid keys: .*path"),
    ({"llm": "gpt-4o-mini"}, r"A model name goes in llm\.config\.model"),
    ({"vector_store": "sqllite"}, r"did you mean 'sqlite'\?"),
])
def test_config_mistakes_name_the_valid_key(config: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        components = {} if "llm" in config else {"llm": ScriptedLLM()}
        Memory({"vector_store": "memory", **config}, embedder=HashEmbedder(), **components)  # type: ignore[arg-type]


@pytest.mark.parametrize("shell", [Memory, memkit.AsyncMemory])
def test_an_unknown_component_argument_names_the_class_the_user_called(shell: type) -> None:
    with pytest.raises(TypeError, match=rf"^{shell.__name__}\(\) got an unexpected keyword argument "
                                        r"'vectorstore'; did you mean 'vector_store'\?"):
        shell(vectorstore=object())


def test_missing_key_error_names_the_providers_own_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    # with the guard off, litellm itself fails on the missing key before any request
    with _memory({"llm": {"config": {"model": "anthropic/claude-3-5-haiku-latest", "retries": 0}}}) as m, \
            pytest.raises(LLMError) as caught, memkit.testing.block_real_requests(False):
        m.add("I like tea", user_id="alice")
    message = str(caught.value)
    assert "ANTHROPIC_API_KEY" in message and "OPENAI_API_KEY" not in message
    assert "infer=False" in message
    assert type(caught.value).__module__ == "memkit" and repr(type(caught.value)) == "<class 'memkit.LLMError'>"
    printed = "".join(traceback.format_exception(caught.value))
    assert "During handling" not in printed and "direct cause" not in printed
    assert len(printed.splitlines()) < 40


def test_a_refused_connection_names_the_url_fast() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again at once: nothing listens there
    url = f"http://127.0.0.1:{port}"
    with _memory({"llm": {"config": {"model": "openai/stub", "api_base": url, "api_key": "k"}}}) as m, \
            pytest.raises(LLMError) as caught:
        m.add("I like tea", user_id="alice")
    assert f"nothing accepted the connection at {url}" in str(caught.value)
    assert "Is the server running?" in str(caught.value)


@pytest.mark.slow  # subprocesses: the full tier runs it
def test_cli_says_the_flag_not_the_python_argument(tmp_path: Path) -> None:
    from tests.cli.test_commands import memkit as run_memkit

    done = run_memkit(tmp_path / "m.db", "--llm-model", "anthropic/claude-3-5-haiku-latest",
                      "add", "I like tea", "--user-id", "a", check=False)
    assert done.returncode != 0
    assert "--no-infer" in done.stderr and "infer=False" not in done.stderr
    assert "ANTHROPIC_API_KEY" in done.stderr


def test_reprs_fit_one_terminal_line() -> None:
    llm = ScriptedLLM([{"facts": ["User prefers dark mode in every editor, terminal and browser devtools " * 3]}])
    with _memory({}, llm=llm) as m:
        added = m.add("I prefer dark mode", user_id="alice", metadata={"source": "chat"})
        found = m.search("dark mode", user_id="alice")
        stats = m.stats(user_id="alice")
        history = m.history(added.results[0].id)
    for value in (added, added.results[0], found, found.results[0], stats, history[0]):
        text = repr(value)
        assert "\n" not in text and len(text) <= 100 and "datetime.datetime" not in text, text
    assert repr(found.results[0]).startswith(f"<MemoryItem {found.results[0].id[:8]} user=alice 'User prefers")
    assert "score=" in repr(found.results[0])
    assert repr(stats).startswith("<MemoryStats 1 memory")
    assert str(added).splitlines()[0] == "1 event, 1 LLM call"
    assert "source=chat" in str(found) and "source=chat" in found._repr_html_()
    assert "source=chat" in added._repr_html_()


@pytest.mark.slow  # subprocesses: the full tier runs it
def test_py_typed_ships_so_mypy_checks_user_code(tmp_path: Path) -> None:
    assert (Path(memkit.__file__).parent / "py.typed").is_file()
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from memkit import Memory\n"
        "from memkit.testing import HashEmbedder, ScriptedLLM\n\n"
        "with Memory({'vector_store': 'memory'}, llm=ScriptedLLM(), embedder=HashEmbedder()) as m:\n"
        "    hits = m.search('tea', user_id='alice')\n"
        "    score: float | None = hits.results[0].score if hits.results else None\n")
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(snippet)],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.slow  # subprocesses: the full tier runs it
def test_mcp_in_a_terminal_says_it_waits_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    import os
    import pty
    import select
    import time

    from tests.cli.test_commands import _env

    pid, fd = pty.fork()
    if pid == 0:  # the child: memkit mcp with the pty as its terminal
        env = _env()
        os.execve(sys.executable, [sys.executable, "-m", "memkit.cli", "--store", "sqlite", "--path",
                                   str(tmp_path / "m.db"), "--embedder", "hash", "mcp"], env)
    poller = select.poll()  # not select(): a long test run may hold more than 1,024 descriptors
    poller.register(fd, select.POLLIN)
    output = b""
    deadline = time.monotonic() + 120  # bounds, not speed targets: a loaded machine starts slowly
    while b"Ctrl-C" not in output and time.monotonic() < deadline:
        if poller.poll(1000):
            try:
                output += os.read(fd, 4096)
            except OSError:
                break
    assert b"waiting for an MCP client on stdio" in output, output
    os.write(fd, b"\x03")  # Ctrl-C, through the terminal's line discipline
    deadline = time.monotonic() + 90
    status = None
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if poller.poll(200):
            with contextlib.suppress(OSError):
                output += os.read(fd, 4096)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail(f"memkit mcp ignored Ctrl-C: {output!r}")
    assert status is not None and os.WIFEXITED(status), status
    assert b"INFO" not in output and b"Traceback" not in output, output
    os.close(fd)


def test_verbose_flag_turns_on_info_logging_for_any_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    from typer.testing import CliRunner

    from memkit.cli import build_app

    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", logging.WARNING)
    monkeypatch.delenv("MEMKIT_CONFIG", raising=False)
    args = ["--store", "memory", "--embedder", "hash", "list", "-u", "alice"]
    assert CliRunner().invoke(build_app(), args).exit_code == 0
    assert root.level == logging.WARNING  # quiet unless asked
    assert CliRunner().invoke(build_app(), ["-v", *args]).exit_code == 0
    assert root.level == logging.INFO and root.handlers
