"""``memkit eval locomo --qa`` end to end against a scripted OpenAI-compatible server on
127.0.0.1 (bench/stub_llm.py), on two small conversations written here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from bench.stub_llm import StubLLM
from memkit import LLMError, Memory
from memkit._eval.answers import bleu1, f1, judge_label
from memkit._eval.locomo_qa import LocomoQA, QASettings, RunLog, format_qa_report
from memkit.cli._eval import eval_app
from memkit.llms.litellm import LiteLLM
from memkit.testing import HashEmbedder

ROOT = Path(__file__).resolve().parents[1]


def _sample(sample_id: str, hobby: str, pet: str) -> dict[str, Any]:
    sessions = {
        1: [("Ann", f"I started a {hobby} class last week."), ("Ben", "Nice, how is it going?"),
            ("Ann", "The teacher is patient with beginners."), ("Ben", f"My {pet} is called Momo.")],
        2: [("Ann", "I moved to Lisbon in June."), ("Ben", f"Momo the {pet} loves the garden."),
            ("Ann", "Lisbon is sunny and calm."), ("Ben", "I should visit you there.")],
    }
    conversation: dict[str, Any] = {"speaker_a": "Ann", "speaker_b": "Ben"}
    for n, turns in sessions.items():
        conversation[f"session_{n}_date_time"] = f"1:56 pm on {n} May, 2023"
        conversation[f"session_{n}"] = [{"speaker": s, "text": t, "dia_id": f"D{n}:{i + 1}"}
                                        for i, (s, t) in enumerate(turns)]
    return {
        "sample_id": sample_id, "conversation": conversation,
        "qa": [
            {"question": "Which class did Ann start?", "answer": f"{hobby} class",
             "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Ann say she moved?", "answer": "Lisbon", "evidence": ["D2:1"],
             "category": 1},
            {"question": f"What is Ben's {pet} called?", "answer": "Momo", "evidence": ["D1:4"],
             "category": 2},
            {"question": "What did Ann say about her boss?", "category": 5,
             "adversarial_answer": "nothing"},
            {"question": "What is Ann's favourite colour?", "answer": "teal", "evidence": [],
             "category": 3},
        ],
    }


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_sample("a", "pottery", "cat"), _sample("b", "salsa", "dog")]))
    return path


@pytest.fixture
def stub() -> Iterator[StubLLM]:
    with StubLLM() as server:
        yield server


def test_f1_and_bleu1_score_words_as_the_paper_does() -> None:
    assert f1("Lisbon", "Lisbon.") == 1.0
    assert f1("She moved to Lisbon", "Lisbon, Portugal") == pytest.approx(2 * 0.25 * 0.5 / 0.75)
    assert f1("the the Lisbon", "Lisbon") == pytest.approx(2 / 3)  # words as a set
    assert f1("", "Lisbon") == 0.0 and bleu1("", "Lisbon") == 0.0
    assert bleu1("Lisbon", "Lisbon") == 1.0
    assert bleu1("in Lisbon", "Lisbon") == pytest.approx(0.5)
    assert bleu1("Lisbon", "Lisbon in Portugal") == pytest.approx(2.718281828 ** (1 - 3))
    assert bleu1("Porto", "Lisbon") == 0.0


def test_the_judge_label_is_read_from_json_or_from_one_clear_word() -> None:
    assert judge_label('{"label": "CORRECT"}') is True
    assert judge_label('{"label": "wrong"}') is False
    assert judge_label("The answer names the same city. CORRECT") is True
    assert judge_label("CORRECT or WRONG, hard to say") is None
    assert judge_label("no idea") is None


def _llm(stub: StubLLM) -> LiteLLM:
    return LiteLLM("openai/stub-model", api_base=stub.base_url, api_key="sk-stub", retries=0)


def _run(data: Path, out: Path, stub: StubLLM, limit: int | None = None) -> dict[str, Any]:
    run = LocomoQA(data, out, QASettings(llm="openai/stub-model"), limit=limit)
    memory = Memory.from_config({"vector_store": {"provider": "sqlite", "config": {
        "path": str(run.memory_path)}}}, llm=_llm(stub), embedder=HashEmbedder())
    try:
        return run.run(memory, _llm(stub), _llm(stub))
    finally:
        memory.close()


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMKIT_")}
    return env | {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))}


def _cli() -> typer.Typer:
    root = typer.Typer()
    root.callback()(lambda: None)
    root.add_typer(eval_app, name="eval")
    return root


@pytest.mark.slow  # subprocesses: the full tier runs it
def test_the_command_estimates_then_adds_answers_and_judges(
    data: Path, tmp_path: Path, stub: StubLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = {"provider": "litellm", "config": {"api_base": stub.base_url, "api_key": "sk-stub",
                                             "retries": 0}}
    config = tmp_path / "memkit.json"
    config.write_text(json.dumps({"llm": llm}))
    out = tmp_path / "run"
    args = ["eval", "locomo", "--qa", "--llm", "openai/stub-model", "--data", str(data),
            "--out", str(out), "--limit", "6", "--embedder", "hash"]

    root = _cli()
    monkeypatch.setenv("MEMKIT_CONFIG", json.dumps({"llm": llm}))
    estimate = json.loads(CliRunner().invoke(root, [*args, "--estimate", "--json"]).stdout)
    assert (estimate["adds"], estimate["answers"], estimate["verdicts"]) == (8, 6, 6)
    assert estimate["llm_calls"] == 2 * 8 + 6 + 6 and estimate["prompt_tokens"] > 0
    refused = CliRunner().invoke(root, args)  # no terminal to ask on, no --yes
    assert refused.exit_code == 1 and "--yes" in refused.stderr
    assert stub.stats.calls == {}  # nothing spent

    done = subprocess.run(
        [sys.executable, "-m", "memkit.cli", "--config", str(config), *args, "--yes", "--json"],
        capture_output=True, text=True, env=_env() | {"HOME": str(tmp_path / "home")},
        timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["conversations"] == ["a", "b"]  # the first 6 judged questions span both
    assert {c: v["questions"] for c, v in report["categories"].items()} == {
        "4": 2, "1": 2, "2": 1, "3": 1}
    # The stub answers with the memory sharing most words with the question (one memory
    # each: the answers do not hang on ties); the colour nobody mentioned is not found.
    assert [v["judge"] for v in report["categories"].values()] == [100.0, 100.0, 100.0, 0.0]
    assert report["overall"]["questions"] == 6 and 0 < report["overall"]["f1"] < 100
    calls, prompt = stub.stats.calls, stub.stats.prompt_tokens
    # the first add of a scope has nothing to decide against: one call
    assert calls == {"extraction": 8, "decision": 6, "answer": 6, "judge": 6}
    assert report["add"]["prompt_tokens"] == prompt["extraction"] + prompt["decision"]
    assert report["answer"]["prompt_tokens"] == prompt["answer"]
    assert report["judge"]["prompt_tokens"] == prompt["judge"]
    assert report["add"]["per_step"]["llm_calls"] == 14 / 8
    assert report["memory"]["memories"] == report["add"]["events"]["ADD"] == 16
    assert json.loads((out / "report.json").read_text()) == report
    assert "overall" in format_qa_report(report)
    assert (out / "memory.db").is_file() and not (tmp_path / "home").exists()


def test_the_command_adds_in_one_call_when_asked(
    data: Path, tmp_path: Path, stub: StubLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = {"provider": "litellm", "config": {"api_base": stub.base_url, "api_key": "sk-stub",
                                             "retries": 0}}
    monkeypatch.setenv("MEMKIT_CONFIG", json.dumps({"llm": llm}))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    args = ["eval", "locomo", "--qa", "--llm", "openai/stub-model", "--data", str(data),
            "--out", str(tmp_path / "run"), "--limit", "6", "--embedder", "hash"]
    one_call = [*args, "--add-mode", "one_call"]
    estimate = json.loads(CliRunner().invoke(_cli(), [*one_call, "--estimate", "--json"]).stdout)
    assert estimate["llm_calls"] == 8 + 6 + 6

    done = CliRunner().invoke(_cli(), [*one_call, "--yes", "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["settings"]["add_mode"] == "one_call"
    assert stub.stats.calls == {"add": 8, "answer": 6, "judge": 6}
    assert report["add"]["per_step"]["llm_calls"] == 1
    # the stub decides alike in both modes: the same 16 memories as the two-call run above
    assert report["memory"]["memories"] == report["add"]["events"]["ADD"] == 16
    assert [v["judge"] for v in report["categories"].values()] == [100.0, 100.0, 100.0, 0.0]
    assert "in one call" in format_qa_report(report)
    refused = CliRunner().invoke(_cli(), [*args, "--yes"])  # the same folder in two calls
    assert refused.exit_code == 1 and "add_mode differ" in refused.stderr


def test_a_run_stopped_by_a_failing_provider_continues_where_it_was(
    data: Path, tmp_path: Path, stub: StubLLM
) -> None:
    whole = _run(data, tmp_path / "whole", stub)
    calls = sum(stub.stats.calls.values())
    stub.reset()

    chat = stub.chat
    budget = {"left": 10}  # the 11th call, an extraction, fails: in the middle of the adds

    def failing(body: dict[str, Any]) -> dict[str, Any]:
        budget["left"] -= 1
        if budget["left"] < 0:
            raise RuntimeError("provider down")
        return chat(body)

    stub.chat = failing  # type: ignore[method-assign]
    with pytest.raises(LLMError):
        _run(data, tmp_path / "stopped", stub)
    stub.chat = chat  # type: ignore[method-assign]
    resumed = _run(data, tmp_path / "stopped", stub)
    # No finished step was done again: both halves' calls add up to one whole run.
    assert sum(stub.stats.calls.values()) == calls
    assert resumed["categories"] == whole["categories"]
    assert resumed["memory"]["memories"] == whole["memory"]["memories"]


def test_an_add_whose_log_line_was_cut_off_is_not_made_twice(
    data: Path, tmp_path: Path, stub: StubLLM
) -> None:
    out = tmp_path / "run"
    first = _run(data, out, stub, limit=1)
    log = out / "log.jsonl"
    lines = log.read_text().splitlines()
    last_add = max(i for i, line in enumerate(lines) if json.loads(line)["step"] == "add")
    kept = lines[:last_add] + lines[last_add + 1:]
    log.write_text("\n".join(kept) + '\n{"step": "answ')  # and a line cut mid-write
    calls = dict(stub.stats.calls)
    second = _run(data, out, stub, limit=1)
    assert stub.stats.calls == calls  # the add was found in the store, not redone
    assert second["memory"] == first["memory"] and second["add"]["count"] == first["add"]["count"]
    assert RunLog(log).get("add", json.loads(lines[last_add])["key"])["recovered"] is True


def test_a_folder_holding_another_run_is_refused(data: Path, tmp_path: Path) -> None:
    LocomoQA(data, tmp_path, QASettings(llm="openai/a"))
    LocomoQA(data, tmp_path, QASettings(llm="openai/a"), limit=2)  # a sample of the same run
    with pytest.raises(ValueError, match="judge, llm differ"):
        LocomoQA(data, tmp_path, QASettings(llm="openai/b"))
    with pytest.raises(ValueError, match="top_k differ"):
        LocomoQA(data, tmp_path, QASettings(llm="openai/a", top_k=5))


def test_a_run_can_search_with_the_reranker(data: Path, tmp_path: Path, stub: StubLLM) -> None:
    from collections.abc import Sequence

    from memkit.rerankers.base import Ranking, Reranker

    class Counting(Reranker):
        calls = 0

        def rerank(self, query: str, documents: Sequence[str]) -> Ranking:
            Counting.calls += 1
            return [(i, 1.0) for i in range(len(documents))]

        async def arerank(self, query: str, documents: Sequence[str]) -> Ranking:
            return self.rerank(query, documents)

    run = LocomoQA(data, tmp_path, QASettings(llm="openai/stub-model", rerank=True), limit=2)
    memory = Memory.from_config({"vector_store": {"provider": "sqlite", "config": {
        "path": str(run.memory_path)}}}, llm=_llm(stub), embedder=HashEmbedder(),
        reranker=Counting())
    with memory:
        report = run.run(memory, _llm(stub), _llm(stub))
    assert Counting.calls == 2 and report["settings"]["rerank"] is True
