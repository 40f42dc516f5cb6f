"""Record release: ``DP-SELECT ε col1, col2 FROM t`` releases randomised records (a mode beside the
aggregate path, with its own plan, SQL and randomiser)."""
