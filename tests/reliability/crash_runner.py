"""A pipeline runner for the kill test: it imports everything once, then forks one child per `run` line.

Each child runs the pipeline exactly as `gpuledger nightly --no-prefect` does and prints its phase markers
on stdout; the parent prints the child's pid, then its exit status. The test SIGKILLs children mid-run.
The parent never runs pipeline code itself, so no library has started threads before a fork.
"""

import logging
import os
import sys

import pandas  # noqa: F401  pyarrow loads it on a night's first table built from Python objects (~0.8 s a child)
import plotly.offline  # noqa: F401  the report's asset, which the pipeline imports lazily (as flows.report)

from flows import pipeline, report  # noqa: F401  report: imported by the pipeline only when it draws the pages


def main() -> None:
    for line in sys.stdin:
        if line.strip() != "run":
            continue
        pid = os.fork()
        if pid == 0:
            logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="%(message)s")
            logging.getLogger("gpuledger.pipeline").setLevel(logging.INFO)
            sys.stdout.reconfigure(line_buffering=True)
            try:
                pipeline.run(trigger="test")
                code = 0
            except BaseException as exc:  # the test reads the reason from stdout
                print(f"error {type(exc).__name__}: {exc}", flush=True)
                code = 1
            os._exit(code)
        print(f"pid {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"exit {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    main()
