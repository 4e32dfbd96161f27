#!/usr/bin/env python3
"""A real implementation guide from the npm registry: `hl7.fhir.uv.ips` 2.0.0 (issue 31).

    python3 tests/peers/ips.py PHIWARD_BINARY [--verbose] [--keep]

1. Every example in the package (`package/example/`) is validated against the profiles it
   declares (`meta.profile`), with the package loaded by `--ig`: no error-severity finding is
   the target (a false positive of ours otherwise).
2. Mutations, made from the package's own snapshots, not from a list written by hand. For every
   example, and for the Composition inside each IPS Bundle (checked through the Bundle profile's
   type profile), each applicable mutation of each kind gives one file:
   - `slice_removed`: the items matching a required slice (min >= 1; matched by the slice's
     pattern, its child's pattern, or the resource type of a type-discriminated entry) removed;
   - `binding`: a code under a `required` binding replaced by one outside every value set;
   - `cardinality_max`: an element the profile narrows to n items (base `*`) given n + 1
     (a slice's matching item duplicated);
   - `cardinality_min`: an element the profile makes required (base min 0) removed;
   - `fixed_value`: a fixed or pattern value outside a slice changed to another valid value;
   - `unknown_extension`: an extension whose URL is in the IG's namespace but defined nowhere
     (on DomainResources: Bundle, Binary and Parameters have no `extension`).
   A mutant is detected when its report has an error-severity finding that the unmutated file
   does not have, and a new finding located on the mutated element (its path, with or without
   an index, or a path below it) or, for a missing element, on its parent: the error itself, or,
   inside a Bundle entry matched by profile, the reason the entry's resource did not match. Target: >= 99% per kind.

The package and the packages it depends on are fetched once with `npm pack` into target/ips/
(never committed); the dependencies go into a package cache there (`--package-dir`):
hl7.terminology.r4 and hl7.fhir.uv.extensions.r4 are on npm only in other versions than IPS
names, which phiward substitutes and reports. All files go through one `phiward validate` run.
Prints SKIPPED (exit 0) when npm or the registry is not reachable. Python 3 standard library.
"""

from __future__ import annotations

import collections
import copy
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
WORK = ROOT / "target" / "ips"
IPS = ("hl7.fhir.uv.ips", "2.0.0")
# The versions the npm registry holds of IPS 2.0.0's dependencies.
DEPENDENCIES = [("hl7.terminology.r4", "7.0.1"), ("hl7.fhir.uv.extensions.r4", "5.3.0-ballot-tc1")]
KINDS = ["slice_removed", "binding", "cardinality_max", "cardinality_min", "fixed_value", "unknown_extension"]
TARGET = 0.99
# Another valid code for a fixed code, so that only the fixed value is broken.
OTHER_CODE = {"document": "collection", "active": "inactive", "final": "amended"}
UNKNOWN_EXTENSION = "http://hl7.org/fhir/uv/ips/StructureDefinition/not-defined-anywhere"
NOT_A_CODE = "zz-not-a-code"
# The R4 resources that are not DomainResources: they have no `extension` element.
NOT_DOMAIN_RESOURCES = {"Bundle", "Binary", "Parameters"}


def npm_pack(name: str, version: str) -> Path | None:
    """The package's .tgz under target/ips/, fetched once."""
    WORK.mkdir(parents=True, exist_ok=True)
    tgz = WORK / f"{name}-{version}.tgz"
    if tgz.is_file():
        return tgz
    if shutil.which("npm") is None:
        return None
    run = subprocess.run(["npm", "pack", f"{name}@{version}", "--silent"], cwd=WORK,
                         capture_output=True, text=True, check=False)
    return tgz if run.returncode == 0 and tgz.is_file() else None


def unpack(tgz: Path, into: Path) -> None:
    if (into / "package" / "package.json").is_file():
        return
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tgz) as t:
        t.extractall(into, filter="data")


def fetch() -> tuple[Path, Path] | None:
    """(the IPS .tgz, the package cache holding its dependencies), fetched once; the package is
    also unpacked under target/ips/ips/. None when npm or the registry is not reachable. Also
    used by scripts/bench (the IG validation case)."""
    tgz = npm_pack(*IPS)
    if tgz is None:
        return None
    cache = WORK / "packages"
    for name, version in DEPENDENCIES:
        dep = npm_pack(name, version)
        if dep is not None:
            unpack(dep, cache / f"{name}#{version}")
            write_index(cache / f"{name}#{version}" / "package")
    unpack(tgz, WORK / "ips")
    return tgz, cache


def write_index(folder: Path) -> None:
    """`.index.json` of an unpacked package, as the FHIR package tooling writes it into the
    package cache (`~/.fhir/packages`) when it installs a package: the npm copies lack it."""
    index = folder / ".index.json"
    if index.is_file():
        return
    files = []
    for f in sorted(folder.glob("*.json")):
        if f.name == "package.json":
            continue
        try:
            r = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(r, dict) or "resourceType" not in r:
            continue
        entry = {"filename": f.name, "resourceType": r["resourceType"], "id": r.get("id")}
        for k in ("url", "version", "kind", "type", "supplements", "content"):
            if isinstance(r.get(k), str):
                entry[k] = r[k]
        files.append(entry)
    index.write_text(json.dumps({"index-version": 2, "files": files}, indent=1), encoding="utf-8")


# ---- profiles ----------------------------------------------------------------------------

def load_profiles(package: Path) -> dict[str, dict]:
    out = {}
    for f in sorted(package.glob("StructureDefinition-*.json")):
        sd = json.loads(f.read_text())
        if sd.get("kind") == "resource" and sd.get("snapshot"):
            out[sd["url"]] = sd
    return out


def value_key(e: dict, prefix: str) -> tuple[str, object] | None:
    for k, v in e.items():
        if k.startswith(prefix):
            return k, v
    return None


def matches(pattern, value) -> bool:
    """FHIR pattern semantics: every property of the pattern is in the value, arrays by some item."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(k in value and matches(v, value[k]) for k, v in pattern.items())
    if isinstance(pattern, list):
        items = value if isinstance(value, list) else [value]
        return all(any(matches(p, i) for i in items) for p in pattern)
    return pattern == value


def field_name(path: str) -> str:
    """`Observation.effective[x]` -> `effective`, the JSON name's stem."""
    return path.split(".")[1].replace("[x]", "")


def present(resource: dict, path: str) -> list[str]:
    """The JSON keys holding the root element `path` (a choice element may be any `stem*`)."""
    stem = field_name(path)
    if path.endswith("[x]"):
        return [k for k in resource if k.startswith(stem) and k[len(stem):][:1].isupper()]
    return [stem] if stem in resource else []


def slice_matcher(sd: dict, e: dict):
    """A predicate telling a slice's items, from its pattern, its children's, or its type profile."""
    els = sd["snapshot"]["element"]
    own = value_key(e, "pattern") or value_key(e, "fixed")
    if own:
        return lambda item: matches(own[1], item)
    children = []
    for c in els:
        if c["id"].startswith(e["id"] + ".") and c["id"].count(".") == e["id"].count(".") + 1:
            pv = value_key(c, "pattern") or value_key(c, "fixed")
            if pv:
                children.append((c["path"].split(".")[-1], pv[1]))
            if c["path"].endswith(".resource") and c.get("type"):
                rtype = c["type"][0].get("code")
                children.append(("resource", {"resourceType": rtype}))
    if not children:
        return None
    return lambda item: isinstance(item, dict) and all(k in item and matches(v, item[k]) for k, v in children)


def mutations(resource: dict, sd: dict, loc: str):
    """(kind, label, mutated resource, accepted locations) for one resource against one profile."""
    rtype = resource["resourceType"]
    for e in sd["snapshot"]["element"]:
        path = e["path"]
        if path.count(".") != 1:
            continue
        base = e.get("base", {})
        keys = present(resource, path)
        sub = loc + "." + field_name(path)
        here = [sub]
        if e.get("sliceName"):
            if e["id"].count(":") > 1:
                continue  # a re-slice
            match = slice_matcher(sd, e)
            items = resource.get(field_name(path))
            if match is None or not isinstance(items, list):
                continue
            hits = [i for i, item in enumerate(items) if match(item)]
            if not hits:
                continue
            if e.get("min", 0) >= 1:
                m = copy.deepcopy(resource)
                m[field_name(path)] = [x for i, x in enumerate(items) if i not in hits]
                if not m[field_name(path)]:
                    del m[field_name(path)]
                yield "slice_removed", e["id"], m, here + [loc]
            if e.get("max") not in (None, "*") and int(e["max"]) >= 1:
                m = copy.deepcopy(resource)
                extra = [copy.deepcopy(items[hits[0]]) for _ in range(int(e["max"]) + 1 - len(hits))]
                if field_name(path) == "entry":
                    continue  # a duplicated entry is a duplicated fullUrl too: not only cardinality
                m[field_name(path)] = items + extra
                yield "cardinality_max", e["id"], m, here
            continue
        if not keys:
            continue
        key = keys[0]
        value = resource[key]
        if e.get("min", 0) >= 1 and base.get("min", 0) == 0:
            m = copy.deepcopy(resource)
            for k in keys:
                del m[k]
                m.pop("_" + k, None)
            yield "cardinality_min", e["id"], m, here + [loc]
        if base.get("max") == "*" and e.get("max") not in (None, "*") and isinstance(value, list) and value:
            n = int(e["max"])
            if n >= 1:
                m = copy.deepcopy(resource)
                m[key] = value + [copy.deepcopy(value[0]) for _ in range(n + 1 - len(value))]
                yield "cardinality_max", e["id"], m, here
        binding = e.get("binding", {})
        types = {t.get("code") for t in e.get("type", [])}
        if binding.get("strength") == "required" and not value_key(e, "fixed"):
            m = copy.deepcopy(resource)
            if "code" in types and isinstance(value, str):
                m[key] = NOT_A_CODE
            elif "CodeableConcept" in types and isinstance(value, dict) and value.get("coding"):
                for c in m[key]["coding"]:
                    c["code"] = NOT_A_CODE
            elif "Coding" in types and isinstance(value, dict) and "code" in value:
                m[key]["code"] = NOT_A_CODE
            else:
                m = None
            if m is not None:
                yield "binding", e["id"], m, here
        fixed = value_key(e, "fixed") or value_key(e, "pattern")
        if fixed:
            name, want = fixed
            m = copy.deepcopy(resource)
            if isinstance(want, str) and want in OTHER_CODE and value == want:
                m[key] = OTHER_CODE[want]
            elif isinstance(want, bool) and value == want:
                m[key] = not want
            elif name.endswith("CodeableConcept") and isinstance(value, dict) and value.get("coding"):
                for c in m[key]["coding"]:
                    if any(c.get("system") == p.get("system") and c.get("code") == p.get("code")
                           for p in want.get("coding", [])):
                        c["code"] = c["code"] + "0"
            else:
                m = None
            if m is not None and m != resource:
                yield "fixed_value", e["id"], m, here
    if rtype in NOT_DOMAIN_RESOURCES:
        # No `extension` element: an extension there is an unknown element, not an extension.
        return
    m = copy.deepcopy(resource)
    ext = m.setdefault("extension", [])
    ext.append({"url": UNKNOWN_EXTENSION, "valueBoolean": True})
    yield "unknown_extension", f"{rtype}.extension", m, [f"{loc}.extension[{len(ext) - 1}]", f"{loc}.extension"]


# ---- the run -----------------------------------------------------------------------------

def located(location: str, accepted: list[str], parent_ok: list[str]) -> bool:
    for a in accepted:
        if location == a or location.startswith(a + ".") or location.startswith(a + "["):
            return True
    return location in parent_ok


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    verbose = "--verbose" in sys.argv
    if len(args) != 1:
        print(__doc__)
        return 2
    binary = args[0]
    fetched = fetch()
    if fetched is None:
        print(f"SKIPPED: npm pack {IPS[0]}@{IPS[1]} not possible here")
        return 0
    tgz, cache = fetched
    package = WORK / "ips" / "package"
    profiles = load_profiles(package)

    files = WORK / "files"
    if files.exists():
        shutil.rmtree(files)
    (files / "examples").mkdir(parents=True)
    (files / "mutants").mkdir(parents=True)
    examples = sorted((package / "example").glob("*.json"))
    plan: dict[str, tuple[str, str, str, list[str], list[str]]] = {}
    for ex in examples:
        shutil.copy(ex, files / "examples" / ex.name)
        doc = json.loads(ex.read_text())
        targets = []
        for url in doc.get("meta", {}).get("profile", []):
            if url in profiles:
                targets.append((doc, profiles[url], doc["resourceType"], lambda m, d=doc: m))
        if doc["resourceType"] == "Bundle":
            for i, entry in enumerate(doc.get("entry", [])):
                r = entry.get("resource", {})
                if r.get("resourceType") == "Composition":
                    sd = profiles.get("http://hl7.org/fhir/uv/ips/StructureDefinition/Composition-uv-ips")
                    if sd:
                        def put(m, d=doc, i=i):
                            out = copy.deepcopy(d)
                            out["entry"][i]["resource"] = m
                            return out
                        targets.append((r, sd, f"Bundle.entry[{i}].resource", put))
        n = 0
        for resource, sd, loc, put in targets:
            for kind, label, mutated, accepted in mutations(resource, sd, loc):
                n += 1
                name = f"{ex.stem}--{n:03}-{kind}.json"
                (files / "mutants" / name).write_text(json.dumps(put(mutated)))
                parent = [loc] if kind in ("slice_removed", "cardinality_min") else []
                plan[name] = (ex.name, kind, label, accepted, parent)

    cmd = [binary, "validate", str(files), "--ig", str(tgz), "--package-dir", str(cache),
           "--output-format", "json", "--fail-on", "never"]
    run = subprocess.run(cmd, capture_output=True, check=False)
    if run.returncode not in (0, 1):
        print(f"phiward exited {run.returncode}: {run.stderr.decode(errors='replace')[:400]}")
        return 1
    report = json.loads(run.stdout)
    by_name = {}
    for f in report["files"]:
        by_name[(Path(f["path"]).parent.name, Path(f["path"]).name)] = f.get("findings", [])

    def errors(findings):
        return [x for x in findings if x.get("severity") in ("error", "fatal")]

    bad_examples = []
    for ex in examples:
        errs = errors(by_name.get(("examples", ex.name), []))
        if errs:
            bad_examples.append((ex.name, errs))
    totals = collections.Counter()
    found = collections.Counter()
    misses = []
    for name, (source, kind, label, accepted, parent) in sorted(plan.items()):
        totals[kind] += 1
        before = {(x.get("code"), x.get("location")) for x in by_name.get(("examples", source), [])}
        new = [x for x in by_name.get(("mutants", name), []) if (x.get("code"), x.get("location")) not in before]
        # Detected: the mutant gets a new error, and a new finding (an error, or the reason a
        # slice did not match, which the reference gives as information) names the element.
        if errors(new) and any(located(x.get("location", ""), accepted, parent) for x in new):
            found[kind] += 1
        else:
            misses.append((name, label, [(x.get("code"), x.get("location")) for x in errors(new)][:4]))

    print(f"IPS {IPS[1]}: {len(examples) - len(bad_examples)}/{len(examples)} examples with no error "
          f"against their declared profiles")
    for name, errs in bad_examples[: (None if verbose else 10)]:
        print(f"  example with errors: {name}: " + ", ".join(f"{x.get('code')} {x.get('location')}" for x in errs[:4]))
    ok = not bad_examples
    print("mutations detected at the right location, per kind:")
    for kind in KINDS:
        t, f = totals[kind], found[kind]
        share = f / t if t else 0.0
        flag = "" if t and share >= TARGET else "  BELOW TARGET" if t else "  NONE MADE"
        print(f"  {kind:18} {f:4}/{t:<4} {100 * share:6.1f}%{flag}")
        ok = ok and t > 0 and share >= TARGET
    for name, label, new in misses[: (None if verbose else 15)]:
        print(f"  missed: {name} ({label}): new errors {new}")
    if "--keep" not in sys.argv:
        shutil.rmtree(files)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
