#!/usr/bin/env python3
"""Peer driver: hl7apy. parser.parse_message() (library defaults: tolerant
validation level, find_groups=True) on every HL7 v2 message in FILE.

Prints {"tool", "processed", "errors"} as one JSON line."""
import json
import sys

from hl7apy.parser import parse_message

from _peerio import iter_hl7_messages


def main(path):
    n = errors = 0
    for text in iter_hl7_messages(path):
        try:
            msg = parse_message(text)
            if msg.name is None:
                errors += 1
        except Exception:  # a parse failure counts, the run goes on
            errors += 1
        n += 1
    print(json.dumps({"tool": "hl7apy", "processed": n, "errors": errors}))


if __name__ == "__main__":
    main(sys.argv[1])
