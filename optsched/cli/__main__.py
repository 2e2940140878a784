"""``python -m optsched.cli``: the ``optsched`` command."""

import sys

from optsched.cli import main

sys.exit(main())
