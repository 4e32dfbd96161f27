#!/usr/bin/env python3
"""Peer driver: pyx12 4.0.0 implementation-guide validation of FILE, as its `x12valid` console
script does it: pyx12.x12n_document.x12n_document() with the default parameters, writing the
997/999 acknowledgment (to /dev/null here). pyx12 reads the whole file (every interchange) in
one call and answers valid or not.

Prints {"tool", "processed" (transaction sets: ST segments in FILE), "invalid"} as one JSON line.
"""
import json
import logging
import os
import sys

import pyx12.params
import pyx12.x12n_document


def count_sets(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 106 or not data.startswith(b"ISA"):
        return 0
    ele, term = data[3:4], data[105:106]
    return data.count(term + b"ST" + ele) + data.count(term + b"\nST" + ele) + data.count(term + b"\r\nST" + ele)


def main():
    path = sys.argv[1]
    logging.getLogger("pyx12").setLevel(logging.CRITICAL)
    param = pyx12.params.params()
    with open(os.devnull, "w") as ack:
        ok = pyx12.x12n_document.x12n_document(param=param, src_file=path, fd_997=ack, fd_html=None)
    print(json.dumps({"tool": "pyx12", "processed": count_sets(path), "invalid": 0 if ok else 1}))


if __name__ == "__main__":
    main()
