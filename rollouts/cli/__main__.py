"""``python -m rollouts.cli``: the ``gamebridge`` command."""

import sys

from rollouts.cli import main

sys.exit(main())
