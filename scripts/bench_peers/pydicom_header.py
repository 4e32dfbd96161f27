#!/usr/bin/env python3
"""Peer driver: pydicom 3.0.2 header read of FILE or of every file under a directory, in this one
process: pydicom.dcmread(stop_before_pixels=True), every element of the dataset and its
sequences visited (what `phiward inspect` counts).

Prints {"tool", "processed" (files read), "errors" (files pydicom could not read)} as one JSON
line (no value of a file).
"""
import json
import sys
import warnings
from pathlib import Path

import pydicom


def main():
    warnings.simplefilter("ignore")
    root = Path(sys.argv[1])
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    done = errors = 0
    for f in files:
        try:
            ds = pydicom.dcmread(str(f), stop_before_pixels=True)
            sum(1 for _ in ds.iterall())
            done += 1
        except Exception:  # noqa: BLE001 - counted, never printed (a message can quote a value)
            errors += 1
    print(json.dumps({"tool": "pydicom", "processed": done, "errors": errors}))


if __name__ == "__main__":
    main()
