"""``python -m arena.ratings GAMES.jsonl [--anchor NAME=RATING] [--bootstrap N] [--seed S]``."""

import sys

from arena.ratings.fit import main

sys.exit(main())
