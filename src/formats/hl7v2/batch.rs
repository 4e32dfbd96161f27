//! Batch protocol checks (HL7 v2 chapter 2, "Batch protocol"): FHS/BHS headers, BTS/FTS
//! trailers and their counts (BTS-1: messages in the batch; FTS-1: batches in the file).
//!
//! A [`Tracker`] is fed the records of a stream in order and returns the findings that belong to
//! each, plus those of the end of the stream (an unclosed batch or file).
//!
//! What it does not do: check the other header fields (they are ordinary fields for `validate`).

use crate::diag::{Code, Diagnostic, Hl7Position, Location};

use super::parse::Message;
use super::stream::Envelope;

/// State of the batch protocol over a stream.
#[derive(Debug, Default)]
pub struct Tracker {
    file_open: bool,
    batch_open: bool,
    batches_in_file: u64,
    messages_in_batch: u64,
    fts_seen: bool,
}

fn at(segment: &'static str, field: u32) -> Location {
    Location::Hl7(Hl7Position::segment(Some(segment), 1).field(field, 0))
}

impl Tracker {
    /// True once a batch or file header has been seen.
    pub fn in_batch(&self) -> bool {
        self.file_open || self.batch_open || self.fts_seen
    }

    /// Notes a message.
    pub fn message(&mut self) {
        if self.batch_open {
            self.messages_in_batch += 1;
        }
    }

    /// Notes an envelope segment and returns its findings. `segment` is the parsed envelope
    /// record (`None` when it could not be parsed).
    pub fn envelope(&mut self, kind: Envelope, segment: Option<&Message>) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        // A count field and where it is. The position is the field's own: the splitter knows a
        // trailer by its first three bytes, so under the inherited field separator its id may
        // not read `BTS`/`FTS` (found by fuzzing: batch_count_position_names_a_missing_segment).
        let count = |n: u32| -> Option<(CountTag, Location)> {
            let field = segment?.msh().field(n)?;
            let tag = field.at(1, 1, 1).map_or(CountTag::Empty, |b| b.classify(parse_count_tag));
            Some((tag, Location::Hl7(field.position())))
        };
        match kind {
            Envelope::Fhs => {
                if self.file_open || self.batch_open {
                    out.push(Diagnostic::new(Code::BATCH_SEGMENT_MISPLACED, at("FHS", 0)));
                }
                self.file_open = true;
                self.batches_in_file = 0;
            }
            Envelope::Bhs => {
                if self.batch_open {
                    out.push(Diagnostic::new(Code::BATCH_TRAILER_MISSING, at("BHS", 0)));
                }
                self.batch_open = true;
                self.messages_in_batch = 0;
                if self.file_open {
                    self.batches_in_file += 1;
                }
            }
            Envelope::Bts => {
                if !self.batch_open {
                    out.push(Diagnostic::new(Code::BATCH_HEADER_MISSING, at("BTS", 0)));
                } else {
                    match count(1) {
                        Some((CountTag::Invalid, at)) => out.push(Diagnostic::new(Code::BATCH_COUNT_INVALID, at)),
                        Some((CountTag::Number(n), at)) if n != self.messages_in_batch => {
                            out.push(Diagnostic::new(Code::BATCH_COUNT_MISMATCH, at));
                        }
                        _ => {}
                    }
                }
                self.batch_open = false;
            }
            Envelope::Fts => {
                if self.batch_open {
                    out.push(Diagnostic::new(Code::BATCH_TRAILER_MISSING, at("BHS", 0)));
                    self.batch_open = false;
                }
                if !self.file_open {
                    out.push(Diagnostic::new(Code::BATCH_HEADER_MISSING, at("FTS", 0)));
                } else {
                    match count(1) {
                        Some((CountTag::Invalid, at)) => out.push(Diagnostic::new(Code::BATCH_COUNT_INVALID, at)),
                        Some((CountTag::Number(n), at)) if n != self.batches_in_file => {
                            out.push(Diagnostic::new(Code::BATCH_COUNT_MISMATCH, at));
                        }
                        _ => {}
                    }
                }
                self.file_open = false;
                self.fts_seen = true;
            }
        }
        out
    }

    /// Findings at the end of the stream.
    pub fn finish(&mut self) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        if self.batch_open {
            out.push(Diagnostic::new(Code::BATCH_TRAILER_MISSING, at("BHS", 0)));
        }
        if self.file_open {
            out.push(Diagnostic::new(Code::BATCH_TRAILER_MISSING, at("FHS", 0)));
        }
        self.batch_open = false;
        self.file_open = false;
        out
    }
}

/// A classified count field: no value leaves, only the number a count field declares.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum CountTag {
    Empty,
    Invalid,
    Number(u64),
}
impl crate::phi::sealed::Sealed for CountTag {}
impl crate::phi::ValueFree for CountTag {}

fn parse_count_tag(v: &[u8]) -> CountTag {
    let v = v.trim_ascii();
    if v.is_empty() {
        return CountTag::Empty;
    }
    if v.len() > 18 || !v.iter().all(u8::is_ascii_digit) {
        return CountTag::Invalid;
    }
    std::str::from_utf8(v).ok().and_then(|s| s.parse().ok()).map_or(CountTag::Invalid, CountTag::Number)
}
