"""A warehouse with three published days for the report tests: two whole days around one without Verda
(published as suspect), all from the replayed recordings, and the report site written for two of them."""

import re
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import pytest

from flows import pipeline, report
from tests.pipeline_support import serve_fixtures
from tests.sources_support import SNAPSHOT
from warehouse import db

DAYS = (SNAPSHOT - timedelta(days=2), SNAPSHOT - timedelta(days=1), SNAPSHOT)
SUSPECT_DAY = DAYS[1]
MODELS = ["deepseek-v4-flash", "llama-3.3-70b"]


@dataclass
class Published:
    home: Path
    root: Path  # the report's root folder
    sites: dict[date, report.Site]


def publish_days(home: Path, root: Path) -> Published:
    """Run the pipeline (no exports) for each of DAYS, then write the report for the suspect and the last day."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPULEDGER_HOME", str(home))
        mp.setenv("GPULEDGER_EXPORTS", str(home / "exports"))
        with serve_fixtures(mp):
            for day in DAYS:
                sources = ["vastai", "runpod", "fx"] if day == SUSPECT_DAY else None
                pipeline.run(sources, day, export_format="", trigger="test")
        with db.connect(read_only=True) as con:
            sites = {day: report.write_site(con, root, day, MODELS) for day in (SUSPECT_DAY, SNAPSHOT)}
    return Published(home, root, sites)


def page_data(path: Path) -> dict:
    """The data a page shows, read back as its script reads it: the embedded data and, for a model page, each
    setting's table joined with the shared file the page loads (report.js's joinShared)."""
    text = path.read_text()
    data = report.unpacked(re.search(r'<script [^>]*id="page-data">(.*?)</script>', text, re.S)[1])
    shared = re.search(r'<script src="\.\./(shared/[^"]+)">', text)
    if shared is None:
        return data
    parts = report.unpacked(re.search(r'window.gpuledgerShared = "(.*)";', (path.parent.parent / shared[1]).read_text())[1])
    name = re.search(r'<script src="(replicas-[0-9a-f]+\.js)">', text)[1]
    replicas = report.unpacked(re.search(r'window.gpuledgerReplicas = "(.*)";', (path.parent / name).read_text())[1])
    for key, view in data["views"].items():
        order, night = view["table"]["order"], view["table"]["rows"]
        row = {at: j for j, at in enumerate(night["at"])}
        table = {"rank": list(range(1, len(order) + 1))}
        table |= {column: [values[i] for i in order] for column, values in parts["views"][key].items()}
        table |= {column: [values[row[i]] if i in row else None for i in order]
                  for column, values in night.items() if column not in ("at", "replica")}
        table |= {column: [values[night["replica"][row[i]]] if i in row else None for i in order]
                  for column, values in replicas.items()}
        view["table"] = table
    return data
