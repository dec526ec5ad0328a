"""``python -m haboob``: the same as the ``haboob`` command."""

import sys

from .cli import main

sys.exit(main())
