"""``python -m specscope.app``: the ``specscope`` command (the window unless a headless command
is named)."""

import sys

from specscope.app.main import cli

sys.exit(cli())
