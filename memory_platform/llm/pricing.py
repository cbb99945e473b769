"""Cost estimates per call from list prices.

The figures are estimates to update by hand when vendors change their prices (checked
against public price lists in November 2026). They ignore prompt-cache discounts,
batch discounts and long-context surcharges: good enough to budget a nightly dream, not an
invoice. A model not listed (a local model, a new release) has no estimate: None, never 0.
"""

# USD per million tokens: (input, output). Keys are model-id prefixes; the longest prefix
# that matches wins, so "gpt-4o-mini" beats "gpt-4o" and dated ids such as
# "claude-sonnet-4-5-20250929" or "gpt-4.1-2025-04-14" find their family.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    # Anthropic. Opus changed price within the 4 family, so its versions are listed one by
    # one (an unlisted Opus gets no estimate rather than a wrong one); Sonnet 4.x is uniform.
    "claude-opus-4-0": (15.0, 75.0),
    "claude-opus-4-2025": (15.0, 75.0),  # claude-opus-4-20250514
    "claude-opus-4-1": (15.0, 75.0),
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4-6": (5.0, 25.0),
    "claude-opus-4-7": (5.0, 25.0),
    "claude-3-opus": (15.0, 75.0),
    "claude-sonnet-4": (3.0, 15.0),  # Sonnet 4, 4.5, 4.6
    "claude-3-7-sonnet": (3.0, 15.0),
    "claude-3-5-sonnet": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-3-5-haiku": (0.80, 4.0),
    "claude-3-haiku": (0.25, 1.25),
    # OpenAI
    "gpt-4o": (2.50, 10.0),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5.4": (2.50, 15.0),
    "gpt-5.4-mini": (0.75, 4.50),
    "gpt-5.4-nano": (0.20, 1.25),
    "gpt-5.5": (5.0, 30.0),
}


def prices_for(model: str) -> tuple[float, float] | None:
    """(input, output) USD per million tokens, or None for an unknown model."""
    # Routers name models "vendor/model" (OpenRouter, LiteLLM); the price is the model's.
    name = model.rsplit("/", 1)[-1].lower()
    best: str | None = None
    for prefix in PRICES_PER_MTOK:
        if name.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return None if best is None else PRICES_PER_MTOK[best]


def estimate_cost(model: str, input_tokens: int, output_tokens: int) -> float | None:
    prices = prices_for(model)
    if prices is None:
        return None
    per_input, per_output = prices
    return (input_tokens * per_input + output_tokens * per_output) / 1_000_000
