"""`python -m flows.cli`: the same as the `gpuledger` command."""

import sys

from flows.cli.app import main

sys.exit(main())
