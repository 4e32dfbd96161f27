//! Format sniffing from the first bytes of an input.
//!
//! Conservative by design: every signature is tested, none matching is
//! `CLI_FORMAT_UNDETECTED`, more than one is `CLI_FORMAT_AMBIGUOUS`. A UTF-8 BOM and leading
//! white space are skipped (except for DICOM, whose signature sits at a fixed offset).
//!
//! Signatures: HL7 v2 `MSH`/`FHS`/`BHS` followed by a field separator; MLLP start block 0x0B;
//! FHIR JSON (an object with a top-level `resourceType`); FHIR XML (root element in the
//! `http://hl7.org/fhir` namespace); X12 `ISA` followed by an element separator; DICOM `DICM` at
//! offset 128; C-CDA `<ClinicalDocument`; NCPDP SCRIPT XML (root in the
//! `http://www.ncpdp.org/schema/SCRIPT` namespace); ASTM E1394 `H|\^&` (optionally after an
//! E1381 frame start).
//!
//! What it does not do: validate anything past the signature. A match says which parser to
//! try, not that the input is well formed.

use crate::diag::Code;
use crate::formats::Format;

/// How many leading bytes detection looks at.
pub const PREFIX_LEN: usize = 64 * 1024;

/// Detects the format of an input from its first bytes ([`PREFIX_LEN`] are enough).
pub fn detect(prefix: &[u8]) -> Result<Format, Code> {
    let body = skip_bom_and_space(prefix);
    if body.is_empty() && !is_dicom(prefix) {
        return Err(Code::CLI_EMPTY_INPUT);
    }
    let candidates = [
        (Format::Hl7, is_hl7(body)),
        (Format::Mllp, body.first() == Some(&0x0B)),
        (Format::Fhir, is_fhir_json(body) || xml_root(body).is_some_and(|r| r.namespace == Some(FHIR_NS))),
        (Format::X12, is_x12(body)),
        (Format::Dicom, is_dicom(prefix)),
        (Format::Ccda, xml_root(body).is_some_and(|r| r.local == b"ClinicalDocument")),
        (Format::Ncpdp, xml_root(body).is_some_and(|r| r.namespace == Some(NCPDP_NS))),
        (Format::Astm, is_astm(body)),
    ];
    let mut found = candidates.iter().filter(|(_, hit)| *hit).map(|(f, _)| *f);
    match (found.next(), found.next()) {
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

const FHIR_NS: &[u8] = b"http://hl7.org/fhir";
const NCPDP_NS: &[u8] = b"http://www.ncpdp.org/schema/SCRIPT";

/// True for a byte HL7 v2 allows as a delimiter: printable, not alphanumeric, not space.
pub fn is_delimiter_byte(b: u8) -> bool {
    b.is_ascii_graphic() && !b.is_ascii_alphanumeric()
}

fn is_hl7(body: &[u8]) -> bool {
    matches!(body.get(..3), Some(b"MSH" | b"FHS" | b"BHS")) && body.get(3).is_some_and(|&b| is_delimiter_byte(b))
}

fn is_x12(body: &[u8]) -> bool {
    body.starts_with(b"ISA") && body.get(3).is_some_and(|&b| is_delimiter_byte(b))
}

fn is_dicom(raw: &[u8]) -> bool {
    raw.get(128..132) == Some(b"DICM")
}

fn is_astm(body: &[u8]) -> bool {
    // Optional E1381 framing: STX and a frame number digit.
    let rec = match body {
        [0x02, d, rest @ ..] if d.is_ascii_digit() => rest,
        [d, rest @ ..] if d.is_ascii_digit() => rest,
        _ => body,
    };
    rec.starts_with(b"H|\\^&")
}

/// True when the first JSON value is an object with a top-level `"resourceType"` key.
fn is_fhir_json(body: &[u8]) -> bool {
    if body.first() != Some(&b'{') {
        return false;
    }
    let mut depth = 0u32;
    let mut i = 0usize;
    let mut expect_key = false;
    while i < body.len() {
        match body[i] {
            b'{' => {
                depth += 1;
                expect_key = depth == 1;
            }
            b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return false;
                }
            }
            b',' => expect_key = depth == 1,
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < body.len() && body[j] != b'"' {
                    j += if body[j] == b'\\' { 2 } else { 1 };
                }
                if j >= body.len() {
                    return false;
                }
                if expect_key && depth == 1 && &body[start..j] == b"resourceType" {
                    return true;
                }
                expect_key = false;
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    false
}

struct XmlRoot<'a> {
    local: &'a [u8],
    namespace: Option<&'a [u8]>,
}

/// Finds the root element of an XML prefix: skips the declaration, comments, processing
/// instructions and a doctype; reads the root's local name and its namespace.
fn xml_root(body: &[u8]) -> Option<XmlRoot<'_>> {
    let mut rest = body;
    loop {
        rest = skip_bom_and_space(rest);
        if rest.starts_with(b"<?") {
            let end = memchr::memmem::find(rest, b"?>")?;
            rest = &rest[end + 2..];
        } else if rest.starts_with(b"<!--") {
            let end = memchr::memmem::find(rest, b"-->")?;
            rest = &rest[end + 3..];
        } else if rest.starts_with(b"<!") {
            // A doctype with an internal subset ends at `]>` (the FHIR reader refuses it).
            let end = memchr::memchr(b'>', rest)?;
            let subset = memchr::memchr(b'[', &rest[..end]).is_some();
            let end = if subset { memchr::memmem::find(rest, b"]>").map(|p| p + 1)? } else { end };
            rest = &rest[end + 1..];
        } else {
            break;
        }
    }
    let tag = rest.strip_prefix(b"<")?;
    let end = memchr::memchr(b'>', tag)?;
    let tag = &tag[..end];
    let name_end = tag.iter().position(|b| b.is_ascii_whitespace() || *b == b'/').unwrap_or(tag.len());
    let qname = &tag[..name_end];
    if qname.is_empty() {
        return None;
    }
    let (prefix, local) = match memchr::memchr(b':', qname) {
        Some(p) => (&qname[..p], &qname[p + 1..]),
        None => (&b""[..], qname),
    };
    let attrs = &tag[name_end..];
    let namespace = xml_namespace(attrs, prefix);
    Some(XmlRoot { local, namespace })
}

/// The value of `xmlns` (no prefix) or `xmlns:prefix` in an attribute list.
fn xml_namespace<'a>(attrs: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let mut rest = attrs;
    while let Some(p) = memchr::memmem::find(rest, b"xmlns") {
        let after = &rest[p + 5..];
        let (name_ok, after) = if prefix.is_empty() {
            (after.first().is_some_and(|b| *b == b'=' || b.is_ascii_whitespace()), after)
        } else {
            match after.strip_prefix(b":").and_then(|a| a.strip_prefix(prefix)) {
                Some(a) => (a.first().is_some_and(|b| *b == b'=' || b.is_ascii_whitespace()), a),
                None => (false, after),
            }
        };
        let preceded_ok = p == 0 || rest[p - 1].is_ascii_whitespace();
        if name_ok && preceded_ok {
            let eq = memchr::memchr(b'=', after)?;
            let value = skip_bom_and_space(&after[eq + 1..]);
            let quote = *value.first()?;
            if quote != b'"' && quote != b'\'' {
                return None;
            }
            let close = memchr::memchr(quote, &value[1..])?;
            return Some(&value[1..1 + close]);
        }
        rest = &rest[p + 5..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures() {
        assert_eq!(detect(b"MSH|^~\\&|A"), Ok(Format::Hl7));
        assert_eq!(detect(b"\xEF\xBB\xBF\r\nFHS|^~\\&"), Ok(Format::Hl7));
        assert_eq!(detect(b"\x0bMSH|^~\\&"), Ok(Format::Mllp));
        assert_eq!(detect(b"{\"id\":\"x\",\"resourceType\":\"Patient\"}"), Ok(Format::Fhir));
        assert_eq!(detect(b"{\"a\":{\"resourceType\":\"x\"}}"), Err(Code::CLI_FORMAT_UNDETECTED));
        assert_eq!(detect(b"<?xml version=\"1.0\"?><Patient xmlns=\"http://hl7.org/fhir\">"), Ok(Format::Fhir));
        assert_eq!(detect(b"<ClinicalDocument xmlns=\"urn:hl7-org:v3\">"), Ok(Format::Ccda));
        assert_eq!(detect(b"<ClinicalDocument xmlns=\"http://hl7.org/fhir\">"), Err(Code::CLI_FORMAT_AMBIGUOUS));
        assert_eq!(detect(b"<Message xmlns=\"http://www.ncpdp.org/schema/SCRIPT\">"), Ok(Format::Ncpdp));
        assert_eq!(detect(b"ISA*00*"), Ok(Format::X12));
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
}
