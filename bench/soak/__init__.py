"""The parts of bench.pgwire_soak: raw PostgreSQL messages (wire), the hostile clients (hostile) and their
tallies (tally), the honest analysts (honest), the server's file descriptors, threads and memory over time
(watch), the report's tables (tables) and the plot (plot)."""
