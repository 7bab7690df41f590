"""`make demo`: the nightly flow against the replay server on the bundled recordings, both tables, the report.

The run is dated with the recordings' day (the replay pins GPULEDGER_NOW) and goes into the usual warehouse
and exports, so every command (and `duckdb` on the exports) can be tried on it afterwards.
"""

import os
import shutil
import sys
from pathlib import Path

from typer.testing import CliRunner

RECORDINGS = Path(__file__).parents[2] / "tests" / "fixtures" / "sources"
# Placeholder credentials so the Verda OAuth path is exercised; the replay accepts any.
DEMO_ENV = {"VERDA_CLIENT_ID": "demo-client", "VERDA_CLIENT_SECRET": "demo-secret-not-real"}
# Recorded responses need no politeness delays.
FAST = {f"GPULEDGER_{source.upper()}_MIN_INTERVAL_S": "0" for source in ("fx", "vastai", "runpod", "verda", "skypilot", "openrouter")}


def main() -> int:
    import flows.nightly  # noqa: F401  (Prefect sets its log handlers up on the real stderr, not the runner's)
    from flows.replay.server import ReplayServer

    if sys.stdout.isatty() and "COLUMNS" not in os.environ:
        # the commands draw for this terminal: under the runner their stdout is a capture, which reads as a pipe
        os.environ["COLUMNS"] = str(shutil.get_terminal_size().columns)
    with ReplayServer(RECORDINGS) as server:
        os.environ.update(server.env() | DEMO_ENV | FAST)
        from flows.cli.app import app

        runner = CliRunner()
        steps = [
            ["init"],
            ["nightly"],
            ["table", "--model", "deepseek-v4.1-flash", "--style", "estimate"],
            ["table", "--model", "deepseek-v4-flash", "--style", "calculator", "--fleet", "1000xH200 SXM",
             "--target-tok-s", "1000"],
            ["status", "--runs", "3"],
            ["report"],
        ]
        for args in steps:
            print(f"\n$ gpuledger {' '.join(args)}", flush=True)
            result = runner.invoke(app, args, catch_exceptions=False)
            sys.stdout.write(result.output)
            if result.exit_code:
                return result.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
