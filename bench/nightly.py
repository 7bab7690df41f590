"""The nightly job on the bundled recordings: bare (--no-prefect), with Prefect's ephemeral server, and with a
Prefect server already up (how `gpuledger serve` runs it).

Each run is a whole `gpuledger nightly` process against the replay server, pacing off, exports included.
Baseline: the bare steps. Target: a run against the running server adds at most 5 s to them.
"""

import os
import tempfile
from pathlib import Path

from bench._support import GPULEDGER, ROOT, free_port, replay_server, run, verdict

MAX_SERVED_EXTRA_S = 5.0


def main() -> None:
    from flows import prefect_env
    from flows.replay.demo import DEMO_ENV, FAST

    print("nightly: `gpuledger nightly` on the bundled recordings, whole process")
    with tempfile.TemporaryDirectory(prefix="gpuledger-bench-") as tmp:
        home = Path(tmp) / "home"
        env = {"GPULEDGER_HOME": str(home), "GPULEDGER_EXPORTS": str(Path(tmp) / "exports"),
               "PREFECT_HOME": str(home / "prefect")} | DEMO_ENV | FAST
        with replay_server(ROOT / "tests" / "fixtures" / "sources") as replay:
            env |= replay
            run([*GPULEDGER, "init"], env)
            bare = run([*GPULEDGER, "nightly", "--no-prefect"], env)
            ephemeral = run([*GPULEDGER, "nightly"], env)
            os.environ.update({"GPULEDGER_HOME": str(home), "PREFECT_HOME": str(home / "prefect")})
            server = prefect_env.start_local_server(free_port())
            try:
                api = {"PREFECT_API_URL": os.environ.pop("PREFECT_API_URL")}
                run([*GPULEDGER, "nightly"], env | api)  # the first flow run registers the flow
                served = run([*GPULEDGER, "nightly"], env | api)
            finally:
                server.terminate()
                server.wait(timeout=60)
    print(f"  --no-prefect (bare steps)          {bare.wall_s:6.1f}s")
    print(f"  Prefect, ephemeral server          {ephemeral.wall_s:6.1f}s")
    print(f"  Prefect, server already up (serve) {served.wall_s:6.1f}s")
    verdict("nightly", [("served run - bare steps, s", served.wall_s - bare.wall_s, MAX_SERVED_EXTRA_S)])
