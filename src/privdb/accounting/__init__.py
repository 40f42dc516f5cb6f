"""Privacy budgets: a durable, atomic ledger with exact arithmetic, and zCDP conversions."""
