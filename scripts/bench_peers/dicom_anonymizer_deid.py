#!/usr/bin/env python3
"""Peer driver: dicom-anonymizer 2.1.0 (PyPI, over pydicom 3.0.2) de-identification of every file
under a directory, in this one process: dicomanonymizer.anonymize(input, output, {}, True) (its
default actions, the PS3.15 basic profile's table, private tags deleted), each output written
under target/bench/out/dicom-anonymizer/ (replaced on every run).

Prints {"tool", "processed" (files written), "errors"} as one JSON line.
"""
import json
import shutil
import sys
import warnings
from pathlib import Path

from dicomanonymizer import anonymize

OUT = Path(__file__).resolve().parents[2] / "target" / "bench" / "out" / "dicom-anonymizer"


def main():
    warnings.simplefilter("ignore")
    root = Path(sys.argv[1])
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    done = errors = 0
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        try:
            anonymize(str(f), str(OUT / f.name), {}, True)
            done += 1
        except Exception:  # noqa: BLE001 - counted, never printed
            errors += 1
    print(json.dumps({"tool": "dicom-anonymizer", "processed": done, "errors": errors}))


if __name__ == "__main__":
    main()
