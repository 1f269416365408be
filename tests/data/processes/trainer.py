"""The trainer a launcher starts: it trains and saves over the user's model."""

import sys
from pathlib import Path

Path(sys.argv[1] if len(sys.argv) > 1 else "model.keras").write_text("weights trained for real")
