"""A DP-SELECT's FROM clause as one relation: the model (a virtual table with its own public metadata),
built from tables, public joins, private joins on the unit and per-unit subqueries."""
