"""Every LLM through litellm: OpenAI, Anthropic, Gemini, Ollama, Azure, any OpenAI-compatible server."""

from __future__ import annotations

from typing import Any

from memkit._errors import NO_LLM_FIX, LLMError
from memkit._guard import check_request
from memkit._imports import aimport_litellm, import_litellm
from memkit._models import Usage
from memkit._retry import async_retrying, provider_failure, retrying
from memkit.llms._params import check_completion_options
from memkit.llms.base import LLM, LLMRequest, LLMResponse

_FALLBACK = ("llm.config.api_key", f"{NO_LLM_FIX}, which needs no LLM")
_OWN_OPTIONS = ("model", "api_key", "api_base", "temperature", "max_tokens", "timeout", "retries",
                "retry_wait", "structured_output")


class LiteLLM(LLM):
    """``LiteLLM(model="gpt-4o-mini")``; ``model`` is any litellm model string.

    Extra keyword arguments go to ``litellm.completion`` as they are (for
    example ``mock_response=...`` for tests, or provider options).
    """

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        api_key: str | None = None,
        api_base: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout: float = 60.0,
        retries: int = 3,
        retry_wait: float = 0.5,
        structured_output: bool = True,
        **extra: Any,
    ) -> None:
        check_completion_options(model, extra, _OWN_OPTIONS)
        self.model = model
        self._api_base = api_base
        self.retries = retries
        self.retry_wait = retry_wait
        self.structured_output = structured_output
        self._base: dict[str, Any] = {
            "model": model, "temperature": temperature, "timeout": timeout,
            "num_retries": 0, "max_retries": 0, **extra,
        }
        for key, value in (("api_key", api_key), ("api_base", api_base), ("max_tokens", max_tokens)):
            if value is not None:
                self._base[key] = value
        self._format_support: str | None = None
        self._priced: bool | None = None

    def _response_format(self, litellm: Any, request: LLMRequest) -> dict[str, Any] | None:
        if request.json_schema is None or not self.structured_output:
            return None
        if self._format_support is None:
            self._format_support = "none"
            try:
                if litellm.supports_response_schema(model=self.model):
                    self._format_support = "schema"
                elif "response_format" in (litellm.get_supported_openai_params(model=self.model) or []):
                    self._format_support = "json"
            except Exception:  # unknown model: litellm cannot say; send plain prompts
                self._format_support = "none"
        if self._format_support == "schema":
            return {"type": "json_schema", "json_schema": {
                "name": request.schema_name, "schema": request.json_schema, "strict": True}}
        if self._format_support == "json":
            return {"type": "json_object"}
        return None

    def _kwargs(self, litellm: Any, request: LLMRequest) -> dict[str, Any]:
        kwargs = {**self._base, "messages": request.messages}
        response_format = self._response_format(litellm, request)
        if response_format is not None:
            kwargs["response_format"] = response_format
        check_request(kwargs)
        return kwargs

    def complete(self, request: LLMRequest) -> LLMResponse:
        litellm = import_litellm()
        kwargs = self._kwargs(litellm, request)
        try:
            for attempt in retrying(self.retries, self.retry_wait):
                with attempt:
                    response = litellm.completion(**kwargs)
        except Exception as exc:
            raise LLMError(provider_failure(
                litellm, f"LLM call to {self.model!r}", self.model, self._api_base, exc, _FALLBACK)) from None
        return self._to_response(litellm, response)

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        litellm = await aimport_litellm()
        kwargs = self._kwargs(litellm, request)
        try:
            async for attempt in async_retrying(self.retries, self.retry_wait):
                with attempt:
                    response = await litellm.acompletion(**kwargs)
        except Exception as exc:
            raise LLMError(provider_failure(
                litellm, f"LLM call to {self.model!r}", self.model, self._api_base, exc, _FALLBACK)) from None
        return self._to_response(litellm, response)

    def _cost(self, litellm: Any, response: Any) -> float | None:
        """The price litellm put on the response when it made it (None: unknown model);
        pricing it again would walk litellm's price map on every call."""
        hidden = getattr(response, "_hidden_params", None)
        if isinstance(hidden, dict) and "response_cost" in hidden:
            cost = hidden["response_cost"]
            return None if cost is None else float(cost)
        if self._priced is False:  # litellm did not know this model's price last time
            return None
        try:
            cost = float(litellm.completion_cost(completion_response=response))
        except Exception:
            self._priced = False
            return None
        self._priced = True
        return cost

    def _to_response(self, litellm: Any, response: Any) -> LLMResponse:
        try:
            text = response.choices[0].message.content or ""
        except (AttributeError, IndexError) as exc:
            raise LLMError(f"LLM response has no message: {response!r}") from exc
        usage = getattr(response, "usage", None)
        return LLMResponse(text=text, usage=Usage(
            llm_calls=1,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=self._cost(litellm, response),
        ))
