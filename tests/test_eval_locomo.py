"""The LoCoMo evaluation on a small conversation written here (the real data is never copied)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memkit import Memory
from memkit._eval.crossval import GRID
from memkit._eval.locomo import entries, format_report, ingest, run_locomo
from memkit.testing import HashEmbedder, ScriptedLLM


def _sample(sample_id: str, topic: str) -> dict[str, Any]:
    turns = [
        ("Ann", f"I went to a {topic} class yesterday."),
        ("Ben", "That sounds fun, how was it?"),
        ("Ann", "Great, the teacher was patient."),
        ("Ben", "My cat knocked over a vase this morning."),
    ]
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": s, "text": t, "dia_id": f"D1:{i + 1}"}
                          for i, (s, t) in enumerate(turns)],
        },
        "qa": [
            {"question": f"What class did Ann take in {topic}?", "evidence": ["D1:1"],
             "category": 4},
            {"question": "What did Ben's cat break?", "evidence": ["D1:4"], "category": 4},
            {"question": "Is there anything unanswerable?", "category": 5},
        ],
    }


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_sample("a", "pottery"), _sample("b", "salsa")]))
    return path


def _memory() -> Memory:
    return Memory({"vector_store": {"provider": "memory"}}, llm=ScriptedLLM(),
                  embedder=HashEmbedder())


def test_keyword_search_finds_the_evidence_turn_first(data: Path) -> None:
    report = run_locomo(data, search="keyword", memory_factory=_memory)
    run = report["runs"]["keyword"]
    assert report["memories"] == 8
    assert run["categories"]["4"]["recall"]["1"] == 100.0
    assert run["questions_without_evidence"] == 2
    assert set(run["conversations"]) == {"a", "b"}
    assert run["paper_overall"]["recall"]["1"] == 100.0


def test_cross_validation_chooses_per_held_out_conversation(data: Path) -> None:
    report = run_locomo(data, search=["hybrid", "vector"], memory_factory=_memory,
                        cross_validation=True)
    tuned = report["cross_validation"]
    assert [f["held_out"] for f in tuned["folds"]] == ["a", "b"]
    assert {f["chosen"] for f in tuned["folds"]} <= {s.label for s in GRID}
    assert set(tuned["settings"]) == {s.label for s in GRID}
    assert tuned["held_out_min"] <= tuned["held_out_mean"] <= tuned["held_out_max"]
    text = format_report(report)
    assert "held-out R@10" in text and "ms a search" in text


def test_turn_by_turn_and_dialogue_store_the_same_memories(data: Path) -> None:
    dialogue = run_locomo(data, search="keyword", memory_factory=_memory)
    turns = run_locomo(data, search="keyword", memory_factory=_memory, dialogue=False)
    assert dialogue["memories"] == turns["memories"]
    assert dialogue["runs"]["keyword"]["paper_overall"] == turns["runs"]["keyword"]["paper_overall"]


def test_the_command_evaluates_the_embedder_it_is_given_in_a_throwaway_store(
    data: Path, tmp_path: Path
) -> None:
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMKIT_")}
    env |= {"HOME": str(tmp_path / "home"), "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-m", "memkit.cli", "eval", "locomo", "--data", str(data),
         "--embedder", "hash", "--search", "vector", "--json"],
        capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["embedder"] == HashEmbedder().model_name
    assert report["runs"]["vector"]["questions"] == 6
    assert not (tmp_path / "home").exists()  # nothing written to the user's memory


def test_observations_are_stored_in_turn_order_with_the_speaker_they_are_about(
    tmp_path: Path,
) -> None:
    sample = _sample("a", "pottery")
    sample["observation"] = {"session_1_observation": {
        "Ann": [["Ann took a pottery class.", "D1:1"], ["Ann liked the teacher.", "D1:3"]],
        "Ben": [["Ben's cat broke a vase.", "D1:4"], ["Ben asked about the class.", "D1:2"]],
    }}
    stored = entries(sample, "observations")
    assert [(e.text, e.speaker) for e in stored] == [
        ("Ann took a pottery class.", "Ann"), ("Ben asked about the class.", "Ben"),
        ("Ann liked the teacher.", "Ann"), ("Ben's cat broke a vase.", "Ben")]
    memory = _memory()
    ingest(memory, sample, "observations", {})
    by_text = {i.memory: i for i in memory.get_all(user_id="a").results}
    # two speakers' observations form a dialogue: each names the one before it
    assert by_text["Ben asked about the class."].metadata["previous_turn"] == \
        by_text["Ann took a pottery class."].id
    path = tmp_path / "observations.json"
    path.write_text(json.dumps([sample]))
    report = run_locomo(path, mode="observations", search="keyword", memory_factory=_memory)
    assert report["memories"] == 4
    assert report["runs"]["keyword"]["categories"]["4"]["recall"]["1"] == 100.0
