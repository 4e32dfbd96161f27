//! Format sniffing from the first bytes of an input.
//!
//! Conservative by design: every signature is tested, none matching is
//! `CLI_FORMAT_UNDETECTED`, more than one is `CLI_FORMAT_AMBIGUOUS`. A UTF-8 BOM and leading
//! white space are skipped (except for DICOM, whose signature sits at a fixed offset).
//!
//! Signatures: HL7 v2 `MSH`/`FHS`/`BHS` followed by a field separator; MLLP start block 0x0B;
//! FHIR JSON (an object with a top-level `resourceType`); FHIR XML (root element in the
//! `http://hl7.org/fhir` namespace); X12 `ISA` followed by an element separator; DICOM `DICM` at
//! offset 128; C-CDA `<ClinicalDocument`; NCPDP SCRIPT XML (`ncpdp-script`: root in the
//! `http://www.ncpdp.org/schema/SCRIPT` namespace); NCPDP Telecommunication D.0 (`ncpdp`: a
//! request or response header followed by the segment separator 0x1E); ASTM E1394 `H|\^&` (optionally after an
//! E1381 frame start).
//!
//! What it does not do: validate anything past the signature. A match says which parser to
//! try, not that the input is well formed.

use crate::diag::Code;
use crate::formats::Format;

/// How many leading bytes detection looks at.
pub const PREFIX_LEN: usize = 64 * 1024;

/// The first bytes read of a regular file: when they decide every signature ([`decided`]), the
/// rest of [`PREFIX_LEN`] is not read (a DICOM file's header is a few hundred bytes; its pixel
/// data is sought past, see `dicom::source`).
pub const FIRST_LEN: usize = 4 * 1024;

/// True when [`detect`] (and the first byte after a BOM and white space) gives on `prefix` the
/// answer it gives on any longer prefix of the same input, so that no more bytes need be read.
/// That is the case when the bytes hold DICOM's signature window (the preamble and `DICM`, 132
/// bytes) and the first byte after a BOM and white space is one no text signature starts
/// with: every text format's signature needs an ASCII graphic first byte (`MSH`, `{`, `<`,
/// `ISA`, an NCPDP header, ASTM's `H|`) or one of its framing bytes (MLLP's 0x0B, ASTM's STX,
/// ENQ, ACK, NAK, EOT), so a binary start (a DICOM preamble of zeros) decides them all as no
/// match. Otherwise the caller reads on to [`PREFIX_LEN`].
pub fn decided(prefix: &[u8]) -> bool {
    if prefix.len() < 132 {
        return false;
    }
    match skip_bom_and_space(prefix).first() {
        Some(&b) => !(b.is_ascii_graphic() || matches!(b, 0x02 | 0x04 | 0x05 | 0x06 | 0x0B | 0x15)),
        None => false,
    }
}

/// Detects the format of an input from its first bytes ([`PREFIX_LEN`] are enough): every
/// registered format's signature is tried.
pub fn detect(prefix: &[u8]) -> Result<Format, Code> {
    let body = skip_bom_and_space(prefix);
    let mut found = Format::ALL.iter().copied().filter(|f| f.sniff(body, prefix));
    let first = found.next();
    if body.is_empty() && first.is_none_or(Format::is_text) {
        return Err(Code::CLI_EMPTY_INPUT);
    }
    match (first, found.next()) {
        (None, _) => Err(Code::CLI_FORMAT_UNDETECTED),
        (Some(f), None) => Ok(f),
        (Some(_), Some(_)) => Err(Code::CLI_FORMAT_AMBIGUOUS),
    }
}

/// Skips a UTF-8 byte order mark and ASCII white space.
pub fn skip_bom_and_space(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    &bytes[start..]
}

/// True for a byte HL7 v2 allows as a delimiter: printable, not alphanumeric, not space.
pub fn is_delimiter_byte(b: u8) -> bool {
    b.is_ascii_graphic() && !b.is_ascii_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures() {
        assert_eq!(detect(b"MSH|^~\\&|A"), Ok(Format::Hl7));
        assert_eq!(detect(b"\xEF\xBB\xBF\r\nFHS|^~\\&"), Ok(Format::Hl7));
        assert_eq!(detect(b"\x0bMSH|^~\\&"), Ok(Format::Hl7));
        assert_eq!(detect(b"{\"id\":\"x\",\"resourceType\":\"Patient\"}"), Ok(Format::Fhir));
        assert_eq!(detect(b"{\"a\":{\"resourceType\":\"x\"}}"), Err(Code::CLI_FORMAT_UNDETECTED));
        assert_eq!(detect(b"<?xml version=\"1.0\"?><Patient xmlns=\"http://hl7.org/fhir\">"), Ok(Format::Fhir));
        assert_eq!(detect(b"<ClinicalDocument xmlns=\"urn:hl7-org:v3\">"), Ok(Format::Ccda));
        assert_eq!(detect(b"<ClinicalDocument xmlns=\"http://hl7.org/fhir\">"), Err(Code::CLI_FORMAT_AMBIGUOUS));
        assert_eq!(detect(b"<Message xmlns=\"http://www.ncpdp.org/schema/SCRIPT\">"), Ok(Format::NcpdpScript));
        assert_eq!(detect(b"ISA*00*"), Ok(Format::X12));
        let mut telecom = b"610014D0B1PCN1234567101123456789012345202403150VENDOR001".to_vec();
        telecom.push(0x1E);
        assert_eq!(detect(&telecom), Ok(Format::Ncpdp));
        assert_eq!(detect(b"D0B11A01123456789012345202403157\x1d\x1e"), Err(Code::CLI_FORMAT_UNDETECTED));
        assert_eq!(detect(b"D0B11A0112345678901234520240315\x1d\x1e"), Ok(Format::Ncpdp));
        assert_eq!(detect(b"H|\\^&|||"), Ok(Format::Astm));
        assert_eq!(detect(b"\x021H|\\^&|||"), Ok(Format::Astm));
        let mut dicom = vec![0u8; 132];
        dicom[128..].copy_from_slice(b"DICM");
        assert_eq!(detect(&dicom), Ok(Format::Dicom));
        let mut both = b"MSH|^~\\&".to_vec();
        both.resize(132, b'|');
        both[128..].copy_from_slice(b"DICM");
        assert_eq!(detect(&both), Err(Code::CLI_FORMAT_AMBIGUOUS));
        assert_eq!(detect(b"  \n "), Err(Code::CLI_EMPTY_INPUT));
        assert_eq!(detect(b"hello"), Err(Code::CLI_FORMAT_UNDETECTED));
        assert_eq!(detect(b"MSH"), Err(Code::CLI_FORMAT_UNDETECTED));
    }

    /// A prefix `decided` says is enough gives the same detection as the same prefix followed
    /// by any text signature: no text format matches after a start it calls decided.
    #[test]
    fn decided_prefixes_give_the_answer_of_longer_ones() {
        let tails: [&[u8]; 8] = [
            b"MSH|^~\\&|A",
            b"{\"resourceType\":\"Patient\"}",
            b"<Patient xmlns=\"http://hl7.org/fhir\"/>",
            b"ISA*00*",
            b"H|\\^&|||",
            b"\x021H|\\^&|||",
            b"\x0bMSH|^~\\&",
            b"610014D0B1PCN1234567101123456789012345202403150VENDOR001\x1e",
        ];
        let mut decided_starts = 0;
        for b in 0..=255u8 {
            let mut dicom = vec![b; 132];
            dicom[128..].copy_from_slice(b"DICM");
            let mut bare = vec![b; 200];
            bare[..8].copy_from_slice(&[0x08, 0x00, 0x05, 0x00, b'C', b'S', 0x0A, 0x00]);
            for prefix in [dicom, bare, vec![b; 300]] {
                if !decided(&prefix) {
                    continue;
                }
                decided_starts += 1;
                let short = detect(&prefix);
                let first = skip_bom_and_space(&prefix).first().copied();
                for tail in tails {
                    let mut longer = prefix.clone();
                    longer.extend_from_slice(tail);
                    assert_eq!(detect(&longer), short, "start byte {b:#04x}");
                    assert_eq!(skip_bom_and_space(&longer).first().copied(), first);
                }
            }
        }
        assert!(decided_starts > 100, "{decided_starts}");
        assert!(!decided(&[0u8; 131]) && !decided(b"  \n  ") && !decided(&[b' '; 300]));
    }
}
