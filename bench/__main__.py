"""Run every benchmark section in this package (or those named: `python -m bench ingest startup`).

Every section runs even when an earlier one missed its target; the exit status is non-zero when any did.
"""

import importlib
import pkgutil
import sys

import bench


def main(names: list[str]) -> int:
    sections = [m.name for m in pkgutil.iter_modules(bench.__path__) if not m.name.startswith("_")]
    unknown = sorted(set(names) - set(sections))
    if unknown:
        print(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(sections)}", file=sys.stderr)
        return 2
    missed = []
    for name in names or sections:
        try:
            importlib.import_module(f"bench.{name}").main()
        except SystemExit as exc:
            if exc.code:
                print(f"  MISSED: {exc.code}", flush=True)
                missed.append(name)
    print(f"bench: {'every target met' if not missed else 'missed in ' + ', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
