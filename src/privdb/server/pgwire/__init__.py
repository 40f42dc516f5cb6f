"""PostgreSQL's wire protocol in front of privdb (``privdb serve --pg-port``): psql, DBeaver, Metabase,
pandas, SQLAlchemy and JDBC connect as to a PostgreSQL server (docs/clients.md).

    listener  the TCP server (a thread per admitted client), TLS
    admission max_connections, authentication_timeout, auth_delay: nothing grows with connections
    wire      the socket and pygwire's codec: messages in (bounded), messages out
    startup   start-up and password within --pg-auth-timeout, a session slot, the backend key
    protocol  the simple and extended query cycles of an authenticated session
    session   what a statement is and who answers it (privdb.api.Connection, the catalog, the settings)
    catalog   pg_catalog / information_schema answered from shared empty shadows of the granted tables
    catalog_language  the closed language catalog queries (and table-less SELECTs) are written in
    settings  SET / SHOW / RESET and the reported parameters
    params    bind parameters written into the statement as literals
    literals  one parameter's value as one literal of its type
    portals   Describe's row descriptions and Execute's pages, as PostgreSQL sends them
    running   the statement each session runs, marked by a cancel request (57014)
    encoding  result columns' types and values on the wire
    errors    privdb's error codes as SQLSTATEs
    names     result columns named as PostgreSQL names them (AVG(age) → avg)

Needs the ``pg`` extra (``pip install 'privdb[pg]'``).
"""

from __future__ import annotations

from privdb.server.pgwire.admission import Limits
from privdb.server.pgwire.listener import PgServer, tls_context

__all__ = ["Limits", "PgServer", "tls_context"]
