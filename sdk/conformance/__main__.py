"""``python -m sdk.conformance``: see :mod:`sdk.conformance.cli`."""

import sys

from sdk.conformance.cli import main

sys.exit(main())
