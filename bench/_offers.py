"""A deterministic vast.ai answer of any size: the fixture's offers cloned with new ids and prices.

Every clone keeps its template's shape and quirks (null cpu_cores, missing min_bid, a zero price, unknown
geolocation...), so the benchmark parses the same mix the tests check, in the same proportions.
"""

import json
import random
from pathlib import Path

from bench._support import ROOT

TEMPLATES = ROOT / "tests" / "fixtures" / "sources" / "vastai_bundles.json"
REAL = ROOT / "tests" / "fixtures" / "real" / "vastai_bundles_2024-11-05.json"  # every GPU name of a real market
PRICED = ("dph_base", "dph_total", "min_bid", "discounted_dph_total", "dph_total_adj", "discounted_hourly")


def offers(n: int, seed: int = 0, templates_file: Path = TEMPLATES) -> list[dict]:
    templates = json.loads(templates_file.read_text())["offers"]
    rng = random.Random(seed)
    out = []
    for i in range(n):
        offer = dict(templates[i % len(templates)])
        factor = rng.uniform(0.7, 1.4)
        offer |= {key: round(offer[key] * factor, 6) for key in PRICED if isinstance(offer.get(key), float | int)}
        offer |= {"id": 40_000_000 + i, "ask_contract_id": 40_000_000 + i, "bundle_id": 900_000_000 + i,
                  "machine_id": 60_000 + i // 3, "host_id": 300_000 + i // 7}
        out.append(offer)
    return out


def replay_dir(directory: Path, n: int, seed: int = 0) -> Path:
    """A replay fixture directory whose vast.ai search serves n offers; its body file is `vastai_bundles.json`."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vastai_bundles.json").write_text(json.dumps({"offers": offers(n, seed)}))
    (directory / "replay.json").write_text(json.dumps({
        "recorded_on": "2026-11-27", "now": "2026-11-27T22:00:00",
        "routes": [{"method": "POST", "path": "/api/v0/bundles/", "file": "vastai_bundles.json"}],
    }))
    return directory
