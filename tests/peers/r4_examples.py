#!/usr/bin/env python3
"""Validates every official FHIR R4 example (npm `hl7.fhir.r4.examples` 4.0.1, the examples of
the published specification, CC0) with phiward, and checks the verdicts against the list below
of examples that are themselves wrong, each with the rule it breaks.

    python3 tests/peers/r4_examples.py PHIWARD_BINARY [--verbose]

The package is fetched once with `npm pack` into target/r4-examples/ (never committed). All
files go through one `phiward validate --ndjson --json` process: a JSON text's line breaks are
white space, so joining each file into one line changes nothing. Exit 1 when an example outside
the list gets an error-severity finding (a false positive of ours), or a listed one passes (the
list is stale), or the counts do not add up.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
WORK = ROOT / "target" / "r4-examples"
PACKAGE = "hl7.fhir.r4.examples@4.0.1"

EMPTY_DIV = "txt-2 (and txt-1): the narrative div is empty"
FULLURL = "an entry's fullUrl ends in a different id than its resource's id (FULLURL_MISMATCH)"
LOCAL_SYSTEM = ("ValueSet.compose.include.system is the local reference #hacked, not an absolute URI "
                "(URI_NOT_ABSOLUTE; a contained code system is named by its url)")
NO_BASE = "SearchParameter.base is required (1..*) and absent"
OID_AS_URI = ("an Identifier with system urn:ietf:rfc:3986 (the value is a URI) holds a bare OID, "
              "not urn:oid:... (IDENTIFIER_URI_INVALID)")

CS_SP_TYPE = ("a searchParam's type differs from the type of the core SearchParameter its definition names "
              "(CAPABILITYSTATEMENT_SEARCHPARAM_TYPE): ")
VERSION_STRING = CS_SP_TYPE + "each resource's 'version' is declared string; the core <Type>-version parameters are token"

V3_LINKS = ("narrative links '#CODE' to concepts whose anchors are named 'v3-<system>-CODE': they resolve to no "
            "id or anchor of the resource (NARRATIVE_LINK_UNRESOLVED, the reference validator's "
            "TYPE_SPECIFIC_CHECKS_DT_XHTML_RESOLVE error)")
V3_NAMES = ["ActCode", "ActReason", "ActRelationshipType", "CalendarCycle", "ContextControl", "EntityCode",
            "EntityNamePartQualifier", "NullFlavor", "ObservationInterpretation", "RoleCode", "RouteOfAdministration",
            "hl7Realm", "orderableDrugForm"]

UCUM_BAD = ("a Quantity with system http://unitsofmeasure.org whose code is not a UCUM expression "
            "(UCUM_CODE_INVALID): ")

# The examples that are wrong, and why (verified one by one against the R4 definitions).
KNOWN_WRONG = {
    "ActivityDefinition-blood-tubes-supply.json": EMPTY_DIV,
    "ActivityDefinition-heart-valve-replacement.json": EMPTY_DIV,
    "EventDefinition-example.json": EMPTY_DIV,
    "Questionnaire-zika-virus-exposure-assessment.json": EMPTY_DIV,
    "Bundle-10bb101f-a121-4264-a920-67be9cb82c74.json": FULLURL,
    "Bundle-3a0707d3-549e-4467-b8b8-5a2ab3800efe.json": FULLURL,
    "Bundle-lri-example.json": FULLURL,
    "Bundle-resources.json": OID_AS_URI + ", in an element definition's example (StructureDefinition Consent)",
    "Organization-2.16.840.1.113883.19.5.json": OID_AS_URI,
    "Library-zika-virus-intervention-logic.json": "codeFilter.valueSet is the placeholder urn:oid:X.Y.Z, not an OID (PRIMITIVE_INVALID)",
    "StructureDefinition-Consent.json": OID_AS_URI + ", in an element definition's example",
    "ValueSet-example-hierarchical.json": LOCAL_SYSTEM,
    "Bundle-valuesets.json": LOCAL_SYSTEM + ", in its copy of ValueSet example-hierarchical",
    "Bundle-dataelements.json": "bdl-7: the same fullUrl occurs twice without distinct meta.versionId",
    "Bundle-v2-valuesets.json": "a CodeSystem code ends in a no-break space (mis-encoded), not a valid code",
    "CodeSystem-snomedct.json": ("two properties share the code Laterality and three the placeholder uri "
                                 "http://.........? (CODESYSTEM_PROPERTY_DUPLICATE: a concept's property.code names one)"),
    "CodeSystem-v2-0550.json": "codes end in (or are) a no-break space (mis-encoded), not valid codes",
    "ImplementationGuide-fhir.json": "ImplementationGuide.name and .status are required (1..1) and absent",
    "ig-r4.json": "ImplementationGuide.name and .status are required (1..1) and absent",
    "Questionnaire-qs1.json": "Questionnaire.item.linkId is required (1..1) and absent in nested items",
    "SearchParameter-codesystem-extensions-CodeSystem-author.json": NO_BASE,
    "SearchParameter-codesystem-extensions-CodeSystem-effective.json": NO_BASE,
    "SearchParameter-codesystem-extensions-CodeSystem-end.json": NO_BASE,
    "SearchParameter-codesystem-extensions-CodeSystem-keyword.json": NO_BASE,
    "SearchParameter-codesystem-extensions-CodeSystem-workflow.json": NO_BASE,
    "SearchParameter-valueset-extensions-ValueSet-author.json": NO_BASE,
    "SearchParameter-valueset-extensions-ValueSet-effective.json": NO_BASE,
    "SearchParameter-valueset-extensions-ValueSet-end.json": NO_BASE,
    "SearchParameter-valueset-extensions-ValueSet-keyword.json": NO_BASE,
    "SearchParameter-valueset-extensions-ValueSet-workflow.json": NO_BASE,
    "SearchParameter-questionnaireresponse-extensions-QuestionnaireResponse-item-subject.json":
        "the id has 67 characters; an id has at most 64",
    "Observation-f202.json": ("a body temperature (LOINC 8310-5) without effective[x]: R4 holds it to the "
                              "bodytemp vital signs profile, where effective[x] is 1..1 (PROFILE_CARDINALITY_MIN)"),
    "Observation-example-genetics-brcapat.json": ("carries US Core's us-core-ethnicity extension, which neither R4 "
                                                  "nor the extensions pack defines: the reference validator's "
                                                  "'could not be found so is not allowed here' on the core alone "
                                                  "(PROFILE_EXTENSION_UNKNOWN; with a CodeableConcept value where "
                                                  "US Core's is a complex extension)"),
    "StructureDefinition-Definition.json": "sdf-4: not abstract and no baseDefinition",
    "StructureDefinition-Event.json": "sdf-4: not abstract and no baseDefinition",
    "StructureDefinition-FiveWs.json": "sdf-4: not abstract and no baseDefinition",
    "StructureDefinition-Request.json": "sdf-4: not abstract and no baseDefinition",
    "Bundle-hla-1.json": ("the core complex extension hla-genotyping-results-glstring has parts 'url' and "
                          "'text'; the example names one 'uri' (EXTENSION_URL_INVALID)"),
    "Bundle-father.json": UCUM_BAD + "'tbl'; and, a document (self-contained), its MedicationRequest (an entry "
                          "with a urn:uuid: fullUrl) references Practitioner/example relatively: with no RESTful base "
                          "to resolve against, that resolves to no entry (REFERENCE_UNRESOLVED)",
    "Claim-760151.json": UCUM_BAD + "'TAB'",
    "Claim-760152.json": UCUM_BAD + "'TAB'",
    "MedicationDispense-meddisp0309.json": UCUM_BAD + "'drop' (UCUM: [drp])",
    "MedicationDispense-meddisp0313.json": UCUM_BAD + "'mEq' (UCUM is case-sensitive: meq)",
    "MedicationDispense-meddisp0318.json": UCUM_BAD + "'mcg' (UCUM: ug)",
    "MedicationDispense-meddisp0324.json": UCUM_BAD + "'ea'",
    "MedicationDispense-meddisp0327.json": UCUM_BAD + "'ea'",
    "MedicationDispense-meddisp0328.json": UCUM_BAD + "'ea'",
    "MedicationDispense-meddisp0329.json": UCUM_BAD + "'ea'",
    "MedicationRequest-medrx0304.json": UCUM_BAD + "'drop' (UCUM: [drp])",
    "MedicationRequest-medrx0314.json": UCUM_BAD + "'mcg' (UCUM: ug)",
    "MedicationRequest-medrx0319.json": UCUM_BAD + "'ml/hr' (UCUM: mL/h)",
    "MedicationRequest-medrx0322.json": UCUM_BAD + "'mEq' (UCUM is case-sensitive: meq)",
    "MedicationRequest-medrx0325.json": UCUM_BAD + "'ea'",
    "MedicationRequest-medrx0326.json": UCUM_BAD + "'ea'",
    "MedicationRequest-medrx0328.json": UCUM_BAD + "'ea'",
    "MedicationRequest-medrx0329.json": UCUM_BAD + "'ea'",
    "MedicationRequest-medrx0334.json": UCUM_BAD + "'ea'",
    "MedicationRequest-medrx0335.json": UCUM_BAD + "'ea'",
    "VisionPrescription-33124.json": UCUM_BAD + "'month' (UCUM: mo)",
    "CapabilityStatement-base.json": CS_SP_TYPE + "'_sort' is declared token with the definition Resource-source, a uri",
    "CapabilityStatement-knowledge-repository.json": VERSION_STRING,
    "CapabilityStatement-measure-processor.json": VERSION_STRING,
    "CapabilityStatement-terminology-server.json": CS_SP_TYPE + ("ValueSet 'reference' is declared token (the core "
                                                                 "ValueSet-reference is a uri), ConceptMap 'source' and "
                                                                 "'target' uri (the core ones are references)"),
    "Bundle-v3-valuesets.json": V3_LINKS + ", in its copies of the v3 code systems and value sets",
    **{f"{kind}-v3-{name}.json": V3_LINKS for kind in ("CodeSystem", "ValueSet") for name in V3_NAMES},
}


def fetch() -> Path:
    pkg = WORK / "package"
    if not (pkg / "package.json").is_file():
        WORK.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "pack", "--silent", PACKAGE], cwd=WORK, check=True, stdout=subprocess.DEVNULL)
        tgz = next(WORK.glob("hl7.fhir.r4.examples-*.tgz"))
        subprocess.run(["tar", "xzf", tgz.name], cwd=WORK, check=True)
    return pkg


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary, verbose = sys.argv[1], "--verbose" in sys.argv
    pkg = fetch()
    files = sorted(f for f in os.listdir(pkg) if f.endswith(".json") and f not in ("package.json", ".index.json"))
    stream = WORK / "all.ndjson"
    with open(stream, "wb") as out:
        for f in files:
            out.write((pkg / f).read_bytes().replace(b"\r", b" ").replace(b"\n", b" ") + b"\n")
    p = subprocess.run([binary, "validate", "--ndjson", "--json", str(stream)], capture_output=True)
    errors: dict[int, list[str]] = {}
    for line in p.stdout.decode().splitlines():
        d = json.loads(line)
        found = [f"{x['code']} {x.get('location', '')}" for x in d.get("findings", []) if x.get("severity") in ("error", "fatal")]
        if "code" in d:
            found.append(d["code"])
        errors[d.get("record")] = found
    failed = []
    if len(errors) != len(files):
        failed.append(f"{len(files)} files but {len(errors)} output records")
    flagged = {f: errors.get(i, ["MISSING"]) for i, f in enumerate(files, 1) if errors.get(i, ["MISSING"])}
    for f, errs in flagged.items():
        if f not in KNOWN_WRONG:
            failed.append(f"false positive? {f}: {'; '.join(errs[:5])}")
    for f in KNOWN_WRONG:
        if f in files and f not in flagged:
            failed.append(f"listed as wrong but passes: {f}")
    codes = collections.Counter(e.split()[0] for errs in flagged.values() for e in errs)
    if verbose:
        for f, errs in flagged.items():
            print(f"{f}: {KNOWN_WRONG.get(f, '?')}: {'; '.join(errs[:4])}")
    print(f"R4 examples: {len(files)} validated, {len(files) - len(flagged)} without error findings, "
          f"{len(flagged)} with (all {len(KNOWN_WRONG)} known-wrong examples: {'yes' if not failed else 'see below'}); "
          f"error codes {dict(sorted(codes.items()))}")
    for line in failed:
        print("FAIL: " + line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
