"""`python -m ntdd` runs the command-line tool."""

import sys

from ntdd.commands.cli import main

sys.exit(main())
