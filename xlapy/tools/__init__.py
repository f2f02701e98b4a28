"""Command-line tools: `xlapy run | opt | ...`."""
