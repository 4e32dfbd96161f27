#!/usr/bin/env python3
"""phiward's C-CDA validation side by side with HL7's C-CDA R2.1 schematron.

    python3 tests/peers/ccda_schematron.py [PHIWARD] [--dir DIR] [--schematron SCH]
                                           [--limit N] [--reuse] [--markdown] [--json OUT]

Documents: the public C-CDA files tests/peers/ccda_public.py collects (DIR/docs, default
target/ccda-public; SKIPPED when absent) and this project's valid fixtures
(fixtures/ccda/valid).

The schematron side: npm `cda-schematron-validator` 1.1.12 (pinned by
tests/peers/ccda_schematron/package-lock.json, installed into target/schematron by this script
with `npm ci`) running HL7's C-CDA R2.1 schematron (../shared/cda/schematron-r2.1/, HL7's
CDA-ccda-2.1 repository, `validation/`), its error phase only (the validator's default), no
`voc.xml` beside it: the 24 value set assertions, which read `document('voc.xml')`, end as
the validator's "ignored" tests (phiward does not check those bindings either). One Node
process parses the schematron once and validates every file (tests/peers/ccda_schematron.mjs).

The phiward side: `phiward validate --json --format ccda`, error findings.

Each finding gets a kind: the schematron assertion's by its test (below, `kind_of_test`), and
phiward's by its code and attribute (`kind_of_finding`). Per kind, findings are paired when a
phiward finding lies at or under the element the schematron rule fired on (its path, names and
1-based indexes): `both`; the rest are one side's only. Per document, the verdicts (an error
or none) are compared.

Speed: each side's whole process over all files (the schematron: one Node process, parsing
included; phiward: one process per file, summed), and the per-file median (the schematron's
per-file time measured inside its process, phiward's as a process).

No value of a document is printed: kinds, codes and counts; the validator's descriptions and
XML snippets, which quote the document, are never read.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import ccda_public  # noqa: E402

NODE_DIR = ROOT / "target" / "schematron"
LOCK_DIR = ROOT / "tests" / "peers" / "ccda_schematron"
DEFAULT_SCH = ROOT.parent / "shared" / "cda" / "schematron-r2.1"
SCH_NS = {"sch": "http://purl.oclc.org/dsdl/schematron"}

KINDS = [
    "fixed attribute (classCode, moodCode...)",
    "fixed code (code, statusCode)",
    "required element",
    "required attribute",
    "required templated content",
    "templateId",
    "data type (xsi:type)",
    "value set",
    "other schematron constraint",
    "CDA base (schema)",
]
FIXED_ATTRS = {"classCode", "moodCode", "typeCode", "determinerCode", "contextControlCode",
               "contextConductionInd", "inversionInd", "negationInd"}


def kind_of_test(test: str) -> str:
    t = " ".join(test.split())
    if "document(" in t:
        return "value set"
    if "xsi:type" in t:
        return "data type (xsi:type)"
    if re.match(r"^count\((\./)?cda:templateId\[", t):
        return "templateId"
    if "templateId[" in t:
        return "required templated content"
    if re.match(r"^@(\w+)\s*=", t) and re.match(r"^@(\w+)", t).group(1) in FIXED_ATTRS:
        return "fixed attribute (classCode, moodCode...)"
    if re.search(r"\[@code\s*=|@codeSystem\s*=|\[@nullFlavor\s*=", t) and not t.startswith("not("):
        return "fixed code (code, statusCode)"
    if re.fullmatch(r"((cda|sdtc):\w+/)*(cda|sdtc):\w+\[@\w+\]|@\w+", t):
        return "required attribute"
    if re.fullmatch(r"((cda|sdtc):\w+/)*((cda|sdtc):\w+\[)?count\((\./)?(cda|sdtc):\w+\)\s*(=\s*1|>\s*0|>=\s*1)\]?", t):
        return "required element"
    return "other schematron constraint"


def kind_of_finding(code: str, location: str, conf_kinds: dict[str, str] | None = None) -> str:
    """A phiward finding's kind: an R2.1 template's finding (`/CONF:n-n` in its location) has
    its assertion's kind; others by code and attribute."""
    if "/CONF:" in location and conf_kinds:
        k = conf_kinds.get(location.rsplit("/CONF:", 1)[1])
        if k:
            return k
    attr = location.split("/@")[-1].split("/")[0] if "/@" in location else ""
    if code == "CCDA_TEMPLATE_VALUE_MISMATCH":
        return "fixed attribute (classCode, moodCode...)" if attr in FIXED_ATTRS else "fixed code (code, statusCode)"
    if code in ("CCDA_TEMPLATE_ELEMENT_MISSING", "CCDA_ELEMENT_MISSING"):
        return "required element"
    if code == "CCDA_ATTRIBUTE_MISSING":
        return "required attribute"
    if code == "CCDA_TEMPLATE_CONTENT_MISSING":
        return "required templated content"
    if code == "CCDA_DATATYPE_INVALID":
        return "data type (xsi:type)"
    if code == "CCDA_BINDING":
        return "value set"
    return "CDA base (schema)"


def norm_path(location: str) -> list[str]:
    """A location as steps `name[n]` (an index on every step), without attribute or template."""
    steps = []
    for s in location.strip("/").split("/"):
        if not s or s.startswith("@") or s.startswith("template:"):
            break
        steps.append(s if s.endswith("]") else f"{s}[1]")
    return steps


def conf_of(assertion_id: str) -> str | None:
    """The CONF number of an assertion id (`a-1198-7477[-branch-n][-c]`)."""
    m = re.fullmatch(r"a-(\d+-\d+)(?:-branch-\d+)?(?:-c|-CL)?", assertion_id)
    return m.group(1) if m else None


def conf_kinds(kinds: dict[str, str]) -> dict[str, str]:
    """The assertions' kinds by CONF number (an assertion id `a-1198-7477[-branch-n][-c]`)."""
    out = {}
    for a, k in kinds.items():
        m = re.fullmatch(r"a-(\d+-\d+)(?:-branch-\d+)?(?:-c|-CL)?", a)
        if m:
            out.setdefault(m.group(1), k)
    return out


def assertion_kinds(sch: Path) -> dict[str, str]:
    root = ET.parse(sch).getroot()
    return {a.get("id"): kind_of_test(a.get("test") or "") for a in root.iter(f"{{{SCH_NS['sch']}}}assert")
            if a.get("id")}


def install() -> bool:
    if (NODE_DIR / "node_modules" / "cda-schematron-validator").is_dir():
        return True
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    for f in ("package.json", "package-lock.json"):
        shutil.copy(LOCK_DIR / f, NODE_DIR / f)
    try:
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE_DIR,
                       check=True, capture_output=True, timeout=300)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("phiward", nargs="?", default=str(ROOT / "target" / "release" / "phiward"))
    ap.add_argument("--dir", default=str(ROOT / "target" / "ccda-public"))
    ap.add_argument("--schematron", default=str(DEFAULT_SCH))
    ap.add_argument("--limit", type=int, default=0, help="the first N public files only")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--reuse", action="store_true",
                    help="the schematron results of the last run (target/schematron/results.jsonl)")
    ap.add_argument("--json")
    args = ap.parse_args()
    docs = Path(args.dir) / "docs"
    sch_dir = Path(args.schematron)
    schs = sorted(sch_dir.glob("*.sch")) if sch_dir.is_dir() else [sch_dir]
    if not docs.is_dir():
        print(f"SKIPPED: {docs} not found (tests/peers/ccda_public.py --fetch)")
        return 0
    if not schs or not schs[0].is_file():
        print(f"SKIPPED: no schematron at {sch_dir}")
        return 0
    if not install():
        print("SKIPPED: cda-schematron-validator could not be installed (no network)")
        return 0
    sch = schs[0]
    kinds = assertion_kinds(sch)
    by_conf = conf_kinds(kinds)
    public = sorted(p for p in docs.rglob("*.xml") if p.is_file())
    if args.limit:
        public = public[: args.limit]
    files = public + sorted((ROOT / "fixtures" / "ccda" / "valid").glob("*.xml"))
    empty = NODE_DIR / "resources"
    empty.mkdir(parents=True, exist_ok=True)

    saved, saved_time = NODE_DIR / "results.jsonl", NODE_DIR / "results.time"
    if args.reuse and saved.is_file() and saved_time.is_file():
        # The schematron's results of an earlier run (it takes about 20 minutes here).
        start, end = (float(x) for x in saved_time.read_text().split())
        sch_total, lines = end - start, saved.read_text().splitlines()
    else:
        t0 = time.perf_counter()
        proc = subprocess.run(["node", str(Path(__file__).with_name("ccda_schematron.mjs")), str(NODE_DIR), str(sch),
                               str(empty), *map(str, files)], capture_output=True, check=False)
        sch_total = time.perf_counter() - t0
        lines = proc.stdout.decode("utf-8", "replace").splitlines()
        saved.write_text("\n".join(lines) + "\n")
        saved_time.write_text(f"0 {sch_total}\n")
    sch_results = {}
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        sch_results[str((ROOT / r["file"]).resolve())] = r

    ph_results = {}
    ph_times = []
    for f in files:
        t = time.perf_counter()
        findings, fatal = ccda_public.run_phiward(args.phiward, f)
        ph_times.append(time.perf_counter() - t)
        ph_results[str(f)] = (findings, fatal)
    ph_total = sum(ph_times)

    verdicts = collections.Counter()
    per_kind = {k: collections.Counter() for k in KINDS}
    differing = collections.Counter()
    r21_only = []  # phiward's R2.1 findings the schematron has not: (file, code, location)
    sch_ms = []
    for f in files:
        s = sch_results.get(str(f.resolve()))
        findings, fatal = ph_results[str(f)]
        if s is None or s.get("crash"):
            verdicts["schematron crashed"] += 1
            continue
        sch_ms.append(s["ms"])
        s_err = [(kinds.get(a, "other schematron constraint"), norm_path(p or ""), conf_of(a or ""))
                 for _pat, _rule, a, p in s["errors"]]
        p_err = [(kind_of_finding(x.get("code", ""), x.get("location", ""), by_conf), norm_path(x.get("location", "")),
                  x.get("code", ""), x.get("location", "")) for x in findings if x.get("severity") in ("error", "fatal")]
        s_bad, p_bad = bool(s_err), bool(p_err) or bool(fatal)
        verdicts[{(False, False): "both valid", (True, True): "both invalid",
                  (True, False): "schematron only invalid", (False, True): "phiward only invalid"}[(s_bad, p_bad)]] += 1
        left = list(p_err)
        for kind, path, conf in sorted(s_err, key=lambda x: -len(x[1])):
            # The finding of the same assertion (its CONF number) first, then any of its kind.
            hit = next((i for i, (k, pp, _c, loc) in enumerate(left)
                        if conf and loc.endswith(f"/CONF:{conf}") and pp[: len(path)] == path), None)
            if hit is None:
                hit = next((i for i, (k, pp, _c, _l) in enumerate(left) if k == kind and pp[: len(path)] == path), None)
            if hit is None:
                per_kind[kind]["schematron only"] += 1
            else:
                per_kind[kind]["both"] += 1
                left.pop(hit)
        for kind, _path, code, loc in left:
            per_kind[kind]["phiward only"] += 1
            differing[(kind, code)] += 1
            if "/CONF:" in loc:
                r21_only.append((f.name, code, loc))

    n = len(files)
    sch_per = statistics.median(sch_ms) if sch_ms else 0.0
    ph_per = statistics.median(ph_times) * 1000 if ph_times else 0.0
    if args.markdown:
        print(f"Documents: {len(public)} public C-CDA files and {n - len(public)} fixtures.\n")
        print("| document verdicts | files |\n|---|---|")
        for k in ("both valid", "both invalid", "schematron only invalid", "phiward only invalid", "schematron crashed"):
            print(f"| {k} | {verdicts[k]} |")
        print("\n| kind | both | schematron only | phiward only |\n|---|---|---|---|")
        for k in KINDS:
            c = per_kind[k]
            print(f"| {k} | {c['both']} | {c['schematron only']} | {c['phiward only']} |")
    else:
        for k, v in sorted(verdicts.items()):
            print(f"  {k}: {v}")
        for k in KINDS:
            c = per_kind[k]
            print(f"  {k}: both {c['both']}, schematron only {c['schematron only']}, phiward only {c['phiward only']}")
        for (k, code), v in sorted(differing.items()):
            print(f"    phiward only: {k}: {code} {v}")
    print(f"speed: schematron {sch_total:.1f} s for {n} files in one process (median {sch_per:.0f} ms a file); "
          f"phiward {ph_total:.2f} s in {n} processes (median {ph_per:.1f} ms a file, whole process)")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "verdicts": verdicts, "kinds": per_kind, "r21_phiward_only": r21_only,
            "speed": {"schematron_s": sch_total, "phiward_s": ph_total, "files": n,
                      "schematron_median_ms": sch_per, "phiward_median_ms": ph_per}}, indent=1, sort_keys=True) + "\n")
    agree = verdicts["both valid"] + verdicts["both invalid"]
    print(f"C-CDA schematron: {n} files, verdicts agree on {agree}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("NODE_OPTIONS", "--max-old-space-size=4096")
    sys.exit(main())
