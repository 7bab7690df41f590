"""A day that fails a data-quality gate is published as `suspect` with its reasons, never silently."""

from datetime import timedelta

import pytest
from typer.testing import CliRunner

from flows import pipeline
from flows.cli.app import app
from tests.pipeline_support import serve_fixtures
from tests.sources_support import SNAPSHOT, edited_fixtures
from warehouse import db

pytestmark = pytest.mark.usefixtures("slim_night")  # their subject is neither the report nor the speed tiers

def run_day(monkeypatch, directory=None, day=SNAPSHOT) -> pipeline.RunSummary:
    """A replayed run that derives the day and exports nothing: the gates are decided and labelled in the tables."""
    kwargs = {"directory": directory} if directory else {}
    with serve_fixtures(monkeypatch, **kwargs):
        return pipeline.run(snapshot_date=day, export_format="", trigger="test")


def quality_of(day) -> tuple[str, str]:
    with db.connect(read_only=True) as con:
        return con.execute("select quality, quality_reasons from runs where snapshot_date = ?", [day]).fetchall()[0]


@pytest.mark.slow
def test_a_source_that_lost_most_of_its_listings_makes_the_day_suspect(monkeypatch, tmp_path):
    for back in (3, 2, 1):
        assert run_day(monkeypatch, day=SNAPSHOT - timedelta(days=back)).quality == "ok"
    thin = edited_fixtures(tmp_path, "vastai_bundles.json", lambda d: {"offers": d["offers"][:8]})
    summary = run_day(monkeypatch, thin)
    assert (summary.status, summary.quality) == ("ok", "suspect")
    quality, reasons = quality_of(SNAPSHOT)
    assert quality == "suspect" and "vastai: 16 listings, under 0.5 of its 7-day median of 89" in reasons
    with db.connect(read_only=True) as con:
        labels = con.execute("select distinct quality from cost_per_mtok where snapshot_date = ?", [SNAPSHOT]).fetchall()
    assert labels == [("suspect",)]
    status = CliRunner().invoke(app, ["status", "-f", "csv"])
    assert "suspect days (see quality_reasons in runs): 2026-11-27" in status.output


def test_unknown_names_and_absurd_prices_are_flagged_and_kept_out(monkeypatch, tmp_path):
    def rename_and_spike(data):
        for offer in data["offers"][-12:]:
            offer["gpu_name"] = "RTX 9090 Prototype"
        h200 = [o for o in data["offers"] if o["gpu_name"] == "H200" and o["num_gpus"] == 1]
        h200[0]["dph_base"] = 39.0  # about 17x the other single H200 listings, under the absurd-price cap
    summary = run_day(monkeypatch, edited_fixtures(tmp_path, "vastai_bundles.json", rename_and_spike))
    assert summary.quality == "suspect"
    quality, reasons = quality_of(SNAPSHOT)
    assert "vastai: " in reasons and "have an unknown GPU name" in reasons
    with db.connect(read_only=True) as con:
        quarantined = con.execute("select offer_id, reason from quarantine where stage = 'quality'").fetchall()
        published = con.execute("select max(max_usd_per_gpu_hr) from daily_prices where gpu = 'H200 SXM' "
                                "and gpu_count = 1 and price_kind = 'on_demand'").fetchall()[0][0]
        kept = con.execute("select count(*) from offers where usd_per_gpu_hr = 39.0").fetchall()[0][0]
    assert len(quarantined) == 1 and "away from the median" in quarantined[0][1]
    assert published < 39.0 and kept == 1  # the fact stays; the published aggregate leaves it out
