"""``python -m l4sim`` = the ``l4sim`` command."""

import sys

from l4sim.cli import main

sys.exit(main())
