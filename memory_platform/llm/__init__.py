"""LLM providers behind one small interface: `provider.complete(prompt, ...) -> LLMResult`.

    provider = provider_from_env()                  # LLMNotConfigured names what to set
    llm = CallRecorder(provider, db=db, run_id=...) # every call in llm_calls
    result = llm.complete(prompt, schema=Verdict, purpose="dream_score")
    result.parsed                                   # a validated Verdict, or LLMRefused
    MaterializeResult(metadata=llm.as_metadata())
"""

from memory_platform.llm.base import (
    LLM,
    CallStats,
    Completion,
    LLMCallError,
    LLMCallFailed,
    LLMError,
    LLMNotConfigured,
    LLMRefused,
    LLMResult,
    Message,
    Provider,
    parse_structured,
    schema_instructions,
)
from memory_platform.llm.pricing import estimate_cost, prices_for
from memory_platform.llm.providers import (
    DEFAULT_MODELS,
    PROVIDER_NAMES,
    AnthropicProvider,
    ClaudeCLIProvider,
    LLMSettings,
    OpenAIProvider,
    ScriptedCall,
    ScriptedProvider,
    load_provider,
    provider_from_env,
)
from memory_platform.llm.recorder import CallRecorder

__all__ = [
    "LLM",
    "DEFAULT_MODELS",
    "PROVIDER_NAMES",
    "AnthropicProvider",
    "CallRecorder",
    "CallStats",
    "ClaudeCLIProvider",
    "Completion",
    "LLMCallError",
    "LLMCallFailed",
    "LLMError",
    "LLMNotConfigured",
    "LLMRefused",
    "LLMResult",
    "LLMSettings",
    "Message",
    "OpenAIProvider",
    "Provider",
    "ScriptedCall",
    "ScriptedProvider",
    "estimate_cost",
    "load_provider",
    "parse_structured",
    "prices_for",
    "provider_from_env",
    "schema_instructions",
]
