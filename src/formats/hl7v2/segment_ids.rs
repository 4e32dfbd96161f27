//! Which segment ids may appear in a diagnostic: the ids the standard defines (v2.1 to v2.8.2 from
//! the generated schema, a few v2.9 additions such as OH1-OH4, plus the batch envelope) and
//! locally defined Z ids.
//!
//! A segment id is part of the message, so a broken message can put a value where an id
//! belongs; only ids that are schema names are shown. Everything else is `segment[n]`.
//!
//! What it does not do: say in which version a segment is defined (see `schema`).

/// Standard segment ids, sorted (checked by a test).
const STANDARD: &[&str] = &[
    "ABS", "ACC", "ADD", "ADJ", "AFF", "AIG", "AIL", "AIP", "AIS", "AL1", "APR", "ARQ", "ARV", "AUT", "BHS", "BLC",
    "BLG", "BPO", "BPX", "BTS", "BTX", "BUI", "CDM", "CDO", "CER", "CM0", "CM1", "CM2", "CNS", "CON", "CSP", "CSR",
    "CSS", "CTD", "CTI", "CTR", "DB1", "DEV", "DG1", "DMI", "DON", "DPS", "DRG", "DSC", "DSP", "DST", "ECD", "ECR",
    "EDU", "EQL", "EQP", "EQU", "ERQ", "ERR", "EVN", "FAC", "FHS", "FT1", "FTS", "GOL", "GP1", "GP2", "GSC", "GSP",
    "GSR", "GT1", "IAM", "IAR", "IIM", "ILT", "IN1", "IN2", "IN3", "INV", "IPC", "IPR", "ISD", "ITM", "IVC", "IVT",
    "LAN", "LCC", "LCH", "LDP", "LOC", "LRL", "MCP", "MFA", "MFE", "MFI", "MRG", "MSA", "MSH", "NCK", "NDS", "NK1",
    "NPU", "NSC", "NST", "NTE", "OBR", "OBX", "ODS", "ODT", "OH1", "OH2", "OH3", "OH4", "OM1", "OM2", "OM3", "OM4",
    "OM5", "OM6", "OM7", "OMC", "ORC", "ORG", "ORO", "OVR", "PAC", "PCE", "PCR", "PD1", "PDA", "PDC", "PEO", "PES",
    "PID", "PKG", "PM1", "PMT", "PR1", "PRA", "PRB", "PRC", "PRD", "PRT", "PSG", "PSH", "PSL", "PSS", "PTH", "PV1",
    "PV2", "PYE", "QAK", "QCK", "QID", "QPD", "QRD", "QRF", "QRI", "RCP", "RDF", "RDT", "REL", "RF1", "RFI", "RGS",
    "RMI", "ROL", "RQ1", "RQD", "RX1", "RXA", "RXC", "RXD", "RXE", "RXG", "RXO", "RXR", "RXV", "SAC", "SCD", "SCH",
    "SCP", "SDD", "SFT", "SGH", "SGT", "SHP", "SID", "SLT", "SPM", "SPR", "STF", "STZ", "TCC", "TCD", "TQ1", "TQ2",
    "TXA", "UAC", "UB1", "UB2", "URD", "URS", "VAR", "VND", "VTQ",
];

const fn key_of(a: u8, b: u8, c: u8) -> u32 {
    (a as u32) << 16 | (b as u32) << 8 | c as u32
}

/// `STANDARD` as sorted integer keys (same order: ASCII order equals key order).
static STANDARD_KEYS: [u32; STANDARD.len()] = {
    let mut keys = [0u32; STANDARD.len()];
    let mut i = 0;
    while i < STANDARD.len() {
        let b = STANDARD[i].as_bytes();
        keys[i] = key_of(b[0], b[1], b[2]);
        i += 1;
    }
    keys
};

const ALNUM: &[u8; 36] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// Every Z id (`Z` + two upper-case letters or digits), as static strings.
static Z_IDS: [[u8; 3]; 36 * 36] = {
    let mut ids = [[0u8; 3]; 36 * 36];
    let mut i = 0;
    while i < 36 * 36 {
        ids[i] = [b'Z', ALNUM[i / 36], ALNUM[i % 36]];
        i += 1;
    }
    ids
};

fn alnum_index(b: u8) -> Option<usize> {
    match b {
        b'A'..=b'Z' => Some((b - b'A') as usize),
        b'0'..=b'9' => Some(26 + (b - b'0') as usize),
        _ => None,
    }
}

/// The schema name for an id: a standard id or a Z id; `None` for anything else.
pub fn schema_name(id: &[u8]) -> Option<&'static str> {
    if id.len() != 3 {
        return None;
    }
    if id[0] == b'Z' {
        let i = alnum_index(id[1])? * 36 + alnum_index(id[2])?;
        return std::str::from_utf8(&Z_IDS[i]).ok();
    }
    let key = key_of(id[0], id[1], id[2]);
    STANDARD_KEYS.binary_search(&key).ok().map(|i| STANDARD[i])
}

/// True for a Z id.
pub fn is_z(name: &str) -> bool {
    name.starts_with('Z')
}

/// True when `id` has the shape of a segment id: an upper-case letter and two upper-case letters
/// or digits.
pub fn is_well_formed(id: &[u8]) -> bool {
    matches!(id, [a, b, c] if a.is_ascii_uppercase() && alnum_index(*b).is_some() && alnum_index(*c).is_some())
}

/// Counts occurrences of each segment id within a message.
#[derive(Debug, Default)]
pub(crate) struct Counter {
    seen: Vec<(&'static str, u32)>,
}

impl Counter {
    /// Adds one occurrence of `name` and returns its 1-based occurrence number.
    pub fn bump(&mut self, name: &'static str) -> u32 {
        // Names come from the static tables above, one string per id: pointer equality is identity.
        if let Some(entry) = self.seen.iter_mut().find(|(n, _)| n.as_ptr() == name.as_ptr()) {
            entry.1 += 1;
            return entry.1;
        }
        self.seen.push((name, 1));
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_list_is_sorted() {
        assert!(STANDARD.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn names() {
        assert_eq!(schema_name(b"PID"), Some("PID"));
        assert_eq!(schema_name(b"ZPD"), Some("ZPD"));
        assert_eq!(schema_name(b"Z9A"), Some("Z9A"));
        assert_eq!(schema_name(b"ABC"), None);
        assert_eq!(schema_name(b"pid"), None);
        assert_eq!(schema_name(b"Zp1"), None);
        assert!(is_well_formed(b"ABC"));
        assert!(!is_well_formed(b"1BC"));
    }
}
