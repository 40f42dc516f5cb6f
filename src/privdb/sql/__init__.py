"""DP-SELECT: parse → validate → plan → rewrite → execute → noise, one module per step."""
