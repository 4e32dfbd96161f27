#!/usr/bin/env python3
"""Generate phiward's compact FHIR R4 (4.0.1) definition tables.

Reads the official FHIR R4 (4.0.1) core definitions (StructureDefinitions of the
data types, resources and core extensions, ValueSets and CodeSystems; CC0) as
published by HL7 in the npm package ``hl7.fhir.r4.examples`` 4.0.1 (the R4
build's own conformance resources, one file each, beside its examples; the
package ``hl7.fhir.r4.core`` is not on the npm registry) and writes, under
``src/formats/fhir/definitions/``:

* ``structures.txt``: one section per type (primitive, complex, resource), one
  line per element of its snapshot (relative path, cardinality, types, binding,
  invariants, content reference, XML representation), the primitive regexes,
  and the invariants (key, severity, FHIRPath expression), deduplicated;
* ``valuesets.txt``: the expansions of the value sets bound with strength
  required, extensible or preferred that can be expanded from the bundled code
  systems alone (value sets that need SNOMED CT, LOINC, UCUM, BCP-47, MIME
  types... are listed as not expandable);
* ``extensions.txt``: the core extension definitions (url, modifier or not,
  contexts, the cardinality and types of the value, and for a complex extension
  each part: its name, cardinality and value types);
* ``searchparams.txt``: the core search parameters (one line each: id, whose canonical is
  ``http://hl7.org/fhir/SearchParameter/<id>``, type and base resource types), which a
  SearchParameter's ``derivedFrom`` and a CapabilityStatement's ``searchParam.definition``
  name;
* ``codesystems.txt``: the concept codes of the core code systems in the FHIR namespace
  (``http://hl7.org/fhir/``) whose content is complete, version 4.0.1 (the reference
  validator checks every Coding of such a system against them, whatever the binding);
* ``vitalsigns.json``: the R4 vital signs profiles (``vitalsigns`` and the ten
  profiles derived from it), their snapshots reduced to what the profile checks
  read, and the value sets they bind that the tables above cannot expand (UCUM
  units and LOINC codes, enumerated): the R4 specification requires an
  Observation with a vital sign code to conform to its profile (Observation,
  section 2.1.3.1.1), so the validator applies them without a package;
* ``PROVENANCE.md``: package, version, sha256 of its archive and of the files
  read, and what was left out.

The line format is documented in ``src/formats/fhir/definitions.rs``, which
decodes these files lazily (per type, per value set) at run time.

Install the source first (never globally; the build never needs the network):

    npm pack --pack-destination target/gen-npm-fhir-r4 hl7.fhir.r4.examples@4.0.1
    npm install --prefix target/gen-npm-fhir-r4 target/gen-npm-fhir-r4/hl7.fhir.r4.examples-4.0.1.tgz
    python3 tools/gen_fhir_tables.py

(``scripts/check-generated fhir`` does both, checking the archive's sha256.)

Python 3.11, standard library only. Deterministic: same sources, same bytes.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "src" / "formats" / "fhir" / "definitions"
PACKAGE = "hl7.fhir.r4.examples"
PACKAGE_VERSION = "4.0.1"
PREFIX = REPO / "target" / "gen-npm-fhir-r4"
ARCHIVE = PREFIX / f"{PACKAGE}-{PACKAGE_VERSION}.tgz"
SRC = PREFIX / "node_modules" / PACKAGE
INSTALL = (f"npm pack --pack-destination target/gen-npm-fhir-r4 {PACKAGE}@{PACKAGE_VERSION} && "
           f"npm install --prefix target/gen-npm-fhir-r4 target/gen-npm-fhir-r4/{PACKAGE}-{PACKAGE_VERSION}.tgz "
           "(or: scripts/check-generated fhir)")
READ: set[str] = set()  # the file names read, for PROVENANCE.md
VS_LINES: list[str] = []  # the lines of valuesets.txt, once written
FHIR_VERSION = "4.0.1"
STRENGTHS = {"required": "R", "extensible": "E", "preferred": "P"}
SYSTEM_TYPES = {
    "http://hl7.org/fhirpath/System.String": "string",
    "http://hl7.org/fhirpath/System.Boolean": "boolean",
    "http://hl7.org/fhirpath/System.Integer": "integer",
    "http://hl7.org/fhirpath/System.Decimal": "decimal",
    "http://hl7.org/fhirpath/System.Date": "date",
    "http://hl7.org/fhirpath/System.DateTime": "dateTime",
    "http://hl7.org/fhirpath/System.Time": "time",
}
FHIR_TYPE_EXT = "http://hl7.org/fhir/StructureDefinition/structuredefinition-fhir-type"
REGEX_EXT = "http://hl7.org/fhir/StructureDefinition/regex"


def load(name):
    with open(SRC / name, encoding="utf-8") as f:
        return json.load(f)


def resources(resource_type):
    """Every ``<resource_type>-*.json`` of the package (one resource each), in file name order."""
    out = []
    for path in sorted(SRC.glob(f"{resource_type}-*.json")):
        r = load(path.name)
        if r.get("resourceType") == resource_type:
            READ.add(path.name)
            out.append(r)
    return out


def clean(text: str) -> str:
    """One line, no tab: the table is tab separated."""
    return " ".join(text.replace("\t", " ").split())


def structure_definitions():
    skipped = []
    out = []
    for sd in resources("StructureDefinition"):
        if sd.get("type") == "Extension" and sd.get("derivation") == "constraint":
            continue  # an extension definition: extensions.txt
        if sd.get("fhirVersion") != FHIR_VERSION:
            skipped.append(f"{sd['id']} (fhirVersion {sd.get('fhirVersion')}, not {FHIR_VERSION})")
            continue
        if sd["kind"] == "logical":
            skipped.append(f"{sd['id']} (logical model)")
            continue
        if sd.get("derivation") == "constraint":
            skipped.append(f"{sd['id']} (a profile of {sd['type']}, not a type)")
            continue
        out.append(sd)
    return out, skipped


def type_code(sd, el, t):
    code = t["code"]
    if code in SYSTEM_TYPES:
        fhir = next((x.get("valueUrl") for x in t.get("extension", []) if x["url"] == FHIR_TYPE_EXT), None)
        # Resource.id is of type id (the R4 snapshots say System.String/string).
        if sd["kind"] == "resource" and el["path"].count(".") == 1 and el["path"].endswith(".id"):
            return "id"
        if sd["kind"] == "primitive-type" and el["path"].endswith(".value"):
            return "@" + SYSTEM_TYPES[code]
        return fhir or SYSTEM_TYPES[code]
    return code


def kind_letter(sd):
    if sd["kind"] == "primitive-type":
        return "p"
    if sd["kind"] == "complex-type":
        return "c"
    return "a" if sd.get("abstract") else "r"


def main() -> int:
    if not SRC.is_dir():
        print(f"missing {SRC}: run {INSTALL}", file=sys.stderr)
        return 1
    sds, skipped = structure_definitions()
    sds.sort(key=lambda s: s["id"])
    constraints: dict[tuple, int] = {}
    constraint_rows = []
    bindings: dict[str, int] = {}
    regexes = {}
    lines = []
    for sd in sds:
        name = sd["id"]
        base = (sd.get("baseDefinition") or "").rsplit("/", 1)[-1] or "-"
        elements = sd["snapshot"]["element"]
        lines.append(f"T\t{name}\t{kind_letter(sd)}\t{base}\t{len(elements)}")
        for el in elements:
            path = el["path"]
            rel = path[len(name) + 1:] if path != name else ""
            types = []
            for t in el.get("type", []):
                code = type_code(sd, el, t)
                if code.startswith("@"):
                    rx = next((x.get("valueString") for x in t.get("extension", []) if x["url"] == REGEX_EXT), None)
                    if rx:
                        regexes[name] = rx
                    code = code[1:]
                if code not in types:
                    types.append(code)
            binding = "-"
            bd = el.get("binding")
            if bd and bd.get("valueSet") and bd["strength"] in STRENGTHS:
                url = bd["valueSet"].split("|")[0]
                idx = bindings.setdefault(url, len(bindings))
                binding = f"{STRENGTHS[bd['strength']]}{idx}"
            cons = []
            for c in el.get("constraint", []):
                expr = c.get("expression")
                if not expr:
                    continue
                key = (c["key"], clean(expr))
                if key not in constraints:
                    constraints[key] = len(constraint_rows)
                    best = any(x["url"].endswith("elementdefinition-bestpractice") and x.get("valueBoolean")
                               for x in c.get("extension", []))
                    sev = "w" if c["severity"] == "warning" or best else "e"
                    constraint_rows.append((c["key"], sev, clean(expr)))
                cons.append(str(constraints[key]))
            cref = el.get("contentReference")
            cref = cref[1 + len(name) + 1:] if cref else "-"
            flags = ""
            for rep in el.get("representation", []):
                flags += {"xmlAttr": "a", "xhtml": "x", "xmlText": "t", "typeAttr": "y", "cdaText": "c"}.get(rep, "")
            if "xhtml" in types and "x" not in flags:
                flags += "x"  # the type implies the XHTML representation
            if el.get("isModifier"):
                flags += "m"
            if el.get("isSummary"):
                flags += "s"
            lines.append("\t".join([
                "E", rel or ".", str(el.get("min", 0)), str(el.get("max", "*")),
                ",".join(types) or "-", binding, ",".join(cons) or "-", cref, flags or "-",
            ]))
    header = [
        "# phiward FHIR R4 (4.0.1) structure tables. Generated by tools/gen_fhir_tables.py; do not edit.",
        "# Format: see src/formats/fhir/definitions.rs. Source: see PROVENANCE.md.",
    ]
    out = header[:]
    for name, rx in sorted(regexes.items()):
        out.append(f"P\t{name}\t{rx}")
    for i, (key, sev, expr) in enumerate(constraint_rows):
        out.append(f"C\t{i}\t{key}\t{sev}\t{expr}")
    out.extend(lines)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "structures.txt").write_text("\n".join(out) + "\n", encoding="utf-8")

    vs_lines, vs_stats = value_sets(bindings)
    VS_LINES.extend(vs_lines)
    (OUT / "valuesets.txt").write_text("\n".join(vs_lines) + "\n", encoding="utf-8")
    ext_lines, ext_stats = extensions()
    (OUT / "extensions.txt").write_text("\n".join(ext_lines) + "\n", encoding="utf-8")
    (OUT / "vitalsigns.json").write_text(vital_signs(), encoding="utf-8")
    sp_lines = search_parameters()
    (OUT / "searchparams.txt").write_text("\n".join(sp_lines) + "\n", encoding="utf-8")
    cs_lines, cs_stats = code_systems()
    (OUT / "codesystems.txt").write_text("\n".join(cs_lines) + "\n", encoding="utf-8")
    provenance(sds, skipped, constraint_rows, vs_stats, ext_stats, len(sp_lines) - SP_HEADER, cs_stats)
    return 0


# The vital signs profiles of R4 (observation-vitalsigns.html) and what an element definition of
# their snapshots keeps: what `src/structure/conformance.rs` reads (no documentation field).
VITAL_SIGNS = ["vitalsigns", "vitalspanel", "resprate", "heartrate", "oxygensat", "bodytemp", "bodyheight",
               "headcircum", "bodyweight", "bmi", "bp"]
ELEMENT_KEYS = ("id", "path", "sliceName", "min", "max", "type", "binding", "constraint", "slicing",
                "mustSupport", "contentReference", "maxLength")
ELEMENT_PREFIXES = ("fixed", "pattern", "minValue", "maxValue")
VITALS_UNITS = "http://hl7.org/fhir/ValueSet/ucum-vitals-common|4.0.1"


def vital_signs() -> str:
    """The vital signs profiles (snapshots reduced) and the value sets they bind that
    valuesets.txt does not expand, as one JSON array (one resource a line)."""
    out = []
    bound = set()
    for name in VITAL_SIGNS:
        sd = load(f"StructureDefinition-{name}.json")
        elements = []
        for e in sd["snapshot"]["element"]:
            kept = {}
            for k, v in e.items():
                if k in ELEMENT_KEYS or k.startswith(ELEMENT_PREFIXES):
                    kept[k] = v
            if "binding" in kept:
                kept["binding"] = {k: v for k, v in kept["binding"].items() if k in ("strength", "valueSet")}
                if e["path"] == "Observation.component.value[x]" and kept["binding"].get("valueSet") == VITALS_UNITS:
                    # R4 binds every type of a component's value (CodeableConcept, string, ...)
                    # to a value set of UCUM units: the reference validator backs the binding
                    # off to extensible when it loads these profiles (PackageHackerR5), and so
                    # does phiward.
                    kept["binding"]["strength"] = "extensible"
                if kept["binding"].get("strength") in ("required", "extensible") and "valueSet" in kept["binding"]:
                    bound.add(kept["binding"]["valueSet"].split("|")[0])
            if "constraint" in kept:
                kept["constraint"] = [{k: c[k] for k in ("key", "severity", "expression") if k in c}
                                      for c in kept["constraint"]]
            if "type" in kept:
                kept["type"] = [{k: v for k, v in t.items() if k in ("code", "profile", "targetProfile")}
                                for t in kept["type"]]
            elements.append(kept)
        out.append({k: sd[k] for k in ("resourceType", "url", "version", "name", "type", "kind", "abstract",
                                       "baseDefinition", "derivation", "fhirVersion")}
                   | {"snapshot": {"element": elements}})
    for vs in resources("ValueSet"):
        if vs.get("url") in bound and not any(line.startswith("V\t") and line.split("\t")[2] == vs["url"]
                                              for line in VS_LINES):
            compose = {"include": [{"system": inc["system"], "concept": [{"code": c["code"]} for c in inc["concept"]]}
                                   for inc in vs["compose"]["include"]]}
            out.append({k: vs[k] for k in ("resourceType", "url", "version")} | {"compose": compose})
    return "[\n" + ",\n".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False) for r in out) + "\n]\n"


# ---- value sets --------------------------------------------------------------------------------

class Terminology:
    def __init__(self):
        self.code_systems = {}
        self.value_sets = {}
        for r in resources("CodeSystem"):
            self.code_systems.setdefault(r["url"], r)
        for r in resources("ValueSet"):
            self.value_sets.setdefault(r["url"], r)

    def concepts(self, system):
        """{code: [child codes]} in document order, or None if not complete here."""
        cs = self.code_systems.get(system)
        if cs is None or cs.get("content") != "complete":
            return None
        tree = {}

        def walk(concepts, parent):
            for c in concepts:
                tree.setdefault(c["code"], [])
                if parent is not None:
                    tree[parent].append(c["code"])
                walk(c.get("concept", []), c["code"])
        walk(cs.get("concept", []), None)
        # Hierarchy through the 'subsumedBy' / 'parent' properties (v3 code systems).
        for code, props in self.properties(cs):
            for p in props:
                if p.get("code") in ("subsumedBy", "parent") and p.get("valueCode") in tree:
                    tree[p["valueCode"]].append(code)
        return tree

    @staticmethod
    def properties(cs):
        out = []

        def walk(concepts):
            for c in concepts:
                out.append((c["code"], c.get("property", [])))
                walk(c.get("concept", []))
        walk(cs.get("concept", []))
        return out

    def expand(self, url, seen=()):
        """[(system, code)] in a stable order, or None when not expandable from the bundle."""
        vs = self.value_sets.get(url)
        if vs is None or url in seen:
            return None
        seen = seen + (url,)
        compose = vs.get("compose")
        if compose is None:
            exp = vs.get("expansion", {}).get("contains")
            if not exp:
                return None
            return [(c["system"], c["code"]) for c in self.flat(exp)]
        include = []
        for inc in compose.get("include", []):
            part = self.part(inc, seen)
            if part is None:
                return None
            include.extend(p for p in part if p not in include)
        for exc in compose.get("exclude", []):
            part = self.part(exc, seen)
            if part is None:
                return None
            include = [p for p in include if p not in part]
        return include

    def flat(self, contains):
        for c in contains:
            if "code" in c and "system" in c:
                yield c
            yield from self.flat(c.get("contains", []))

    def part(self, inc, seen):
        result = None
        system = inc.get("system")
        if system:
            if inc.get("concept"):
                codes = [(system, c["code"]) for c in inc["concept"]]
            else:
                tree = self.concepts(system)
                if tree is None:
                    return None
                codes = [(system, c) for c in tree]
                for flt in inc.get("filter", []):
                    sel = self.filter(tree, flt)
                    if sel is None:
                        return None
                    codes = [p for p in codes if p[1] in sel]
            result = codes
        for vs in inc.get("valueSet", []):
            sub = self.expand(vs.split("|")[0], seen)
            if sub is None:
                return None
            result = sub if result is None else [p for p in result if p in sub]
        return result

    @staticmethod
    def filter(tree, flt):
        if flt.get("property") != "concept":
            return None
        op, value = flt.get("op"), flt.get("value")
        if value not in tree:
            return None

        def below(code):
            out = []
            for child in tree.get(code, []):
                if child not in out:
                    out.append(child)
                    out.extend(x for x in below(child) if x not in out)
            return out
        if op == "is-a":
            return {value, *below(value)}
        if op == "descendent-of":
            return set(below(value))
        if op == "is-not-a":
            return set(tree) - {value, *below(value)}
        if op == "=":
            return {value}
        return None


def value_sets(bindings):
    term = Terminology()
    out = ["# phiward FHIR R4 value set expansions. Generated by tools/gen_fhir_tables.py; do not edit.",
           "# V<TAB>index<TAB>url<TAB>count|?  then S<TAB>system<TAB>code<TAB>code... (? = not expandable here)"]
    ok = 0
    total_codes = 0
    for url, idx in sorted(bindings.items(), key=lambda kv: kv[1]):
        codes = term.expand(url)
        if codes is None:
            out.append(f"V\t{idx}\t{url}\t?")
            continue
        ok += 1
        total_codes += len(codes)
        out.append(f"V\t{idx}\t{url}\t{len(codes)}")
        by_system = {}
        for system, code in codes:
            by_system.setdefault(system, []).append(code)
        for system, cs in by_system.items():
            out.append("S\t" + system + "\t" + "\t".join(clean(c) for c in cs))
    return out, (ok, len(bindings), total_codes)


# ---- code systems ------------------------------------------------------------------------------

# The namespace of the code systems the FHIR specification defines itself (its R4 version is the
# only version: they are version-locked to 4.0.1). The code systems of terminology.hl7.org (v2,
# v3 and the others) have moved on since R4 and are left out.
CORE_CS_PREFIX = "http://hl7.org/fhir/"
# The package holds the R4 build's examples too: the CodeSystem resource's example code system
# (codesystem-example.html) is an example, not a definition of the specification.
EXAMPLE_CODE_SYSTEMS = {"http://hl7.org/fhir/CodeSystem/example"}


def code_systems():
    """One line per core code system: url, s|i (case sensitive or not), the sorted codes."""
    out = ["# phiward FHIR R4 (4.0.1) core code systems. Generated by tools/gen_fhir_tables.py; do not edit.",
           "# url<TAB>s|i<TAB>code<TAB>code... (s: case sensitive; i: not, codes lowercased); sorted by url"]
    rows = {}
    for cs in resources("CodeSystem"):
        url = cs.get("url", "")
        if (not url.startswith(CORE_CS_PREFIX) or url in EXAMPLE_CODE_SYSTEMS or cs.get("content") != "complete"
                or cs.get("supplements")):
            continue
        if cs.get("version") != FHIR_VERSION:
            raise SystemExit(f"{url}: version {cs.get('version')}, not {FHIR_VERSION}")
        if url in rows:
            raise SystemExit(f"{url}: defined twice")
        sensitive = cs.get("caseSensitive", True) is not False
        codes = set()

        def walk(concepts):
            for c in concepts:
                code = c["code"] if sensitive else c["code"].lower()
                if "\t" in code or "\n" in code:
                    raise SystemExit(f"{url}: a code with a tab or a line break")
                codes.add(code)
                walk(c.get("concept", []))
        walk(cs.get("concept", []))
        rows[url] = ("s" if sensitive else "i", sorted(codes, key=lambda c: c.encode()))
    total = 0
    for url in sorted(rows, key=lambda u: u.encode()):
        flag, codes = rows[url]
        total += len(codes)
        out.append("\t".join([url, flag, *codes]))
    return out, (len(rows), total)


# Contexts that the R4 specification's own resources (its definitions and examples) use for a
# core extension beyond those its definition declares. The published definitions are the
# source; where the specification itself contradicts one, the use wins (measured on the 5,306
# official R4 examples: without these, 785 of them would break a declared context).
CONTEXTS_USED = {
    "http://hl7.org/fhir/StructureDefinition/structuredefinition-fhir-type": ["ElementDefinition.type"],
    "http://hl7.org/fhir/StructureDefinition/regex": ["ElementDefinition.type"],
    "http://hl7.org/fhir/StructureDefinition/structuredefinition-normative-version": ["Resource", "ElementDefinition"],
    "http://hl7.org/fhir/StructureDefinition/translation": ["ValueSet.expansion.contains"],
    "http://hl7.org/fhir/StructureDefinition/valueset-concept-comments": ["CodeSystem.concept"],
}


def extensions():
    """The core extension definitions: one X line per extension, then one S line per part of
    a complex one (its slices of Extension.extension)."""
    out = ["# phiward FHIR R4 core extension definitions. Generated by tools/gen_fhir_tables.py; do not edit.",
           *EXTENSION_FORMAT]
    defs = sorted((sd for sd in resources("StructureDefinition") if sd.get("derivation") == "constraint"),
                  key=lambda sd: sd["url"])
    rows, complex_count, parts = extension_rows(defs, CONTEXTS_USED)
    out.extend(rows)
    return out, (len([l for l in out if l.startswith("X")]), complex_count, parts)


EXTENSION_FORMAT = [
    "# X<TAB>url<TAB>m|-<TAB>contexts<TAB>value min<TAB>value max<TAB>value types<TAB>extension max",
    "# S<TAB>part url<TAB>min<TAB>max<TAB>value min<TAB>value max<TAB>value types<TAB>extension max",
]


def extension_rows(defs, contexts_used):
    """The X and S lines of the extension definitions among ``defs`` (StructureDefinitions,
    sorted by url), the number of complex ones and of their parts. Shared with
    ``tools/gen_fhir_extpack.py`` (the extensions pack)."""
    out = []
    complex_count = 0
    parts = 0
    for sd in defs:
        if sd.get("resourceType") != "StructureDefinition" or sd.get("type") != "Extension":
            continue
        by_id = {el["id"]: el for el in sd["snapshot"]["element"]}

        def shape(prefix):
            value = by_id.get(prefix + ".value[x]", {})
            # A value that may not be present (a complex extension) lists every type: left out.
            types = "-" if value.get("max") == "0" else ",".join(t["code"] for t in value.get("type", [])) or "-"
            ext = by_id.get(prefix + ".extension", {})
            return [str(value.get("min", 0)), str(value.get("max", "1")), types, str(ext.get("max", "*"))]

        root = by_id["Extension"]
        contexts = []
        for c in sd.get("context", []):
            if c["type"] != "element":
                contexts = ["*"]  # a context phiward cannot decide: any
                break
            contexts.append(clean(c["expression"]))
        if contexts != ["*"]:
            contexts.extend(contexts_used.get(sd["url"], []))
        kind = "m" if root.get("isModifier") else "-"
        out.append("\t".join(["X", sd["url"], kind, ",".join(contexts) or "*", *shape("Extension")]))
        if by_id.get("Extension.value[x]", {}).get("max") == "0":
            complex_count += 1
        for el in sd["snapshot"]["element"]:
            if el["path"] == "Extension.extension" and el.get("sliceName") and el["id"].count(":") == 1:
                prefix = el["id"]
                url = by_id.get(prefix + ".url", {}).get("fixedUri", el["sliceName"])
                out.append("\t".join(["S", url, str(el.get("min", 0)), str(el.get("max", "*")), *shape(prefix)]))
                parts += 1
    return out, complex_count, parts


# The heading of the extensions pack's section of PROVENANCE.md (tools/gen_fhir_extpack.py).
PACK_SECTION = "## The extensions pack"


SP_HEADER = 2  # the comment lines of searchparams.txt
SP_PREFIX = "http://hl7.org/fhir/SearchParameter/"


def search_parameters():
    """The core search parameters: one line each, ``id<TAB>type<TAB>base,base...``, sorted by
    id (the canonical is the prefix and the id: checked)."""
    out = ["# phiward FHIR R4 core search parameters. Generated by tools/gen_fhir_tables.py; do not edit.",
           "# id (canonical http://hl7.org/fhir/SearchParameter/<id>)<TAB>type<TAB>base resource types"]
    rows = []
    for sp in resources("SearchParameter"):
        if sp["url"] != SP_PREFIX + sp["id"]:
            raise SystemExit(f"SearchParameter {sp['id']}: its url is not {SP_PREFIX}<id>")
        rows.append("\t".join([sp["id"], sp["type"], ",".join(sp.get("base", []))]))
    out.extend(sorted(rows))
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def provenance(sds, skipped, constraint_rows, vs_stats, ext_stats, sp_count, cs_stats):
    pkg = json.loads((SRC / "package.json").read_text(encoding="utf-8"))
    if (pkg["name"], pkg["version"]) != (PACKAGE, PACKAGE_VERSION):
        raise SystemExit(f"{SRC} holds {pkg['name']} {pkg['version']}, not {PACKAGE} {PACKAGE_VERSION}")
    archive = sha256(ARCHIVE) if ARCHIVE.is_file() else "(archive not found beside the install)"
    digest = hashlib.sha256()
    by_kind: dict[str, int] = {}
    for name in sorted(READ):
        digest.update(f"{name}\t{sha256(SRC / name)}\n".encode())
        by_kind[name.split("-", 1)[0]] = by_kind.get(name.split("-", 1)[0], 0) + 1
    kinds = {"p": 0, "c": 0, "r": 0, "a": 0}
    for sd in sds:
        kinds[kind_letter(sd)] += 1
    rows = "\n".join(f"| `{k}-*.json` | {n} |" for k, n in sorted(by_kind.items()))
    skipped_text = "\n".join(f"* {s}" for s in sorted(skipped))
    ok, total, codes = vs_stats
    ext_total, ext_complex, ext_parts = ext_stats
    text = f"""# Provenance of the FHIR R4 definition tables

`structures.txt`, `valuesets.txt`, `codesystems.txt`, `extensions.txt`, `searchparams.txt` and
`vitalsigns.json` in this folder are generated by `tools/gen_fhir_tables.py`; do not edit them by
hand. `definitions.rs` (one folder up) decodes them (`searchparams.txt`: `conformance.rs`).

## Source

| package | registry | version | licence |
| --- | --- | --- | --- |
| `{pkg['name']}` | npm | {pkg['version']} | {pkg.get('license')} (HL7's FHIR R4 build) |

FHIR version of the definitions: {', '.join(pkg.get('fhirVersions', []))} (only StructureDefinitions
whose `fhirVersion` is {FHIR_VERSION} are read). The package is HL7's own: the R4 build's
conformance resources (one file each) beside its examples. `hl7.fhir.r4.core` itself is
published on packages.fhir.org, not on the npm registry (`npm view hl7.fhir.r4.core` finds nothing).

sha256 of the archive `{ARCHIVE.name}`: `{archive}`

Files read (every `StructureDefinition-*`, `ValueSet-*`, `CodeSystem-*` and `SearchParameter-*` of the
package):

| files | count |
| --- | --- |
{rows}

sha256 over the sorted lines `file name<TAB>sha256 of the file` of the files read:
`{digest.hexdigest()}`

Install and regenerate:

    npm pack --pack-destination target/gen-npm-fhir-r4 {pkg['name']}@{pkg['version']}
    npm install --prefix target/gen-npm-fhir-r4 target/gen-npm-fhir-r4/{pkg['name']}-{pkg['version']}.tgz
    python3 tools/gen_fhir_tables.py

or `scripts/check-generated fhir`, which checks the archive's sha256 against its pin.

## What is in the tables

* {kinds['p']} primitive types, {kinds['c']} complex types, {kinds['r']} resources and
  {kinds['a']} abstract resources (their snapshots: every element, its cardinality, types,
  binding, invariants, content reference and XML representation);
* {len(constraint_rows)} distinct invariants (key and FHIRPath expression);
* the regular expressions of the primitive types (from the `regex` extension of `value`);
* {ok} of the {total} value sets bound with strength required, extensible or preferred,
  expanded from the bundled code systems ({codes} codes). The other {total - ok} need code
  systems that are not bundled (SNOMED CT, LOINC, UCUM, BCP-47, MIME types, ...) and are
  listed as not expandable: their bindings are not checked;
* the concept codes (nested concepts included) of the {cs_stats[0]} code systems of the FHIR
  namespace (`{CORE_CS_PREFIX}`, version {FHIR_VERSION}) whose `content` is `complete`
  ({cs_stats[1]} codes; not the supplements, nor the CodeSystem resource's example
  `{', '.join(sorted(EXAMPLE_CODE_SYSTEMS))}`): `codesystems.txt`. The code systems of
  `http://terminology.hl7.org/` (v2, v3, ...) are left out: their current versions differ
  from R4's;
* {ext_total} core extension definitions ({ext_complex} of them complex, with {ext_parts} parts
  in all): url, modifier or not, contexts, and the cardinality and types of the value (and of
  each part's value). {len(CONTEXTS_USED)} definitions get the contexts that the specification's own
  resources use them in beyond the declared ones (`CONTEXTS_USED` in the generator);
* the {len(VITAL_SIGNS)} vital signs profiles ({', '.join(f'`{n}`' for n in VITAL_SIGNS)}), their
  snapshots without documentation fields (the binding of `Observation.component.value[x]` to
  `ucum-vitals-common`, which R4 applies to every type of the value, backed off to extensible
  as the reference validator does), and the value sets they bind (required or extensible)
  that `valuesets.txt` does not expand, each `compose` as published (enumerated codes):
  `vitalsigns.json`;
* the {sp_count} core search parameters: id (the canonical is `http://hl7.org/fhir/SearchParameter/`
  and the id), type and base resource types: `searchparams.txt`.

## What was left out

{skipped_text}
* Bindings of strength `example`; `targetProfile` of references; descriptions, mappings,
  comments and every other documentation field.
* Of the search parameters: expressions, XPaths, targets, modifiers, comparators, chains and
  components.
* Of the extension definitions: their invariants, bindings and the parts of parts (a complex
  part of a complex extension is checked as a part, not inside).

## Kept as R4 publishes them

The invariants are R4's text, errata included: `app-4` compares `Appointment.status` with
`'no-show'` where the code is `noshow` (phiward evaluates the expression corrected, as its text
states: `CORRECTED` in `src/formats/fhir/fhirpath/mod.rs`); `tim-9` applies `in` to `when`,
which is not a singleton when `when` repeats (phiward then reports the invariant as not checked).
"""
    # The extensions pack's section is written by tools/gen_fhir_extpack.py: kept as it is.
    old = (OUT / "PROVENANCE.md").read_text(encoding="utf-8") if (OUT / "PROVENANCE.md").is_file() else ""
    if PACK_SECTION in old:
        text = text.rstrip("\n") + "\n\n" + old[old.index(PACK_SECTION):]
    (OUT / "PROVENANCE.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
