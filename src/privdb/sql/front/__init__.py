"""Front: a DP-SELECT's text to a checked relation — the parse, the closed expression language, the FROM
clause as one relation (joins, per-unit subqueries), the aggregates and formulas it asks for, validated
against the public metadata. Nothing here reads data, plans noise or knows an engine's dialect."""
