"""``python -m optsched``: the command-line interface, as the ``optsched`` command."""

import sys

from optsched.cli import main

sys.exit(main())
