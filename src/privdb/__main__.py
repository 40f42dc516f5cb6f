"""``python -m privdb`` runs the command line (Ctrl-C while it loads is "interrupted" too)."""

import sys

try:
    from privdb.cli import main
except KeyboardInterrupt:
    sys.stderr.write("interrupted\n")
    sys.exit(130)

main()
