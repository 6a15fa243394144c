"""``python -m service``: the same as the ``streamlda`` command."""

import sys

from service.cli import main

sys.exit(main())
