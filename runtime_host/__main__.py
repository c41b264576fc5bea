"""`python -m runtime_host`: the headless pod and its CLI."""

import sys

from runtime_host.cli import main

sys.exit(main())
