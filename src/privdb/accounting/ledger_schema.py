"""The ledger's tables: the schema a new ledger is created with (budgets, spends, caps, the draws a spend
makes on caps, group members, personalised classes' losses) and the columns added since its first release,
which opening an older ledger adds. Written in SQLite's SQL; privdb.accounting.sqlstore translates it for
PostgreSQL. The logic that reads and writes these rows is privdb.accounting.ledger and .shared.
"""

from __future__ import annotations

__all__ = ["ADDED", "SCHEMA"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS budgets (
    analyst        TEXT NOT NULL,
    database       TEXT NOT NULL,
    epsilon_total  TEXT NOT NULL,
    delta_total    TEXT NOT NULL,
    epsilon_spent  TEXT NOT NULL,
    delta_spent    TEXT NOT NULL,
    PRIMARY KEY (analyst, database)
);
CREATE TABLE IF NOT EXISTS spends (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    analyst    TEXT NOT NULL,
    database   TEXT NOT NULL,
    epsilon    TEXT NOT NULL,
    delta      TEXT NOT NULL,
    rho        REAL,
    gdelta     TEXT,
    gcharge    TEXT,
    state      TEXT NOT NULL CHECK (state IN ('reserved', 'committed', 'released')),
    note       TEXT NOT NULL DEFAULT '',
    pid        INTEGER NOT NULL,
    created    REAL NOT NULL,
    settled    REAL,
    owner      TEXT,
    unread     INTEGER,
    ended      TEXT
);
CREATE TABLE IF NOT EXISTS caps (
    kind           TEXT NOT NULL CHECK (kind IN ('table', 'group')),
    name           TEXT NOT NULL,
    database       TEXT NOT NULL,
    epsilon_total  TEXT NOT NULL,
    delta_total    TEXT NOT NULL,
    epsilon_spent  TEXT NOT NULL,
    delta_spent    TEXT NOT NULL,
    period         REAL,
    window_start   REAL,
    PRIMARY KEY (kind, name, database)
);
CREATE TABLE IF NOT EXISTS draws (
    spend_id  INTEGER NOT NULL REFERENCES spends (id),
    kind      TEXT NOT NULL,
    name      TEXT NOT NULL,
    epsilon   TEXT,
    gcharge   TEXT
);
CREATE INDEX IF NOT EXISTS draws_of_spend ON draws (spend_id);
CREATE INDEX IF NOT EXISTS draws_on_cap ON draws (kind, name);
CREATE TABLE IF NOT EXISTS members (
    analyst   TEXT NOT NULL,
    database  TEXT NOT NULL,
    grp       TEXT NOT NULL,
    PRIMARY KEY (analyst, database)
);
CREATE INDEX IF NOT EXISTS spends_of_analyst ON spends (analyst, database);
CREATE INDEX IF NOT EXISTS spends_reserved ON spends (state) WHERE state = 'reserved';
CREATE TABLE IF NOT EXISTS class_losses (
    spend_id  INTEGER NOT NULL,
    tbl       TEXT NOT NULL,
    class     TEXT NOT NULL,
    epsilon   TEXT NOT NULL
);
"""


# columns added after the first release of the schema, for ledgers made before them: zCDP accounting of
# Gaussian answers (spends), renewal windows (caps), what each draw charged its cap (draws; NULL in a
# draw made before: it drew its spend's ε, which is what is read for it), and a reservation's process
# (owner: privdb.accounting.owners), whether it has reached its read (unread: 1 until it has) and how a dead
# process's spend was settled (ended); NULL in a spend made before: its process is unknown, and it counts
# as read (privdb.accounting.restart)
ADDED = (
    ("spends", "gdelta", "TEXT"),
    ("spends", "gcharge", "TEXT"),
    ("caps", "period", "REAL"),
    ("caps", "window_start", "REAL"),
    ("draws", "epsilon", "TEXT"),
    ("draws", "gcharge", "TEXT"),
    ("spends", "owner", "TEXT"),
    ("spends", "unread", "INTEGER"),
    ("spends", "ended", "TEXT"),
)
