//! Acknowledgments of received interchanges (`phiward ack --type 999|ta1`): the 999
//! implementation acknowledgment (005010X231A1) of each functional group's transaction sets,
//! and the TA1 interchange acknowledgment, built from the same findings as `validate`.
//!
//! A 999 answers each group in a group of its own (`GS*FA`) with one transaction set: `AK1`
//! (the group), for every set `AK2`, `IK3` per segment in error (its id, its position in the
//! set counted from ST, its loop, the error code), `IK4` per element in error (its position and
//! the error code), `IK5` (the set's verdict and codes), then `AK9` (the group's verdict and
//! counts). A TA1 answers each interchange: its control number, date and time, `A`, `E` or
//! `R`, and the note code of the first envelope error.
//!
//! What it copies: control numbers (ISA13, GS06, ST02), the envelope's addresses (ISA05-08,
//! GS02-03, swapped), ISA09-10 and GS04-05 (the acknowledgment is dated as the interchange it
//! answers, so that the same input gives the same bytes), GS01, GS08, ST01 and ST03. It never
//! copies an element of a transaction set: IK4-04 (the copy of the bad element) is never
//! written, nor IK4-02 (the data element reference number, which the generated tables do not
//! hold), nor CTX.
//!
//! What it does not do: acknowledge a group of acknowledgments (`GS01` `FA`: the 999 has no
//! code for one), or a set that cannot be read (it is counted received and not
//! accepted), or bytes outside any interchange (failed records: stderr and exit 65).

use zeroize::Zeroizing;

use super::X12;
use super::read::{Delimiters, Document, RecordKind};
use super::split::Envelope;
use super::validate::{self, Options};
use crate::diag::{Code, Diagnostic, Location, X12Position};
use crate::formats::codec::{AckType, Acknowledge, Kind};
use crate::phi::Disclosure;

/// The widths of ISA05..ISA08 (qualifier, id, qualifier, id), for copies padded to them.
const ADDRESS_WIDTHS: [usize; 4] = [2, 15, 2, 15];

/// The writer of a 999 or TA1.
pub struct Acker {
    ack: AckType,
    /// The separators the acknowledgment is written with (the interchange's).
    delimiters: Delimiters,
    /// The open interchange's copies: ISA05..ISA08, ISA09, ISA10, ISA13, ISA15.
    isa: Option<IsaCopy>,
    /// The first envelope error of the interchange (TA1 note code), and whether any finding
    /// was a warning only.
    note: Option<&'static str>,
    warned: bool,
    /// The open group.
    group: Option<Group>,
    /// The 999 groups of the open interchange, written (GS .. GE each).
    groups: Zeroizing<Vec<u8>>,
    group_count: u32,
}

crate::debug_placeholder!(Acker);

/// What an interchange's acknowledgment copies of its ISA.
struct IsaCopy {
    /// ISA05, ISA06, ISA07, ISA08.
    address: [Zeroizing<Vec<u8>>; 4],
    date: Zeroizing<Vec<u8>>,
    time: Zeroizing<Vec<u8>>,
    control: Zeroizing<Vec<u8>>,
    usage: Zeroizing<Vec<u8>>,
}

/// A functional group being acknowledged.
struct Group {
    /// GS01, GS02, GS03, GS04, GS05, GS06, GS08.
    gs: [Zeroizing<Vec<u8>>; 7],
    /// The AK2 loops written so far (AK2, IK3, IK4, IK5 segments).
    sets: Zeroizing<Vec<u8>>,
    /// Segments in `sets`.
    segments: u32,
    received: u32,
    accepted: u32,
    /// AK9-05.. codes (the group's own errors), at most five.
    codes: Vec<&'static str>,
    /// A set was accepted with errors noted (IK5 E).
    noted: bool,
}

impl Acker {
    /// A writer of `ack`.
    pub fn new(ack: AckType) -> Acker {
        Acker {
            ack,
            delimiters: Delimiters { element: b'*', component: b':', repetition: Some(b'^'), segment: b'~' },
            isa: None,
            note: None,
            warned: false,
            group: None,
            groups: Zeroizing::new(Vec::new()),
            group_count: 0,
        }
    }

    /// Writes one segment: its id, then each element after an element separator (trailing
    /// empty elements left out), then the terminator and a line feed.
    fn segment(&self, id: &[u8], elements: &[&[u8]], out: &mut Vec<u8>) {
        out.extend_from_slice(id);
        let last = elements.iter().rposition(|e| !e.is_empty()).map_or(0, |i| i + 1);
        for e in &elements[..last] {
            out.push(self.delimiters.element);
            out.extend_from_slice(e);
        }
        out.push(self.delimiters.segment);
        if self.delimiters.segment != b'\n' {
            out.push(b'\n');
        }
    }

    fn interchange_error(&mut self, note: &'static str) {
        self.note.get_or_insert(note);
    }

    /// The open interchange's acknowledgment, written (ISA, the 999 groups or the TA1, IEA).
    fn close_interchange(&mut self, out: &mut Vec<u8>) {
        self.close_group();
        let Some(isa) = self.isa.take() else { return };
        let d = self.delimiters;
        let repetition = [d.repetition.unwrap_or(b'^')];
        let component = [d.component];
        let pad = |v: &[u8], w: usize| -> Vec<u8> {
            let mut p = v.to_vec();
            p.resize(p.len().max(w), b' ');
            p
        };
        let addr: Vec<Vec<u8>> = isa.address.iter().zip(ADDRESS_WIDTHS).map(|(v, w)| pad(v, w)).collect();
        let empty = Vec::new();
        let a = |i: usize| addr.get(i).unwrap_or(&empty).as_slice();
        // ISA15 as it came when it is a usage indicator (a 999 of test data is test data),
        // production otherwise.
        let usage: &[u8] = if matches!(isa.usage.as_slice(), b"P" | b"T" | b"I") { &isa.usage } else { b"P" };
        let isa_elements: [&[u8]; 16] = [
            b"00",
            b"          ",
            b"00",
            b"          ",
            a(2),
            a(3),
            a(0),
            a(1),
            &isa.date,
            &isa.time,
            &repetition,
            b"00501",
            &isa.control,
            b"0",
            usage,
            &component,
        ];
        // The ISA keeps every element, empty or not (fixed widths).
        out.extend_from_slice(b"ISA");
        for e in isa_elements {
            out.push(d.element);
            out.extend_from_slice(e);
        }
        out.push(d.segment);
        if d.segment != b'\n' {
            out.push(b'\n');
        }
        match self.ack {
            AckType::Functional => {
                out.extend_from_slice(&self.groups);
                let n = self.group_count.to_string();
                self.segment(b"IEA", &[n.as_bytes(), &isa.control], out);
            }
            AckType::Interchange => {
                let (verdict, note): (&[u8], &str) = match self.note {
                    Some(n) => (b"R", n),
                    None if self.warned => (b"E", "000"),
                    None => (b"A", "000"),
                };
                self.segment(b"TA1", &[&isa.control, &isa.date, &isa.time, verdict, note.as_bytes()], out);
                self.segment(b"IEA", &[b"0", &isa.control], out);
            }
        }
        self.groups = Zeroizing::new(Vec::new());
        self.group_count = 0;
        self.note = None;
        self.warned = false;
    }

    /// The open group's 999, appended to the interchange's groups.
    fn close_group(&mut self) {
        let Some(g) = self.group.take() else { return };
        // Acknowledgments are not acknowledged (a 999 has no code for a group of them).
        if self.ack != AckType::Functional || g.gs[0].as_slice() == b"FA" {
            return;
        }
        self.group_count += 1;
        let mut out = Zeroizing::new(Vec::new());
        let gs = |i: usize| g.gs.get(i).map_or(&[][..], |v| v.as_slice());
        // GS*FA, the sender and receiver swapped, the group's date, time and control number.
        self.segment(b"GS", &[b"FA", gs(2), gs(1), gs(3), gs(4), gs(5), b"X", b"005010X231A1"], &mut out);
        let mut body = Zeroizing::new(Vec::new());
        self.segment(b"ST", &[b"999", b"0001", b"005010X231A1"], &mut body);
        self.segment(b"AK1", &[gs(0), gs(5), gs(6)], &mut body);
        body.extend_from_slice(&g.sets);
        let rejected = g.received - g.accepted;
        let verdict: &[u8] = if !g.codes.is_empty() || (g.received > 0 && g.accepted == 0) {
            b"R"
        } else if rejected > 0 {
            b"P"
        } else if g.noted {
            b"E"
        } else {
            b"A"
        };
        let (included, received, accepted) = (g.received.to_string(), g.received.to_string(), g.accepted.to_string());
        let mut ak9: Vec<&[u8]> = vec![verdict, included.as_bytes(), received.as_bytes(), accepted.as_bytes()];
        ak9.extend(g.codes.iter().map(|c| c.as_bytes()));
        self.segment(b"AK9", &ak9, &mut body);
        // ST, AK1, the AK2 loops, AK9 and SE.
        let count = (g.segments + 4).to_string();
        self.segment(b"SE", &[count.as_bytes(), b"0001"], &mut body);
        out.extend_from_slice(&body);
        self.segment(b"GE", &[b"1", gs(5)], &mut out);
        self.groups.extend_from_slice(&out);
    }

    /// A transaction set: its AK2 loop.
    #[expect(
        clippy::disallowed_methods,
        reason = "ack: copies ST01-03 of a set into its acknowledgment (data channel)"
    )]
    fn set(&mut self, doc: Option<&Document>, findings: &[Diagnostic], disclosure: &Disclosure) {
        if self.ack != AckType::Functional {
            self.warned |= !findings.is_empty();
            return;
        }
        let Some(mut g) = self.group.take() else { return };
        g.received += 1;
        let st = doc.and_then(|d| d.own_segs().first().filter(|s| s.id == Some("ST")).map(|s| (d, s)));
        let Some((doc, st)) = st else {
            self.group = Some(g);
            return;
        };
        let options = Options { syntax_only: false, strict: false };
        let (own, ordinals) = validate::validate_with_ordinals(doc, options);
        let mut lines = Zeroizing::new(Vec::new());
        let mut segments = 0u32;
        let st01 = doc.element(st, 1).expose_value(disclosure);
        let st02 = doc.element(st, 2).expose_value(disclosure);
        let st03 = doc.element(st, 3).expose_value(disclosure);
        self.segment(b"AK2", &[st01, st02, st03], &mut lines);
        segments += 1;
        let mut set_codes: Vec<&'static str> = Vec::new();
        let mut errors = false;
        let mut last_ik3: Option<(u32, &'static str)> = None;
        for (d, &ordinal) in own.iter().zip(ordinals.iter()) {
            let Location::X12(p) = d.location else { continue };
            let error = d.severity.is_failure();
            errors |= error;
            if let Some(code) = set_code(d.code, p) {
                if set_codes.len() < 5 && !set_codes.contains(&code) {
                    set_codes.push(code);
                }
                continue;
            }
            let Some((segment_code, element_code)) = segment_codes(d.code) else { continue };
            // IK5-02: `5` for errors, `I5` for what the guide alone marks (a not-used element).
            let set_error = if error { "5" } else { "I5" };
            if !set_codes.contains(&set_error) && set_codes.len() < 5 {
                set_codes.push(set_error);
            }
            let Some(id) = segment_id(doc, p, ordinal, disclosure) else { continue };
            // IK3-03 is AN 1-4: the loop's number without its letters (`2010BA` is `2010`), as
            // the guide's own examples write it.
            let loop_id = p.path.rsplit('/').next().unwrap_or_default();
            let loop_id = loop_id.get(..4).unwrap_or(loop_id);
            let position = ordinal.to_string();
            let segment_code = if element_code.is_some() { "8" } else { segment_code };
            // One IK3 per segment and code; its IK4s follow it.
            if last_ik3 != Some((ordinal, segment_code)) {
                self.segment(
                    b"IK3",
                    &[id, position.as_bytes(), loop_id.as_bytes(), segment_code.as_bytes()],
                    &mut lines,
                );
                segments += 1;
                last_ik3 = Some((ordinal, segment_code));
            }
            if let Some(element_code) = element_code {
                let mut at = p.element.to_string().into_bytes();
                if p.component > 0 {
                    at.push(self.delimiters.component);
                    at.extend_from_slice(p.component.to_string().as_bytes());
                }
                self.segment(b"IK4", &[&at, b"", element_code.as_bytes()], &mut lines);
                segments += 1;
            }
        }
        // The findings the pipeline added (none for a set today) count toward the verdict.
        errors |= findings.iter().any(|d| d.severity.is_failure());
        // A set of a type and version without a guide here is not supported: rejected.
        errors |= set_codes.contains(&"1");
        let warned = !own.is_empty() || !findings.is_empty();
        let verdict: &[u8] = if errors {
            b"R"
        } else if warned {
            b"E"
        } else {
            b"A"
        };
        if !errors {
            g.accepted += 1;
        }
        let mut ik5: Vec<&[u8]> = vec![verdict];
        ik5.extend(set_codes.iter().map(|c| c.as_bytes()));
        self.segment(b"IK5", &ik5, &mut lines);
        segments += 1;
        g.noted |= verdict == b"E";
        g.sets.extend_from_slice(&lines);
        g.segments += segments;
        self.group = Some(g);
    }

    /// An envelope record: ISA opens an interchange, GS a group, GE and IEA close them; the
    /// findings of each (its own and the stream's) become TA1 note codes and AK9 codes.
    #[expect(
        clippy::disallowed_methods,
        reason = "ack: copies envelope control numbers and addresses into the acknowledgment (data channel)"
    )]
    fn envelope(
        &mut self,
        kind: Envelope,
        doc: Option<&Document>,
        findings: &[Diagnostic],
        disclosure: &Disclosure,
        out: &mut Vec<u8>,
    ) {
        let own = doc.and_then(|d| d.own_segs().first().map(|s| (d, s)));
        let copy = |n: usize| -> Zeroizing<Vec<u8>> {
            Zeroizing::new(own.map(|(d, s)| d.element(s, n).expose_value(disclosure).to_vec()).unwrap_or_default())
        };
        match kind {
            Envelope::Isa => {
                self.close_interchange(out);
                if let Some(d) = doc {
                    self.delimiters = d.delimiters;
                    if self.delimiters.repetition.is_none() {
                        // A 4010 interchange: the 999 is 5010, whose ISA11 is a repetition
                        // separator: one the interchange does not use.
                        let used = [d.delimiters.element, d.delimiters.component, d.delimiters.segment];
                        self.delimiters.repetition = [b'^', b'{', b'|', b'!'].into_iter().find(|c| !used.contains(c));
                    }
                }
                self.isa = Some(IsaCopy {
                    address: [copy(5), copy(6), copy(7), copy(8)],
                    date: copy(9),
                    time: copy(10),
                    control: copy(13),
                    usage: copy(15),
                });
                for f in findings {
                    self.interchange_finding(f);
                }
            }
            Envelope::Gs => {
                // A GS closes the group before it (its missing GE is among the findings).
                for f in findings {
                    self.group_finding(f);
                }
                self.close_group();
                self.group = Some(Group {
                    gs: [copy(1), copy(2), copy(3), copy(4), copy(5), copy(6), copy(8)],
                    sets: Zeroizing::new(Vec::new()),
                    segments: 0,
                    received: 0,
                    accepted: 0,
                    codes: Vec::new(),
                    noted: false,
                });
                for f in findings {
                    if let Location::X12(p) = f.location
                        && p.segment == Some("GS")
                    {
                        self.group_code(if p.element == 6 {
                            "6"
                        } else if p.element == 8 {
                            "2"
                        } else {
                            "1"
                        });
                    }
                }
            }
            Envelope::Ge => {
                for f in findings {
                    self.group_finding(f);
                }
                self.close_group();
            }
            Envelope::Iea => {
                for f in findings {
                    self.group_finding(f);
                    self.interchange_finding(f);
                }
                self.close_interchange(out);
            }
            Envelope::Ta1 => {}
        }
    }

    fn group_code(&mut self, code: &'static str) {
        if let Some(g) = self.group.as_mut()
            && g.codes.len() < 5
            && !g.codes.contains(&code)
        {
            g.codes.push(code);
        }
    }

    /// A finding on a GE (or the GE missing): an AK9 code of the open group.
    fn group_finding(&mut self, f: &Diagnostic) {
        let Location::X12(p) = f.location else { return };
        if p.segment != Some("GE") {
            return;
        }
        let code = match f.code {
            Code::X12_TRAILER_MISSING => "3",
            Code::X12_CONTROL_NUMBER_MISMATCH => "4",
            Code::X12_COUNT_MISMATCH => "5",
            Code::X12_ENVELOPE_VALUE_INVALID if p.element == 2 => "4",
            _ => "5",
        };
        self.group_code(code);
    }

    /// A finding on the ISA or IEA: the TA1 note code.
    fn interchange_finding(&mut self, f: &Diagnostic) {
        if !f.severity.is_failure() {
            self.warned = true;
            return;
        }
        let Location::X12(p) = f.location else {
            self.interchange_error("022");
            return;
        };
        let note = match (p.segment, f.code, p.element) {
            (Some("IEA"), Code::X12_CONTROL_NUMBER_MISMATCH, _) | (Some("IEA"), _, 2) => "001",
            (Some("IEA"), Code::X12_TRAILER_MISSING, _) => "023",
            (Some("IEA"), Code::X12_HEADER_MISSING, _) => "022",
            (Some("IEA"), _, _) => "021",
            (Some("ISA"), Code::X12_ISA_WIDTH, _) => "022",
            (Some("ISA"), _, n) => isa_note(n),
            // A GS or GE finding is the 999's.
            (Some("GE") | Some("GS"), _, _) => return,
            _ => "024",
        };
        self.interchange_error(note);
    }
}

/// The TA1 note code of an invalid ISA element.
fn isa_note(element: u8) -> &'static str {
    match element {
        1 => "010",
        2 => "011",
        3 => "012",
        4 => "013",
        5 => "005",
        6 => "006",
        7 => "007",
        8 => "008",
        9 => "014",
        10 => "015",
        11 => "016",
        12 => "017",
        13 => "018",
        14 => "019",
        15 => "020",
        16 => "027",
        _ => "022",
    }
}

/// The IK5 code of a finding on the set's envelope (ST, SE), or `None` for a finding inside.
fn set_code(code: Code, p: X12Position) -> Option<&'static str> {
    match (p.segment, code, p.element) {
        (_, Code::X12_TRANSACTION_SET_UNKNOWN, _) => Some("1"),
        (Some("SE"), Code::X12_TRAILER_MISSING, _) => Some("2"),
        (Some("SE"), Code::X12_CONTROL_NUMBER_MISMATCH, _) => Some("3"),
        (Some("SE"), Code::X12_COUNT_MISMATCH | Code::X12_ENVELOPE_VALUE_INVALID, 1) => Some("4"),
        (Some("ST"), Code::X12_ENVELOPE_VALUE_INVALID, 1) => Some("6"),
        (Some("ST"), Code::X12_ENVELOPE_VALUE_INVALID, 2) => Some("7"),
        (Some("ST"), Code::X12_HEADER_MISSING, _) => Some("6"),
        (Some("ST"), Code::X12_VERSION_MISMATCH, _) => Some("I6"),
        (Some("ST" | "SE"), _, _) if p.path.is_empty() && p.index == 0 => Some("5"),
        _ => None,
    }
}

/// The IK3-04 code of a segment finding, and the IK4-03 code when it is about an element.
fn segment_codes(code: Code) -> Option<(&'static str, Option<&'static str>)> {
    Some(match code {
        Code::X12_SEGMENT_ID_INVALID => ("1", None),
        Code::X12_SEGMENT_UNEXPECTED => ("2", None),
        Code::X12_SEGMENT_MISSING | Code::X12_LOOP_MISSING => ("3", None),
        Code::X12_LOOP_REPEATED => ("4", None),
        Code::X12_SEGMENT_REPEATED => ("5", None),
        Code::X12_SEGMENT_OUT_OF_ORDER => ("7", None),
        Code::X12_ELEMENT_MISSING => ("8", Some("1")),
        Code::X12_SYNTAX_RULE => ("8", Some("2")),
        Code::X12_ELEMENT_TOO_MANY => ("8", Some("3")),
        Code::X12_ELEMENT_TOO_SHORT => ("8", Some("4")),
        Code::X12_ELEMENT_TOO_LONG => ("8", Some("5")),
        Code::X12_ELEMENT_TYPE_INVALID => ("8", Some("6")),
        Code::X12_CODE_INVALID => ("8", Some("7")),
        Code::X12_DATE_INVALID => ("8", Some("8")),
        Code::X12_TIME_INVALID => ("8", Some("9")),
        Code::X12_REPETITION_INVALID => ("8", Some("12")),
        Code::X12_ELEMENT_NOT_USED => ("8", Some("I10")),
        _ => return None,
    })
}

/// IK3-01: the segment id as the tables name it, or the id as it came when it is a
/// well-formed one (two or three upper-case letters or digits: no room for a value); `None`
/// for a malformed id (no IK3: the IK5 still says the set has segments in error).
#[expect(clippy::disallowed_methods, reason = "ack: a well-formed segment id is copied into IK3-01 (data channel)")]
fn segment_id<'a>(doc: &'a Document, p: X12Position, ordinal: u32, disclosure: &Disclosure) -> Option<&'a [u8]> {
    if let Some(id) = p.segment {
        return Some(id.as_bytes());
    }
    let s = doc.own_segs().get(usize::try_from(ordinal).ok()?.checked_sub(1)?)?;
    let id = doc.seg_bytes(s).expose_value(disclosure);
    let id = &id[..(s.id_end - s.start) as usize];
    let ok = (2..=3).contains(&id.len())
        && id[0].is_ascii_uppercase()
        && id.iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    ok.then_some(id)
}

impl Acknowledge<X12> for Acker {
    fn record(
        &mut self,
        kind: Kind<Envelope>,
        doc: Option<&Document>,
        findings: &[Diagnostic],
        disclosure: &Disclosure,
        out: &mut Vec<u8>,
    ) {
        match kind {
            Kind::Message => self.set(doc, findings, disclosure),
            Kind::Envelope(e) => {
                let doc = doc.filter(|d| d.kind != RecordKind::Set);
                self.envelope(e, doc, findings, disclosure, out);
            }
        }
    }

    fn finish(&mut self, end: &[Diagnostic], _disclosure: &Disclosure, out: &mut Vec<u8>) {
        for f in end {
            self.group_finding(f);
            self.interchange_finding(f);
        }
        self.close_interchange(out);
    }
}

/// The acknowledgment writer of `ack`.
pub fn acknowledger(ack: AckType) -> Box<dyn Acknowledge<X12>> {
    Box::new(Acker::new(ack))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_isa_element_has_a_note_code() {
        for n in 1..=16 {
            assert_ne!(isa_note(n), "022", "ISA{n:02}");
        }
    }

    #[test]
    fn element_findings_are_ik4_codes_of_an_ik3_8() {
        for code in [Code::X12_ELEMENT_MISSING, Code::X12_CODE_INVALID, Code::X12_DATE_INVALID] {
            assert_eq!(segment_codes(code).map(|c| c.0), Some("8"));
            assert!(segment_codes(code).is_some_and(|c| c.1.is_some()));
        }
        assert_eq!(segment_codes(Code::X12_SEGMENT_MISSING), Some(("3", None)));
    }
}
