//! `--input-format json-lines`: a stream of records in, one result object per record out, in
//! input order (docs/scale-out.md). The stage a pipe-based engine runs (Spark's `RDD.pipe`,
//! Hadoop Streaming, a Beam external transform).
//!
//! Each input line is `{"id": ..., "format"?: ..., "content" | "content_base64": ...}`; each
//! output line is the result object of the MCP tool of the same name ([`crate::call`], the one
//! builder of `{ok, status, exit, code?, data?}`) with the record's `id` echoed as given. A line
//! that cannot be read (not JSON, not an object, an unknown or missing field, a bad `id`, both
//! contents, bad base64, over the size limit) is answered with its code, `id` null when none
//! could be read, and its 1-based `line` number; the stream goes on. The process exits 0 once
//! every line has its answer, whatever the records' results: a record's outcome is in its line.
//!
//! Memory is bounded by the largest line: lines are read one at a time, and a line longer than
//! the limit is skipped as it streams by (answered `CLI_INPUT_TOO_LARGE`) without being held.
//!
//! What it does not do: run records in parallel (a pipe stage runs one process per core;
//! docs/scale-out.md), write anything on stderr but the value-free summary of failed lines, or
//! echo any field of a line but its `id`.

use std::io::{self, BufRead, Read};
use std::path::Path;

use serde_json::{Map, Value};
use zeroize::Zeroize;

use crate::call::{self, Config, Reply, Tool, Watch};
use crate::diag::Code;
use crate::error::exit;
use crate::ops::{Records, Status};

use super::output;

/// Bytes of a line beyond twice the record limit: room for the JSON around the content and its
/// escapes (a base64 content is 4/3 of its bytes).
const LINE_SLACK: u64 = 64 * 1024;

/// The fields a line may hold.
const FIELDS: [&str; 4] = ["id", "format", "content", "content_base64"];

/// Counts of the lines answered, for the stderr summary and the audit log (value-free).
#[derive(Debug, Default)]
pub(super) struct Counts {
    /// Lines answered.
    pub lines: u64,
    /// Results by status.
    pub success: u64,
    /// Results with data and a negative verdict.
    pub verdict: u64,
    /// Results without data (a bad line, or a record that could not be processed).
    pub failed: u64,
    /// The distinct codes of the failures.
    pub codes: Vec<Code>,
}

/// Runs `tool` over every line of `input` (a path or `-`) with the options in `config` and the
/// tool arguments in `base` (a line's own `format` overrides `base`'s). Returns the exit code:
/// 0 once every line is answered, `CLI_NO_INPUT` (66) when the input cannot be opened,
/// `CLI_OUTPUT_FAILED` (74) when the output cannot be written.
pub(super) fn run(tool: Tool, input: &Path, config: &Config, base: &Map<String, Value>, counts: &mut Counts) -> u8 {
    let reader: Box<dyn Read> = if input.as_os_str() == "-" {
        Box::new(io::stdin().lock())
    } else {
        match std::fs::File::open(input) {
            Ok(f) => Box::new(f),
            Err(e) => {
                let code = crate::error::from_read_io(&e).code();
                output::failure(code, None);
                return crate::error::exit_code_for(code);
            }
        }
    };
    let mut reader = io::BufReader::with_capacity(64 * 1024, reader);
    let mut out = output::stdout_writer();
    let cap = config.limits.max_input_bytes.saturating_mul(2).saturating_add(LINE_SLACK);
    let mut line = Vec::new();
    let mut json = Vec::new();
    let mut records = Records::default();
    loop {
        // Answer what was read before waiting for more: a caller that writes one line and waits
        // for its answer (a co-process) gets it; a full pipe is still written in blocks.
        if reader.buffer().is_empty() && io::Write::flush(&mut out).is_err() {
            return output_failed();
        }
        let read = match read_line(&mut reader, &mut line, cap) {
            Ok(r) => r,
            Err(e) => {
                line.zeroize();
                let code = crate::error::from_read_io(&e).code();
                output::failure(code, None);
                return crate::error::exit_code_for(code);
            }
        };
        let answer = match read {
            Line::End => break,
            Line::TooLong => bad_line(None, counts.lines + 1, Reply::failed(Code::CLI_INPUT_TOO_LARGE)),
            Line::Read => answer(tool, &mut line, counts.lines + 1, config, base),
        };
        scrub(&mut line);
        counts.note(&answer.reply, &mut records);
        json.clear();
        let Answer { reply, id, line: number } = answer;
        let written = reply.write_record(id.as_ref(), number, &mut json).is_ok();
        drop_value(id.unwrap_or(Value::Null));
        json.push(b'\n');
        let ok = written && io::Write::write_all(&mut out, &json).is_ok();
        scrub(&mut json);
        if !ok {
            return output_failed();
        }
    }
    if io::Write::flush(&mut out).is_err() {
        return output_failed();
    }
    if records.failed > 0 {
        output::records_failed(&records);
    }
    exit::OK
}

fn output_failed() -> u8 {
    output::failure(Code::CLI_OUTPUT_FAILED, None);
    exit::IOERR
}

impl Counts {
    fn note(&mut self, reply: &Reply, records: &mut Records) {
        self.lines += 1;
        records.seen += 1;
        match reply.status {
            Status::Success => self.success += 1,
            Status::Verdict => self.verdict += 1,
            Status::Failed => {
                self.failed += 1;
                let code = reply.code.unwrap_or(Code::CLI_INTERNAL);
                records.fail(code);
                if let Err(i) = self.codes.binary_search_by(|c| c.as_str().cmp(code.as_str())) {
                    self.codes.insert(i, code);
                }
            }
        }
    }
}

/// What [`read_line`] read.
enum Line {
    /// A line (without its line end) is in the buffer.
    Read,
    /// A line longer than the limit went by; nothing of it was kept.
    TooLong,
    /// The end of the input.
    End,
}

/// Reads one line into `buf` (which the caller empties), at most `cap` bytes; a longer line is
/// read to its end and dropped. A last line without a line end is a line.
fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, cap: u64) -> io::Result<Line> {
    let mut seen = 0u64;
    let mut too_long = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            if seen == 0 {
                return Ok(Line::End);
            }
            break;
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        seen += take as u64;
        if seen > cap && !too_long {
            too_long = true;
            buf.zeroize();
        }
        if !too_long {
            buf.extend_from_slice(&chunk[..take]);
        }
        let consumed = if done { take + 1 } else { take };
        reader.consume(consumed);
        // A line end alone still counts as a line (an empty one).
        seen = seen.max(1);
        if done {
            break;
        }
    }
    if too_long {
        return Ok(Line::TooLong);
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(Line::Read)
}

/// The answer to a line: the reply, the record's `id` as given (null when none could be read),
/// and the line number when the line itself is at fault.
struct Answer {
    reply: Reply,
    id: Option<Value>,
    line: Option<u64>,
}

/// The answer to one line: the tool's reply for its record, or the line's own failure.
fn answer(tool: Tool, line: &mut [u8], number: u64, config: &Config, base: &Map<String, Value>) -> Answer {
    let parsed = serde_json::from_slice::<Value>(line);
    let Ok(Value::Object(mut fields)) = parsed else {
        // Not JSON, or JSON that is not an object: serde's error quotes text, so only the
        // line number says where.
        if let Ok(v) = parsed {
            drop_value(v);
        }
        return bad_line(None, number, Reply::failed(Code::CLI_USAGE));
    };
    let id = match fields.remove("id") {
        Some(v @ (Value::String(_) | Value::Number(_))) => Some(v),
        other => {
            drop_value(other.unwrap_or(Value::Null));
            drop_value(Value::Object(fields));
            return bad_line(None, number, Reply::usage("id"));
        }
    };
    if fields.keys().any(|k| !FIELDS.contains(&k.as_str())) {
        // An unknown field is refused, never named: a key can hold anything.
        drop_value(Value::Object(fields));
        return bad_line(id, number, Reply::failed(Code::CLI_USAGE));
    }
    let mut arguments = base.clone();
    for (k, v) in fields {
        if k == "format" && v.is_null() {
            continue;
        }
        arguments.insert(k, v);
    }
    let run = std::panic::AssertUnwindSafe(|| call::run(tool, Some(arguments), config, &Watch::default()));
    let reply = std::panic::catch_unwind(run).unwrap_or_else(|_| Reply::failed(Code::CLI_INTERNAL));
    // A failure of the line's own fields (content, format...) says where; a record that was
    // read and could not be processed is the record's failure, as over MCP.
    let line = reply.detail.argument.is_some().then_some(number);
    Answer { reply, id, line }
}

/// The answer to a line that could not be read as a record: the reply, its `id` (null when
/// none could be read) and the line number.
fn bad_line(id: Option<Value>, number: u64, reply: Reply) -> Answer {
    Answer { reply, id, line: Some(number) }
}

/// Zeroizes the bytes a buffer held and empties it, keeping its allocation for the next line
/// (only the bytes used: a buffer grown once by a large line is not wiped whole on every line).
fn scrub(buf: &mut Vec<u8>) {
    let used = buf.len();
    buf.clear();
    if let Some(spare) = buf.spare_capacity_mut().get_mut(..used) {
        spare.zeroize();
    }
}

/// Zeroizes the strings of a value, then drops it.
fn drop_value(v: Value) {
    match v {
        Value::String(mut s) => s.zeroize(),
        Value::Array(items) => items.into_iter().for_each(drop_value),
        Value::Object(map) => map.into_iter().for_each(|(mut k, v)| {
            k.zeroize();
            drop_value(v);
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], cap: u64) -> Vec<Option<Vec<u8>>> {
        let mut reader = io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            let mut buf = Vec::new();
            match read_line(&mut reader, &mut buf, cap).expect("in-memory reads do not fail") {
                Line::End => return out,
                Line::TooLong => out.push(None),
                Line::Read => out.push(Some(buf)),
            }
        }
    }

    #[test]
    fn lines_are_read_one_at_a_time_and_long_ones_skipped() {
        let got = lines(b"ab\r\n\nabcdefghij\nxyz", 5);
        assert_eq!(got, vec![Some(b"ab".to_vec()), Some(Vec::new()), None, Some(b"xyz".to_vec())]);
        assert!(lines(b"", 5).is_empty());
        assert_eq!(lines(b"a\n", 5), vec![Some(b"a".to_vec())]);
    }
}
