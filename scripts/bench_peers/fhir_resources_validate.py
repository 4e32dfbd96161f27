#!/usr/bin/env python3
"""Peer driver: fhir.resources (pydantic models). Validates every FHIR resource
in FILE (NDJSON lines, or one resource such as a Bundle, whose entries are
validated as nested models) with Model.model_validate_json().

fhir.resources 8.x ships R5 (default), R4B and STU3 models but no 4.0.1 (R4)
package; the R4B models are the closest to R4 and are used here.

Prints {"tool", "processed", "invalid", "first_error"} as one JSON line."""
import json
import re
import sys

from fhir.resources.R4B import get_fhir_model_class

from _peerio import iter_fhir_resources

RT = re.compile(rb'"resourceType"\s*:\s*"([A-Za-z]+)"')


def main(path):
    n = invalid = 0
    first = None
    for raw in iter_fhir_resources(path):
        try:
            m = RT.search(raw)
            if not m:
                raise ValueError("no resourceType")
            cls = get_fhir_model_class(m.group(1).decode())
            cls.model_validate_json(raw)
        except Exception as e:  # pydantic.ValidationError, KeyError, ...
            invalid += 1
            if first is None:
                first = f"{type(e).__name__}: {e}"[:300]
        n += 1
    print(json.dumps({"tool": "fhir.resources", "processed": n, "invalid": invalid, "first_error": first}))


if __name__ == "__main__":
    main(sys.argv[1])
