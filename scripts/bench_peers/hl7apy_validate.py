#!/usr/bin/env python3
"""Peer driver: hl7apy validation. parse_message(..., VALIDATION_LEVEL.STRICT,
find_groups=True) then Message.validate() (structure, cardinality, datatypes,
lengths, tables) on every HL7 v2 message in FILE.

Prints {"tool", "processed", "invalid", "first_error"} as one JSON line."""
import json
import sys

from hl7apy.consts import VALIDATION_LEVEL
from hl7apy.parser import parse_message

from _peerio import iter_hl7_messages


def main(path):
    n = invalid = 0
    first = None
    for text in iter_hl7_messages(path):
        try:
            msg = parse_message(text, validation_level=VALIDATION_LEVEL.STRICT, find_groups=True)
            msg.validate()
        except Exception as e:  # ValidationError, ParserError, ...
            invalid += 1
            if first is None:
                first = f"{type(e).__name__}: {e}"[:300]
        n += 1
    print(json.dumps({"tool": "hl7apy", "processed": n, "invalid": invalid, "first_error": first}))


if __name__ == "__main__":
    main(sys.argv[1])
