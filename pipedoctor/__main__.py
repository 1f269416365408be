"""``python -m pipedoctor``."""

from pipedoctor.cli import main

raise SystemExit(main())
