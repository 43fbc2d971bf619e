"""``python -m minijs``: the same as the ``minijs`` command."""
import sys

from minijs.cli import main

if __name__ == "__main__":
    sys.exit(main())
