"""``python -m stickyflow``: the same command line as ``stickyflow``."""

from stickyflow.adapters.cli import main

raise SystemExit(main())
