"""``python -m privdb.cli.warm SOCKET SEARCH_PATH_JSON``: the warm process (started by ``privdb`` itself)."""

import json
import sys

from privdb.cli.warm.server import serve

if len(sys.argv) == 3:
    serve(sys.argv[1], list(json.loads(sys.argv[2])))
