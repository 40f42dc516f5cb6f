"""A parsed DP-SELECT checked against its relation: the clauses read on their own, the aggregates in
every spelling, and the validation that resolves what the query asks for."""
