"""OpenRouter's models list: real payloads of 2025 and 2026 (trimmed), read into per-million-token price tiers."""

import copy
import json
from decimal import Decimal

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapers import openrouter
from scrapers.base import RecordError, SchemaError
from tests.sources_support import fast_settings, fetch_with, fixture, fixture_json, raw

Y2026 = "openrouter_models_2026-08-19.json"
Y2025 = "openrouter_models_2025-12-02.json"


def parse(data) -> openrouter.ParseResult:
    body = data if isinstance(data, bytes) else json.dumps(data).encode()
    return openrouter.parse([raw("openrouter", "GET", openrouter.PATH, body)])


def prices(result) -> dict[tuple[str, str], object]:
    return {(p.api_model_id, p.tier): p for p in result.api_prices}


def test_fetch_is_one_keyless_get_at_the_configured_base_url():
    fetched = fetch_with(openrouter, fast_settings("http://openrouter.test"),
                         lambda request: httpx.Response(200, content=fixture(Y2026)))
    (request,) = fetched.seen
    assert (request.method, str(request.url)) == ("GET", "http://openrouter.test/api/v1/models")
    assert "authorization" not in request.headers
    assert len(fetched.responses) == 1


def test_prices_are_stored_per_million_tokens_without_float_noise():
    found = prices(parse(fixture(Y2026)))
    flash = found["deepseek/deepseek-v4-flash", "base"]
    oss = found["openai/gpt-oss-120b", "base"]
    assert float("0.00000017") * 1e6 == 0.16999999999999998  # what a float multiplication would have stored
    assert oss.usd_per_mtok_output == 0.17
    assert (flash.usd_per_mtok_input, flash.usd_per_mtok_output, flash.usd_per_mtok_cache_read) == (0.0798, 0.1596, 0.01596)
    assert (flash.price_kind, flash.hugging_face_id, flash.context_length) == ("standard", "deepseek-ai/DeepSeek-V4-Flash",
                                                                               1048576)


@given(st.decimals(min_value=0, max_value=Decimal("0.01"), places=15, allow_nan=False, allow_infinity=False))
def test_the_conversion_is_exact_for_any_price_with_up_to_15_decimals_per_token(per_token):
    stored = openrouter.usd_per_mtok(format(per_token, "f"), "pricing.prompt")
    assert Decimal(repr(stored)) == per_token.scaleb(6)


def test_the_one_rounding_rule_is_half_even_to_a_billionth_of_a_dollar_per_million():
    # a real cache-write price: 0.0208333333333333 per million, cut at 9 places
    assert openrouter.usd_per_mtok("0.0000000208333333333333", "f") == 0.020833333
    assert openrouter.usd_per_mtok("0.0000000000000005", "f") == 0.0  # half a billionth: to the even neighbour
    assert openrouter.usd_per_mtok("0.0000000000000015", "f") == 0.000000002
    assert openrouter.usd_per_mtok(None, "f") is None


def test_variants_are_price_kinds_and_aliases_are_not_offers():
    result = parse(fixture(Y2026))
    kinds = {p.api_model_id: p.price_kind for p in result.api_prices}
    assert kinds["openai/gpt-oss-20b:free"] == "free" and kinds["moonshotai/kimi-k2.7-code:batch"] == "batch"
    assert kinds["openai/gpt-oss-20b"] == "standard"
    assert not any(p.api_model_id.startswith("~") for p in result.api_prices)
    assert {(a.alias_id, a.target_id) for a in result.api_aliases} == {
        ("~deepseek/deepseek-v4-flash-latest", "deepseek/deepseek-v4-flash-0731"), ("~x-ai/grok-latest", "x-ai/grok-4.6")}
    free = prices(result)["openai/gpt-oss-20b:free", "base"]
    assert (free.usd_per_mtok_input, free.usd_per_mtok_output, free.usd_per_mtok_cache_read) == (0.0, 0.0, None)


def test_routers_and_non_text_models_are_left_out_with_a_note():
    result = parse(fixture(Y2026))
    listed = {p.api_model_id for p in result.api_prices}
    assert not listed & {"openrouter/auto", "openrouter/fusion", "google/gemini-3.1-flash-image", "openai/gpt-audio",
                         "google/lyria-3-pro-preview"}
    assert 'router(s) with a variable price ("-1") skipped: openrouter/fusion, openrouter/auto' in result.notes[0]
    assert "3 model(s) with non-text input or output ignored" in result.notes
    assert result.rejected == [] and result.record_count == 27


def test_long_context_tiers_keep_their_threshold():
    found = prices(parse(fixture(Y2026)))
    tiers = {tier: (p.min_prompt_tokens, p.usd_per_mtok_input, p.usd_per_mtok_output)
             for (model, tier), p in found.items() if model == "qwen/qwen3-max"}
    assert tiers == {"base": (None, 0.78, 3.9), "prompt>=32000": (32000, 1.56, 7.8),
                     "prompt>=128000": (128000, 1.95, 9.75)}


def test_time_of_day_tiers_show_peak_and_off_peak_with_their_windows():
    found = prices(parse(fixture(Y2026)))
    tiers = {(p.utc_start, p.utc_end): p.usd_per_mtok_output for (model, tier), p in found.items()
             if model == "deepseek/deepseek-v4-pro" and tier != "base"}
    assert tiers == {(1000, 100): 1.98, (100, 400): 3.96, (400, 600): 1.98, (600, 1000): 3.96}  # the first wraps midnight
    assert found["deepseek/deepseek-v4-pro", "utc 0100-0400"].usd_per_mtok_cache_read == 0.044


def test_an_override_without_a_price_keeps_the_listings():
    data = fixture_json(Y2026)
    grok = next(m for m in data["data"] if m["id"] == "x-ai/grok-4.6")
    del grok["pricing"]["overrides"][0]["input_cache_read"]
    tier = prices(parse(data))["x-ai/grok-4.6", "prompt>=200000"]
    assert (tier.usd_per_mtok_input, tier.usd_per_mtok_cache_read) == (4.0, 0.5)


def test_the_2025_shape_reads_the_same_way():
    result = parse(fixture(Y2025))
    found = prices(result)
    assert found["openai/gpt-oss-120b:exacto", "base"].price_kind == "exacto"  # another variant keeps its name
    llama = found["meta-llama/llama-3.3-70b-instruct", "base"]
    assert (llama.usd_per_mtok_input, llama.usd_per_mtok_cache_read) == (0.108, 0.0)  # zero keys sent as "0"
    assert found["amazon/nova-2-lite-v1:free", "base"].hugging_face_id is None  # "" is no repository
    assert {p.tier for p in result.api_prices} == {"base"}
    assert any("openrouter/auto" in note for note in result.notes)


@pytest.mark.parametrize(("value", "reason"), [("abc", "non-numeric string 'abc'"), ("-0.5", "negative price"),
                                               (True, "expected a price string"),
                                               ("1e308", "price '1e308' USD per token is out of range"),
                                               ("1e13", "out of range"), (1e300, "out of range")])
def test_a_bad_price_quarantines_that_model_naming_the_field(value, reason):
    data = fixture_json(Y2026)
    data["data"][0]["pricing"]["completion"] = value
    result = parse(data)
    (rejection,) = result.rejected
    assert (rejection.offer_id, rejection.field) == (data["data"][0]["id"], "pricing.completion")
    assert reason in rejection.reason
    assert data["data"][0]["id"] not in {p.api_model_id for p in result.api_prices}


def test_a_bad_time_window_quarantines_the_model():
    data = fixture_json(Y2026)
    pro = next(m for m in data["data"] if m["id"] == "deepseek/deepseek-v4-pro")
    pro["pricing"]["overrides"][1]["utc_end"] = 470
    (rejection,) = parse(data).rejected
    assert rejection.field == "pricing.overrides[1].utc_end"


def test_duplicates_and_unknown_keys_do_not_fail():
    data = fixture_json(Y2026)
    data["data"].append(copy.deepcopy(data["data"][0]))
    data["data"][1]["pricing"]["brand_new_price"] = "0.1"
    data["data"][1]["surprise"] = {"nested": True}
    result = parse(data)
    assert "1 duplicate model(s) (same id) kept once" in result.notes
    assert len(result.api_prices) == len(parse(fixture(Y2026)).api_prices)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["data"].clear(), "field 'data': empty result: no records"),
    (lambda d: [m["pricing"].update(completion_renamed=m["pricing"].pop("completion")) for m in d["data"]],
     "field 'pricing.completion': absent from all 27 records"),
    (lambda d: d.pop("data"), "field 'data': missing or not a list"),
])
def test_a_payload_not_in_the_documented_shape_fails_the_source(edit, message):
    data = fixture_json(Y2026)
    edit(data)
    with pytest.raises(SchemaError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(data)


def test_hhmm_refuses_a_time_that_is_not_one():
    with pytest.raises(RecordError):
        openrouter._hhmm(2460, "utc_start")


def test_a_record_without_a_usable_id_is_quarantined():
    data = fixture_json(Y2026)
    data["data"][0]["id"] = ["not", "an", "id"]
    (rejection,) = parse(data).rejected
    assert (rejection.offer_id, rejection.field) == (None, "id")
