"""``python -m contrastkit.results [FOLDER]``: write the JSON Schemas of the result trees
into FOLDER (default ``docs/schemas``)."""

from __future__ import annotations

import sys

from contrastkit.results.schema import write_schemas

if __name__ == "__main__":  # pragma: no cover
    for written in write_schemas(sys.argv[1] if len(sys.argv) > 1 else "docs/schemas"):
        print(written)
