#!/usr/bin/env python3
"""Peer driver: python-hl7 (PyPI `hl7`). hl7.parse() on every HL7 v2 message in FILE.

Prints {"tool", "processed", "segments"} as one JSON line."""
import json
import sys

import hl7

from _peerio import iter_hl7_messages


def main(path):
    n = segs = 0
    for text in iter_hl7_messages(path):
        msg = hl7.parse(text)
        segs += len(msg)
        n += 1
    print(json.dumps({"tool": "python-hl7", "processed": n, "segments": segs}))


if __name__ == "__main__":
    main(sys.argv[1])
