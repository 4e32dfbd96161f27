//! The DICOM lexer (PS3.5 Section 7, PS3.10 Section 7): the file meta group (explicit VR little
//! endian), then the dataset in the transfer syntax the meta names (implicit VR little endian,
//! explicit VR little or big endian, deflated explicit VR little endian (the source inflates);
//! encapsulated pixel data as fragments), sequences and items
//! of defined and undefined length, into a flat list of [`Element`]s in input order.
//!
//! One lexer over a [`Source`]: the splitter runs it over the input stream to cut the record,
//! the reader over the record to build the document, with the same decisions on both sides.
//! Limits: depth (`max_depth`), elements (`max_segments`), a non-bulk value's length
//! (`max_field_bytes`). A truncated input, a lying length or a stray delimiter stops the lexer
//! with a fatal finding at the element's tag path and byte offset.
//!
//! What it does not do: check values (see `validate`), or inflate bytes itself (it asks its
//! [`Source`] to, see `source`).

use super::dict::{self, TransferSyntax, Vr};
use super::source::{BULK_MIN, Short, Source, Val};
use crate::diag::{Code, Diagnostic, DicomPosition, Location};
use crate::limits::Limits;

/// An undefined length.
pub const UNDEFINED: u32 = 0xFFFF_FFFF;
/// Item, item delimitation, sequence delimitation.
const ITEM: u32 = 0xFFFE_E000;
const ITEM_END: u32 = 0xFFFE_E00D;
const SEQ_END: u32 = 0xFFFE_E0DD;
/// Pixel Data, Float Pixel Data, Double Float Pixel Data.
pub const PIXEL_DATA: u32 = 0x7FE0_0010;

/// True for the tags whose value is bulk whatever its VR and length: Pixel Data, Float Pixel
/// Data, Double Float Pixel Data.
pub fn is_pixel_tag(tag: u32) -> bool {
    matches!(tag, PIXEL_DATA | 0x7FE0_0008 | 0x7FE0_0009)
}

/// True when a value is bulk: of a bulk VR and [`BULK_MIN`] bytes or more, or of a pixel data
/// tag. Bulk values may be left out of a record (see `source`); `write` writes each as a
/// descriptor and `validate` checks none, so whether one was left out changes no output.
pub fn is_bulk(tag: u32, vr: Vr, length: u32) -> bool {
    (vr.is_bulk() && length >= BULK_MIN) || is_pixel_tag(tag)
}

/// What an element is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An element with a value.
    Value,
    /// A sequence (SQ, or UN of undefined length read as one).
    Sequence,
    /// An item of a sequence.
    Item,
    /// Encapsulated pixel data (its fragments follow as [`Kind::Fragment`]s).
    Encapsulated,
    /// A fragment of encapsulated pixel data (the first is the basic offset table).
    Fragment,
}

/// How a dataset is encoded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Syntax {
    /// Explicit VR.
    pub explicit: bool,
    /// Big endian.
    pub big: bool,
}

impl Syntax {
    /// Explicit VR little endian (the file meta group's).
    pub const META: Syntax = Syntax { explicit: true, big: false };
    /// Implicit VR little endian.
    pub const IMPLICIT: Syntax = Syntax { explicit: false, big: false };

    fn u16(self, b: [u8; 2]) -> u16 {
        if self.big { u16::from_be_bytes(b) } else { u16::from_le_bytes(b) }
    }

    fn u32(self, b: [u8; 4]) -> u32 {
        if self.big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) }
    }
}

/// One element, item or fragment.
#[derive(Copy, Clone, Debug)]
pub struct Element {
    /// Its tag.
    pub tag: u32,
    /// Its VR (explicit, or from the dictionary); [`Vr::NONE`] for items and fragments.
    pub vr: Vr,
    /// What it is.
    pub kind: Kind,
    /// The encoding of its value.
    pub syntax: Syntax,
    /// Nesting depth (0: the top-level dataset).
    pub depth: u16,
    /// The enclosing item (or, for an item or fragment, its sequence); `u32::MAX`: none.
    pub parent: u32,
    /// An item's or fragment's 1-based number; a sequence's items, an encapsulated pixel data's
    /// fragments.
    pub number: u32,
    /// Input offset of its header.
    pub offset: u64,
    /// Its declared length ([`UNDEFINED`] for undefined).
    pub length: u32,
    /// Its value.
    pub value: Val,
    /// Index past its last descendant.
    pub end: u32,
}

/// What the lexer read.
#[derive(Debug, Default)]
pub struct Lexed {
    /// Elements in input order (pre-order).
    pub elements: Vec<Element>,
    /// Index of the first dataset element (after group 0002).
    pub dataset: usize,
    /// The transfer syntax the meta names, when known.
    pub syntax: Option<TransferSyntax>,
    /// The dataset's encoding.
    pub encoding: Option<Syntax>,
    /// The file meta group was present.
    pub meta: bool,
    /// The bytes of group 0002 after its group length element (when there is one).
    pub meta_length: Option<u64>,
    /// Findings of the reader that do not stop it.
    pub findings: Vec<Diagnostic>,
    /// Why it stopped early.
    pub fatal: Option<Diagnostic>,
}

impl Lexed {
    /// The tag path of element `i` (sequences with item numbers, then its tag).
    pub fn position(&self, i: usize, offset: u64) -> DicomPosition {
        let mut chain = Vec::new();
        let mut cur = self.elements.get(i).map_or(u32::MAX, |e| e.parent);
        while let Some(item) = self.elements.get(cur as usize) {
            if item.kind == Kind::Item {
                let seq = self.elements.get(item.parent as usize).map_or(0, |s| s.tag);
                chain.push((seq, item.number));
                cur = self.elements.get(item.parent as usize).map_or(u32::MAX, |s| s.parent);
            } else {
                cur = item.parent;
            }
            if chain.len() > 1 << 16 {
                break;
            }
        }
        let mut p = DicomPosition::new(offset);
        for &(tag, n) in chain.iter().rev() {
            p.push(tag, n);
        }
        if let Some(e) = self.elements.get(i) {
            match e.kind {
                // An item is its sequence's step with the item's number.
                Kind::Item => {
                    let seq = self.elements.get(e.parent as usize).map_or(0, |s| s.tag);
                    p.push(seq, e.number);
                }
                _ => p.push(e.tag, 0),
            }
        }
        p
    }
}

#[derive(Copy, Clone, Debug)]
enum FrameKind {
    Sequence,
    Item,
    Encapsulated,
}

#[derive(Copy, Clone, Debug)]
struct Frame {
    elem: u32,
    end: Option<u64>,
    kind: FrameKind,
    syntax: Syntax,
}

struct Lexer<'s, S: Source> {
    src: &'s mut S,
    limits: Limits,
    out: Lexed,
    stack: Vec<Frame>,
    in_meta: bool,
    meta_after_length: Option<u64>,
    dataset: Syntax,
    /// No meta: the first dataset element decides between explicit and implicit VR.
    guess: bool,
    /// The transfer syntax names explicit VR LE: a first element without a VR is implicit VR
    /// (reported `DICOM_ENCODING_MISMATCH`).
    guess_named: bool,
    /// The last Pixel Representation (0028,0103) read: 1 makes `US or SS` values SS.
    signed_pixels: bool,
    /// The element being read is a UN read as SQ (its items are implicit VR LE).
    un_sequence: bool,
}

/// Runs the lexer over `src`.
pub fn lex<S: Source>(src: &mut S, limits: &Limits) -> Lexed {
    let mut l = Lexer {
        src,
        limits: *limits,
        out: Lexed::default(),
        stack: Vec::new(),
        in_meta: true,
        meta_after_length: None,
        dataset: Syntax::META,
        guess: false,
        guess_named: false,
        signed_pixels: false,
        un_sequence: false,
    };
    if let Err(d) = l.run() {
        l.out.fatal = Some(d);
    }
    // Close what is still open (a fatal stop): every element's subtree ends at the list's end.
    let n = u32::try_from(l.out.elements.len()).unwrap_or(u32::MAX);
    for f in l.stack.drain(..) {
        if let Some(e) = l.out.elements.get_mut(f.elem as usize) {
            e.end = n;
        }
    }
    if l.in_meta {
        l.out.dataset = l.out.elements.len();
    }
    l.out
}

impl<S: Source> Lexer<'_, S> {
    fn parent(&self) -> u32 {
        self.stack.last().map_or(u32::MAX, |f| f.elem)
    }

    fn syntax(&self) -> Syntax {
        if self.in_meta {
            return Syntax::META;
        }
        self.stack.last().map_or(self.dataset, |f| f.syntax)
    }

    /// A fatal finding at the element being read (`tag`, when its header was read) and `at`.
    fn fatal(&self, code: Code, tag: Option<u32>, at: u64) -> Diagnostic {
        // The path of the innermost open item (or of the sequence a stray element is in).
        let mut p = match self.stack.last() {
            Some(f) => self.out.position(f.elem as usize, at),
            None => DicomPosition::new(at),
        };
        if let Some(t) = tag {
            p.push(t, 0);
        }
        p.offset = at;
        Diagnostic::new(code, Location::Dicom(p))
    }

    fn finding(&mut self, code: Code, tag: u32, at: u64) {
        let d = self.fatal(code, Some(tag), at);
        if self.out.findings.len() < 1000 {
            self.out.findings.push(d);
        }
    }

    fn push(&mut self, e: Element) -> Result<u32, Diagnostic> {
        let n = self.out.elements.len();
        if n >= self.limits.max_segments as usize {
            return Err(self.fatal(Code::CLI_INPUT_TOO_LARGE, Some(e.tag), e.offset));
        }
        self.out.elements.push(e);
        Ok(n as u32)
    }

    fn close(&mut self) {
        if let Some(f) = self.stack.pop() {
            let n = self.out.elements.len() as u32;
            if let Some(e) = self.out.elements.get_mut(f.elem as usize) {
                e.end = n;
            }
        }
    }

    /// The file meta ends at `at`; `back` bytes after it were read already (as a tag). True when
    /// the dataset is deflated: the source then reads it inflated, from `at` on.
    fn end_meta(&mut self, at: u64, back: usize) -> bool {
        self.in_meta = false;
        self.out.meta = !self.out.elements.is_empty();
        self.out.dataset = self.out.elements.len();
        if let Some(start) = self.meta_after_length {
            self.out.meta_length = Some(at.saturating_sub(start));
        }
        let ts = self
            .out
            .elements
            .iter()
            .find(|e| e.tag == 0x0002_0010)
            .and_then(|e| match e.value {
                Val::Span { start, len } => Some(self.src.kept(start, len)),
                _ => None,
            })
            .map(|uid| (dict::transfer_syntax(uid), !dict::trim_uid(uid).is_empty()));
        match ts {
            Some((Some(t), _)) => {
                self.out.syntax = Some(t);
                self.dataset = Syntax { explicit: t.explicit, big: !t.little };
                // Some writers name an explicit VR syntax and write implicit VR: the first
                // element tells (as when there is no meta), and a finding says so.
                if t.explicit && t.little {
                    self.guess = true;
                    self.guess_named = true;
                }
            }
            Some((None, true)) => {
                self.finding(Code::DICOM_TRANSFER_SYNTAX_UNKNOWN, 0x0002_0010, at);
                self.dataset = Syntax::META;
            }
            _ => {
                // No transfer syntax: decided from the first element.
                self.guess = true;
            }
        }
        self.out.encoding = Some(self.dataset);
        let deflated = self.out.syntax.is_some_and(|t| t.deflated);
        if deflated {
            self.src.inflate(back);
        }
        deflated
    }

    fn run(&mut self) -> Result<(), Diagnostic> {
        loop {
            while let Some(f) = self.stack.last() {
                match f.end {
                    Some(end) if self.src.offset() >= end => self.close(),
                    _ => break,
                }
            }
            if self.src.at_end() {
                if self.in_meta {
                    let at = self.src.offset();
                    if self.end_meta(at, 0) && !self.src.at_end() {
                        continue;
                    }
                }
                if let Some(code) = self.src.broken() {
                    return Err(self.fatal(code, None, self.src.offset()));
                }
                if !self.stack.is_empty() {
                    return Err(self.fatal(Code::DICOM_TRUNCATED, None, self.src.offset()));
                }
                return Ok(());
            }
            self.element()?;
        }
    }

    fn short(&self, tag: Option<u32>, at: u64) -> Diagnostic {
        let code = if self.src.over() {
            Code::CLI_INPUT_TOO_LARGE
        } else {
            self.src.broken().unwrap_or(Code::DICOM_TRUNCATED)
        };
        self.fatal(code, tag, at)
    }

    /// The end of the innermost frame with a defined length.
    fn bound(&self) -> Option<u64> {
        self.stack.iter().rev().find_map(|f| f.end)
    }

    fn element(&mut self) -> Result<(), Diagnostic> {
        let mut at = self.src.offset();
        let mut tb = [0u8; 4];
        self.src.header(&mut tb).map_err(|Short| self.short(None, at))?;
        if self.in_meta {
            let group = u16::from_le_bytes([tb[0], tb[1]]);
            if (group != 0x0002 || !self.stack.is_empty()) && self.end_meta(at, tb.len()) {
                // Deflated: the tag is read again, inflated (the loop sees an empty dataset).
                at = self.src.offset();
                if self.src.at_end() {
                    return Ok(());
                }
                self.src.header(&mut tb).map_err(|Short| self.short(None, at))?;
            }
        }
        let mut syntax = self.syntax();
        if self.guess && !self.guess_named && tb[..2] == [0x00, 0x08] {
            // No meta, a group 0008 tag in big endian: explicit VR big endian (when a VR follows).
            syntax = Syntax { explicit: true, big: true };
        }
        let mut tag = (u32::from(syntax.u16([tb[0], tb[1]])) << 16) | u32::from(syntax.u16([tb[2], tb[3]]));
        if tag >> 16 == 0xFFFE {
            return self.delimiter(tag, at, syntax);
        }
        if let Some(f) = self.stack.last() {
            if !matches!(f.kind, FrameKind::Item) {
                return Err(self.fatal(Code::DICOM_DELIMITER_UNEXPECTED, Some(tag), at));
            }
        }
        let depth = self.stack.len();
        if depth / 2 > self.limits.max_depth as usize {
            return Err(self.fatal(Code::CLI_INPUT_TOO_LARGE, Some(tag), at));
        }
        // VR and length.
        let mut explicit = syntax.explicit;
        let mut pre = [0u8; 2];
        let pre_read = self.guess || explicit;
        if pre_read {
            self.src.header(&mut pre).map_err(|Short| self.short(Some(tag), at))?;
        }
        if self.guess {
            explicit = Vr::from_bytes(pre).is_some();
            self.guess = false;
            if !explicit && syntax.big {
                // Not big endian after all: the tag is read again in little endian.
                syntax = Syntax::IMPLICIT;
                tag = (u32::from(syntax.u16([tb[0], tb[1]])) << 16) | u32::from(syntax.u16([tb[2], tb[3]]));
            }
            self.dataset = Syntax { explicit, big: syntax.big };
            // The first element is written (by fmt and redact) in the encoding found.
            syntax = self.dataset;
            self.out.encoding = Some(self.dataset);
            if self.guess_named && !explicit {
                self.finding(Code::DICOM_ENCODING_MISMATCH, tag, at);
            }
        }
        let (vr, length) = if explicit {
            let Some(vr) = Vr::from_bytes(pre) else {
                return Err(self.fatal(Code::DICOM_VR_INVALID, Some(tag), at));
            };
            if vr.long_header() {
                let mut b = [0u8; 6];
                self.src.header(&mut b).map_err(|Short| self.short(Some(tag), at))?;
                let length = syntax.u32([b[2], b[3], b[4], b[5]]);
                (self.known_un(vr, tag, length, syntax), length)
            } else {
                let mut b = [0u8; 2];
                self.src.header(&mut b).map_err(|Short| self.short(Some(tag), at))?;
                (vr, u32::from(syntax.u16(b)))
            }
        } else {
            let mut b = [0u8; 4];
            if pre_read {
                // The guess read two bytes of the length already.
                let mut rest = [0u8; 2];
                self.src.header(&mut rest).map_err(|Short| self.short(Some(tag), at))?;
                b = [pre[0], pre[1], rest[0], rest[1]];
            } else {
                self.src.header(&mut b).map_err(|Short| self.short(Some(tag), at))?;
            }
            let vr = dict::implicit_vr(tag);
            let vr = if vr == Vr(*b"US") && self.signed_pixels && dict::us_or_ss(tag) { Vr(*b"SS") } else { vr };
            (vr, syntax.u32(b))
        };
        let value_at = self.src.offset();
        let bound = self.bound();
        let base = Element {
            tag,
            vr,
            kind: Kind::Value,
            syntax,
            depth: depth as u16,
            parent: self.parent(),
            number: 0,
            offset: at,
            length,
            value: Val::None,
            end: 0,
        };
        if length == UNDEFINED {
            if tag == PIXEL_DATA {
                // Encapsulated pixel data is OB (PS3.5 A.4), also where the VR is implicit.
                let vr = if explicit { vr } else { Vr::OB };
                let i = self.push(Element { kind: Kind::Encapsulated, vr, ..base })?;
                self.stack.push(Frame { elem: i, end: None, kind: FrameKind::Encapsulated, syntax });
            } else if vr == Vr::SQ || vr == Vr::UN {
                // PS3.5 6.2.2: a UN of undefined length holds a sequence in implicit VR LE.
                let inner = if vr == Vr::UN { Syntax::IMPLICIT } else { syntax };
                let i = self.push(Element { kind: Kind::Sequence, ..base })?;
                self.stack.push(Frame { elem: i, end: None, kind: FrameKind::Sequence, syntax: inner });
            } else {
                return Err(self.fatal(Code::DICOM_LENGTH_INVALID, Some(tag), at));
            }
            return Ok(());
        }
        let end = value_at + u64::from(length);
        if bound.is_some_and(|b| end > b) {
            return Err(self.fatal(Code::DICOM_LENGTH_INVALID, Some(tag), at));
        }
        if vr == Vr::SQ {
            // A UN the dictionary calls SQ holds its items in implicit VR LE (PS3.5 6.2.2).
            let inner = if self.un_sequence { Syntax::IMPLICIT } else { syntax };
            self.un_sequence = false;
            let i = self.push(Element { kind: Kind::Sequence, ..base })?;
            self.stack.push(Frame { elem: i, end: Some(end), kind: FrameKind::Sequence, syntax: inner });
            return Ok(());
        }
        let bulk = is_bulk(tag, vr, length);
        if !bulk && length > self.limits.max_field_bytes {
            return Err(self.fatal(Code::CLI_INPUT_TOO_LARGE, Some(tag), at));
        }
        let value = self.src.value(at, length, bulk).map_err(|Short| self.short(Some(tag), at))?;
        if self.in_meta && tag == 0x0002_0000 {
            self.meta_after_length = Some(self.src.offset());
        }
        if let (0x0028_0103, Val::Span { start, len: 2 }) = (tag, value) {
            let b = self.src.kept(start, 2);
            self.signed_pixels = b.len() == 2 && syntax.u16([b[0], b[1]]) == 1;
        }
        self.push(Element { value, ..base })?;
        Ok(())
    }

    fn delimiter(&mut self, tag: u32, at: u64, syntax: Syntax) -> Result<(), Diagnostic> {
        let mut b = [0u8; 4];
        self.src.header(&mut b).map_err(|Short| self.short(Some(tag), at))?;
        let length = syntax.u32(b);
        let Some(&frame) = self.stack.last() else {
            return Err(self.fatal(Code::DICOM_DELIMITER_UNEXPECTED, Some(tag), at));
        };
        match (tag, frame.kind) {
            (ITEM, FrameKind::Sequence) => {
                let number = self.bump(frame.elem);
                let depth = self.stack.len() as u16;
                let end = if length == UNDEFINED { None } else { Some(self.src.offset() + u64::from(length)) };
                if let (Some(e), Some(b)) = (end, self.bound()) {
                    if e > b {
                        return Err(self.fatal(Code::DICOM_LENGTH_INVALID, Some(tag), at));
                    }
                }
                let i = self.push(Element {
                    tag,
                    vr: Vr::NONE,
                    kind: Kind::Item,
                    syntax: frame.syntax,
                    depth,
                    parent: frame.elem,
                    number,
                    offset: at,
                    length,
                    value: Val::None,
                    end: 0,
                })?;
                self.stack.push(Frame { elem: i, end, kind: FrameKind::Item, syntax: frame.syntax });
            }
            (ITEM, FrameKind::Encapsulated) => {
                if length == UNDEFINED || self.bound().is_some_and(|b| self.src.offset() + u64::from(length) > b) {
                    return Err(self.fatal(Code::DICOM_LENGTH_INVALID, Some(tag), at));
                }
                let number = self.bump(frame.elem);
                let value = self.src.value(at, length, true).map_err(|Short| self.short(Some(tag), at))?;
                self.push(Element {
                    tag,
                    vr: Vr::OB,
                    kind: Kind::Fragment,
                    syntax: frame.syntax,
                    depth: self.stack.len() as u16,
                    parent: frame.elem,
                    number,
                    offset: at,
                    length,
                    value,
                    end: 0,
                })?;
            }
            (ITEM_END, FrameKind::Item) if frame.end.is_none() => self.close(),
            (SEQ_END, FrameKind::Sequence | FrameKind::Encapsulated) if frame.end.is_none() => self.close(),
            _ => return Err(self.fatal(Code::DICOM_DELIMITER_UNEXPECTED, Some(tag), at)),
        }
        Ok(())
    }

    /// The VR of an explicit UN of defined length whose VR the standard gives (PS3.5 6.2.2: a
    /// receiver that knows the VR reads the value by it; little endian syntaxes only, where a
    /// UN's value has the dataset's byte order): a private creator is LO, a standard tag the
    /// dictionary's VR (`US or SS` by Pixel Representation, an SQ read as a sequence of
    /// implicit VR LE items), when its length fits that VR's header. Another VR as it is.
    fn known_un(&mut self, vr: Vr, tag: u32, length: u32, syntax: Syntax) -> Vr {
        if vr != Vr::UN || length == UNDEFINED || syntax.big {
            return vr;
        }
        if dict::is_private_creator(tag) {
            return if length <= 0xFFFF { Vr(*b"LO") } else { vr };
        }
        if dict::is_private(tag) || tag >> 16 == 0x0002 {
            return vr;
        }
        let known = dict::implicit_vr(tag);
        let known = if known == Vr(*b"US") && self.signed_pixels && dict::us_or_ss(tag) { Vr(*b"SS") } else { known };
        if known == Vr::UN || known == Vr::NONE || (!known.long_header() && length > 0xFFFF) {
            return vr;
        }
        self.un_sequence = known == Vr::SQ;
        known
    }

    /// Counts one more item or fragment of element `i`, and returns its number.
    fn bump(&mut self, i: u32) -> u32 {
        match self.out.elements.get_mut(i as usize) {
            Some(e) => {
                e.number = e.number.saturating_add(1);
                e.number
            }
            None => 0,
        }
    }
}
