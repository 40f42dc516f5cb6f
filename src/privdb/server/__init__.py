"""The privdb server: the library's API over HTTP, with bearer-token authentication (DESIGN.md).

``create_app(db_dir)`` builds the FastAPI application; ``serve(...)`` runs it on uvicorn. The server holds no
privacy logic of its own: every answer goes through :func:`privdb.sql.engine.run` and its ledger.
"""

from privdb.server.app import create_app
from privdb.server.run import serve

__all__ = ["create_app", "serve"]
