"""Which keyword arguments litellm takes, so a misspelled one is an error and not silently sent.

A typo such as ``modle`` would otherwise reach ``litellm.completion`` as an unknown extra,
the real ``model`` would stay the default (gpt-4o-mini) and the user's conversations would
go to OpenAI instead of their own model. Common names are checked against the set below
without importing litellm; anything else is looked up in the installed litellm's own lists
before it is refused.
"""

from __future__ import annotations

from collections.abc import Iterable

from memkit._errors import ConfigError
from memkit._hints import did_you_mean

#: litellm.completion's parameters and the keyword arguments it reads (litellm 1.106)
COMPLETION_PARAMS = frozenset({
    "additional_drop_params", "allowed_openai_params", "api_base", "api_key", "api_version", "audio",
    "aws_region_name", "azure_ad_token", "azure_ad_token_provider", "base_model", "base_url", "cache",
    "client", "custom_llm_provider", "default_headers", "deployment_id", "drop_params", "extra_body",
    "extra_headers", "fallbacks", "frequency_penalty", "function_call", "functions", "headers",
    "input_cost_per_token", "logit_bias", "logprobs", "max_completion_tokens", "max_retries", "max_tokens",
    "metadata", "mock_delay", "mock_response", "mock_timeout", "mock_tool_calls", "modalities", "n",
    "num_retries", "organization", "output_cost_per_token", "parallel_tool_calls", "prediction",
    "presence_penalty", "reasoning_effort", "request_timeout", "response_format", "seed", "service_tier",
    "ssl_verify", "stop", "store", "stream", "stream_options", "temperature", "thinking", "timeout",
    "tool_choice", "tools", "top_k", "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
    # provider options litellm forwards: Ollama, Vertex AI, Bedrock, watsonx
    "keep_alive", "num_ctx", "format", "project", "region_name", "token", "vertex_project",
    "vertex_location", "vertex_credentials",
})
#: provider credential families litellm reads by prefix (aws_access_key_id, vertex_ai_project, ...)
PROVIDER_PREFIXES = ("aws_", "vertex_", "azure_", "watsonx_", "gigachat_")


def check_completion_options(model: str, options: Iterable[str], own: Iterable[str]) -> None:
    """Raise ConfigError for an option litellm does not take; ``own``: the wrapper's own names."""
    own = frozenset(own)
    unknown = [key for key in options
               if key not in COMPLETION_PARAMS and key not in own and not key.startswith(PROVIDER_PREFIXES)]
    if not unknown:
        return
    installed = _installed_params()
    for key in unknown:
        if key not in installed:
            valid = sorted(own | COMPLETION_PARAMS)
            hint = did_you_mean(key, valid) or "."
            raise ConfigError(
                f"unknown key {key!r} in llm.config (model {model!r}){hint} It is neither an option of "
                f"memkit's LiteLLM ({', '.join(sorted(own))}) nor a parameter litellm.completion takes; "
                "memkit never forwards a setting it does not know.")


def _installed_params() -> frozenset[str]:
    """Every name the installed litellm lists as a completion or litellm parameter."""
    import inspect

    from memkit._imports import import_litellm

    litellm = import_litellm()
    names = {name for name in inspect.signature(litellm.completion).parameters if name != "kwargs"}
    names.update(getattr(litellm, "OPENAI_CHAT_COMPLETION_PARAMS", ()))
    try:
        from litellm.types.utils import all_litellm_params
        names.update(all_litellm_params)
    except ImportError:  # an older litellm
        pass
    return frozenset(names)
