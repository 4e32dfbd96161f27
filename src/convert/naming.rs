//! The naming-system table of `convert --naming-systems FILE`: assigning authority to identifier
//! system URI.
//!
//! Format (UTF-8 text, one entry a line): `AUTHORITY URI`, separated by white space; blank lines
//! and lines starting with `#` are ignored. `AUTHORITY` is matched exactly against HD-1
//! (namespace id) and then HD-2 (universal id) of an assigning authority (CX-4, XCN-9, EI-2..3).
//! `URI` must be an absolute URI (`scheme:...`, no white space; a `urn:oid:`/`urn:uuid:` one an OID
//! or UUID). A line that does not follow this
//! is a `CLI_NAMING_SYSTEMS_INVALID` failure (the line is never shown: a table can hold names).
//!
//! What it does not do: guess. An authority without an entry gets no system (a finding says so),
//! except an HD whose universal id type (HD-3) is `ISO`, which is its own `urn:oid:` (the
//! authority's published identifier, not an invention).

use std::path::Path;

use crate::diag::Code;
use crate::error::{Error, from_read_io};

/// Largest naming-system file read.
pub const MAX_BYTES: u64 = 4 * 1024 * 1024;

/// Assigning authority to URI, sorted by authority.
#[derive(Debug, Default)]
pub struct NamingSystems {
    entries: Vec<(String, String)>,
}

impl NamingSystems {
    /// Reads a file (`CLI_NO_INPUT` when unreadable, `CLI_NAMING_SYSTEMS_INVALID` when malformed
    /// or larger than [`MAX_BYTES`]).
    pub fn from_file(path: &Path) -> Result<NamingSystems, Error> {
        use std::io::Read;
        let file = std::fs::File::open(path).map_err(|e| from_read_io(&e))?;
        let mut buf = Vec::new();
        file.take(MAX_BYTES + 1).read_to_end(&mut buf).map_err(|e| from_read_io(&e))?;
        if buf.len() as u64 > MAX_BYTES {
            return Err(Error::new(Code::CLI_NAMING_SYSTEMS_INVALID));
        }
        let text = String::from_utf8(buf).map_err(|_| Error::new(Code::CLI_NAMING_SYSTEMS_INVALID))?;
        NamingSystems::parse(&text).ok_or_else(|| Error::new(Code::CLI_NAMING_SYSTEMS_INVALID))
    }

    /// Parses the table; `None` when a line is malformed.
    pub fn parse(text: &str) -> Option<NamingSystems> {
        let mut entries = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (Some(auth), Some(uri), None) = (parts.next(), parts.next(), parts.next()) else { return None };
            let scheme_ok = uri.split_once(':').is_some_and(|(s, rest)| {
                s.starts_with(|c: char| c.is_ascii_alphabetic())
                    && !rest.is_empty()
                    && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"+.-".contains(&b))
            });
            // A `urn:oid:`/`urn:uuid:` URI must be an OID/UUID: the Bundle would not validate.
            if !scheme_ok || !crate::formats::fhir::primitive::is_valid("uri", uri.as_bytes()) {
                return None;
            }
            entries.push((auth.to_owned(), uri.to_owned()));
        }
        entries.sort();
        entries.dedup_by(|a, b| a.0 == b.0);
        Some(NamingSystems { entries })
    }

    /// The URI for an authority.
    pub fn lookup(&self, authority: &str) -> Option<&str> {
        self.entries.binary_search_by(|(a, _)| a.as_str().cmp(authority)).ok().map(|i| self.entries[i].1.as_str())
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_looks_up() {
        let t = NamingSystems::parse(
            "# comment\nHOSP http://hospital.example.org/mrn\n\nSSA  http://hl7.org/fhir/sid/us-ssn\n",
        );
        let t = t.unwrap_or_default();
        assert_eq!(t.lookup("HOSP"), Some("http://hospital.example.org/mrn"));
        assert_eq!(t.lookup("X"), None);
        assert!(NamingSystems::parse("HOSP not-a-uri").is_none());
        assert!(NamingSystems::parse("HOSP urn:oid:1..2").is_none());
        assert!(NamingSystems::parse("HOSP 1x:y").is_none());
        assert!(NamingSystems::parse("HOSP urn:oid:1.2.840").is_some());
        assert!(NamingSystems::parse("HOSP a:b extra").is_none());
    }
}
