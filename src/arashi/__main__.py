"""``python -m arashi``: the same as the ``arashi`` command."""

import sys

from .cli import main

sys.exit(main())
