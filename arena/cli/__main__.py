"""``python -m arena.cli …``: the same as the installed ``arena`` command."""

import sys

from arena.cli import main

sys.exit(main())
