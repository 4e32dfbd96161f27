#!/usr/bin/env python3
"""Generate phiward's table of the FHIR cross-version extensions (``hl7.fhir.xver-extensions``).

A cross-version extension carries an element of another FHIR version in an R4 resource: its url
is ``http://hl7.org/fhir/V/StructureDefinition/extension-PATH``, V the other version's
major.minor (``1.0`` DSTU2, ``1.4`` the May 2016 STU3 ballot, ``3.0`` STU3, ``4.0`` R4, ``5.0``
R5) and PATH the element's path there (``Patient.animal``). The reference validator
(``XVerExtensionManager``) makes the extension's definition from the file
``other/xver-paths-V.json`` of the npm package ``hl7.fhir.xver-extensions`` (CC0): for each
element path of version V its types, its child element names and whether it is a modifier. This
script reads those files (0.1.0, the version the reference validator loads) and writes, under
``src/formats/fhir/definitions/``:

* ``xver.txt``: per version, the paths the reference can make a definition of (those with types
  or child elements; a path listed without either is an element unchanged in R4, which needs
  no extension and is refused as such), sorted; for each, whether it is a modifier, the value
  types (as the reference takes them: a type R4 already had for the element, written ``!T`` in
  the file, is left out, and a reference's target list ``(A|B)`` is dropped; ``*`` when none
  is left, as the definition then restricts nothing), and for a complex element its parts: the
  child names that have types themselves (the sub-extensions the definition slices; a choice
  element's name without ``[x]``: ``value`` for ``value[x]``). Decoded by
  ``src/formats/fhir/xver.rs`` on the first cross-version extension it checks;
* the section "Cross-version extensions" of ``PROVENANCE.md`` (package, version, sha256 of the
  archive and of the files read), kept last in the file by the other FHIR generators.

The file ``xver-paths-r2.json`` is not read: the reference takes the version from the url's
three characters after ``http://hl7.org/fhir/`` (a digit, a dot, a digit), and ``r2`` is not one.

Install the source first (never globally; the build never needs the network):

    npm pack --pack-destination target/gen-npm-fhir-xver hl7.fhir.xver-extensions@0.1.0
    mkdir -p target/gen-npm-fhir-xver/hl7.fhir.xver-extensions
    tar -xzf target/gen-npm-fhir-xver/hl7.fhir.xver-extensions-0.1.0.tgz \\
        -C target/gen-npm-fhir-xver/hl7.fhir.xver-extensions
    python3 tools/gen_fhir_xver.py

(``scripts/check-generated fhirxver`` does both, checking the archive's sha256.)

Python 3.11, standard library only. Deterministic: same sources, same bytes.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "src" / "formats" / "fhir" / "definitions"
PACKAGE = "hl7.fhir.xver-extensions"
PACKAGE_VERSION = "0.1.0"
PREFIX = REPO / "target" / "gen-npm-fhir-xver"
ARCHIVE = PREFIX / f"{PACKAGE}-{PACKAGE_VERSION}.tgz"
SRC = PREFIX / PACKAGE / "package"
# The versions the url names (a digit, a dot, a digit), each with its file.
VERSIONS = ["1.0", "1.4", "3.0", "4.0", "5.0"]
SECTION = "## Cross-version extensions"
# R4's profiles of Quantity the files name as types: an R4 value of them is a Quantity.
PROFILED_TYPES = {"SimpleQuantity": "Quantity", "MoneyQuantity": "Quantity"}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def value_types(entry: dict) -> str:
    """The value types the reference's definition allows (its `populateTypes`)."""
    out: list[str] = []
    for t in entry.get("types", []):
        if t.startswith("!"):
            continue
        t = t.split("(", 1)[0]
        t = PROFILED_TYPES.get(t, t)
        if t and t not in out:
            out.append(t)
    return ",".join(out) or "*"


def lookup(paths: dict, path: str) -> dict | None:
    """The entry of `path`, or of its choice form `path[x]` (as the reference looks it up)."""
    entry = paths.get(path)
    if entry is None:
        entry = paths.get(path + "[x]")
    return entry if isinstance(entry, dict) else None


def rows_of(paths: dict) -> tuple[list[str], int, int, int, int]:
    """The rows of one version: an `R` line per type (resource or data type), then its paths
    relative to it; and the counts of paths, complex ones, parts, modifiers."""
    rows, n, complex_count, parts_count, modifiers = [], 0, 0, 0, 0
    current = None
    for path in sorted(p for p, e in paths.items() if isinstance(e, dict) and "." in p):
        entry = paths[path]
        head, rel = path.split(".", 1)
        flag = "m" if entry.get("modifier") is True else ""
        if "types" in entry:
            row = f"{rel}\t{flag}\t{value_types(entry)}"
        elif "elements" in entry:
            parts = []
            for name in entry["elements"]:
                child = lookup(paths, f"{path}.{name}")
                # The sub-extension's url is the child's name without its choice suffix
                # (`value` for `value[x]`, as the reference's definitions name the slice).
                name = name.removesuffix("[x]")
                if child is not None and "types" in child and name not in parts:
                    parts.append(name)
            row = f"{rel}\t{flag}\t\t{','.join(parts)}"
            complex_count += 1
            parts_count += len(parts)
        else:
            continue
        if head != current:
            rows.append(f"R\t{head}")
            current = head
        rows.append(row)
        n += 1
        modifiers += flag == "m"
    return rows, n, complex_count, parts_count, modifiers


def main() -> int:
    if not (SRC / "package.json").is_file():
        raise SystemExit(f"{SRC} not found: install it first (see the docstring)")
    pkg = json.loads((SRC / "package.json").read_text(encoding="utf-8"))
    if (pkg["name"], pkg["version"]) != (PACKAGE, PACKAGE_VERSION):
        raise SystemExit(f"{SRC} holds {pkg['name']} {pkg['version']}, not {PACKAGE} {PACKAGE_VERSION}")
    out = [
        f"# phiward: the cross-version extension paths of {PACKAGE} {PACKAGE_VERSION} (other/xver-paths-V.json).",
        "# Generated by tools/gen_fhir_xver.py; do not edit.",
        "# V<TAB>version: the lines that follow are of that version (the url's segment after http://hl7.org/fhir/).",
        "# R<TAB>type: the paths that follow are of that resource or data type (sorted, relative to it).",
        "# path<TAB>m if a modifier<TAB>value types (comma-separated; * any), empty for a complex element"
        "[<TAB>its parts (comma-separated)]",
    ]
    read, counts = {}, []
    for v in VERSIONS:
        path = SRC / "other" / f"xver-paths-{v}.json"
        read[path.name] = sha256(path)
        paths = json.loads(path.read_text(encoding="utf-8"))
        rows, n, complex_count, parts_count, modifiers = rows_of(paths)
        out.append(f"V\t{v}")
        out.extend(rows)
        counts.append((v, n, complex_count, parts_count, modifiers))
    (OUT / "xver.txt").write_text("\n".join(out) + "\n", encoding="utf-8")

    digest = hashlib.sha256()
    for name in sorted(read):
        digest.update(f"{name}\t{read[name]}\n".encode())
    archive = sha256(ARCHIVE) if ARCHIVE.is_file() else "(archive not found beside the install)"
    table = "\n".join(f"| {v} | {n} | {c} | {p} | {m} |" for v, n, c, p, m in counts)
    section = f"""{SECTION}

`xver.txt` is generated by `tools/gen_fhir_xver.py` (this section too); do not edit it by hand.
`xver.rs` (one folder up) decodes it.

| package | registry | version | licence |
| --- | --- | --- | --- |
| `{pkg['name']}` | npm | {pkg['version']} | {pkg.get('license')} |

sha256 of the archive `{ARCHIVE.name}`: `{archive}`

Files read: `other/xver-paths-{{{','.join(VERSIONS)}}}.json`. sha256 over the sorted lines
`file name<TAB>sha256 of the file`: `{digest.hexdigest()}`

| version (url segment) | paths | complex | parts | modifiers |
| --- | --- | --- | --- | --- |
{table}

Install and regenerate:

    npm pack --pack-destination target/gen-npm-fhir-xver {PACKAGE}@{PACKAGE_VERSION}
    mkdir -p target/gen-npm-fhir-xver/{PACKAGE}
    tar -xzf target/gen-npm-fhir-xver/{ARCHIVE.name} -C target/gen-npm-fhir-xver/{PACKAGE}
    python3 tools/gen_fhir_xver.py

or `scripts/check-generated fhirxver`, which checks the archive's sha256 against its pin.
"""
    prov = OUT / "PROVENANCE.md"
    text = prov.read_text(encoding="utf-8")
    if SECTION in text:
        text = text[: text.index(SECTION)]
    prov.write_text(text.rstrip("\n") + "\n\n" + section, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
