"""``python -m privdb`` runs the command line."""

from privdb.cli import main

main()
