#!/usr/bin/env python3
"""Generate phiward's CDA R2.0 base tables.

Reads the CDA R2.0 logical models (every CDA class and data type as a FHIR StructureDefinition,
XML, CC0-1.0) from HL7/CDA-core-sd at commit 67175741a78871ffdec345cf88a2ede9bdebacb1, folder
``input/resources/`` (a copy sits in ``../shared/cda/logical-models/`` beside the project), and
writes ``src/formats/ccda/tables.rs``: each class and data type flattened (its base's elements
first, then its own; an element's nested constraints as an anonymous class), with per element
its XML name and namespace, cardinality, types (several: chosen by ``xsi:type``), and per
attribute its primitive kind and fixed value; the sorted list of element names (the names a
finding's path can hold); and ``src/formats/ccda/PROVENANCE.md`` (the commit and the sha256 of
every file read); ``src/formats/ccda/r21_tables.rs``: the error phase of HL7's C-CDA R2.1
schematron (each template's SHALL assertions, with those of the rules they extend), translated
into phiward's XPath subset where their XPath has that form, and, in docs/ccda.md between its
``r21-unchecked`` markers, the assertions not translated, by CONF number.

``src/formats/ccda/vs_tables.rs``: the value sets of the logical models' and the templates'
required and extensible bindings, expanded where bundled (the logical models' value sets and
code systems, npm hl7.terminology.r4@7.0.1's v3 code systems and value sets), the base's
bindings per class (the templates' are rules of ``tables.rs``), and in docs/ccda.md between its
``ccda-bindings`` markers their counts.

    python3 tools/gen_ccda_tables.py [LOGICAL_MODELS [PACKAGE_DIR [SCHEMATRON_DIR [TERMINOLOGY_DIR]]]]

(LOGICAL_MODELS: ``../shared/cda/logical-models``; PACKAGE_DIR: npm hl7.cda.us.ccda@5.0.0-ballot
unpacked, ``target/gen-npm-ccda/hl7.cda.us.ccda/package`` by default, where
``scripts/check-generated`` unpacks it; SCHEMATRON_DIR: HL7's C-CDA R2.1 schematron,
``../shared/cda/schematron-r2.1`` by default, whose fixed values are accepted beside 5.0's where
they differ; TERMINOLOGY_DIR: npm hl7.terminology.r4@7.0.1 unpacked,
``target/gen-npm-ccda/hl7.terminology.r4/package`` by default.)

Python 3.11, standard library only. Deterministic: the same files give the same bytes.
"""

from __future__ import annotations

import hashlib
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
F = "{http://hl7.org/fhir}"
CDA = "http://hl7.org/cda/stds/core/StructureDefinition/"
SDTC = "urn:hl7-org:sdtc"
COMMIT = "67175741a78871ffdec345cf88a2ede9bdebacb1"

# Attribute primitive kinds (FHIR primitive type codes of the logical models).
PRIM = {
    "code": "Code",
    "string": "Str",
    "boolean": "Bool",
    "dateTime": "Ts",
    "decimal": "Decimal",
    "integer": "Int",
    "id": "Id",
    "base64Binary": "Base64",
    "uri": "Str",
    "url": "Str",
}

# The narrative block's elements (CDA R2.0 schema NarrativeBlock.xsd): found under section/text.
NARRATIVE = [
    "br", "caption", "col", "colgroup", "content", "footnote", "footnoteRef", "item", "linkHtml",
    "list", "paragraph", "renderMultimedia", "sub", "sup", "table", "tbody", "td", "tfoot", "th",
    "thead", "tr",
]


def val(e, tag):
    x = e.find(F + tag)
    return None if x is None else x.get("value")


def ext(e, name):
    for x in e.findall(F + "extension"):
        if x.get("url", "").endswith("/" + name):
            for c in x:
                return c.get("value")
    return None


class Def:
    def __init__(self, path: Path):
        root = ET.parse(path).getroot()
        self.id = val(root, "id")
        self.url = val(root, "url")
        self.base = val(root, "baseDefinition") or ""
        self.kind = val(root, "kind")
        diff = root.find(F + "differential")
        self.elements = []
        for e in diff.findall(F + "element") if diff is not None else []:
            fixed = None
            for c in e:
                if c.tag.startswith(F + "fixed"):
                    fixed = c.get("value")
            types = [t.get("value") for x in e.findall(F + "type") for t in x.findall(F + "code")]
            b = e.find(F + "binding")
            vs = b.find(F + "valueSet") if b is not None else None
            binding = (val(b, "strength"), vs.get("value").split("|")[0]) if vs is not None else None
            self.elements.append(
                {
                    "path": val(e, "path"),
                    "min": val(e, "min"),
                    "max": val(e, "max"),
                    "rep": [r.get("value") for r in e.findall(F + "representation")],
                    "types": types,
                    "fixed": fixed,
                    "ns": ext(e, "xml-namespace"),
                    "xmlname": ext(e, "xml-name"),
                    "choice": ext(e, "xml-choice-group") == "true",
                    "binding": binding,
                }
            )
        self.name = self.elements[0]["path"].split(".")[0] if self.elements else self.id


CCDA_PACKAGE = "hl7.cda.us.ccda"
CCDA_VERSION = "5.0.0-ballot"
CCDA_SHA256 = "08d21fab6587bec51e9151dec1848f4e6b00354c37ba60c37111900f2cfa1abe"
CCDA = "http://hl7.org/cda/us/ccda/StructureDefinition/"


def rust_str(v) -> str:
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


SCH = "{http://purl.oclc.org/dsdl/schematron}"


def r21_values(sch: Path):
    """The fixed values of HL7's C-CDA R2.1 schematron: {(root, path, attribute): {value}} from
    the assertions `@classCode='X'` and `cda:code[@code='X']` (one step, one attribute) of each
    template's error rules, whatever their extension. Where the 5.0 package fixes another
    value at the same place (a vital signs organizer's code was SNOMED CT 46680005 in R2.1 and
    in the R1.1 documents R2.1 accepts), both are accepted."""
    import re

    out = {}
    if not sch.is_file():
        return out
    root = ET.parse(sch).getroot()
    for rule in root.iter(SCH + "rule"):
        m = re.fullmatch(r"r-urn-(?:hl7ii-([\d.]+)-\d{4}-\d{2}-\d{2}|oid-([\d.]+))-errors-abstract", rule.get("id") or "")
        if not m:
            continue
        troot = m.group(1) or m.group(2)
        for a in rule.iter(SCH + "assert"):
            t = " ".join((a.get("test") or "").split())
            x = re.fullmatch(r"(?:cda:(\w+)\[)?@(\w+)='([^'|]*)'\]?", t)
            if x and (x.group(1) is None) == (not t.startswith("cda:")):
                out.setdefault((troot, x.group(1) or "", x.group(2)), set()).add(x.group(3))
    return out


SCHNS = "{http://purl.oclc.org/dsdl/schematron}"


class Untranslatable(Exception):
    pass


def tokenize(s):
    """XPath 1.0 tokens of the subset translated (anything else: Untranslatable)."""
    import re

    toks = []
    i = 0
    pat = re.compile(
        r"\s+|(?P<str>'[^']*')|(?P<num>\d+)|(?P<op>!=|>=|<=|=|>|<)|(?P<punct>\[|\]|\(|\)|//|/|\||\.\.|\.)"
        r"|(?P<attr>@(?:(?:cda|sdtc|xsi):)?[A-Za-z_][\w.-]*)|(?P<name>(?:[A-Za-z_][\w.-]*:)?[A-Za-z_][\w.-]*)"
    )
    while i < len(s):
        m = pat.match(s, i)
        if not m or m.end() == i:
            raise Untranslatable("token")
        i = m.end()
        if m.lastgroup is None:
            continue
        toks.append((m.lastgroup, m.group(m.lastgroup)))
    return toks


class P:
    """A recursive-descent parser of the XPath subset: `or`, `and`, `not(...)`, `count(PATH) OP N`,
    `PATH` (exists), `@a`, `@a='v'`; a PATH is child steps `cda:x` or `sdtc:x` with predicates.
    The result is a tree of tuples: ('or', [x]), ('and', [x]), ('not', x),
    ('count', steps, op, n), ('attr', ns, name, value|None); a step is (ns, name, [pred])."""

    def __init__(self, s):
        self.t = tokenize(s)
        self.i = 0

    def peek(self, k=0):
        return self.t[self.i + k] if self.i + k < len(self.t) else (None, None)

    def take(self, kind=None, val=None):
        k, v = self.peek()
        if k is None or (kind and k != kind) or (val and v != val):
            raise Untranslatable("expected")
        self.i += 1
        return v

    def done(self):
        if self.i != len(self.t):
            raise Untranslatable("trailing")

    def expr(self):
        xs = [self.and_()]
        while self.peek() == ("name", "or"):
            self.i += 1
            xs.append(self.and_())
        return xs[0] if len(xs) == 1 else ("or", xs)

    def and_(self):
        xs = [self.cmp()]
        while self.peek() == ("name", "and"):
            self.i += 1
            xs.append(self.cmp())
        return xs[0] if len(xs) == 1 else ("and", xs)

    def cmp(self):
        k, v = self.peek()
        if (k, v) == ("name", "not") and self.peek(1) == ("punct", "("):
            self.i += 2
            x = self.expr()
            self.take("punct", ")")
            return ("not", x)
        if (k, v) == ("name", "count") and self.peek(1) == ("punct", "("):
            self.i += 2
            if self.peek() == ("punct", "."):
                self.i += 1
                self.take("punct", "/")
            if self.peek()[0] == "attr":
                a = self.attr()
                self.take("punct", ")")
                op = self.take("op")
                n = int(self.take("num"))
                # count(@a)=1: the attribute present; count(@a)=0: absent.
                if (op, n) in (("=", 1), (">", 0), (">=", 1)):
                    return a
                if (op, n) == ("=", 0):
                    return ("not", a)
                raise Untranslatable("count of attribute")
            steps = self.path()
            self.take("punct", ")")
            op = self.take("op")
            n = int(self.take("num"))
            return ("count", steps, op, n)
        if k == "punct" and v == "(":
            self.i += 1
            x = self.expr()
            self.take("punct", ")")
            return x
        if k == "attr":
            a = self.attr()
            if self.peek() == ("op", "="):
                self.i += 1
                s = self.take("str")[1:-1]
                return (a[0], a[1], a[2], s)
            return a
        if k == "name":
            steps = self.path()
            return ("count", steps, ">", 0)
        raise Untranslatable("primary")

    def attr(self):
        v = self.take("attr")[1:]
        ns, _, name = v.rpartition(":")
        if ns == "cda":
            raise Untranslatable("attribute prefix")
        return ("attr", ns, name, None)

    def path(self):
        steps = [self.step()]
        while self.peek() == ("punct", "/"):
            self.i += 1
            steps.append(self.step())
        return steps

    def step(self):
        v = self.take("name")
        ns, _, name = v.partition(":")
        if not name or ns not in ("cda", "sdtc") or v in ("or", "and"):
            raise Untranslatable("step")
        preds = []
        while self.peek() == ("punct", "["):
            self.i += 1
            if self.peek()[0] == "num":
                raise Untranslatable("positional predicate")
            preds.append(self.expr())
            self.take("punct", "]")
        return (ns, name, preds)


def parse_xpath(s):
    p = P(s)
    x = p.expr()
    p.done()
    return x


def parse_context(ctx):
    """`cda:E[cda:templateId[@root='R' (and @extension='E')?]](/PATH)?` -> (E, R, E or '', steps)."""
    import re

    m = re.fullmatch(
        r"cda:(\w+)\[cda:templateId\[@root='([\d.]+)'(?: and @extension='([^']+)')?\]\](?:/(.*))?", ctx.strip()
    )
    if not m:
        raise Untranslatable("context")
    steps = []
    if m.group(4):
        p = P(m.group(4))
        steps = p.path()
        p.done()
    return m.group(1), m.group(2), m.group(3) or "", steps


def has_templated(x):
    return "templateId" in repr(x)


def kind_of(test, x):
    """The finding's code, by the assertion's form: `Datatype` (an xsi:type), `Content` (a
    templated child), `Value` (an attribute: fixed or required), `Element` (the rest: an
    element's count, a co-constraint)."""
    import re

    if "xsi:type" in test:
        return "Datatype"
    if re.match(r"^count\((\./)?cda:templateId\[", test):
        return "Element"
    if "templateId[" in test:
        return "Content"
    if x[0] == "attr":
        return "Value"
    if x[0] == "count" and x[2:] == (">", 0) and len(x[1]) == 1 and x[1][0][2]:
        if all(p[0] == "attr" for p in x[1][0][2]) or (
            len(x[1][0][2]) == 1 and x[1][0][2][0][0] == "and" and all(q[0] == "attr" for q in x[1][0][2][0][1])
        ):
            return "Value"
    return "Element"


def conf_of(a):
    """The CONF number of an assertion (its id `a-1198-7477[-c]`): numbers only."""
    import re

    m = re.fullmatch(r"a-(\d+-\d+)(?:-branch-\d+)?(?:-c|-CL)?", a.get("id") or "")
    return m.group(1) if m else None


def r21_templates(sch):
    """The error-phase rules of HL7's C-CDA R2.1 schematron, translated: [(element, root, ext,
    [(context steps, conf, kind, tree)])], and the assertions not translated: [(conf or id, why)]."""
    import xml.etree.ElementTree as ET

    root = ET.parse(sch).getroot()
    phase = {a.get("pattern") for p in root.iter(SCHNS + "phase") if p.get("id") == "errors" for a in p.iter(SCHNS + "active")}
    rules = {r.get("id"): r for r in root.iter(SCHNS + "rule")}
    out = {}
    skipped = {}
    done = {}

    def asserts_of(rule, seen):
        own = [a for a in rule.findall(SCHNS + "assert")]
        for ext in rule.findall(SCHNS + "extends"):
            base = rules.get(ext.get("rule"))
            if base is not None and base.get("id") not in seen:
                seen.add(base.get("id"))
                own += asserts_of(base, seen)
        return own

    for pat in root.iter(SCHNS + "pattern"):
        if pat.get("id") not in phase:
            continue
        for rule in pat.findall(SCHNS + "rule"):
            if rule.get("abstract") == "true":
                continue
            asserts = asserts_of(rule, set())
            try:
                el, troot, text, ctx = parse_context(rule.get("context") or "")
            except Untranslatable:
                for a in asserts:
                    skipped[a.get("id") or "(no id)"] = (conf_of(a) or a.get("id") or "an assertion without id", "context")
                continue
            for a in asserts:
                test = " ".join((a.get("test") or "").split())
                conf = conf_of(a)
                try:
                    if conf is None:
                        raise Untranslatable("no CONF")
                    x = parse_xpath(test)
                except Untranslatable as e:
                    skipped[a.get("id") or "(no id)"] = (conf or a.get("id") or "an assertion without id", str(e))
                    continue
                key = (el, troot, text)
                entry = (ctx, conf, kind_of(test, x), x)
                lst = out.setdefault(key, [])
                if entry not in lst:
                    lst.append(entry)
                done[a.get("id")] = conf
    # An assertion translated somewhere is not listed as skipped.
    for k in list(skipped):
        if k in done:
            del skipped[k]
    return [(el, r, e, out[(el, r, e)]) for (el, r, e) in sorted(out, key=lambda k: (k[1], k[2], k[0]))], sorted(
        set(skipped.values())
    ), len(done)


OPS = {"=": "Eq", "!=": "Ne", ">": "Gt", ">=": "Ge", "<": "Lt", "<=": "Le"}
ATTR_NS = {"": "None", "sdtc": "Sdtc", "xsi": "Xsi"}


def rust_x(x):
    """A translated test as a Rust `X` constant expression."""
    if x[0] in ("or", "and"):
        return f"X::{x[0].capitalize()}(&[" + ", ".join(rust_x(y) for y in x[1]) + "])"
    if x[0] == "not":
        return f"X::Not(&{rust_x(x[1])})"
    if x[0] == "count":
        return f"X::Count {{ path: {rust_steps(x[1])}, op: Op::{OPS[x[2]]}, n: {x[3]} }}"
    value = "None" if x[3] is None else f"Some({rust_str(x[3])})"
    return f"X::Attr {{ ns: AttrNs::{ATTR_NS[x[1]]}, name: {rust_str(x[2])}, value: {value} }}"


def rust_steps(steps):
    return "&[" + ", ".join(
        f"Step {{ sdtc: {str(ns == 'sdtc').lower()}, name: {rust_str(n)}, preds: &[" + ", ".join(rust_x(p) for p in preds) + "] }"
        for ns, n, preds in steps
    ) + "]"


def write_r21(sch, out_path, docs_path):
    """Writes the R2.1 template rules (`r21_tables.rs`) and the list of assertions not translated
    into docs/ccda.md (between its markers)."""
    import hashlib

    tpls, skipped, translated = r21_templates(sch)
    w = []
    w.append("//! The C-CDA R2.1 templates' error-level (SHALL) assertions, @generated by tools/gen_ccda_tables.py")
    w.append("//! from HL7's C-CDA R2.1 schematron (HL7/CDA-ccda-2.1, `validation/`): do not edit.")
    w.append(f"//! {translated} assertions translated; the {len(skipped)} others are listed in docs/ccda.md.")
    w.append("//! Provenance: PROVENANCE.md.")
    w.append("")
    w.append("use super::base::{Assert, AssertKind, AttrNs, Op, R21Template, Step, X};")
    w.append("")
    w.append("/// The R2.1 templates, by templateId root, then extension, then element name.")
    w.append("pub static R21_TEMPLATES: &[R21Template] = &[")
    for el, root, ext, asserts in tpls:
        w.append("    R21Template {")
        w.append(f"        root: {rust_str(root)},")
        w.append(f"        extension: {rust_str(ext)},")
        w.append(f"        element: {rust_str(el)},")
        w.append("        asserts: &[")
        for ctx, conf, kind, x in asserts:
            w.append("            Assert {")
            w.append(f"                key: {rust_str(root + ':' + ext + '/CONF:' + conf)},")
            w.append(f"                context: {rust_steps(ctx)},")
            w.append(f"                kind: AssertKind::{kind},")
            w.append(f"                test: {rust_x(x)},")
            w.append("            },")
        w.append("        ],")
        w.append("    },")
    w.append("];")
    out_path.write_text("\n".join(w) + "\n")
    import subprocess
    try:
        subprocess.run(["rustfmt", "--edition", "2024", str(out_path)], check=False, capture_output=True, timeout=300)
    except OSError:
        pass
    by_why = {}
    for conf, why in skipped:
        by_why.setdefault(why, []).append(conf)
    whys = {
        "no CONF": "no CONF number of their own (closed-template and compatibility checks, value-set branch rules)",
        "context": "a rule context the engine does not select (a union of paths `a | b`, a document-wide `//`)",
        "expected": "value set bindings (`document('voc.xml')`), `starts-with`, `..`, `//`, string functions",
        "step": "an unprefixed step (`not(tested)`: placeholders), `text()`, `*`",
        "primary": "a number or function the subset has not (`string-length`, `contains`, `normalize-space`...)",
        "token": "an expression the subset does not tokenize (`|` unions inside a test, `$` variables...)",
        "trailing": "an expression with a part after a complete one (a union, an arithmetic operator)",
    }
    lines = [f"{translated} assertions are checked; {len(skipped)} are not (by CONF number, or by the assertion's id where it has none):", ""]
    for why in sorted(by_why):
        confs = sorted(by_why[why], key=lambda c: [int(p) if p.isdigit() else 0 for p in c.replace("a-", "").split("-")[:2]] + [c])
        lines.append(f"- {whys.get(why, why)} ({len(confs)}): " + ", ".join(confs) + ".")
    text = docs_path.read_text()
    begin, end = "<!-- r21-unchecked:begin -->", "<!-- r21-unchecked:end -->"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        docs_path.write_text(head + begin + "\n" + "\n".join(lines) + "\n" + end + tail)
    return hashlib.sha256(sch.read_bytes()).hexdigest()


def templates(pkg: Path, base_min, r21=None, base_fixed=None):
    """The C-CDA templates of the npm package: identity, code, and the constraints phiward
    checks (fixed attribute values, required elements beyond the base, required templated
    children)."""
    sds = {}
    for p in sorted(pkg.glob("StructureDefinition-*.json")):
        import json

        d = json.loads(p.read_text())
        if d.get("kind") != "logical" or "snapshot" not in d:
            continue
        ident = None
        for i in d.get("identifier", []):
            v = i.get("value", "")
            if v.startswith("urn:hl7ii:"):
                root, _, ext = v[len("urn:hl7ii:"):].partition(":")
                ident = (root, ext)
            elif v.startswith("urn:oid:"):
                ident = (v[len("urn:oid:"):], "")
        if ident is None:
            continue
        sds[d["url"]] = (d, ident)
    out = []
    for url in sorted(sds, key=lambda u: (sds[u][1], u)):
        d, (root, ext) = sds[url]
        cls = d["type"].rsplit("/", 1)[-1]
        elems = d["snapshot"]["element"]
        top = elems[0]["path"]
        rules = []
        code = ("", "")
        for e in elems:
            eid, path = e["id"], e["path"]
            parts = path.split(".")[1:]
            fixed = next((v for k, v in e.items() if k.startswith(("fixed", "pattern")) and isinstance(v, (str, bool))), None)
            if isinstance(fixed, bool):
                fixed = "true" if fixed else "false"
            sliced = ":" in eid
            if fixed is not None and not sliced and "xmlAttr" in e.get("representation", []) and len(parts) <= 3:
                # A fixed attribute: on the template's element or an element of it (not under a
                # slice, whose fixed values identify the slice).
                # `Attr`: required and equal; `Fixed`: equal when present.
                kind = "Attr" if e.get("min", 0) >= 1 else "Fixed"
                at = "/".join(parts[:-1])
                if kind == "Attr" and base_fixed is not None and base_fixed(cls, parts[:-1], parts[-1]) == fixed:
                    # The base fixes that value: absent, the attribute has it (the schema's
                    # default, a manufacturedProduct's classCode MANU).
                    kind = "Fixed"
                alts = sorted((r21 or {}).get((root, at, parts[-1]), set()) - {fixed})
                rules.append((kind, at, parts[-1], "|".join([fixed, *alts])))
                if parts == ["code", "code"]:
                    code = (fixed, code[1])
                if parts == ["code", "codeSystem"]:
                    code = (code[0], fixed)
            elif not sliced and len(parts) == 1 and "xmlAttr" not in e.get("representation", []) and e.get("min", 0) >= 1:
                if base_min(cls, parts[0]) < e["min"]:
                    rules.append(("Required", parts[0], "", ""))
            if sliced and e.get("min", 0) >= 1 and "sliceName" not in e:
                for t in e.get("type", []):
                    for prof in t.get("profile", []):
                        if prof in sds and parts[-1] != "templateId":
                            # The slice this child is in must be required too.
                            slice_id = eid.rsplit(".", 1)[0]
                            sl = next((x for x in elems if x["id"] == slice_id), None)
                            if sl is not None and sl.get("min", 0) >= 1 and "sliceName" in sl:
                                r, x = sds[prof][1]
                                rules.append(("Contains", "/".join(parts[:-1]), parts[-1], r))
        # The template's own bindings (its differential; the base's are the classes'): at a
        # path under the template's element, of an element (its code) or an attribute. One under
        # a slice (the slice's members only) or through an SDTC element is left out.
        snap = {e["id"]: e for e in elems}
        for e in d.get("differential", {}).get("element", []):
            b = e.get("binding")
            if not b or not b.get("valueSet"):
                continue
            strength, vs = b["strength"], b["valueSet"].split("|")[0]
            parts = e["path"].split(".")[1:]
            if ":" in e["id"] or any(x.startswith("sdtc") for x in parts) or not parts:
                BINDINGS_LEFT_OUT.append((f"{root}:{ext}", e["id"], strength, vs))
                continue
            is_attr = "xmlAttr" in snap.get(e["id"], e).get("representation", [])
            # The steps that are XML elements: not a choice group (an address's `item`).
            full = e["path"].split(".")
            steps = [x for k, x in enumerate(full[1:], start=2) if not any(
                y.get("url", "").endswith("/xml-choice-group") and y.get("valueBoolean")
                for y in snap.get(".".join(full[:k]), {}).get("extension", []))]
            attr = steps.pop() if is_attr else ""
            if attr == "code":
                # A coded element's `code` attribute bound: the element's code (with its
                # codeSystem), as a binding of the element.
                attr = ""
            at = "/".join(steps)
            rules.append(("Bind", at, attr, (strength, vs)))
        out.append((root, ext, d.get("title") or d["name"], cls, code, rules))
    return out


BINDINGS_LEFT_OUT = []




# --- Value set bindings -----------------------------------------------------------------------

TERM_PACKAGE = "hl7.terminology.r4"
TERM_VERSION = "7.0.1"
TERM_SHA256 = "170c546f761fb51b3355788ca500206f6b772b21c57348c29205de85a6612baa"
STRENGTHS = {"required": "Required", "extensible": "Extensible"}
UCUM = "http://unitsofmeasure.org"


class Terminology:
    """The code systems and value sets bundled for the bindings: the CDA logical models' own
    (``ValueSet/``, ``CodeSystem/``) and npm hl7.terminology.r4's (the HL7 v3 code systems and
    value sets, and THO's others). A value set is expanded only where every part of its compose
    is a rule of: a whole code system, listed concepts, ``is-a`` / ``descendent-of`` over a
    code system's hierarchy (nesting and ``subsumedBy``), other value sets of the same rules;
    each code system complete (``content = complete``). Anything else (a regex, a filter on
    another property, a code system not bundled: LOINC, SNOMED CT, VSAC's value sets) leaves
    the value set not bundled."""

    def __init__(self, lm: Path, term: Path):
        import json

        self.cs = {}  # url -> (oid, {code: set(parents)}, complete)
        self.vs = {}  # url -> compose (json-like dict)
        self.files = []  # (name, sha256) read
        for p in sorted((lm / "CodeSystem").glob("*.xml")) + sorted((lm / "ValueSet").glob("*.xml")):
            root = ET.parse(p).getroot()
            self.files.append((f"{p.parent.name}/{p.name}", hashlib.sha256(p.read_bytes()).hexdigest()))
            j = self._xml_json(root)
            (self._add_cs if root.tag == F + "CodeSystem" else self._add_vs)(j)
        self.origin = {}  # url -> (file name, sha256) of the terminology package's files
        if term.is_dir():
            for p in sorted(term.glob("CodeSystem-*.json")) + sorted(term.glob("ValueSet-*.json")):
                raw = p.read_bytes()
                j = json.loads(raw.decode("utf-8"))
                (self._add_cs if j.get("resourceType") == "CodeSystem" else self._add_vs)(j)
                self.origin.setdefault(j.get("url"), (p.name, hashlib.sha256(raw).hexdigest()))
        self.cache = {}
        self.touched = set()
        self.named = set()

    def used_files(self):
        """The terminology package's files an expansion read, sorted by name."""
        return sorted({self.origin[u] for u in self.touched if u in self.origin})

    @staticmethod
    def _xml_json(root):
        """The few fields of a FHIR XML CodeSystem or ValueSet read here, as the JSON form."""

        def concepts(e):
            return [{"code": val(c, "code"), "concept": concepts(c)} for c in e.findall(F + "concept")]

        def part(e):
            return {
                "system": val(e, "system"),
                "concept": [{"code": val(c, "code")} for c in e.findall(F + "concept")],
                "filter": [{"property": val(f, "property"), "op": val(f, "op"), "value": val(f, "value")} for f in e.findall(F + "filter")],
                "valueSet": [v.get("value") for v in e.findall(F + "valueSet")],
            }

        j = {"url": val(root, "url"), "content": val(root, "content"),
             "identifier": [{"value": val(i, "value")} for i in root.findall(F + "identifier")],
             "concept": concepts(root)}
        comp = root.find(F + "compose")
        if comp is not None:
            j["compose"] = {"include": [part(x) for x in comp.findall(F + "include")],
                            "exclude": [part(x) for x in comp.findall(F + "exclude")]}
        return j

    def _add_cs(self, j):
        oid = next((i["value"][len("urn:oid:"):] for i in j.get("identifier", []) if i.get("value", "").startswith("urn:oid:")), "")
        codes = {}

        def walk(cs, parent):
            for c in cs:
                ps = codes.setdefault(c["code"], set())
                if parent is not None:
                    ps.add(parent)
                for pr in c.get("property", []):
                    if pr.get("code") == "subsumedBy" and pr.get("valueCode"):
                        ps.add(pr["valueCode"])
                walk(c.get("concept", []), c["code"])

        walk(j.get("concept", []), None)
        self.cs.setdefault(j["url"], (oid, codes, j.get("content") == "complete"))

    def _add_vs(self, j):
        if "compose" in j:
            self.vs.setdefault(j["url"], j["compose"])

    def descendants(self, system, code):
        _, codes, _ = self.cs[system]
        kids = {}
        for c, ps in codes.items():
            for p in ps:
                kids.setdefault(p, set()).add(c)
        out, todo = set(), [code]
        while todo:
            for k in kids.get(todo.pop(), ()):
                if k not in out:
                    out.add(k)
                    todo.append(k)
        return out

    def part(self, inc, stack):
        """The (system, code) pairs of one include or exclude; None: not expandable here."""
        sets = []
        if inc.get("valueSet"):
            for u in inc["valueSet"]:
                e = self.expand(u.split("|")[0], stack)
                if e is None:
                    return None
                sets.append(e)
        system = inc.get("system")
        if system:
            self.touched.add(system)
            listed = {c["code"] for c in inc.get("concept", [])}
            if listed and not inc.get("filter"):
                # Listed concepts are the value set's codes, whether or not the code system is
                # bundled (Languages lists ISO 639 codes of urn:ietf:bcp:47; CDARoleClassRoot
                # lists a RoleClass code this copy of v3 RoleClass no longer has).
                sets.append({(system, c) for c in listed})
                system = None
        if system:
            if system not in self.cs or not self.cs[system][2]:
                return None
            _, codes, _ = self.cs[system]
            mine = listed & set(codes) if listed else set(codes)
            for f in inc.get("filter", []):
                if f.get("property") != "concept" or f.get("op") not in ("is-a", "descendent-of") or f.get("value") not in codes:
                    return None
                d = self.descendants(system, f["value"])
                mine &= d | {f["value"]} if f["op"] == "is-a" else d
            sets.append({(system, c) for c in mine})
        if not sets:
            return None
        out = sets[0]
        for s in sets[1:]:
            out &= s
        return out

    def expand(self, url, stack=()):
        """The value set's (system, code) pairs, or None when it is not bundled."""
        if url in self.cache:
            return self.cache[url]
        comp = self.vs.get(url)
        self.touched.add(url)
        if comp is None:
            self.cache[url] = None
            return None
        if url in stack:
            return None
        out = set()
        for inc in comp.get("include", []):
            p = self.part(inc, stack + (url,))
            if p is None:
                self.cache[url] = None
                return None
            out |= p
        for exc in comp.get("exclude", []):
            p = self.part(exc, stack + (url,))
            if p is None:
                self.cache[url] = None
                return None
            out -= p
        self.cache[url] = out
        return out

    def is_ucum(self, url):
        """The value set is all of UCUM (one include of the whole system: a grammar, which
        phiward's PQ rule checks)."""
        self.touched.add(url)
        comp = self.vs.get(url) or {}
        inc = comp.get("include", [])
        return (len(inc) == 1 and inc[0].get("system") == UCUM and not comp.get("exclude")
                and not any(inc[0].get(k) for k in ("concept", "filter", "valueSet")))

    def oid(self, system):
        return self.cs[system][0] if system in self.cs else ""


def lm_bindings(src: Path):
    """The logical models' bindings: {(definition id, element path): (strength, value set)}."""
    out = {}
    for p in sorted(src.glob("*.xml")):
        root = ET.parse(p).getroot()
        diff = root.find(F + "differential")
        if diff is None:
            continue
        for e in diff.findall(F + "element"):
            b = e.find(F + "binding")
            vs = b.find(F + "valueSet") if b is not None else None
            if vs is not None:
                out[val(e, "path")] = (val(b, "strength"), vs.get("value").split("|")[0])
    return out


def write_bindings(classes, tpls, term, out_path: Path):
    """Writes ``vs_tables.rs``: the value sets the required and extensible bindings name
    (expanded where bundled), and the base's bindings per class. Returns the value sets' indexes
    by url and the counts for the docs."""
    base = []
    for i, c in enumerate(classes):
        name, attrs, elems = c[0], c[1], c[2]
        for k, a in enumerate(attrs):
            if a.get("binding") and a["name"] != "nullFlavor":
                base.append((i, k, True, a["sdtc"], *a["binding"]))
        for k, x in enumerate(elems):
            if x.get("binding"):
                base.append((i, k, False, x["sdtc"], *x["binding"]))
    tbind = [(t[0] + ":" + t[1], r[1], r[2], *r[3]) for t in tpls for r in t[5] if r[0] == "Bind"]
    urls = sorted({b[5] for b in base if b[4] in STRENGTHS} | {b[4] for b in tbind if b[3] in STRENGTHS})
    vs_index = {u: i for i, u in enumerate(urls)}
    term.named = set(urls)
    out = []
    w = out.append
    w("//! The value sets of the C-CDA bindings, @generated by tools/gen_ccda_tables.py: do not edit.")
    w(f"//! From the CDA logical models' value sets and code systems and npm {TERM_PACKAGE} {TERM_VERSION}")
    w("//! (CC0-1.0). Provenance: PROVENANCE.md.")
    w("")
    w("use super::base::{BaseBinding, Strength, ValueSet};")
    w("")
    w("/// The value sets of the required and extensible bindings, by url; `codes`: the expansion")
    w("/// (code system OID, code), sorted by code, where the value set is bundled; `ucum`: all of")
    w("/// UCUM, a grammar the PQ rule checks.")
    w("pub static VALUE_SETS: &[ValueSet] = &[")
    bundled = {}
    for u in urls:
        ucum = term.is_ucum(u)
        e = set() if ucum else term.expand(u)
        bundled[u] = e is not None
        w("    ValueSet {")
        w(f"        url: {rust_str(u)},")
        w(f"        bundled: {str(e is not None).lower()},")
        w(f"        ucum: {str(ucum).lower()},")
        if e is None or ucum:
            w("        codes: &[],")
        else:
            pairs = sorted({(c, term.oid(sys_)) for sys_, c in e})
            w("        codes: &[" + ", ".join(f"({rust_str(o)}, {rust_str(c)})" for c, o in pairs) + "],")
        w("    },")
    w("];")
    w("")
    w("/// The base's required and extensible bindings (the logical models'; nullFlavor's is")
    w("/// `NULL_FLAVORS`), by class index: an attribute's, or a coded element's.")
    w("pub static BASE_BINDINGS: &[BaseBinding] = &[")
    for i, k, attr, sdtc, strength, vs in base:
        if strength in STRENGTHS:
            w(f"    BaseBinding {{ class: {i}, index: {k}, attr: {str(attr).lower()}, strength: Strength::{STRENGTHS[strength]}, value_set: {vs_index[vs]} }},")
    w("];")
    out_path.write_text("\n".join(out) + "\n")
    # The counts for docs/ccda.md: each binding as the definitions state it (a logical model's
    # element, a template's differential element), by strength and whether it is checked.
    counts = {}
    for path, (strength, vs) in sorted(LM_BINDINGS.items()):
        if path == "ANY.nullFlavor":
            k = "checked"
        elif strength not in STRENGTHS:
            k = "not checked (" + strength + ")"
        else:
            k = "checked" if bundled[vs] else "not bundled"
        counts[("base", strength, k)] = counts.get(("base", strength, k), 0) + 1
    for key, path, attr, strength, vs in tbind:
        k = ("checked" if bundled[vs] else "not bundled") if strength in STRENGTHS else "not checked (" + strength + ")"
        counts[("templates", strength, k)] = counts.get(("templates", strength, k), 0) + 1
    for key, eid, strength, vs in BINDINGS_LEFT_OUT:
        k = "left out (slice or sdtc)" if strength in STRENGTHS else "not checked (" + strength + ")"
        counts[("templates", strength, k)] = counts.get(("templates", strength, k), 0) + 1
    return vs_index, counts


LM_BINDINGS = {}


def main() -> None:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else REPO.parent / "shared/cda/logical-models")
    pkg = Path(sys.argv[2] if len(sys.argv) > 2 else REPO / "target/gen-npm-ccda/hl7.cda.us.ccda/package")
    files = sorted(p for p in src.glob("*.xml"))
    defs = {}
    digests = []
    for p in files:
        digests.append((p.name, hashlib.sha256(p.read_bytes()).hexdigest()))
        d = Def(p)
        if d.url and d.url.startswith(CDA) and d.kind == "logical":
            defs[d.id] = d
            for e in d.elements:
                if e["binding"] is not None:
                    LM_BINDINGS[e["path"]] = e["binding"]

    classes = []  # (name, attrs, elems, text, unordered, narrative)
    index = {}

    def key_of(e):
        return (e["ns"] == SDTC, e["xmlname"] or e["path"].rsplit(".", 1)[-1])

    flats = {}

    def flat(did):
        """(attrs, elems, text, unordered) of a definition, its base's first (once each)."""
        if did not in flats:
            flats[did] = flat_once(did)
        a, e, t, u = flats[did]
        return [dict(x) for x in a], [dict(x) for x in e], t, u

    def flat_once(did):
        d = defs[did]
        if d.base.startswith(CDA) and d.base[len(CDA):] in defs:
            attrs, elems, text, unordered = flat(d.base[len(CDA):])
            attrs, elems = [dict(a) for a in attrs], [dict(x) for x in elems]
        else:
            attrs, elems, text, unordered = [], [], False, False
        a2, e2, t2, u2 = apply(d.name, [x for x in d.elements if "." in x["path"]], attrs, elems, text, unordered)
        return a2, e2, t2, u2

    def apply(root, items, attrs, elems, text, unordered):
        depth = root.count(".") + 1
        direct = [e for e in items if e["path"].count(".") == depth]
        for e in direct:
            sub = [x for x in items if x["path"].startswith(e["path"] + ".")]
            ns, name = key_of(e)
            if "xmlText" in e["rep"]:
                text = True
                continue
            if "xmlAttr" in e["rep"]:
                kind = PRIM.get(e["types"][0], "Str") if e["types"] else None
                old = next((a for a in attrs if (a["sdtc"], a["name"]) == (ns, name)), None)
                rec = old or {"name": name, "sdtc": ns, "min": 0, "max": 1, "kind": "Str", "fixed": None}
                if e["min"] is not None:
                    rec["min"] = int(e["min"])
                if e["max"] is not None:
                    rec["max"] = 0 if e["max"] == "0" else (1 if e["max"] == "1" else 2)
                if kind:
                    rec["kind"] = kind
                if e["fixed"] is not None:
                    rec["fixed"] = e["fixed"]
                if e["binding"] is not None:
                    rec["binding"] = e["binding"]
                if old is None:
                    attrs.append(rec)
                continue
            if e["choice"]:
                # A choice group: its members interleave in any order.
                unordered = True
                a2, e2, t2, _ = apply(e["path"], sub, attrs, elems, text, unordered)
                attrs, elems, text = a2, e2, t2
                if e["max"] == "*":
                    # A repeating choice (AD.item, EN.item): each member repeats as often (an
                    # address of two streetAddressLines, a name of two givens).
                    members = {key_of(x) for x in sub if x["path"].count(".") == depth + 1}
                    for x in elems:
                        if (x["sdtc"], x["name"]) in members:
                            x["max"] = 0xFFFFFFFF
                continue
            old = next((x for x in elems if (x["sdtc"], x["name"]) == (ns, name)), None)
            rec = old or {"name": name, "sdtc": ns, "min": 0, "max": 1, "types": [], "xsi": False, "narrative": False}
            if e["min"] is not None:
                rec["min"] = int(e["min"])
            if e["max"] is not None:
                rec["max"] = 0xFFFFFFFF if e["max"] == "*" else int(e["max"])
            if "typeAttr" in e["rep"]:
                rec["xsi"] = True
            if e["binding"] is not None:
                rec["binding"] = e["binding"]
            if "cdaText" in e["rep"]:
                rec["narrative"] = True
                rec["types"] = []
            tys = [t[len(CDA):] for t in e["types"] if t.startswith(CDA) and t[len(CDA):] in defs]
            if tys:
                rec["types"] = [cls(t) for t in tys]
            if sub:
                base = rec["types"][0] if rec["types"] else None
                known = base is not None and classes[base] is not None
                ba, be, bt, bu = classes[base][1:] if known else ([], [], False, False)
                ba, be = [dict(a) for a in ba], [dict(x) for x in be]
                a2, e2, t2, u2 = apply(e["path"], sub, ba, be, bt, bu)
                rec["types"] = [add(e["path"], a2, e2, t2, u2)]
            if old is None:
                elems.append(rec)
        return attrs, elems, text, unordered

    def add(name, attrs, elems, text, unordered):
        classes.append((name, attrs, elems, text, unordered))
        return len(classes) - 1

    def cls(did):
        # The slot is taken before the class is flattened: a class can hold itself (a section's
        # component holds a section).
        if did in index:
            return index[did]
        classes.append(None)
        i = len(classes) - 1
        index[did] = i
        a, e, t, u = flat(did)
        classes[i] = (defs[did].name, a, e, t, u)
        return i

    for did in sorted(defs):
        cls(did)

    names = set(NARRATIVE)
    for _, _, elems, _, _ in classes:
        for x in elems:
            names.add(x["name"])
    names.add("ClinicalDocument")
    names = sorted(n for n in names if "." not in n)

    out = []
    w = out.append
    w("//! The CDA R2.0 base tables, @generated by tools/gen_ccda_tables.py from the CDA logical models")
    w(f"//! (HL7/CDA-core-sd at {COMMIT[:12]}, CC0-1.0): do not edit. Provenance: PROVENANCE.md.")
    w("")
    w("use super::base::{Attr, Class, Elem, Prim, Rule, Strength, Template};")
    w("")
    w("/// Every element name of the base and of the narrative block, sorted: the names a path holds.")
    w("pub static NAMES: &[&str] = &[")
    for n in names:
        w(f'    "{n}",')
    w("];")
    w("")
    w("/// The classes and data types, flattened; an element's types index this table.")
    w("pub static CLASSES: &[Class] = &[")
    for i, (name, attrs, elems, text, unordered) in enumerate(classes):
        w(f"    // {i}")
        w("    Class {")
        w(f'        name: "{name}",')
        w(f"        text: {str(text).lower()},")
        w(f"        unordered: {str(unordered).lower()},")
        w("        attrs: &[")
        for a in attrs:
            fixed = "None" if a["fixed"] is None else '"' + a["fixed"] + '"'
            fixed = fixed if fixed == "None" else f"Some({fixed})"
            w(f'            Attr {{ name: "{a["name"]}", sdtc: {str(a["sdtc"]).lower()}, min: {a["min"]}, max: {a["max"]}, kind: Prim::{a["kind"]}, fixed: {fixed} }},')
        w("        ],")
        w("        elems: &[")
        for x in elems:
            tys = ", ".join(str(t) for t in x["types"])
            w(f'            Elem {{ name: "{x["name"]}", sdtc: {str(x["sdtc"]).lower()}, min: {x["min"]}, max: {x["max"]}, types: &[{tys}], xsi: {str(x["xsi"]).lower()}, narrative: {str(x["narrative"]).lower()} }},')
        w("        ],")
        w("    },")
    w("];")
    w("")
    by_name = {c[0]: c for c in classes}

    def base_min(cls, name):
        c = by_name.get(cls)
        x = next((x for x in c[2] if x["name"] == name), None) if c else None
        return x["min"] if x else 0

    nf = ET.parse(src / "ValueSet" / "CDANullFlavor.xml").getroot()
    codes = [c.get("value") for c in nf.iter(F + "code")]
    digests.append(("ValueSet/CDANullFlavor.xml", hashlib.sha256((src / "ValueSet" / "CDANullFlavor.xml").read_bytes()).hexdigest()))
    w("/// The codes of value set CDANullFlavor (the base's binding of every nullFlavor).")
    w("pub static NULL_FLAVORS: &[&str] = &[" + ", ".join(f'"{c}"' for c in codes) + "];")
    w("")
    def base_fixed(cls, path, name):
        """The base's fixed value of attribute `name` of the element at `path` under class `cls`."""
        c = by_name.get(cls)
        for step in path:
            x = next((x for x in c[2] if x["name"] == step), None) if c else None
            c = classes[x["types"][0]] if x and x["types"] else None
        a = next((a for a in c[1] if a["name"] == name), None) if c else None
        return a["fixed"] if a and a["min"] == 0 else None

    sch_dir = Path(sys.argv[3] if len(sys.argv) > 3 else REPO.parent / "shared/cda/schematron-r2.1")
    schs = sorted(sch_dir.glob("*.sch"))
    r21 = r21_values(schs[0]) if schs else {}
    tpls = templates(pkg, base_min, r21, base_fixed)
    term_dir = Path(sys.argv[4] if len(sys.argv) > 4 else REPO / "target/gen-npm-ccda/hl7.terminology.r4/package")
    term = Terminology(src, term_dir)
    vs_index, binding_counts = write_bindings(classes, tpls, term, REPO / "src/formats/ccda/vs_tables.rs")
    w("/// The C-CDA templates of npm hl7.cda.us.ccda, by templateId root then extension.")
    w("pub static TEMPLATES: &[Template] = &[")
    for root, ext, title, cls, (code, system), rules in tpls:
        w("    Template {")
        w(f'        key: "{root}:{ext}",')
        w(f'        root: "{root}",')
        w(f'        extension: "{ext}",')
        w(f"        title: {rust_str(title)},")
        w(f'        class: "{cls}",')
        w(f'        code: "{code}",')
        w(f'        code_system: "{system}",')
        w("        rules: &[")
        for kind, path, name, value in rules:
            if kind == "Bind":
                if value[0] not in STRENGTHS:
                    continue
                w(f"            Rule::Bind {{ path: {rust_str(path)}, attr: {rust_str(name)}, strength: Strength::{STRENGTHS[value[0]]}, value_set: {vs_index[value[1]]} }},")
                continue
            w(f"            Rule::{kind} {{ path: {rust_str(path)}, name: {rust_str(name)}, value: {rust_str(value)} }},")
        w("        ],")
        w("    },")
    w("];")
    w("")
    (REPO / "src/formats/ccda/tables.rs").write_text("\n".join(out) + "\n")
    prov = [
        "# Provenance of `tables.rs`",
        "",
        f"Generated by `tools/gen_ccda_tables.py` from the CDA R2.0 logical models of `HL7/CDA-core-sd`,",
        f"commit `{COMMIT}`, folder `input/resources/` (CC0-1.0). Files read (sha256):",
        "",
    ]
    prov += [f"- `{n}` `{h}`" for n, h in digests]
    prov += [
        "",
        f"The C-CDA templates: npm `{CCDA_PACKAGE}` `{CCDA_VERSION}` (CC0-1.0), archive sha256",
        f"`{CCDA_SHA256}`; its `package/StructureDefinition-*.json` files (sha256):",
        "",
    ]
    prov += [f"- `{p.name}` `{hashlib.sha256(p.read_bytes()).hexdigest()}`" for p in sorted(pkg.glob("StructureDefinition-*.json"))]
    if schs:
        prov += [
            "",
            "Fixed values HL7's C-CDA R2.1 schematron accepts where 5.0 fixes another (HL7/CDA-ccda-2.1,",
            "`validation/`; read for its fixed values only, sha256):",
            "",
            f"- `{schs[0].name}` `{hashlib.sha256(schs[0].read_bytes()).hexdigest()}`",
        ]
    if schs:
        write_r21(schs[0], REPO / "src/formats/ccda/r21_tables.rs", REPO / "docs/ccda.md")
        prov += [
            "",
            "`r21_tables.rs`: the error phase's assertions of the same schematron, translated where their",
            "XPath is of the subset phiward evaluates (the others are listed in docs/ccda.md).",
        ]
    seen = {n for n, _ in digests}
    used = term.used_files()
    prov += [
        "",
        "`vs_tables.rs`: the value sets of the required and extensible bindings of the logical models",
        "and the templates, expanded from the logical models' value sets and code systems (sha256):",
        "",
    ]
    prov += [f"- `{n}` `{h}`" for n, h in term.files if n not in seen]
    prov += [
        "",
        f"and npm `{TERM_PACKAGE}` `{TERM_VERSION}` (CC0-1.0; HL7 Terminology: the v3 code systems and value",
        f"sets), archive sha256 `{TERM_SHA256}`; its files read for an expansion (sha256):",
        "",
    ]
    prov += [f"- `{n}` `{h}`" for n, h in used]
    (REPO / "src/formats/ccda/PROVENANCE.md").write_text("\n".join(prov) + "\n")
    write_binding_docs(binding_counts, term, REPO / "docs/ccda.md")


def write_binding_docs(counts, term, docs_path: Path):
    """The counts of bindings checked and not, and the value sets not bundled, in docs/ccda.md
    between its ``ccda-bindings`` markers."""
    lines = ["| bindings | strength | checked | value set not bundled (information) | not checked |", "|---|---|---|---|---|"]
    for where in ("base", "templates"):
        for strength in ("required", "extensible", "preferred", "example"):
            row = {k: n for (w, st, k), n in counts.items() if w == where and st == strength}
            if not row:
                continue
            other = sum(n for k, n in row.items() if k not in ("checked", "not bundled"))
            why = "slice or SDTC path" if strength in STRENGTHS else "by strength"
            lines.append(f"| {'the logical models' if where == 'base' else 'the 5.0 templates'} | {strength} | "
                         f"{row.get('checked', 0)} | {row.get('not bundled', 0)} | {other}{f' ({why})' if other else ''} |")
    lines += ["", "The value sets of required and extensible bindings that are not bundled (each reported once",
              "per document where a bound element has a code):", ""]
    missing = sorted(u for u, e in term.cache.items() if e is None and u in term.named)
    vsac = [u for u in missing if u.startswith("http://cts.nlm.nih.gov/fhir/ValueSet/")]
    lines.append(f"- VSAC ({len(vsac)}): " + ", ".join(u.rsplit("/", 1)[1] for u in vsac) + ";")
    lines.append("- others: " + ", ".join(f"`{u}`" for u in missing if u not in vsac) + ".")
    text = docs_path.read_text()
    begin, end = "<!-- ccda-bindings:begin -->", "<!-- ccda-bindings:end -->"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        docs_path.write_text(head + begin + "\n" + "\n".join(lines) + "\n" + end + tail)


if __name__ == "__main__":
    main()
