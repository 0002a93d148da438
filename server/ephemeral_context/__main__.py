"""`python -m ephemeral_context` is the same as the `ectx` command."""

from ephemeral_context.cli import main

raise SystemExit(main())
