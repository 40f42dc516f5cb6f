"""The parts of bench.pgwire_soak: raw PostgreSQL messages (wire), the hostile clients (hostile), the honest
analysts (honest), the server's file descriptors, threads and memory over time (watch), and the plot
(plot)."""
