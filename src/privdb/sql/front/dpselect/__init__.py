"""privdb's own dialect, ``DP-SELECT ε [DELTA δ] …``: its parse (with BigQuery's spelling read by
privdb.sql.front.bigquery) and the plain-words hints for SQL a newcomer writes that it cannot take."""
