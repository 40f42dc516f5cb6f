"""BigQuery's (ZetaSQL's) dialect, ``SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(…)``: its syntax, and the
DP-SELECT it asks once read against its table."""
