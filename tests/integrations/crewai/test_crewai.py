"""CrewAI: ``MemkitMemory`` as CrewAI's ``Memory`` (a crew runs on it and its agent is
given what an earlier kickoff saved), and memkit's tools as CrewAI tools.

CrewAI requires ``mcp<2`` and ``pydantic<2.13``, so it runs in a virtualenv of its own
(``environment.py``, built from PyPI in the background by ``scripts/test.sh``); the
checks run there in one process (``scenarios.py``) and are asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests._venvs import python_for_tests
from tests.integrations._examples import run_example
from tests.integrations.crewai.environment import CREWAI, ROOT, build

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def crewai_python() -> Path:
    return python_for_tests(build, CREWAI)


@pytest.fixture(scope="module")
def results(crewai_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("crewai-home")  # CrewAI writes its own files under HOME
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "PYTHONPATH")}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT))
    done = subprocess.run([str(crewai_python), "-m", "tests.integrations.crewai.scenarios"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def test_example_crew_remembers_a_kickoff_and_is_given_it_in_the_next(crewai_python: Path,
                                                                        tmp_path: Path) -> None:
    out = run_example("crewai_agent.py", tmp_path, python=crewai_python, deprecations_fail=False)
    assert "memkit holds: ['Result: Alice is vegetarian and allergic to peanuts.']" in out
    assert "[context] ['Relevant memories:', \"- (score=" in out
    assert "Task: Alice says: I'm vegetarian and allergic to peanuts. Note her diet.\"]" in out


def test_it_is_crewais_memory_for_a_crew_and_an_agent(results: dict[str, Any]) -> None:
    found = results["interface"]
    assert found["is_crewai_memory"] and found["crew_keeps_it"] and found["agent_keeps_it"]
    # CrewAI's own "Save to memory" / "Search memory" tools, on memkit
    assert found["crewai_tool_saved"].startswith("Saved to memory (scope=/")
    assert "- (score=" in found["crewai_tool_found"] and "Alice is vegetarian" in found["crewai_tool_found"]
    assert found["memkit_holds"] == ["Alice lives in Porto", "Alice is vegetarian"]
    assert "TypeError" not in found["async_refused"] and "memkit Memory" in found["async_refused"]
    assert found["read_only_saved"] == [None, []] and found["carol_holds"] == 0
    assert found["copy_keeps_crew_memory"]  # Crew.copy() (kickoff_for_each) keeps the crew's memory


def test_memkit_tools_are_crewai_tools_with_the_scope_fixed(results: dict[str, Any]) -> None:
    found = results["interface"]
    assert found["tools_are_crewai_tools"]
    assert "query" in found["tool_parameters"] and "user_id" not in found["tool_parameters"]
    assert found["added"] == "ADD" and found["searched"] == "Alice lives in Porto"
    assert found["wrong_call"].startswith("error: NotFoundError: ")  # bob's memory, from alice's tools
    assert results["async_tools"] == "Alice is vegetarian"  # an AsyncMemory, through BaseTool.arun


def test_crewai_scope_paths_categories_and_privacy_within_the_memkit_scope(results: dict[str, Any]) -> None:
    found = results["scopes"]
    assert found["newest"] == "The menu is due Friday"
    assert found["newest_scope"] == "/crew/kitchen/project"  # root_scope + MemoryScope view
    assert found["newest_metadata"]["owner"] == "chef" and "crewai_scope" not in found["newest_metadata"]
    assert found["scopes"] == ["/crew/kitchen/diet", "/crew/kitchen/home", "/crew/kitchen/project"]
    assert found["root_scopes"] == ["/crew", "/travel"]
    assert found["info"] == {"path": "/crew/kitchen/diet", "record_count": 2, "categories": ["food", "recipe"],
                             "child_scopes": ["/crew/kitchen/diet/recipes"]}
    assert found["categories"] == {"deadline": 1, "food": 2, "recipe": 1}
    assert found["tree"].splitlines()[0] == "/crew/kitchen (4 records)"
    assert "Alice travels in May" not in found["records"]  # outside the root scope
    assert found["recall_all"] == ["Alice cooks risotto", "Alice is vegetarian", "The menu is due Monday"]
    assert found["recall_diet"] == ["Alice cooks risotto", "Alice is vegetarian"]
    assert found["recall_recipe"] == ["Alice cooks risotto"]
    assert "Alice's door code is 1234" in found["recall_as_alice"]  # private: its source sees it
    assert "Alice's door code is 1234" in found["recall_private"]
    assert found["project_recall"] == ["The menu is due Monday"]


def test_crewai_record_operations_change_memkit(results: dict[str, Any]) -> None:
    found = results["scopes"]
    assert found["updated"] == ["The menu is due Monday", "/crew/kitchen/project", ["deadline"]]
    assert found["history"] == ["ADD", "UPDATE"]  # memkit keeps the old text
    assert found["forget_recipe"] == 1 and found["forget_older"] == 0 and found["forget_owner"] == 1
    assert found["forget_id_elsewhere"] == 0 and found["forget_id"] == 1 and found["forget_home"] == 1
    assert found["left"] == []
    assert found["after_reset"] == ["Alice travels in May"]  # reset() stays in the root scope
    assert found["bob"] == ["Bob likes jazz"]  # another memkit scope is never touched


def test_what_crewai_remembers_goes_through_memkits_pipeline(results: dict[str, Any]) -> None:
    found = results["pipeline"]
    assert found["extracted"] == ["Task: ... Result: ..."]  # memkit extracts when it adds
    assert found["same_id"] and found["moved"] == ["Lives in Lisbon", "/home"]
    assert found["history"] == ["ADD", "UPDATE"] and found["llm_calls"] == 3


def test_a_crew_saves_a_result_and_its_next_kickoff_recalls_it(results: dict[str, Any]) -> None:
    found = results["crew_run"]
    assert found["answers"] == ["Alice is vegetarian and allergic to peanuts.", "A vegetable curry without peanuts."]
    assert len(found["held"]) == 1 and found["held"][0].endswith("Result: Alice is vegetarian and allergic to peanuts.")
    first, second, after_tool = found["prompts"]
    assert "Relevant memories" not in first
    assert "Relevant memories:" in second and "allergic to peanuts" in second  # recalled before the task
    assert "search_memories" in found["tools_offered"][1]
    assert after_tool.count("allergic to peanuts") == 2  # and found again by memkit's tool
    assert found["held_after"] == 2


def test_the_crewai_code_of_the_docs_runs(results: dict[str, Any]) -> None:
    assert results["docs"] == 1
