"""runtime/pricing.py: what a call cost, from the answering model and its usage."""

from __future__ import annotations

import pytest

from turnkeep.runtime import pricing
from turnkeep.runtime.messages import Usage
from turnkeep.runtime.pricing import Price, cost


def test_a_known_model_costs_its_list_price() -> None:
    assert cost("gpt-4o-mini", Usage(1_000_000, 1_000_000)) == pytest.approx(0.75)
    assert cost("claude-opus-4-1", Usage(2_000, 1_000)) == pytest.approx(
        (2_000 * 15 + 1_000 * 75) / 1e6
    )


@pytest.mark.parametrize(
    ("answered", "family"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4.1-2025-04-14", "gpt-4.1"),
        ("o3-2025-04-16", "o3"),
    ],
)
def test_a_dated_snapshot_is_priced_as_its_family(answered: str, family: str) -> None:
    usage = Usage(input_tokens=1_234, output_tokens=567)
    assert cost(answered, usage) == cost(family, usage) is not None


def test_a_snapshot_with_its_own_price_keeps_it() -> None:
    usage = Usage(1_000_000, 0)
    assert cost("gpt-4o-2024-05-13", usage) == pytest.approx(5.0)
    assert cost("gpt-4o-2024-08-06", usage) == pytest.approx(2.5)


def test_the_demo_model_is_free() -> None:
    assert cost("demo/weather", Usage(10_000, 10_000)) == 0.0


@pytest.mark.parametrize("model", ["", "my-finetune", "gpt-4o-mini-tts", "claude-sonnet-4-5-x"])
def test_an_unknown_model_costs_none(model: str) -> None:
    assert cost(model, Usage(100, 100)) is None


def test_cache_reads_and_writes_are_priced_apart() -> None:
    # 1,000 prompt tokens, of them 600 read from and 200 written to the cache
    usage = Usage(
        input_tokens=1_000, output_tokens=100, cache_read_tokens=600, cache_write_tokens=200
    )
    assert cost("claude-sonnet-4-5", usage) == pytest.approx(
        (200 * 3.0 + 600 * 0.30 + 200 * 3.75 + 100 * 15.0) / 1e6
    )
    # OpenAI: cached input at its own rate, no write charge
    usage = Usage(input_tokens=2_006, output_tokens=300, cache_read_tokens=1_920)
    assert cost("gpt-4o-mini", usage) == pytest.approx(
        (86 * 0.15 + 1_920 * 0.075 + 300 * 0.60) / 1e6
    )


def test_cache_counts_beyond_the_prompt_are_clamped() -> None:
    usage = Usage(input_tokens=100, output_tokens=0, cache_read_tokens=500, cache_write_tokens=50)
    assert cost("claude-sonnet-4-5", usage) == pytest.approx(100 * 0.30 / 1e6)


def test_the_long_context_tier_prices_the_whole_call() -> None:
    at = Usage(input_tokens=200_000, output_tokens=1_000)
    over = Usage(input_tokens=200_001, output_tokens=1_000)
    assert cost("claude-sonnet-4-5-20250929", at) == pytest.approx((200_000 * 3 + 1_000 * 15) / 1e6)
    assert cost("claude-sonnet-4-5-20250929", over) == pytest.approx(
        (200_001 * 6 + 1_000 * 22.5) / 1e6
    )
    # Opus has no such tier
    assert cost("claude-opus-4-1", over) == pytest.approx((200_001 * 15 + 1_000 * 75) / 1e6)


def test_the_persisted_usage_form_is_accepted() -> None:
    usage = Usage(input_tokens=1_000, output_tokens=10, cache_read_tokens=900)
    assert cost("claude-haiku-4-5", usage.to_json()) == cost("claude-haiku-4-5", usage)
    # journals from before the cache counts: plain input and output
    assert cost("claude-haiku-4-5", {"input_tokens": 1_000, "output_tokens": 10}) == pytest.approx(
        (1_000 * 1.0 + 10 * 5.0) / 1e6
    )
    assert cost("claude-haiku-4-5", {"input_tokens": "lots", "output_tokens": True}) == 0.0


def test_usage_json_stays_as_it_was_without_cache_counts() -> None:
    assert Usage(5, 6).to_json() == {"input_tokens": 5, "output_tokens": 6}
    full = Usage(5, 6, cache_read_tokens=2, cache_write_tokens=1)
    assert full.to_json() == {
        "input_tokens": 5,
        "output_tokens": 6,
        "cache_read_tokens": 2,
        "cache_write_tokens": 1,
    }
    assert Usage.from_json(full.to_json()) == full


def test_register_price(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pricing, "PRICES", dict(pricing.PRICES))
    assert cost("acme-local-7b", Usage(1_000_000, 0)) is None
    pricing.register_price("acme-local-7b", Price(0.0, 0.0))
    assert cost("acme-local-7b-2025-01-01", Usage(1_000_000, 0)) == 0.0
    pricing.register_price("gpt-4o", Price(1.0, 1.0))
    assert cost("gpt-4o", Usage(1_000_000, 0)) == pytest.approx(1.0)


def test_every_price_is_sane() -> None:
    for model, price in pricing.PRICES.items():
        assert model == model.strip().lower()
        assert 0 < price.input <= price.output, model
        for rate in (price.cache_read, price.cache_write):
            assert rate is None or rate >= 0, model
