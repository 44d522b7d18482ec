"""``python -m h5turbo`` and the ``h5turbo`` console script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
