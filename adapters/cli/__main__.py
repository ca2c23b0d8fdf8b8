"""``python -m stickyflow.adapters.cli``: the same command line as ``stickyflow`` (as when cli was one module)."""

from stickyflow.adapters.cli import main

raise SystemExit(main())
