#!/usr/bin/env python3
"""Side by side with hl7v2-fhir-bridge (PyPI): the element paths each converter produces, per
message type, on the same HL7 v2 files. Run with the benchmark peers' Python (scripts/bench
installs them): target/bench/peers/venv/bin/python tests/peers/convert_paths_bridge.py
target/release/phiward FILE...  Prints, per message type the bridge supports, the resource
types each makes and the paths only one of them fills (ids, fullUrls, references and meta are
left out). Files are synthetic or public samples: paths only, never values, are printed."""
import json
import re
import subprocess
import sys
from collections import defaultdict
from datetime import datetime
from v2fhir.config import default_config_path, load_config
from v2fhir.convert import convert
from v2fhir.hl7.parser import parse_bytes
from v2fhir.validate import validate_bundle
cfg = load_config(default_config_path(), {})
NOW = datetime.fromisoformat("2024-01-01T00:00:00+00:00")
PW = sys.argv[1]
files = sys.argv[2:]

def paths(obj, prefix, out):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ('id', 'fullUrl', 'reference', 'request', 'meta'):
                continue
            paths(v, prefix + '.' + k, out)
    elif isinstance(obj, list):
        for v in obj:
            paths(v, prefix, out)
    else:
        out.add(prefix)

def bundle_paths(b):
    out = set()
    for e in b.get('entry', []):
        r = e['resource']
        if r['resourceType'] in ('Provenance', 'MessageHeader'):
            continue
        paths(r, r['resourceType'], out)
    return out

per_type = defaultdict(lambda: [set(), set(), 0, 0, 0])
for f in files:
    raw = open(f, 'rb').read().replace(b'\r\n', b'\r').replace(b'\n', b'\r')
    m = re.search(rb'MSH\|[^\r]*', raw)
    if not m: continue
    fields = m.group(0).split(b'|')
    if len(fields) < 9: continue
    mt = fields[8].split(b'^')
    key = b'^'.join(mt[:2]).decode(errors='replace')
    if key not in ('ADT^A01','ADT^A04','ADT^A08','ADT^A40','ORM^O01','ORU^R01'):
        continue
    try:
        conv = convert(parse_bytes(raw, cfg.default_charset, cfg.fallback_charsets), cfg, NOW)
        bp = bundle_paths(conv.bundle)
        try:
            validate_bundle(conv.bundle); ok = True
        except Exception:
            ok = False
    except Exception as e:
        bp = None
    p = subprocess.run([PW, 'convert', '--json', '--default-timezone', 'Z', f], capture_output=True)
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    if not lines or 'bundle' not in lines[0]:
        continue
    pp = bundle_paths(lines[0]['bundle'])
    t = per_type[key]
    t[2] += 1
    t[0] |= pp
    if bp is None:
        t[3] += 1
    else:
        t[1] |= bp
        t[4] += (0 if ok else 1)
for key, (pp, bp, n, refused, invalid) in sorted(per_type.items()):
    only_pw = sorted(pp - bp); only_b = sorted(bp - pp)
    print(f"## {key}: {n} messages; bridge refused {refused}, invalid {invalid}")
    res_pw = sorted({x.split('.')[0] for x in pp}); res_b = sorted({x.split('.')[0] for x in bp})
    print("  resources phiward:", ' '.join(res_pw)); print("  resources bridge: ", ' '.join(res_b))
    print(f"  paths phiward {len(pp)}, bridge {len(bp)}, phiward only {len(only_pw)}, bridge only {len(only_b)}")
    print("  bridge only:", ' '.join(only_b))
    print("  phiward only:", ' '.join(only_pw))
