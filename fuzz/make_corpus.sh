#!/usr/bin/env bash
# Rebuilds the committed seed corpus (fuzz/corpus/<target>/) from fixtures/ (synthetic data only)
# plus a few hand-written signatures for format detection. Run from anywhere; it replaces the
# folders it builds (not fuzz/corpus/policy/, whose seeds are written by hand). Minimised crashes live in fuzz/regressions/, not here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
fx="$here/../fixtures/hl7v2"
out="$here/corpus"
# Only the folders built here are replaced (the policy seeds are kept: they are written by hand).
rm -rf "$out"/{hl7v2,mllp,batch,detect,pipeline,mcp,fhir_json,fhir_xml}
mkdir -p "$out"/{hl7v2,mllp,batch,detect,pipeline,mcp,fhir_json,fhir_xml}

copy() { # copy TARGET FILE...
  local t="$1"; shift
  for f in "$@"; do
    [ -f "$f" ] || continue
    local name
    name="$(basename "$(dirname "$f")")__$(basename "$f")"
    cp "$f" "$out/$t/$name"
  done
}

# hl7v2: one message per input; every .hl7 fixture (multi-message files exercise later MSH lines).
copy hl7v2 "$fx"/valid/*.hl7 "$fx"/invalid/*.hl7 "$fx"/markers/*.hl7
# mllp: the framed streams, plus invalid framing.
copy mllp "$fx"/valid/*.mllp "$fx"/invalid/*.mllp "$fx"/markers/*.mllp
# batch: batches, concatenations and the batch-protocol failures.
copy batch "$fx"/valid/batch_*.hl7 "$fx"/valid/multi_*.hl7 "$fx"/invalid/b*s_*.hl7 "$fx"/invalid/f*s_*.hl7 \
  "$fx"/markers/markers_batch_*.hl7 "$fx"/markers/markers_2msgs_*.hl7 "$fx"/valid/bom_*.hl7
# pipeline: everything through ops.
copy pipeline "$fx"/valid/* "$fx"/invalid/* "$fx"/markers/*

# fhir_json, fhir_xml: every FHIR fixture of that syntax (valid and invalid).
ff="$here/../fixtures/fhir"
copy fhir_json "$ff"/valid/*.json "$ff"/invalid/*.json
copy fhir_xml "$ff"/valid/*.xml "$ff"/invalid/*.xml
# ... plus the XML form of every valid JSON fixture, when a phiward build is at hand.
bin="$here/../target/debug/phiward"
if [ -x "$bin" ]; then
  for f in "$ff"/valid/*.json; do
    "$bin" fmt --to xml "$f" > "$out/fhir_xml/from_json__$(basename "$f" .json).xml" || true
  done
fi

# detect: one of each signature (synthetic, hand-written here).
d="$out/detect"
copy detect "$fx"/valid/v2.5_adt_a01_lf.hl7 "$fx"/valid/stream_1frame.mllp "$fx"/valid/batch_fhs_bhs_crlf_bom.hl7 \
  "$fx"/invalid/binary_garbage.bin "$fx"/invalid/whitespace_only.hl7
printf '{"resourceType":"Patient","id":"example","active":true}' > "$d/fhir.json"
printf '<?xml version="1.0"?>\n<!-- c -->\n<Patient xmlns="http://hl7.org/fhir"><id value="x"/></Patient>' > "$d/fhir.xml"
printf '<ClinicalDocument xmlns="urn:hl7-org:v3"><id root="2.999"/></ClinicalDocument>' > "$d/ccda.xml"
printf '<Message xmlns="http://www.ncpdp.org/schema/SCRIPT" version="2017071"></Message>' > "$d/ncpdp.xml"
printf 'ISA*00*          *00*          *ZZ*SENDER         *ZZ*RECEIVER       *240101*1200*^*00501*000000001*0*T*:~' > "$d/x12.edi"
printf 'H|\\^&|||LAB^1|||||||P|1\rP|1\rL|1\r' > "$d/astm.txt"
printf '\x021H|\\^&|||\r\x03' > "$d/astm_framed.txt"
{ head -c 128 /dev/zero; printf 'DICM\x02\x00\x00\x00'; } > "$d/dicom.dcm"
{ printf 'MSH|^~\\&|'; head -c 119 /dev/zero | tr '\0' '|'; printf 'DICM'; } > "$d/ambiguous.bin"
for f in fhir.json fhir.xml x12.edi astm.txt dicom.dcm; do cp "$d/$f" "$out/pipeline/detect__$f"; done

# mcp: tool calls as JSON objects, and raw inputs whose first byte picks the tool.
python3 - "$fx" "$out/mcp" <<'PY'
import base64, json, os, sys
fx, out = sys.argv[1], sys.argv[2]
def read(rel):
    return open(os.path.join(fx, rel), 'rb').read()
def call(name, obj):
    with open(os.path.join(out, name), 'w') as f:
        json.dump(obj, f)
msg = read('valid/v2.5_adt_a01_lf.hl7').decode('latin-1')
mk = read('markers/markers_oru_r01_v2.4.hl7').decode('latin-1')
call('validate_hl7.json', {"name": "validate", "arguments": {"content": msg}})
call('inspect_markers.json', {"name": "inspect", "arguments": {"content": mk, "format": "hl7"}})
call('parse_base64.json', {"name": "parse", "arguments": {"content_base64": base64.b64encode(msg.encode('latin-1')).decode()}})
call('validate_fhir_ndjson.json', {"name": "validate", "arguments": {"content": '{"resourceType":"Patient","id":"a"}\n{"resourceType":"Patient","id":"b"}\n', "ndjson": True}})
call('bad_format.json', {"name": "validate", "arguments": {"content": msg, "format": "MKR1X"}})
call('unknown_tool.json', {"name": "MKR2X", "arguments": {"content": msg}})
call('convert.json', {"name": "convert", "arguments": {"content": msg, "to": "fhir"}})
call('both_contents.json', {"name": "inspect", "arguments": {"content": msg, "content_base64": "TVNI"}})
for tool, rel in [(1, 'valid/stream_2frames_8859-1.mllp'), (2, 'valid/batch_fhs_bhs_3msgs.hl7'),
                  (0, 'markers/markers_2msgs_vxu_ack_lf.hl7'), (1, 'invalid/no_msh.hl7')]:
    with open(os.path.join(out, 'raw_' + os.path.basename(rel)), 'wb') as f:
        f.write(bytes([tool]) + read(rel))
PY

du -sb "$out"
