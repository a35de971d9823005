"""``memkit reembed --model NAME``: every memory's vector by another embedding model."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memkit._errors import ConfigError
from memkit.cli._common import JsonOpt, fail, open_memory, with_hint

if TYPE_CHECKING:
    from memkit.embeddings.base import Embedder

LOCAL_MODEL = "all-MiniLM-L6-v2"
E5_MODEL = "multilingual-e5-small-q4"


def embedder_section(model: str, provider: str | None, dimensions: int | None) -> dict[str, Any]:
    """The config's ``embedder`` section for ``model``: the local MiniLM embedder for its
    name, else a litellm model string (``provider`` overrides the guess)."""
    if not model.strip():
        raise ConfigError("--model needs a model name, e.g. text-embedding-3-small")
    chosen = provider or {LOCAL_MODEL: "local", E5_MODEL: "e5"}.get(model, "litellm")
    if chosen == "e5":
        if model != E5_MODEL or dimensions not in (None, 384):
            raise ConfigError(f"the e5 embedder has one model, {E5_MODEL} (384 dimensions)")
        return {"provider": "e5", "config": {}}
    if chosen == "local":
        if model != LOCAL_MODEL or dimensions not in (None, 384):
            raise ConfigError(f"the local embedder has one model, {LOCAL_MODEL} (384 dimensions)")
        return {"provider": "local", "config": {}}
    if chosen == "litellm":
        extra = {} if dimensions is None else {"dimensions": dimensions}
        return {"provider": "litellm", "config": {"model": model, **extra}}
    if chosen == "hash":  # memkit.testing's embedder: offline scripts and tests
        return {"provider": "hash", "config": {"model_name": model, "dimension": dimensions or 256}}
    raise ConfigError(f"unknown embedder provider {chosen!r}; choose local, e5 or litellm")


def _embedder(section: dict[str, Any]) -> Embedder:
    options = section["config"]
    if section["provider"] == "local":
        from memkit.embeddings.local import LocalEmbedder

        return LocalEmbedder()
    if section["provider"] == "e5":
        from memkit.embeddings.e5 import E5Embedder

        return E5Embedder()
    if section["provider"] == "litellm":
        from memkit.embeddings.litellm import LiteLLMEmbedder

        return LiteLLMEmbedder(**options)
    from memkit.testing import HashEmbedder

    return HashEmbedder(**options)


def reembed(
    ctx: typer.Context,
    model: Annotated[str, typer.Option(
        "--model", "-m", help=f"The new embedding model: {LOCAL_MODEL} (local), {E5_MODEL} (e5) "
                              "or any litellm embedding model string, e.g. text-embedding-3-small.")],
    provider: Annotated[str | None, typer.Option(
        help="local, e5 or litellm (default: guessed from the model name).")] = None,
    dimensions: Annotated[int | None, typer.Option(
        min=1, help="Vector size, for models that take one (text-embedding-3-*).")] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Texts per embedding call.")] = 256,
    as_json: JsonOpt = False,
) -> None:
    """Re-embed every memory with another model, then switch the store to it.

    Searches keep working while the new vectors are built; the switch is one
    step. Afterwards set the printed embedder section in your config.
    """
    try:
        section = embedder_section(model, provider, dimensions)
        embedder = _embedder(section)
    except ConfigError as exc:
        fail(str(exc))
    except ImportError as exc:
        fail(with_hint(exc, section["provider"] if section["provider"] == "e5" else "local"))

    def progress(done: int, total: int) -> None:
        if not as_json:
            end = "\n" if done == total else ""
            print(f"\rre-embedded {done}/{total} memories", end=end, file=sys.stderr, flush=True)

    with open_memory(ctx) as memory:
        result = memory.reembed(embedder, batch_size=batch_size, on_progress=progress)
    if as_json:
        sys.stdout.write(json.dumps({**result.model_dump(mode="json"), "embedder": section},
                                    indent=2) + "\n")
        return
    print(f"{result.memories} memories re-embedded in {result.seconds:.1f} s: "
          f"{result.old_model} ({result.old_dimension}) -> {result.new_model} "
          f"({result.new_dimension})")
    print(f'now set the embedder in your config: "embedder": {json.dumps(section)}')
