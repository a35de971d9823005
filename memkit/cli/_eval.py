"""``memkit eval locomo``: retrieval recall, or with ``--qa`` answer accuracy, on LoCoMo."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from memkit import MemkitError
from memkit.cli._common import JsonOpt, emit, fail, settings_of
from memkit.cli._config import Settings, memory_config, read_config_file

if TYPE_CHECKING:
    from memkit import Memory
    from memkit._eval.locomo_qa import LocomoQA

eval_app = typer.Typer(no_args_is_help=True, help="Benchmarks: retrieval recall and answer accuracy.")

Advance = Callable[[str, int, int], None]


@contextmanager
def _progress(hidden: bool) -> Iterator[Advance]:
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), disable=hidden) as progress:
        tasks: dict[str, Any] = {}

        def advance(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total)
            progress.update(tasks[stage], completed=done, total=total)

        yield advance


@eval_app.command("locomo")
def eval_locomo(
    ctx: typer.Context,
    data: Annotated[Path | None, typer.Option(help="LoCoMo JSON file.")] = None,
    mode: Annotated[Literal["turns", "observations"], typer.Option(
        help="Store raw turns or the dataset's observations.")] = "turns",
    search_mode: Annotated[list[str] | None, typer.Option(
        "--search", help="hybrid, vector or keyword (repeat for several).")] = None,
    cross_validate: Annotated[bool, typer.Option(
        "--cross-validate", help="Also choose the hybrid weights leaving one conversation out.",
    )] = False,
    embedder: Annotated[str | None, typer.Option(
        "--embedder", help="Embedder provider: local (default) or e5 (memkit-ai[e5]).")] = None,
    qa: Annotated[bool, typer.Option(
        "--qa", help="Answer accuracy: add with inference, answer with --llm, judge.")] = False,
    llm: Annotated[str | None, typer.Option(
        "--llm", help="--qa: the litellm model that adds and answers.")] = None,
    judge: Annotated[str | None, typer.Option(
        "--judge", help="--qa: the litellm model that judges (default: --llm).")] = None,
    out: Annotated[Path | None, typer.Option(
        help="--qa: the run's folder (default ./locomo-qa); started again, it continues.")] = None,
    limit: Annotated[int | None, typer.Option(
        min=1, help="--qa: only the first N questions (and their conversations).")] = None,
    batch: Annotated[int | None, typer.Option(min=1, help="--qa: turns per add (default 2).")] = None,
    top_k: Annotated[int | None, typer.Option(
        "--top-k", min=1, help="--qa: memories given to the answer (default 30).")] = None,
    rerank: Annotated[bool, typer.Option(
        "--rerank", help="--qa: search with the configured reranker (config: reranker).")] = False,
    add_mode: Annotated[Literal["two_calls", "one_call"] | None, typer.Option(
        "--add-mode", help="--qa: how each add asks the LLM (default: the config's add_mode, "
        "else two_calls).")] = None,
    estimate: Annotated[bool, typer.Option(
        "--estimate", help="--qa: print what the run would cost, then stop.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="--qa: start without asking.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Retrieval recall on LoCoMo (ingest with infer=False, search every question), or with
    --qa the full pipeline's answers judged by an LLM (costs tokens; asks first)."""
    settings = settings_of(ctx)
    if embedder is not None:
        settings = replace(settings, embedder=embedder)
    qa_only = {"--llm": llm, "--judge": judge, "--out": out, "--limit": limit, "--batch": batch,
               "--top-k": top_k, "--rerank": rerank or None, "--add-mode": add_mode,
               "--estimate": estimate or None,
               "--yes": yes or None}
    if not qa:
        given = [name for name, value in qa_only.items() if value is not None]
        if given:
            fail(f"{', '.join(given)} only apply with --qa")
        _recall(settings, data, mode, search_mode or ["hybrid"], cross_validate, as_json)
        return
    if search_mode or cross_validate or mode != "turns":
        fail("--search, --cross-validate and --mode apply to the recall run, not to --qa")
    if not llm:
        fail("--qa needs --llm MODEL: the litellm model that adds and answers, e.g. gpt-4o-mini")
    from memkit._eval.locomo import default_data_path
    from memkit._eval.locomo_qa import LocomoQA, QASettings, format_estimate

    try:
        configured = memory_config(replace(settings, llm_model=llm).resolve())
        run = LocomoQA(data or default_data_path(), out or Path("locomo-qa"),
                       QASettings(llm=llm, judge=judge, batch=batch or 2, top_k=top_k or 30,
                                  rerank=rerank,
                                  add_mode=add_mode or configured.get("add_mode", "two_calls")),
                       limit=limit)
    except (MemkitError, OSError, ValueError) as exc:
        fail(str(exc))
    cost = run.estimate()
    if estimate:
        emit(cost, as_json, lambda: print(format_estimate(cost)))
        return
    sys.stderr.write(format_estimate(cost) + "\n")
    if not yes:
        if not sys.stdin.isatty():
            fail("the run spends tokens: pass --yes to start it without a terminal to ask on")
        typer.confirm("Start?", abort=True, err=True)
    _qa(settings, run, configured, as_json)


def _names_store(settings: Settings) -> bool:
    """Whether the flags or the --config file name a store; else an evaluation keeps its
    memories apart (never in the default store, nor in MEMKIT_CONFIG's)."""
    if settings.store or settings.path:
        return True
    return bool(settings.config) and "vector_store" in read_config_file(str(settings.config))


def _recall(settings: Settings, data: Path | None, mode: str, searches: list[str],
            cross_validate: bool, as_json: bool) -> None:
    from memkit import Memory
    from memkit._eval.locomo import format_report, run_locomo

    def factory() -> Memory:
        return Memory(memory_config(settings.resolve()))

    with _progress(as_json) as advance:
        try:
            custom = _names_store(settings)
            report = run_locomo(data, mode=mode, search=searches,  # type: ignore[arg-type]
                                memory_factory=factory if custom else None, progress=advance,
                                cross_validation=cross_validate,
                                embedder=settings.embedder or "local")
        except (MemkitError, OSError, ValueError, ImportError) as exc:
            fail(str(exc))
    emit(report, as_json, lambda: print(format_report(report)))


def _qa(settings: Settings, run: LocomoQA, config: dict[str, Any], as_json: bool) -> None:
    """Run the QA evaluation in the run's SQLite file (or the store the flags/config name),
    adding in the run's add mode."""
    from memkit import Memory, MemoryConfig
    from memkit._eval.locomo_qa import format_qa_report
    from memkit.llms.litellm import LiteLLM

    llm = run.settings.llm
    try:
        config = {**config, "add_mode": run.settings.add_mode}
        if not _names_store(settings):
            config["vector_store"] = {"provider": "sqlite",
                                      "config": {"path": str(run.memory_path)}}
        parsed = MemoryConfig.model_validate(config)
        if parsed.llm.provider != "litellm":
            fail(f"--qa answers through litellm; the configured llm provider is "
                 f"{parsed.llm.provider!r}")
        options = {k: v for k, v in parsed.llm.config.items() if k != "model"}
        answerer = LiteLLM(llm, **options)
        judge = LiteLLM(run.settings.judge_model, **options)
        memory = Memory(parsed)
    except (MemkitError, ImportError, ValueError) as exc:
        fail(str(exc))
    try:
        with _progress(as_json) as advance:
            report = run.run(memory, answerer, judge, progress=advance)
    except MemkitError as exc:
        fail(f"{type(exc).__name__}: {exc}\nwhat was done is kept in {run.out}; "
             "the same command continues from there")
    finally:
        memory.close()
    emit(report, as_json, lambda: print(format_qa_report(report)))
