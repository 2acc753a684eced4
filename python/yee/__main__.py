"""``python -m yee ...``: the same command line as ``yee ...``."""

from ._cli import main

main()
