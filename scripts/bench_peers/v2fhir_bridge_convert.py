#!/usr/bin/env python3
"""Peer driver: hl7v2-fhir-bridge (PyPI, module `v2fhir`), an HL7 v2 to FHIR R4 converter
(ADT A01/A04/A08/A40, ORM^O01, OMI^O23, ORU^R01) that validates every Bundle it makes with
fhir.resources (R4B models) and its own binding and invariant checks, as its `convert`
command does. Every message of FILE is parsed, converted (a fixed conversion time, as its
`--now` option, for reproducible output), validated, and written as compact JSON to an
in-memory sink (phiward writes its Bundles to stdout, sent to /dev/null by the benchmark).

Prints {"tool", "processed", "invalid", "first_error", "bytes_out"} as one JSON line:
`invalid` counts the messages it refused or whose Bundle failed its validation."""
import json
import sys
from datetime import datetime

from v2fhir.config import default_config_path, load_config
from v2fhir.convert import convert
from v2fhir.errors import HL7Error
from v2fhir.hl7.parser import parse_bytes
from v2fhir.validate import BundleInvalid, validate_bundle

from _peerio import iter_hl7_messages

NOW = datetime.fromisoformat("2024-01-01T00:00:00+00:00")


def main(path):
    cfg = load_config(default_config_path(), {})
    n = invalid = out = 0
    first = None
    for text in iter_hl7_messages(path):
        try:
            msg = parse_bytes(text.encode("utf-8"), cfg.default_charset, cfg.fallback_charsets)
            conv = convert(msg, cfg, NOW)
            validate_bundle(conv.bundle)
            out += len(json.dumps(conv.bundle, ensure_ascii=False, separators=(",", ":")))
        except (HL7Error, BundleInvalid, ValueError) as e:
            invalid += 1
            if first is None:
                first = f"{type(e).__name__}: {e}"[:300]
        n += 1
    print(json.dumps({"tool": "hl7v2-fhir-bridge", "processed": n, "invalid": invalid, "first_error": first,
                      "bytes_out": out}))


if __name__ == "__main__":
    main(sys.argv[1])
