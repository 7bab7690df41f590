"""The report: a static site of dated HTML pages (a market page per day, a page per model), charts offline.

Layout under the report root (default exports/report/):
    index.html                      the published days, latest first
    assets/plotly-<version>.min.js  Plotly's bundle from the `plotly` package, written once, shared by every page
    assets/report.css, report.js    the pages' style and behaviour
    date=YYYY-MM-DD/index.html      the market page of the day (the last HISTORY_DAYS days of prices)
    date=YYYY-MM-DD/models.html     the day's models by vendor, with a search box
    date=YYYY-MM-DD/<model>.html    a page per catalogue model: the night's prices; what the estimator alone
                                    determines it loads from the shared file below
    date=YYYY-MM-DD/replicas-<sha256>.js  the night's replicas (provider, $/hr, listings), once for every model page
    shared/<model>-<sha256>.js      a model's estimates for its pages' tables, written once per content: every
                                    night of one estimator and catalogue shares it

Every page embeds its data once, as gzip-compressed JSON in base64 (a sixth of the JSON's bytes), and a model
page only the night's: the columns of its table that do not change with the night are in a shared file, written
once (so a night's pages take a fraction of the bytes they took, and old nights' pages are never redrawn). The
script decompresses them (the browser's DecompressionStream), draws the charts and follows the page's settings from it,
so the pages work from disk with no server and no network. A page's header links the market page and the models
index, never every model, so a page's size and drawing time do not grow with the catalogue or the history.
"""

import base64
import functools
import gzip
import hashlib
import json
import logging
import os
import re
import shutil
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import duckdb
import jinja2
import polars as pl

from flows import views
from flows.derive import SPEED_CONTEXT_TOKENS
from scrapers.sources import PROVIDERS
from transforms import display, engines, estimator, presets
from transforms import report as pages
from warehouse import config, queries

log = logging.getLogger("gpuledger.report")
TEMPLATES = Path(__file__).parent / "templates" / "report"
ASSETS = ("report.css", "report.js")
METHOD = presets.DEFAULT_COST_METHOD  # the estimator method behind the cost tables' settings and the model pages
DEFAULT_SETTING = ("int4", presets.DEFAULT_CONTEXT_TOKENS, presets.DEFAULT_STREAMS)
# The frontier's columns the page's chart reads (and the engine it names): its prices' band, the replica's $/hr and
# the request were a third of a model page's bytes, unread.
FRONTIER_SHOWN = ("gpu", "tp", "streams", "user_tok_s", "ttft_s", "usd_per_mtok", "provider", "engine")
SHARED = "shared"  # the folder of the data files pages share (_shared_file)
HISTORY_DAYS = 90  # the market page charts this many days up to its own: its size and drawing time stay flat


def report_root() -> Path:
    """Where the site is drawn: beside the local exports, or under the home when the exports are an object store
    (the folder keeps every day's pages, and the pipeline publishes it to `<exports>/report/`)."""
    return (config.exports_dir() if config.exports_local() else config.home()) / "report"


@dataclass
class Site:
    root: Path
    day: date
    pages: list[Path]

    @property
    def index(self) -> Path:
        return self.root / f"date={self.day.isoformat()}" / "index.html"


def _plotly_asset(assets: Path) -> str:
    """Plotly's bundled script, copied once per site under a versioned name so older pages keep theirs."""
    import plotly
    from plotly.offline import get_plotlyjs_version

    name = f"plotly-{get_plotlyjs_version()}.min.js"
    target = assets / name
    if not target.exists():
        _atomic_copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", target)
    return name


def _atomic_copy(source: Path, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _usd(value) -> str:
    return display.usd_label(value)


def _span(low, high) -> str:
    if low is None:
        return display.MISSING
    if high is None or round(high) == round(low):
        return f"${low:,.0f}"
    return f"${low:,.0f}–${high:,.0f}"


@functools.cache  # one per process: a template is compiled once, not once a page
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters |= {"usd": _usd, "span": _span, "pct": display.pct_label, "integer": display.integer_label,
                    "compact": display.compact_label, "precision": lambda p: display.PAGE_000_PRECISION.get(p, p)}
    return env


def _records(frame: pl.DataFrame) -> list[dict]:
    return json.loads(frame.write_json())


def packed(data) -> str:
    """A page's data as it is embedded: JSON, gzip-compressed (no timestamp: the same data gives the same page),
    in base64. report.js reads it back with the browser's DecompressionStream."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.b64encode(gzip.compress(text, compresslevel=9, mtime=0)).decode("ascii")


def unpacked(text: str):
    """The data of `packed`: what a page's script reads."""
    return json.loads(gzip.decompress(base64.b64decode(text)))


def _column_lists(frame: pl.DataFrame) -> dict[str, list]:
    """A frame as {column: values}, dates as ISO text: the compact way to embed a table once in a page."""
    return frame.with_columns(pl.col(pl.Date, pl.Datetime).cast(pl.String)).to_dict(as_series=False)


def _run(con: duckdb.DuckDBPyConnection, day: date) -> dict:
    """The day's latest run that was not a failure: id, times, status, quality and its reasons."""
    rows = con.sql(
        """select run_id, started_at, finished_at, status, quality, quality_reasons, estimator_version
           from runs where snapshot_date = ? and status != 'failed' order by started_at desc limit 1""",
        params=[day]).pl()
    if rows.is_empty():
        raise views.ViewError(f"no published run on {day}")
    run = rows.row(0, named=True)
    run["reasons"] = [r for r in (run["quality_reasons"] or "").splitlines() if r.strip()]
    return run


def _sources(con: duckdb.DuckDBPyConnection, day: date) -> list[dict]:
    """Each source's latest fetch of the day: status, when it finished, requests, listings (or FX rates)."""
    return _records(con.sql(
        """select source, arg_max(status, started_at) as status, max(finished_at) as fetched_at,
                  arg_max(offers_loaded, started_at) as listings, arg_max(record_count, started_at) as records,
                  arg_max(requests, started_at) as requests,
                  arg_max(error, started_at) as error
           from fetches where snapshot_date = ? group by source order by source""", params=[day]).pl()
        .with_columns(pl.col("fetched_at").dt.strftime("%Y-%m-%d %H:%M UTC"),
                      pl.col("source").is_in(PROVIDERS).alias("lists_gpus")))


def _settings(con: duckdb.DuckDBPyConnection, day: date) -> list[tuple[str, int, int]]:
    """The (precision, context, streams) settings the day's cost table holds for the calculator method."""
    rows = con.execute(
        "select distinct precision, context_tokens, streams from cost_per_mtok where snapshot_date = ? and method = ?"
        " order by all", [day, METHOD]).fetchall()
    return [(p, int(c), int(s)) for p, c, s in rows]


def _market_groups(market: pl.DataFrame) -> list[dict]:
    """Today's prices grouped by GPU for the table, in the frame's order."""
    groups: dict[str, list[dict]] = {}
    for row in _records(market):
        groups.setdefault(row["gpu"], []).append(row)
    return [{"gpu": gpu, "rows": rows} for gpu, rows in groups.items()]


def market_page(con: duckdb.DuckDBPyConnection, day: date) -> dict:
    """The market page's context: run, quality, sources, today's prices, and the last HISTORY_DAYS days' prices and
    listing counts."""
    window = pl.col("snapshot_date").is_between(day - timedelta(days=HISTORY_DAYS - 1), day)
    index = con.sql("select * from price_index where snapshot_date between ? and ?",
                    params=[day - timedelta(days=HISTORY_DAYS - 1), day]).pl()
    history = pages.price_history(index)
    counts = pages.listing_counts(queries.listing_history(con).filter(window), PROVIDERS)
    featured = [g for g in history["gpu"].unique(maintain_order=True).to_list() if pages.FEATURED.search(g)]
    rows = _environment().get_template("market_rows.html.j2").render(
        market=_market_groups(pages.market_today(index, day, queries.offer_origins(con, day))))
    return {
        "days": history["snapshot_date"].n_unique(),
        "history_days": HISTORY_DAYS,
        "chart": packed({"history": _column_lists(history), "featured": featured, "counts": _column_lists(counts),
                         "rows": rows}),
    }


class Replicas:
    """The replicas a night's model pages price with (transforms.report.REPLICA_COLUMNS), each once: a page's table
    row names its replica by its index here, and every page of the night loads them from one file."""

    def __init__(self):
        self.index: dict[tuple, int] = {}

    def refer(self, rows: pl.DataFrame) -> pl.DataFrame:
        """rows with their replica columns replaced by `replica`, its index."""
        ids = [self.index.setdefault(key, len(self.index)) for key in rows.select(pages.REPLICA_COLUMNS).rows()]
        return rows.drop(pages.REPLICA_COLUMNS).with_columns(pl.Series("replica", ids, dtype=pl.Int32))

    def columns(self) -> dict[str, list]:
        return {column: [key[i] for key in self.index] for i, column in enumerate(pages.REPLICA_COLUMNS)}


@dataclass
class ModelFrames:
    """What a model page is drawn from, computed for many models at once (`model_frames`); per setting, the parts of
    its entry as the page embeds them (_column_lists)."""

    calculators: dict[tuple[str, int, int], views.Calculator]
    shared: dict[tuple[str, int, int], dict[str, list]]  # split_table's estimate columns
    order: dict[tuple[str, int, int], list[int]]  # split_table's order
    night: dict[tuple[str, int, int], dict[str, list]]  # split_table's night rows, their replicas by index
    cards: dict[tuple[str, int, int], dict[str, list]]  # card_rows'
    own_rows: dict[tuple[str, int, int], dict[str, list]]  # own_rows'
    own: pl.DataFrame  # the night's own_vs_rent rows of the model
    ceiling: pl.DataFrame  # page 000's cards
    frontier: tuple[pl.DataFrame, dict | None]
    tiers: pl.DataFrame  # per speed tier, the cheapest on-demand answer


# Models whose frames one pass computes. Measured on a 1x bench night (58 models) and 64 models of a 10x one: 64 a
# pass took 0.12 / 0.13 s of CPU a page and peaked at 562 / 820 MB in process, 16 a pass 0.14-0.17 / 0.17 s and 376 / 505
# MB (a page alone, before batches: 0.55 / 0.92 s and 295 / 601 MB). The memory is the batch's estimates. 8 a pass:
# in the whole 1x bench nightly the report's peak was 551 / 558 MB against 587-626 with 16 (two runs against five), the
# pages byte for byte the same (diff -r of a night's report drawn both ways). The price: `gpuledger report` of
# that night took 11.8-12.4 s of CPU instead of 9.7-10.3 (peak 343-348 MB instead of 414-416), two runs each.
BATCH_MODELS = 8


def _group_lists(frame: pl.DataFrame, keys: tuple[str, ...], wanted: list[tuple]) -> dict[tuple, dict[str, list]]:
    """_column_lists of frame's rows per group of keys (without them), for each wanted group (no rows: empty)."""
    frame = frame.with_columns(pl.col(pl.Date, pl.Datetime).cast(pl.String))
    groups = frame.partition_by(keys, as_dict=True, include_key=False, maintain_order=True)
    empty = {column: [] for column in frame.columns if column not in keys}
    return {key: groups[key].to_dict(as_series=False) if key in groups else empty for key in wanted}


def model_frames(data: views.Day, con: duckdb.DuckDBPyConnection, models: list[str],
                 settings: list[tuple[str, int, int]], replicas: Replicas) -> dict[str, ModelFrames]:
    """Each model's ModelFrames, by model: every estimate, price, label and query behind the pages in one pass for
    all of them (a pass per model and setting cost ~2,000 small operations a page). The night rows' replicas are
    registered in `replicas` in the pages' order: model by model as given, setting by setting."""
    keys = views.CALCULATOR_KEYS
    wanted = [(model, *setting) for model in models for setting in settings]
    calculators = views.calculators(data, models, [], settings, method=METHOD)
    parts, order, night = pages.split_table(pages.table_rows(calculators.table, by=keys), by=keys)
    page_order = pl.DataFrame(wanted, schema=dict.fromkeys(keys), orient="row").with_row_index("_page")
    night = replicas.refer(night.join(page_order, on=keys).sort("_page", "at").drop("_page"))
    own = con.sql("select * from own_vs_rent where snapshot_date = ? and method = ? and list_contains(?, model)",
                  params=[data.day, METHOD, models]).pl()
    shared, orders, nights, cards, owned = (_group_lists(frame, keys, wanted) for frame in (
        parts, order, night, pages.card_rows(calculators.cards, calculators.replicas), pages.own_rows(own, by=keys)))
    ceiling = views.estimate_cards_of(data, models, METHOD, [], None, presets.DEFAULT_CONTEXT_TOKENS,
                                      presets.DEFAULT_STREAMS)
    frontiers = views.frontiers(data, models, [], None, SPEED_CONTEXT_TOKENS, None, None)
    tiers = views.by_model(con.sql(
        "select model, speed_tier, min_user_tok_s, max_ttft_s, gpu, tp, provider, streams, user_tok_s, ttft_s, "
        "usd_per_mtok from cost_at_speed where snapshot_date = ? and list_contains(?, model) and price_kind = 'on_demand' "
        "qualify row_number() over (partition by model, speed_tier order by usd_per_mtok, gpu, provider) = 1 "
        "order by model, min_user_tok_s nulls first", params=[data.day, models]).pl(), models)
    owns = views.by_model(own, models)
    out = {}
    for model in models:
        at = [(setting, (model, *setting)) for setting in settings]
        out[model] = ModelFrames(
            calculators.views[model], {s: shared[k] for s, k in at}, {s: orders[k]["at"] for s, k in at},
            {s: nights[k] for s, k in at}, {s: cards[k] for s, k in at}, {s: owned[k] for s, k in at},
            owns[model], ceiling[model], frontiers[model], tiers[model].drop("model"))
    return out


def model_page(data: views.Day, model: str, frames: ModelFrames) -> dict:
    """A model page's context: every setting's table, cards, FAQ and own-vs-rent, and page 000's cards; `shared`,
    packed, is what of the tables the estimator alone determines (transforms.report.split_table), written once
    to a file every night's page of the model loads while the estimator and catalogue stay the same; the table's
    replicas are named by their index in the night's file of them (Replicas).

    Each setting's entry is built here and only here: a further column (another method's $/M) joins the
    calculator table before `table_rows`, a further price line (e.g. an API price) appends to `price_lines`.
    """
    card = data.models.filter(pl.col("model_id") == model).row(0, named=True)
    bytes_per_param = presets.preset(METHOD).bytes_per_param
    entries, shared = {}, {}
    for setting, calc in frames.calculators.items():
        shared[_key(setting)] = frames.shared[setting]
        entries[_key(setting)] = {
            "table": {"order": frames.order[setting], "rows": frames.night[setting]},
            "cards": frames.cards[setting],
            "faq": pages.faq(card, setting, calc.table, calc.one_stream, calc.cards, bytes_per_param, data.day, METHOD,
                             calc.note),
            "own": frames.own_rows[setting],
        }
    price_lines = pages.api_price_lines(data.api, model)  # shown above the cards
    curve, api = frames.frontier
    calculators = frames.calculators
    default = DEFAULT_SETTING if DEFAULT_SETTING in calculators or not calculators else next(iter(calculators))
    return {
        "model": card,
        "shared": packed({"views": shared}),
        "price_lines": price_lines,
        "tiers": _records(frames.tiers),
        "frontier_api": api,
        "frontier_tokens": (curve["input_tokens"][0], curve["output_tokens"][0]) if curve.height else None,
        "data": packed({
            "settings": [{"key": _key(st), "precision": st[0], "context": st[1], "streams": st[2],
                          **views.request(calc.estimates)} for st, calc in calculators.items()],
            "default": _key(default),
            "columns": [{"key": k, "label": label} for k, label in pages.TABLE_COLUMNS],
            "pricing": pages.PRICING_TEXT,
            "ownership": pages.ownership_terms(frames.own),
            "views": entries,
            "frontier": {"points": _column_lists(pages.compact(curve.select(FRONTIER_SHOWN))), "api": api},
            "estimate_cards": _environment().get_template("estimate_cards.html.j2").render(
                estimate_cards=_records(frames.ceiling), day=data.day.isoformat()),
        }),
    }


def models_index(common: dict, models: pl.DataFrame) -> str:
    """The models index page: the models (catalogue rows) grouped by vendor, the family that trains them, vendors
    and the models in each by name; `common` is what every page of the day shows (run, sources, assets)."""
    rows = models.select("model_id", "name", "vendor", "arch", "total_params_b").with_columns(
        pl.col("vendor").fill_null("Other")).sort(pl.col("vendor").str.to_lowercase(), pl.col("name").str.to_lowercase())
    families = [{"vendor": vendor, "models": group.to_dicts()}
                for (vendor,), group in rows.group_by("vendor", maintain_order=True)]
    return _environment().get_template("models.html.j2").render(**common | {"model_count": rows.height},
                                                                families=families)


def _script_file(root: Path, stem: str, variable: str, data: str) -> str:
    """A script setting `window.<variable>` to data (a script works from disk), named `<stem><sha256 of data>.js` and
    written once: pages drawn while the data is the same load the same file, and an older page keeps the one it was
    written with. Its path under root."""
    name = f"{stem}{hashlib.sha256(data.encode()).hexdigest()[:16]}.js"
    if not (root / name).exists():
        _atomic_write(root / name, f'window.{variable} = "{data}";\n')
    return name


def _shared_file(root: Path, model: str, data: str) -> str:
    """The file holding a model's shared data: each night's page of the model loads it. Its path under root."""
    return _script_file(root, f"{SHARED}/{model}-", "gpuledgerShared", data)


REPLICAS = "replicas-"  # a night's replicas file: replicas-<sha256>.js in the day's folder


def _replicas_file(folder: Path, replicas: Replicas) -> str:
    """The night's replicas (a page drawn again for one model keeps the others' pages and their file); its name in
    the day's folder."""
    return _script_file(folder, REPLICAS, "gpuledgerReplicas", packed(replicas.columns()))


def _drop_unused_replicas(folder: Path) -> None:
    """Remove the day's replicas files no page of the day loads any more (the day's pages were all drawn again)."""
    used = {m for page in folder.glob("*.html") for m in re.findall(rf'src="({REPLICAS}[0-9a-f]+\.js)"', page.read_text())}
    for path in folder.glob(f"{REPLICAS}*.js"):
        if path.name not in used:
            path.unlink()


def _key(setting: tuple[str, int, int]) -> str:
    return "/".join(map(str, setting))


def published_days(root: Path) -> list[str]:
    """The days whose pages are in the report root, latest first."""
    return sorted((p.parent.name.removeprefix("date=") for p in root.glob("date=*/index.html")), reverse=True)


def page_context(con: duckdb.DuckDBPyConnection, root: Path, day: date, model_count: int) -> dict:
    """What every page of the day shows: its run and sources, the shared assets, the size of the models index."""
    return {
        "day": day.isoformat(), "run": _run(con, day), "sources": _sources(con, day),
        "plotly": _plotly_asset(root / "assets"), "assets": "../assets",
        "estimator_version": estimator.ESTIMATOR_VERSION, "engine": engines.ENGINES[presets.preset(METHOD).engine],
        "generated_at": config.utc_now().strftime("%Y-%m-%d %H:%M UTC"), "model_count": model_count,
    }


def write_site(con: duckdb.DuckDBPyConnection, root: Path | None = None, day: date | None = None,
               models: list[str] | None = None) -> Site:
    """Write the day's market page and model pages, the shared assets and the root's list of days."""
    root = (root or report_root()).absolute()
    data = views.load_day(con, day)
    env = _environment()
    assets = root / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    for name in ASSETS:
        _atomic_copy(TEMPLATES / name, assets / name)
    settings = _settings(con, data.day)
    known = data.models["model_id"].sort().to_list()
    chosen = models or config.report_models()
    model_ids = [m for m in chosen if m in known] if chosen else known
    if chosen and len(model_ids) < len(chosen):
        log.warning("no model %s in the catalogue: no page for it", ", ".join(sorted(set(chosen) - set(known))))
    common = page_context(con, root, data.day, len(model_ids))
    folder = root / f"date={data.day.isoformat()}"
    written = [folder / "index.html", folder / "models.html"]
    _atomic_write(written[0], env.get_template("market.html.j2").render(**common, **market_page(con, data.day)))
    _atomic_write(written[1], models_index(common, data.models.filter(pl.col("model_id").is_in(model_ids))))
    replicas = Replicas()
    contexts = {}
    for start in range(0, len(model_ids), BATCH_MODELS):
        frames = model_frames(data, con, model_ids[start:start + BATCH_MODELS], settings, replicas)
        contexts |= {model: model_page(data, model, frames[model]) for model in frames}
    night = _replicas_file(folder, replicas)
    for model, context in contexts.items():
        written.append(folder / f"{model}.html")
        shared = _shared_file(root, model, context.pop("shared"))
        _atomic_write(written[-1], env.get_template("model.html.j2").render(**common, **context, shared=shared,
                                                                           replicas=night))
    _drop_unused_replicas(folder)
    quality = dict(con.execute("select snapshot_date::varchar, arg_max(quality, started_at) from runs "
                               "where status != 'failed' group by 1").fetchall())
    days = [{"day": d, "quality": quality.get(d)} for d in published_days(root)]
    _atomic_write(root / "index.html", env.get_template("index.html.j2").render(
        days=days, assets="assets", generated_at=common["generated_at"]))
    log.info("report for %s: %d pages in %s", data.day, len(written), folder)
    return Site(root, data.day, written)
