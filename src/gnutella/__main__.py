"""``python -m gnutella``: the same as the ``gnutella`` command."""

import sys

from .cli import main

sys.exit(main())
