//! The X12 reader: the ISA header read by position, and a record (one transaction set, or one
//! envelope segment) read into a [`Document`] whose values are spans of one zeroizing buffer.
//!
//! The ISA is fixed-width: 106 bytes, the element separator at byte 3, ISA11 (the repetition
//! separator in 5010) at byte 82, ISA16 (the component separator) at byte 104 and the segment
//! terminator at byte 105. An ISA whose separators are not at their fixed positions is still read
//! (by counting 16 separators) and reported `X12_ISA_WIDTH`.
//!
//! A record the splitter makes carries its envelope: a 16-byte header (group and set numbers, the
//! length of the context), a copy of the interchange's ISA and, for a transaction set, of its GS,
//! then the record's own segments. A record without the header (what a redaction wrote) takes its
//! separators from the stream.
//!
//! One pass over a record's bytes finds its segments and, in the same pass, the positions of
//! every element separator (a flat list the segments index into) and whether a segment holds a
//! component or repetition separator: the validator and the writers take a segment's elements
//! from there without searching its bytes again.
//!
//! What it does not do: check anything but syntax (see `validate`).

use crate::diag::{Code, Diagnostic, Location, X12Position, X12Scope};
use crate::limits::Limits;
use crate::phi::{Phi, PhiBytes};

/// Length of a fixed-width ISA, its terminator included.
pub const ISA_LEN: usize = 106;
/// The positions of the 16 element separators of a fixed-width ISA.
pub const ISA_SEPARATORS: [usize; 16] = [3, 6, 17, 20, 31, 34, 50, 53, 69, 76, 81, 83, 89, 99, 101, 103];
/// The widths of ISA01..ISA16.
pub const ISA_WIDTHS: [usize; 16] = [2, 10, 2, 10, 2, 15, 2, 15, 6, 4, 1, 5, 9, 1, 1, 1];
/// Farthest an ISA's terminator is looked for when the widths are wrong.
const ISA_MAX: usize = 512;

/// The record header's first four bytes.
pub const HEADER_MAGIC: [u8; 4] = [0x01, b'X', b'1', b'2'];
/// Length of the record header.
pub const HEADER_LEN: usize = 16;

/// The separators of an interchange.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Delimiters {
    /// Element separator (ISA byte 3).
    pub element: u8,
    /// Component separator (ISA16).
    pub component: u8,
    /// Repetition separator (ISA11 in 5010); `None` when ISA11 is a letter (4010's `U`).
    pub repetition: Option<u8>,
    /// Segment terminator.
    pub segment: u8,
}

/// An ISA read: its separators, its length through the terminator, and whether the separators
/// are at their fixed positions.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Isa {
    /// The separators.
    pub delimiters: Delimiters,
    /// Bytes through the terminator.
    pub len: usize,
    /// The separators are at their fixed positions.
    pub fixed: bool,
}

/// A byte that may separate: not a letter or digit, not a space.
pub fn is_separator(b: u8) -> bool {
    !b.is_ascii_alphanumeric() && b != b' ' && b != 0
}

/// Reads the ISA at the start of `b`; `None` when there is none to read.
pub fn isa(b: &[u8]) -> Option<Isa> {
    if !b.starts_with(b"ISA") {
        return None;
    }
    let e = *b.get(3)?;
    if !is_separator(e) {
        return None;
    }
    let fixed = b.len() >= ISA_LEN && ISA_SEPARATORS.iter().all(|&p| b[p] == e) && b[104] != e;
    let (sep16, fixed) = if fixed {
        (103, true)
    } else {
        let window = &b[..b.len().min(ISA_MAX)];
        let mut n = 0;
        let mut at = None;
        for (i, &c) in window.iter().enumerate().skip(3) {
            if c == e {
                n += 1;
                if n == 16 {
                    at = Some(i);
                    break;
                }
            }
        }
        (at?, false)
    };
    let component = *b.get(sep16 + 1)?;
    let segment = *b.get(sep16 + 2)?;
    if !is_separator(component) || component == e || segment == e || segment == component {
        return None;
    }
    if !(is_separator(segment) || segment == b'\n' || segment == b'\r') {
        return None;
    }
    // ISA11: one separator byte (5010), or a letter (4010's `U`).
    let isa11 = nth_element(&b[..sep16 + 2], e, 11);
    let repetition = match isa11 {
        Some([r]) if is_separator(*r) && ![e, component, segment].contains(r) => Some(*r),
        _ => None,
    };
    Some(Isa { delimiters: Delimiters { element: e, component, repetition, segment }, len: sep16 + 3, fixed })
}

/// The n-th element (1-based) of a segment (its id is element 0).
fn nth_element(seg: &[u8], sep: u8, n: usize) -> Option<&[u8]> {
    seg.split(|&c| c == sep).nth(n)
}

/// What a record is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// An ISA.
    Isa,
    /// A GS.
    Gs,
    /// A GE.
    Ge,
    /// An IEA.
    Iea,
    /// A TA1.
    Ta1,
    /// A transaction set (ST .. SE).
    Set,
}

/// A segment: its bytes in the buffer (without the terminator), its id, and where its element
/// separators are in the document's list of them.
#[derive(Copy, Clone, Debug)]
pub struct Seg {
    /// First byte.
    pub start: u32,
    /// One past the last byte (the terminator excluded).
    pub end: u32,
    /// End of the id (the first element separator, or `end`).
    pub id_end: u32,
    /// Index of the segment's first element separator in `Document::seps`.
    sep: u32,
    /// Its number of element separators (= of elements: the first is at `id_end`).
    seps: u32,
    /// [`HAS_COMPONENT`] and [`HAS_REPETITION`]: which separators occur in its elements.
    pub flags: u8,
    /// The id as known to the tables; `None` for an id that is not one.
    pub id: Option<&'static str>,
}

/// [`Seg::flags`]: a component separator occurs in the segment.
pub const HAS_COMPONENT: u8 = 1;
/// [`Seg::flags`]: the repetition separator occurs in the segment.
pub const HAS_REPETITION: u8 = 2;

impl Seg {
    /// Its number of elements.
    pub fn element_count(&self) -> usize {
        self.seps as usize
    }
}

/// A record read.
pub struct Document {
    buf: Phi<Vec<u8>>,
    /// The separators.
    pub delimiters: Delimiters,
    /// Every segment: the context (ISA, GS) first, then the record's own.
    pub segs: Vec<Seg>,
    /// The positions of the element separators of every segment, in order (a segment's run
    /// starts at its `sep`): element `i` of a segment runs from its separator `i` to the next
    /// one, or to the segment's end.
    seps: Vec<u32>,
    /// Index in `segs` of the first of the record's own segments.
    pub own: usize,
    /// What the record is.
    pub kind: RecordKind,
    /// The group's number in its interchange (1-based; 0: none or unknown).
    pub group: u32,
    /// The set's number in its group (1-based; 0: none or unknown).
    pub set: u32,
    /// Whether the ISA of the context had its fixed widths.
    pub isa_fixed: bool,
    /// The record's byte offset in the input.
    pub offset: u64,
    /// Findings of reading (empty segments).
    pub syntax: Vec<Diagnostic>,
}

crate::debug_placeholder!(Document);

/// A record that could not be read: the cause, and the bytes back.
pub type ReadError = (Diagnostic, Phi<Vec<u8>>);

/// What a record without a header inherits from the stream.
#[derive(Copy, Clone, Debug, Default)]
pub struct Inherited {
    /// The interchange's separators.
    pub delimiters: Option<Delimiters>,
    /// Whether its ISA had the fixed widths.
    pub fixed: bool,
    /// The current group's number.
    pub group: u32,
    /// The current set's number.
    pub set: u32,
}

/// A failure: the cause, and the record's own bytes (without the header and the envelope
/// copies, so that `fmt` passes the record through as it came).
fn fail(code: Code, at: u64, mut bytes: Vec<u8>, own_start: usize) -> ReadError {
    let own = bytes.split_off(own_start.min(bytes.len()));
    crate::phi::wipe(&mut bytes);
    (Diagnostic::new(code, Location::Offset(at)), Phi::new(own))
}

/// Reads one record.
pub fn read(
    bytes: Vec<u8>,
    offset: u64,
    kind: RecordKind,
    inherited: Inherited,
    limits: &Limits,
) -> Result<Document, ReadError> {
    let (group, set, ctx_start, own_start) = if bytes.starts_with(&HEADER_MAGIC) && bytes.len() >= HEADER_LEN {
        let word = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let ctx = word(12) as usize;
        (word(4), word(8), HEADER_LEN, HEADER_LEN.saturating_add(ctx).min(bytes.len()))
    } else {
        (inherited.group, inherited.set, 0, 0)
    };
    // The separators: the context's ISA, the record's own ISA, or the stream's.
    let (delimiters, fixed) = if ctx_start < own_start {
        match isa(&bytes[ctx_start..]) {
            Some(i) => (i.delimiters, i.fixed),
            None => return Err(fail(Code::X12_ISA_INVALID, offset, bytes, own_start)),
        }
    } else if kind == RecordKind::Isa || bytes[own_start..].starts_with(b"ISA") {
        match isa(&bytes[own_start..]) {
            Some(i) => (i.delimiters, i.fixed),
            None => return Err(fail(Code::X12_ISA_INVALID, offset, bytes, own_start)),
        }
    } else {
        match inherited.delimiters {
            Some(d) => (d, inherited.fixed),
            None => return Err(fail(Code::X12_ISA_INVALID, offset, bytes, own_start)),
        }
    };
    // Room for a typical set's segments and separators (about one segment in 25 bytes, one
    // separator in 6), within bounds for a large one (the vectors grow from there).
    let mut segs = Vec::with_capacity((bytes.len() / 24).clamp(16, 4096));
    let mut seps = Vec::with_capacity((bytes.len() / 5).clamp(64, 16384));
    let class = classes(&delimiters);
    let mut syntax = Vec::new();
    let mut own = usize::MAX;
    let mut pos = ctx_start;
    let max_segments = limits.max_segments as usize;
    while pos < bytes.len() {
        if pos >= own_start && own == usize::MAX {
            own = segs.len();
        }
        // White space after a terminator (and before the first segment) is not content.
        while pos < bytes.len() && is_space(bytes[pos], &delimiters) {
            pos += 1;
        }
        if pos >= bytes.len() {
            break;
        }
        if pos >= own_start && own == usize::MAX {
            own = segs.len();
        }
        // The ISA is read by position: its terminator follows ISA16.
        let sep = seps.len();
        let mut flags = 0;
        let end = if bytes[pos..].starts_with(b"ISA") && bytes.get(pos + 3) == Some(&delimiters.element) {
            match isa(&bytes[pos..]) {
                Some(i) => scan(&bytes[..pos + i.len - 1], pos, &class, false, &mut seps, &mut flags),
                None => return Err(fail(Code::X12_ISA_INVALID, rel(offset, pos, own_start), bytes, own_start)),
            }
        } else {
            scan(&bytes, pos, &class, true, &mut seps, &mut flags)
        };
        if end == pos {
            // An empty segment (two terminators).
            syntax.push(Diagnostic::new(Code::X12_SEGMENT_ID_INVALID, Location::X12(X12Position::default())));
            pos = end + 1;
            continue;
        }
        if segs.len() >= max_segments || (end - pos) as u64 > u64::from(limits.max_field_bytes) {
            return Err(fail(Code::CLI_INPUT_TOO_LARGE, rel(offset, pos, own_start), bytes, own_start));
        }
        let id_end = seps.get(sep).map_or(end, |&i| i as usize);
        let id = super::guide::segment_id(&bytes[pos..id_end]);
        let n = (seps.len() - sep) as u32;
        segs.push(Seg {
            start: pos as u32,
            end: end as u32,
            id_end: id_end as u32,
            sep: sep as u32,
            seps: n,
            flags,
            id,
        });
        pos = end + 1;
    }
    if own == usize::MAX {
        own = segs.len();
    }
    // Interchange-level records belong to no group.
    let (group, set) = match kind {
        RecordKind::Isa | RecordKind::Iea | RecordKind::Ta1 => (0, 0),
        RecordKind::Gs | RecordKind::Ge => (group, 0),
        RecordKind::Set => (group, set),
    };
    if segs.len() <= own {
        return Err(fail(Code::CLI_PARSE_FAILED, offset, bytes, own_start));
    }
    if bytes.len() > u32::MAX as usize {
        return Err(fail(Code::CLI_INPUT_TOO_LARGE, offset, bytes, own_start));
    }
    Ok(Document {
        buf: Phi::new(bytes),
        delimiters,
        segs,
        seps,
        own,
        kind,
        group,
        set,
        isa_fixed: fixed,
        offset,
        syntax,
    })
}

/// A byte's class in [`scan`].
const PLAIN: u8 = 0;
const ELEMENT: u8 = 1;
const TERMINATOR: u8 = 2;
const COMPONENT: u8 = 3;
const REPETITION: u8 = 4;

/// The class of every byte under the interchange's separators.
fn classes(d: &Delimiters) -> [u8; 256] {
    let mut class = [PLAIN; 256];
    if let Some(r) = d.repetition {
        class[usize::from(r)] = REPETITION;
    }
    class[usize::from(d.component)] = COMPONENT;
    class[usize::from(d.segment)] = TERMINATOR;
    class[usize::from(d.element)] = ELEMENT;
    class
}

/// Reads a segment from `from`: pushes the positions of its element separators onto `seps`,
/// sets the flags of the component and repetition separators it holds, and returns its end
/// (the terminator's position when `terminated`, else the end of `b`; the ISA is read by
/// position, a terminator byte inside it is not one). One pass over the bytes: segments are
/// short, a byte's class is one look-up.
fn scan(b: &[u8], from: usize, class: &[u8; 256], terminated: bool, seps: &mut Vec<u32>, flags: &mut u8) -> usize {
    for (i, &c) in b.get(from..).unwrap_or_default().iter().enumerate() {
        // Most bytes are plain: one test, no jump table.
        let k = class[usize::from(c)];
        if k == PLAIN {
            continue;
        }
        if k == ELEMENT {
            seps.push((from + i) as u32);
        } else if k == TERMINATOR {
            if terminated {
                return from + i;
            }
        } else if k == COMPONENT {
            *flags |= HAS_COMPONENT;
        } else {
            *flags |= HAS_REPETITION;
        }
    }
    b.len()
}

/// The input offset of a byte of the record.
fn rel(offset: u64, pos: usize, own_start: usize) -> u64 {
    offset + pos.saturating_sub(own_start) as u64
}

/// White space between segments (unless it is a separator).
fn is_space(b: u8, d: &Delimiters) -> bool {
    matches!(b, b'\r' | b'\n' | b' ' | b'\t') && b != d.segment && b != d.element && b != d.component
}

impl Document {
    /// The bytes of the buffer (for the parsers and data-channel writers of this folder).
    pub(crate) fn bytes(&self) -> PhiBytes<'_> {
        self.buf.span()
    }

    /// The record's own segments.
    pub fn own_segs(&self) -> &[Seg] {
        &self.segs[self.own.min(self.segs.len())..]
    }

    /// The context's segments (ISA, GS).
    pub fn context_segs(&self) -> &[Seg] {
        &self.segs[..self.own.min(self.segs.len())]
    }

    /// The bytes of a segment.
    pub fn seg_bytes(&self, s: &Seg) -> PhiBytes<'_> {
        self.bytes().slice(s.start as usize, s.end as usize)
    }

    /// The elements of a segment (element 1 first), as spans of the buffer.
    pub fn elements(&self, s: &Seg, out: &mut Vec<(u32, u32)>) {
        out.clear();
        out.extend((0..s.element_count()).map(|i| self.span(s, i)));
    }

    /// The span of element `i` (0-based, below `s.element_count()`) of a segment.
    pub fn span(&self, s: &Seg, i: usize) -> (u32, u32) {
        let seps = &self.seps[s.sep as usize..][..s.seps as usize];
        (seps[i] + 1, seps.get(i + 1).copied().unwrap_or(s.end))
    }

    /// The n-th element (1-based) of a segment, empty when absent.
    pub fn element(&self, s: &Seg, n: usize) -> PhiBytes<'_> {
        match n.checked_sub(1).filter(|&i| i < s.element_count()) {
            Some(i) => {
                let (a, b) = self.span(s, i);
                self.bytes().slice(a as usize, b as usize)
            }
            None => self.bytes().slice(0, 0),
        }
    }

    /// The own segment with this id, first.
    pub fn find(&self, id: &str) -> Option<&Seg> {
        self.segs.iter().find(|s| s.id == Some(id))
    }

    /// The context's segment with this id.
    pub fn context(&self, id: &str) -> Option<&Seg> {
        self.context_segs().iter().find(|s| s.id == Some(id))
    }

    /// The scope of the record's own positions.
    pub fn scope(&self) -> X12Scope {
        match self.kind {
            RecordKind::Set => X12Scope::Set(self.set),
            RecordKind::Gs | RecordKind::Ge => X12Scope::Group(self.group),
            _ => X12Scope::Interchange,
        }
    }
}

/// The record header the splitter writes before a context: group and set numbers, and the
/// context's length.
pub fn header(group: u32, set: u32, context_len: usize) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..4].copy_from_slice(&HEADER_MAGIC);
    h[4..8].copy_from_slice(&group.to_le_bytes());
    h[8..12].copy_from_slice(&set.to_le_bytes());
    h[12..16].copy_from_slice(&(context_len as u32).to_le_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISA: &[u8] =
        b"ISA*00*          *00*          *ZZ*SUBMITTER      *ZZ*RECEIVER       *240101*1200*^*00501*000000001*0*T*:~";

    #[test]
    fn isa_by_position() {
        assert_eq!(ISA.len(), ISA_LEN);
        let i = isa(ISA).unwrap_or_else(|| panic!("isa"));
        assert!(i.fixed);
        assert_eq!(i.len, ISA_LEN);
        assert_eq!(i.delimiters, Delimiters { element: b'*', component: b':', repetition: Some(b'^'), segment: b'~' });
        // Short sender id: read by counting, not fixed.
        let short = b"ISA*00*          *00*          *ZZ*SUB*ZZ*RECEIVER       *240101*1200*U*00401*000000001*0*T*:~";
        let i = isa(short).unwrap_or_else(|| panic!("isa"));
        assert!(!i.fixed);
        assert_eq!(i.delimiters.repetition, None);
        assert_eq!(i.len, short.len());
        assert!(isa(b"ISA*00*").is_none());
    }

    #[test]
    fn element_spans_from_the_one_pass() {
        let mut bytes = ISA.to_vec();
        bytes.extend_from_slice(b"\nST*837*0001~\nCLM*A*1:2*X^Y**~\nLX~\nSE*4*0001~\n");
        let doc = read(bytes, 0, RecordKind::Set, Inherited::default(), &Limits::default())
            .unwrap_or_else(|_| panic!("reads"));
        let ids: Vec<_> = doc.segs.iter().map(|s| s.id).collect();
        assert_eq!(ids, [Some("ISA"), Some("ST"), Some("CLM"), Some("LX"), Some("SE")]);
        // The ISA: 16 elements split at its separators, ISA16 the last.
        let isa = &doc.segs[0];
        assert_eq!(isa.element_count(), 16);
        assert_eq!(doc.span(isa, 15), (104, 105));
        // CLM*A*1:2*X^Y**: five elements, the last two empty; a component and a repetition.
        let clm = &doc.segs[2];
        let at = clm.start;
        assert_eq!(clm.id_end, at + 3);
        assert_eq!(clm.element_count(), 5);
        let spans: Vec<_> = (0..5).map(|i| doc.span(clm, i)).collect();
        assert_eq!(
            spans,
            [(at + 4, at + 5), (at + 6, at + 9), (at + 10, at + 13), (at + 14, at + 14), (at + 15, at + 15)]
        );
        assert_eq!(clm.flags, HAS_COMPONENT | HAS_REPETITION);
        let mut out = Vec::new();
        doc.elements(clm, &mut out);
        assert_eq!(out, spans);
        // A segment without elements, and one without separators of either kind.
        let lx = &doc.segs[3];
        assert_eq!((lx.element_count(), lx.id_end, lx.flags), (0, lx.end, 0));
        assert_eq!(doc.segs[1].flags, 0);
        assert!(doc.element(lx, 1).is_empty());
    }
}
