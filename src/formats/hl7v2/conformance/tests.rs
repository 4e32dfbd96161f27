//! Unit tests of the conformance checks on whole messages (synthetic, invented people).

use super::*;
use crate::formats::hl7v2::parse::parse;
use crate::limits::Limits;

fn findings(text: &str, strict: bool) -> Vec<String> {
    let msg = match parse(text.replace('\n', "\r").into_bytes(), &Limits::default()) {
        Ok(m) => m,
        Err(d) => panic!("parse failed: {}", d.code.as_str()),
    };
    check(&msg, Options { strict, ..Default::default() })
        .iter()
        .map(|d| format!("{} {} {}", d.code.as_str(), d.severity.as_str(), d.location))
        .collect()
}

const ADT_251: &str = "MSH|^~\\&|APP|FAC|RCV|RFAC|20240311093100-0700||ADT^A01^ADT_A01|C1|P|2.5.1\n\
EVN|A01|20240311093100\n\
PID|1||100^^^FAC^MR||Doe^Jane||19840312|F\n\
PV1|1|I|W^1^A\n";

#[test]
fn a_conformant_message_has_no_finding() {
    assert_eq!(findings(ADT_251, false), Vec::<String>::new());
    assert_eq!(findings(ADT_251, true), Vec::<String>::new());
}

#[test]
fn version_falls_back_to_the_nearest() {
    let m = ADT_251.replace("|2.5.1\n", "|2.5.9\n");
    assert_eq!(findings(&m, false), vec!["VERSION_UNKNOWN warning MSH[1]-12[1].1"]);
    assert_eq!(findings(&m, true), vec!["VERSION_UNKNOWN error MSH[1]-12[1].1"]);
    // Not a version at all: the syntax layer's job; nothing is checked here.
    let m = ADT_251.replace("|2.5.1\n", "|v2\n");
    assert_eq!(findings(&m, false), Vec::<String>::new());
}

#[test]
fn structure_from_the_trigger_table() {
    // ADT^A04 without MSH-9.3 is ADT_A01 in 2.5.1: EVN is required.
    let m = ADT_251.replace("ADT^A01^ADT_A01", "ADT^A04").replace("EVN|A01|20240311093100\n", "");
    assert_eq!(findings(&m, false), vec!["SEGMENT_MISSING information ADT_A01/EVN".replace("information", "error")]);
    let m = ADT_251.replace("ADT^A01^ADT_A01", "ZZZ^Z99");
    assert_eq!(findings(&m, false), vec!["STRUCTURE_UNKNOWN information MSH[1]-9"]);
    let m = ADT_251.replace("ADT^A01^ADT_A01", "ADT^A01^ORU_R01");
    let out = findings(&m, false);
    assert_eq!(out.first().map(String::as_str), Some("STRUCTURE_MISMATCH warning MSH[1]-9[1].3"));
}

#[test]
fn fields_required_repeated_and_beyond() {
    let m = ADT_251.replace("PID|1||100^^^FAC^MR||Doe^Jane||19840312|F", "PID|1||||Doe^Jane||19840312|F~M");
    assert_eq!(findings(&m, false), vec!["FIELD_REQUIRED_MISSING error PID[1]-3", "FIELD_REPEATED error PID[1]-8[2]"]);
    let m = ADT_251.replace("PV1|1|I|W^1^A", &format!("PV1|1|I|W^1^A{}|X", "|".repeat(60)));
    assert_eq!(findings(&m, false), vec!["FIELD_NOT_DEFINED information PV1[1]-64"]);
    assert_eq!(findings(&m, true), vec!["FIELD_NOT_DEFINED error PV1[1]-64"]);
}

#[test]
fn data_types() {
    let m = ADT_251.replace("19840312", "19840231").replace("PID|1|", "PID|A|");
    assert_eq!(
        findings(&m, false),
        vec!["SEQUENCE_ID_INVALID error PID[1]-1[1]", "DATETIME_INVALID error PID[1]-7[1].1"]
    );
    let m = ADT_251.replace("19840312", "198403121015");
    assert_eq!(findings(&m, false), Vec::<String>::new());
    // 2.3: hours go with minutes.
    let m = ADT_251.replace("|2.5.1\n", "|2.3\n").replace("19840312", "1984031210");
    // ... and MSH-9.3 is a component 2.3 does not define (a later version's): information.
    assert_eq!(
        findings(&m, false),
        vec!["COMPONENT_NOT_DEFINED information MSH[1]-9[1].3", "DATETIME_PRECISION warning PID[1]-7[1].1"]
    );
}

#[test]
fn tables() {
    // PV1-2 patient class is user-defined (IS): anything goes. MSH-15 is ID, table 0155.
    let m = ADT_251.replace("PV1|1|I|", "PV1|1|Q|").replace("|P|2.5.1\n", "|P|2.5.1|||XX\n");
    assert_eq!(findings(&m, false), vec!["TABLE_VALUE_UNKNOWN error MSH[1]-15[1]"]);
    let m = ADT_251.replace("|P|2.5.1\n", "|P|2.5.1|||ZL\n");
    assert_eq!(findings(&m, false), Vec::<String>::new());
    assert_eq!(findings(&m, true), vec!["TABLE_VALUE_UNKNOWN error MSH[1]-15[1]"]);
}

#[test]
fn tolerated_by_default() {
    // Trailing delimiters, the null value, a Z segment anywhere.
    let m = ADT_251.replace("PV1|1|I|W^1^A", "ZX1|a\nPV1|1|\"\"|W^1^A^|");
    assert_eq!(findings(&m, false), Vec::<String>::new());
    assert_eq!(findings(&m, true), vec!["TRAILING_DELIMITER error PV1[1]-3[1].4"]);
}

#[test]
fn obx5_is_typed_by_obx2() {
    let base = "MSH|^~\\&|A|B|C|D|20240311||ORU^R01^ORU_R01|1|P|2.5.1\nPID|1||1^^^H^MR||X^Y\nOBR|1|||C^T^L\n";
    let ok = format!(
        "{base}OBX|1|NM|C^T^LN||7.5||||||F\nOBX|2|DT|C^T^LN||20240229||||||F\nOBX|3|CWE|C^T^LN||A^B^LN||||||F\n"
    );
    assert_eq!(findings(&ok, false), Vec::<String>::new());
    // Table 0396 (coding systems) is maintained outside the standard: a warning.
    let open = format!("{base}OBX|1|CWE|C^T^LN||A^B^SCT||||||F\n");
    assert_eq!(findings(&open, false), vec!["TABLE_VALUE_UNKNOWN warning OBX[1]-5[1].3"]);
    let bad = format!("{base}OBX|1|NM|C^T^LN||7,5||||||F\nOBX|2|DT|C^T^LN||20230229||||||F\n");
    assert_eq!(findings(&bad, false), vec!["NUMBER_INVALID error OBX[1]-5[1]", "DATE_INVALID error OBX[2]-5[1]"]);
}

#[test]
fn lengths_are_warnings() {
    let m = ADT_251.replace("|C1|", &format!("|{}|", "C".repeat(21)));
    assert_eq!(findings(&m, false), vec!["LENGTH_EXCEEDED warning MSH[1]-10[1]"]);
    assert_eq!(findings(&m, true), vec!["LENGTH_EXCEEDED error MSH[1]-10[1]"]);
}

#[test]
fn the_cap_keeps_the_verdict() {
    // 1000 findings of information from the syntax layer, then one error here.
    let msg = match parse(
        ADT_251
            .replace("ADT^A01^ADT_A01", "ADT^A01")
            .replace("EVN|A01|20240311093100\n", "")
            .replace('\n', "\r")
            .into_bytes(),
        &Limits::default(),
    ) {
        Ok(m) => m,
        Err(_) => panic!("parse"),
    };
    let info = Diagnostic::new(Code::Z_SEGMENT, Location::Input);
    let mut list = vec![info; MAX_FINDINGS];
    append(&msg, Options::default(), &mut list);
    assert_eq!(list.len(), MAX_FINDINGS);
    assert_eq!(list.last().map(|d| d.code), Some(Code::SEGMENT_MISSING));
}
