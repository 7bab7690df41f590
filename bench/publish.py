"""The report's publication (`lake.publish_directory`) after one more night, at two lengths of history.

A report root of N nights (a page per model a night, ~60 KB like today's model pages, and a shared file per model
and night) is published once, then one more night is added and published again, two ways, measured in this run:
  baseline: against a manifest as the previous version wrote it (no size and times kept), so every file is read and
            hashed to find what to send: what every night did before;
  now:      against the manifest the first publication wrote: only files written since are read.
Both send the same night's files. The baseline grows with the history's bytes; now only with its count of files
(a stat and a manifest line each). CPU seconds are compared (the machine is shared).
The files are in the page cache (written moments before), so the baseline's reads are as cheap as they get.
GPULEDGER_BENCH_PUBLISH_NIGHTS (default "30,120") and GPULEDGER_BENCH_PUBLISH_MODELS (default 58) set the size.
"""

import os
import tempfile
import time
from pathlib import Path

from bench._support import verdict
from warehouse import lake

PAGE_BYTES = 60_000
SHARED_BYTES = 20_000
TIMES = 3


def _night(site: Path, night: int, models: int) -> None:
    folder = site / f"date=night-{night:04d}"
    folder.mkdir(parents=True)
    for model in range(models):
        (folder / f"model-{model}.html").write_bytes(os.urandom(PAGE_BYTES))
    (site / "shared").mkdir(exist_ok=True)
    for model in range(models):  # a model's shared data changes some nights: one new file a model and night here
        (site / "shared" / f"model-{model}-{night:04d}.js").write_bytes(os.urandom(SHARED_BYTES))
    (site / "index.html").write_bytes(os.urandom(2_000))  # the list of days, drawn every night


def _without_keys(store: lake.Store) -> None:
    """Rewrite the published manifest as the version before size and times were kept wrote it."""
    manifest = lake.read_manifest(store, "report")
    old = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    old["files"] = [{k: v for k, v in e.items() if k not in lake.STAT_FIELDS} for e in manifest["files"]]
    lake._write_manifest_then_prune(store, "report", old)


def _one_more_night(site: Path, store: lake.Store, night: int, models: int, old_manifest: bool) -> tuple[float, float]:
    _night(site, night, models)
    time.sleep(lake.RACY_NS / 1e9)  # a night's pages are settled by the next night
    lake.publish_directory(site, "report", f"run-{night}", store)  # the keys the next night finds
    if old_manifest:
        _without_keys(store)
    _night(site, night + 1, models)
    wall, cpu = time.perf_counter(), time.process_time()
    lake.publish_directory(site, "report", f"run-{night + 1}", store)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    lengths = [int(n) for n in os.environ.get("GPULEDGER_BENCH_PUBLISH_NIGHTS", "30,120").split(",")]
    models = int(os.environ.get("GPULEDGER_BENCH_PUBLISH_MODELS", "58"))
    print(f"publish: the report after one more night, {models} models a night (best of {TIMES})", flush=True)
    checks, cpus, counts = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        site, store = Path(tmp) / "site", lake.open_store(Path(tmp) / "exports")
        night = 0
        for length in lengths:
            while night < length:
                _night(site, night, models)
                night += 1
            timed = {"baseline": [], "now": []}
            for _ in range(TIMES):
                for way in timed:
                    timed[way].append(_one_more_night(site, store, night, models, way == "baseline"))
                    night += 2
            sizes = [p.stat().st_size for p in site.rglob("*") if p.is_file()]
            files, size_mb = len(sizes), sum(sizes) / 1e6
            (base_wall, base_cpu), (now_wall, now_cpu) = (min(timed[way], key=lambda t: t[1]) for way in timed)
            print(f"  {night} nights, {files:,} files ({size_mb:,.0f} MB): baseline {base_wall:.2f} s wall, "
                  f"{base_cpu:.2f} s CPU; now {now_wall:.2f} s wall, {now_cpu:.2f} s CPU "
                  f"(CPU {now_cpu / base_cpu:.2f}x)", flush=True)
            checks.append((f"now / baseline CPU at {night} nights", now_cpu / base_cpu, 0.5))
            cpus.append(now_cpu)
            counts.append(files)
    # What is left grows with the count of files (a stat and a manifest line each), not their bytes: printed, no target.
    print(f"  now, per file added to the history: {(cpus[-1] - cpus[0]) / (counts[-1] - counts[0]) * 1e6:.0f} us CPU",
          flush=True)
    verdict("publish", checks)


if __name__ == "__main__":
    main()
