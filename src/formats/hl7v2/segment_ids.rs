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

const fn alnum_index(b: u8) -> Option<usize> {
    match b {
        b'A'..=b'Z' => Some((b - b'A') as usize),
        b'0'..=b'9' => Some(26 + (b - b'0') as usize),
        _ => None,
    }
}

/// The index in `STANDARD` plus one of every id with an upper-case first letter (zero for
/// ids that are not standard), by `(first - 'A') * 36 * 36 + second * 36 + third`: one
/// lookup per segment instead of a binary search.
static STANDARD_TABLE: [u8; 26 * 36 * 36] = {
    assert!(STANDARD.len() < 255);
    let mut table = [0u8; 26 * 36 * 36];
    let mut i = 0;
    while i < STANDARD.len() {
        let b = STANDARD[i].as_bytes();
        let (Some(second), Some(third)) = (alnum_index(b[1]), alnum_index(b[2])) else { panic!("id shape") };
        table[(b[0] - b'A') as usize * 36 * 36 + second * 36 + third] = i as u8 + 1;
        i += 1;
    }
    table
};

/// The schema name for an id: a standard id or a Z id; `None` for anything else.
pub fn schema_name(id: &[u8]) -> Option<&'static str> {
    let &[first, second, third] = id else { return None };
    let tail = alnum_index(second)? * 36 + alnum_index(third)?;
    if first == b'Z' {
        return std::str::from_utf8(&Z_IDS[tail]).ok();
    }
    let row = first.checked_sub(b'A').filter(|r| *r < 26)?;
    let entry = *STANDARD_TABLE.get(usize::from(row) * 36 * 36 + tail)?;
    STANDARD.get(usize::from(entry).checked_sub(1)?).copied()
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

/// How many distinct ids a message has before the counter needs the heap.
const INLINE_IDS: usize = 24;

/// Counts occurrences of each segment id within a message (without an allocation for the first
/// [`INLINE_IDS`] distinct ids).
#[derive(Debug)]
pub(crate) struct Counter {
    names: [*const u8; INLINE_IDS],
    counts: [u32; INLINE_IDS],
    len: usize,
    more: Vec<(&'static str, u32)>,
}

impl Default for Counter {
    fn default() -> Self {
        Counter { names: [std::ptr::null(); INLINE_IDS], counts: [0; INLINE_IDS], len: 0, more: Vec::new() }
    }
}

impl Counter {
    /// Adds one occurrence of `name` and returns its 1-based occurrence number.
    pub fn bump(&mut self, name: &'static str) -> u32 {
        // Names come from the static tables above, one string per id: pointer equality is identity.
        let key = name.as_ptr();
        let len = self.len.min(INLINE_IDS);
        if let Some(i) = self.names[..len].iter().position(|n| *n == key) {
            self.counts[i] += 1;
            return self.counts[i];
        }
        if len < INLINE_IDS {
            self.names[len] = key;
            self.counts[len] = 1;
            self.len += 1;
            return 1;
        }
        if let Some(entry) = self.more.iter_mut().find(|(n, _)| n.as_ptr() == key) {
            entry.1 += 1;
            return entry.1;
        }
        self.more.push((name, 1));
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
    fn table_finds_every_standard_id_and_nothing_else() {
        for a in 0..=255u8 {
            for b in b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZaz|".iter().copied() {
                for c in b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZaz|".iter().copied() {
                    let id = [a, b, c];
                    let expected = if a == b'Z' && is_well_formed(&id) {
                        std::str::from_utf8(&id).ok()
                    } else {
                        STANDARD.iter().copied().find(|s| s.as_bytes() == id)
                    };
                    assert_eq!(schema_name(&id), expected);
                }
            }
        }
    }

    #[test]
    fn counter_counts_past_the_inline_ids() {
        let mut counter = Counter::default();
        for round in 1..=3u32 {
            for name in STANDARD.iter().take(40) {
                assert_eq!(counter.bump(name), round);
            }
        }
    }

    #[test]
    fn names() {
        assert_eq!(schema_name(b"PID"), Some("PID"));
        assert_eq!(schema_name(b"ZPD"), Some("ZPD"));
        assert_eq!(schema_name(b"Z9A"), Some("Z9A"));
        assert_eq!(schema_name(b"ABC"), None);
        assert_eq!(schema_name(b"pid"), None);
        assert_eq!(schema_name(b"Zp1"), None);
        assert_eq!(schema_name(b"ABS"), Some("ABS"));
        assert_eq!(schema_name(b"VTQ"), Some("VTQ"));
        assert_eq!(schema_name(b"ZZZ"), Some("ZZZ"));
        assert_eq!(schema_name(b"Z00"), Some("Z00"));
        assert_eq!(schema_name(b"PI"), None);
        assert_eq!(schema_name(b"PIDX"), None);
        assert_eq!(schema_name(b"@ID"), None);
        assert_eq!(schema_name(b"[ID"), None);
        assert_eq!(schema_name(b"\xFFID"), None);
        assert!(is_well_formed(b"ABC"));
        assert!(!is_well_formed(b"1BC"));
    }
}
