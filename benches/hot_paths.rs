//! In-process micro-benchmarks of the hot paths (divan): HL7 v2 parse, validate (syntax only and
//! with conformance), inspect; MLLP deframing; FHIR read and validate (JSON and XML); the shared
//! XML reader alone. Inputs are the committed
//! synthetic fixtures, repeated where a bigger input says more. Run with
//! `cargo bench --bench hot_paths`; figures are throughput in bytes per second (see BENCHMARKS.md
//! for the whole-command, side-by-side benchmark against peers).

use std::io::Cursor;
use std::path::Path;

use divan::counter::BytesCount;
use divan::{Bencher, black_box};
use phiward::formats::fhir;
use phiward::formats::hl7v2::{self, inspect, validate};
use phiward::formats::mllp::Deframer;
use phiward::formats::xml;
use phiward::limits::Limits;

fn main() {
    divan::main();
}

fn fixture(rel: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The HL7 v2 messages measured: a small ADT, the many-OBX ORU, a VXU.
const HL7: &[&str] = &["v2.5_adt_a01_lf.hl7", "v2.5.1_oru_r01_many_obx.hl7", "v2.5.1_vxu_v04.hl7"];

/// The ORU^R01 fixture with its OBX segment repeated up to about 2,000 segments (~200 KB).
fn big_oru() -> Vec<u8> {
    let msg = fixture("hl7v2/valid/v2.5.1_oru_r01_many_obx.hl7");
    let text = String::from_utf8_lossy(&msg).into_owned();
    let segs: Vec<&str> = text.split(['\r', '\n']).filter(|s| !s.is_empty()).collect();
    let obx: Vec<&str> = segs.iter().copied().filter(|s| s.starts_with("OBX")).collect();
    let mut out = String::new();
    for s in segs.iter().filter(|s| !s.starts_with("OBX")) {
        out.push_str(s);
        out.push('\r');
        if s.starts_with("OBR") {
            for i in 0..2000 {
                out.push_str(obx[i % obx.len().max(1)]);
                out.push('\r');
            }
        }
    }
    out.into_bytes()
}

fn hl7_input(name: &str) -> Vec<u8> {
    if name == "oru_2000_obx" { big_oru() } else { fixture(&format!("hl7v2/valid/{name}")) }
}

#[divan::bench(args = ["v2.5_adt_a01_lf.hl7", "v2.5.1_vxu_v04.hl7", "oru_2000_obx"])]
fn hl7v2_parse(bencher: Bencher, name: &str) {
    let input = hl7_input(name);
    let limits = Limits::default();
    bencher
        .counter(BytesCount::of_slice(&input))
        .with_inputs(|| input.clone())
        .bench_values(|bytes| black_box(hl7v2::parse(bytes, &limits).is_ok()));
}

#[divan::bench(args = ["v2.5_adt_a01_lf.hl7", "v2.5.1_vxu_v04.hl7", "oru_2000_obx"], consts = [false, true])]
fn hl7v2_validate<const CONFORMANCE: bool>(bencher: Bencher, name: &str) {
    let input = hl7_input(name);
    let msg = hl7v2::parse(input.clone(), &Limits::default()).unwrap_or_else(|_| panic!("{name} parses"));
    let options = validate::Options { strict: false, syntax_only: !CONFORMANCE };
    bencher.counter(BytesCount::of_slice(&input)).bench(|| black_box(validate::validate(&msg, options).len()));
}

#[divan::bench(args = ["v2.5_adt_a01_lf.hl7", "oru_2000_obx"])]
fn hl7v2_inspect(bencher: Bencher, name: &str) {
    let input = hl7_input(name);
    let msg = hl7v2::parse(input.clone(), &Limits::default()).unwrap_or_else(|_| panic!("{name} parses"));
    let findings = validate::validate(&msg, validate::Options::default());
    bencher
        .counter(BytesCount::of_slice(&input))
        .bench(|| black_box(inspect::summarize(&msg, &findings).segment_count));
}

/// 1,000 MLLP frames of the fixtures above, round robin.
#[divan::bench]
fn mllp_deframe(bencher: Bencher) {
    let mut stream = Vec::new();
    for i in 0..1000 {
        stream.push(0x0B);
        stream.extend_from_slice(&fixture(&format!("hl7v2/valid/{}", HL7[i % HL7.len()])));
        stream.extend_from_slice(&[0x1C, 0x0D]);
    }
    bencher
        .counter(BytesCount::of_slice(&stream))
        .bench(|| black_box(Deframer::new(Cursor::new(&stream[..]), Limits::default()).count()));
}

const FHIR: &[&str] = &[
    "patient_full.json",
    "bundle_transaction_uuid.json",
    "observation_components.json",
    "patient_full.xml",
    "immunization.xml",
];

/// The XML fixtures, repeated inside one root (the reader alone: tokenizing, checks, tree).
fn xml_input(name: &str) -> Vec<u8> {
    let one = fixture(&format!("fhir/valid/{name}"));
    // Without its XML declaration, each copy is an element.
    let body = match one.iter().position(|&b| b == b'>') {
        Some(p) if one.starts_with(b"<?xml") => &one[p + 1..],
        _ => &one[..],
    };
    let mut all = b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<root>".to_vec();
    for _ in 0..200 {
        all.extend_from_slice(body);
    }
    all.extend_from_slice(b"</root>");
    all
}

#[divan::bench(args = ["patient_full.xml", "immunization.xml"])]
fn xml_parse(bencher: Bencher, name: &str) {
    let input = xml_input(name);
    let limits = Limits::default();
    bencher.counter(BytesCount::of_slice(&input)).bench(|| black_box(xml::parse(&input, &limits).is_ok()));
}

#[divan::bench(args = FHIR)]
fn fhir_read(bencher: Bencher, name: &str) {
    let input = fixture(&format!("fhir/valid/{name}"));
    let limits = Limits::default();
    bencher
        .counter(BytesCount::of_slice(&input))
        .with_inputs(|| input.clone())
        .bench_values(|bytes| black_box(fhir::read(bytes, &limits).is_ok()));
}

#[divan::bench(args = FHIR)]
fn fhir_validate(bencher: Bencher, name: &str) {
    let input = fixture(&format!("fhir/valid/{name}"));
    let doc = fhir::read(input.clone(), &Limits::default()).unwrap_or_else(|_| panic!("{name} reads"));
    bencher
        .counter(BytesCount::of_slice(&input))
        .bench(|| black_box(fhir::validate::validate(&doc, fhir::validate::Options::default()).len()));
}
