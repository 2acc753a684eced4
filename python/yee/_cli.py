"""The ``yee`` command installed by the wheel: the engine's own command line, in-process."""

import sys

from . import _native


def main() -> None:
    """Run ``yee`` with this process's arguments and exit with its status."""
    sys.exit(_native.main(["yee", *sys.argv[1:]]))
