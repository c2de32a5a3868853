"""`python -m tilec`: the same as the `tilec` command."""

from tilec.cli import main

raise SystemExit(main())
