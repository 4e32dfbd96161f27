//! The newline-delimited JSON-RPC transport over stdin/stdout.
//!
//! **This module writes to standard output**: in MCP mode stdout is the protocol channel, and
//! the writer thread below is the only code that touches it. Standard error is left to logging.
//!
//! It replaces rmcp's own stdio transport for four reasons, all about not losing or leaking a
//! request, and about cost bounded by the input:
//!
//! - A line longer than the limit ([`line_limit`]: `--max-input-bytes` plus room for the
//!   JSON-RPC envelope and the escapes of the content) is not buffered. Once the limit is
//!   passed, only its head (64 KiB) is kept, to recover the JSON-RPC `id`, and the rest is read
//!   and dropped up to the newline; a `tools/call` is then answered by the server as a `failed`
//!   reply with `CLI_INPUT_TOO_LARGE`, anything else with a JSON-RPC "Invalid request" error,
//!   and the server keeps serving. (rmcp drops such a line silently and the client waits
//!   forever.)
//! - A request whose shape rmcp cannot read (for example `arguments` that is not an object) gets
//!   an answer with its own `id`: a `tools/call` becomes a `failed` reply with `CLI_USAGE`,
//!   anything else a JSON-RPC "Invalid request" error with a fixed message.
//! - Every JSON-RPC error leaves with the fixed text of its code and no `data` ([`fixed_error`]):
//!   rmcp's errors can quote what the client sent (an unknown method's name, a URI, a version).
//!   Nothing of a line is ever logged: parse errors are reduced to their category.
//! - The bytes of the requests being handled are counted ([`InFlight`]): the reader does not
//!   hand on a request while those of earlier ones, still running, would take the total over
//!   the line limit. Lines of at most [`SMALL_LINE`] bytes (a `ping`, a cancellation, a call
//!   on a small message) are counted apart, against [`SMALL_BUDGET`], so that a call near the
//!   line limit holds up neither a small call nor its own cancellation. Tool calls run off the
//!   service loop (see [`super::server`]), so a `ping` is answered during a long call, and
//!   memory stays a small multiple of the line limit.
//!
//! Line buffers are zeroized after use. What it does not do: interpret requests (rmcp's service
//! loop and [`super::server`] do).

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, GetExtensions,
    JsonRpcMessage, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
use tokio::sync::mpsc;
use zeroize::Zeroize;

use crate::diag::Code;

/// How much of an oversized line is kept to find its `id` and `method`.
const HEAD: usize = 64 * 1024;
/// Buffers larger than this are released after use rather than kept for the next line.
const KEEP: usize = 1024 * 1024;
/// Room on a line for the JSON-RPC envelope around the content (method, tool name, options).
const ENVELOPE: u64 = 1024 * 1024;
/// A line this long or shorter is counted against [`SMALL_BUDGET`] rather than the line limit.
pub const SMALL_LINE: usize = 64 * 1024;
/// The bytes of small lines handed on and not yet answered, at most (beside the line limit).
pub const SMALL_BUDGET: usize = 4 * 1024 * 1024;

/// The longest request line read whole, for content of at most `max_input_bytes`: the content,
/// an eighth more for its JSON escapes (`\r` between HL7 segments, `\"`, `\\`), and
/// [`ENVELOPE`]. A line whose content needs more escaping than that is refused as too large, like
/// content over the limit.
pub fn line_limit(max_input_bytes: u64) -> usize {
    let limit = max_input_bytes.saturating_add(max_input_bytes / 8).saturating_add(ENVELOPE);
    usize::try_from(limit).unwrap_or(usize::MAX)
}

/// The bytes of the request lines handed on and not yet answered, against a cap (lines of at
/// most [`SMALL_LINE`] bytes against [`SMALL_BUDGET`]).
#[derive(Debug)]
struct Budget {
    cap: usize,
    used: Mutex<Used>,
    /// Wakes the reader thread.
    freed: Condvar,
    /// Wakes the service side waiting at end of input ([`Budget::idle`]).
    drained: tokio::sync::Notify,
}

/// The bytes counted, by kind of line.
#[derive(Debug, Default)]
struct Used {
    large: usize,
    small: usize,
}

impl Used {
    /// The count a line of `bytes` is held against, and its cap.
    fn slot(&mut self, bytes: usize, cap: usize) -> (&mut usize, usize) {
        if bytes <= SMALL_LINE { (&mut self.small, SMALL_BUDGET) } else { (&mut self.large, cap) }
    }
}

impl Budget {
    fn new(cap: usize) -> Arc<Budget> {
        let used = Mutex::new(Used::default());
        Arc::new(Budget { cap, used, freed: Condvar::new(), drained: tokio::sync::Notify::new() })
    }

    fn used(&self) -> usize {
        let used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        used.large.saturating_add(used.small)
    }

    /// Returns once every request handed on has been answered (its bytes released).
    async fn idle(&self) {
        loop {
            let mut drained = std::pin::pin!(self.drained.notified());
            // Registered before the check: a release between the two is not missed.
            drained.as_mut().enable();
            if self.used() == 0 {
                return;
            }
            drained.await;
        }
    }

    /// Counts `bytes`, first waiting while other requests of its kind (small or not) hold so
    /// much that their total would pass its cap (a line alone always fits).
    fn acquire(self: &Arc<Self>, bytes: usize) -> InFlight {
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let (held, cap) = used.slot(bytes, self.cap);
            if *held == 0 || held.saturating_add(bytes) <= cap {
                *held = held.saturating_add(bytes);
                break;
            }
            used = self.freed.wait(used).unwrap_or_else(PoisonError::into_inner);
        }
        InFlight { _permit: Arc::new(Permit { budget: Arc::clone(self), bytes }) }
    }
}

/// The bytes of one request line, counted until the last clone is dropped: it travels in the
/// request's extensions to the handler, which keeps it until the request's work is done.
#[derive(Clone, Debug)]
pub struct InFlight {
    _permit: Arc<Permit>,
}

#[derive(Debug)]
struct Permit {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut used = self.budget.used.lock().unwrap_or_else(PoisonError::into_inner);
        let (held, _) = used.slot(self.bytes, self.budget.cap);
        *held = held.saturating_sub(self.bytes);
        self.budget.freed.notify_all();
        self.budget.drained.notify_waiters();
    }
}

/// Put on a `tools/call` that the transport synthesized for a request it could not deliver as
/// sent: the server answers it with this code and nothing else.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Rejected(pub Code);

/// What the reader thread hands to the service side.
enum Incoming {
    /// A message for rmcp's service loop.
    Message(ClientJsonRpcMessage),
    /// A reply the transport makes itself (an invalid request that is not a tool call).
    Reply(ServerJsonRpcMessage),
}

/// The transport: messages read by a reader thread, replies written by a writer thread.
#[derive(Debug)]
pub struct LineTransport {
    incoming: mpsc::Receiver<Incoming>,
    outgoing: Option<std_mpsc::Sender<ServerJsonRpcMessage>>,
    budget: Arc<Budget>,
}

impl fmt::Debug for Incoming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Incoming::Message(_) => "Incoming::Message(..)",
            Incoming::Reply(_) => "Incoming::Reply(..)",
        })
    }
}

/// The transport stopped writing (the peer closed our stdout).
#[derive(Copy, Clone, Debug)]
pub struct Closed;

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the output stream is closed")
    }
}

impl std::error::Error for Closed {}

impl LineTransport {
    /// Starts the reader and writer threads. Lines longer than `max_line` bytes are not
    /// delivered (see the module docs; [`line_limit`] gives the server's). Returns the
    /// transport and the writer thread, which ends once every reply has been written after the
    /// transport is dropped.
    pub fn spawn<R, W>(input: R, output: W, max_line: usize) -> io::Result<(LineTransport, JoinHandle<()>)>
    where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
    {
        let (in_tx, in_rx) = mpsc::channel(16);
        let (out_tx, out_rx) = std_mpsc::channel();
        let budget = Budget::new(max_line);
        let reader_budget = Arc::clone(&budget);
        std::thread::Builder::new()
            .name("mcp-stdin".to_owned())
            .spawn(move || read_loop(BufReader::with_capacity(64 * 1024, input), &in_tx, max_line, &reader_budget))?;
        let writer =
            std::thread::Builder::new().name("mcp-stdout".to_owned()).spawn(move || write_loop(&out_rx, output))?;
        Ok((LineTransport { incoming: in_rx, outgoing: Some(out_tx), budget }, writer))
    }
}

impl Transport<RoleServer> for LineTransport {
    type Error = Closed;

    fn name() -> Cow<'static, str> {
        Cow::Borrowed("phiward-stdio")
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Closed>> + Send + 'static {
        let sent = match &self.outgoing {
            Some(tx) => tx.send(fixed_error(item)).map_err(|_| Closed),
            None => Err(Closed),
        };
        std::future::ready(sent)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let Some(incoming) = self.incoming.recv().await else {
                // End of input: rmcp stops serving (and cancels what still runs a few seconds
                // later), so end of input is reported once every request has its answer.
                self.budget.idle().await;
                return None;
            };
            match incoming {
                Incoming::Message(m) => return Some(m),
                Incoming::Reply(r) => {
                    if let Some(tx) = &self.outgoing {
                        if tx.send(fixed_error(r)).is_err() {
                            return None;
                        }
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Closed> {
        self.outgoing = None;
        Ok(())
    }
}

/// The outcome of reading one line.
enum Line {
    /// A whole line is in the buffer (without its newline).
    Whole,
    /// The line was longer than the limit; the buffer holds its head.
    Oversized,
    /// End of input (the buffer may hold a last line without newline).
    Eof,
}

fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>, max_line: usize) -> io::Result<Line> {
    let mut oversized = false;
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(if oversized { Line::Oversized } else { Line::Eof });
        }
        let (chunk, used, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (&available[..i], i + 1, true),
            None => (available, available.len(), false),
        };
        if !oversized && buf.len() + chunk.len() > max_line {
            oversized = true;
            // What is dropped is wiped now: [`release`] wipes the kept length only.
            if let Some(dropped) = buf.get_mut(HEAD..) {
                dropped.zeroize();
            }
            buf.truncate(HEAD);
        }
        if oversized {
            let room = HEAD.saturating_sub(buf.len()).min(chunk.len());
            buf.extend_from_slice(&chunk[..room]);
        } else {
            buf.extend_from_slice(chunk);
        }
        input.consume(used);
        if done {
            return Ok(if oversized { Line::Oversized } else { Line::Whole });
        }
    }
}

/// A JSON-RPC error with the fixed text of its code and no `data`; other messages unchanged.
/// rmcp builds some errors from what the client sent (an unknown method's name, a requested
/// protocol version, a URI): none of it leaves.
fn fixed_error(message: ServerJsonRpcMessage) -> ServerJsonRpcMessage {
    let JsonRpcMessage::Error(mut e) = message else { return message };
    e.error.message = Cow::Borrowed(match e.error.code {
        ErrorCode::PARSE_ERROR => "Parse error",
        ErrorCode::INVALID_REQUEST => "Invalid request",
        ErrorCode::METHOD_NOT_FOUND => "Method not found",
        ErrorCode::INVALID_PARAMS => "Invalid params",
        ErrorCode::INTERNAL_ERROR => "Internal error",
        ErrorCode::RESOURCE_NOT_FOUND => "Resource not found",
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => "Unsupported protocol version",
        _ => "Request failed",
    });
    e.error.data = None;
    JsonRpcMessage::Error(e)
}

fn read_loop(mut input: impl BufRead, tx: &mpsc::Sender<Incoming>, max_line: usize, budget: &Arc<Budget>) {
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        let line = read_line(&mut input, &mut buf, max_line);
        let incoming = match line {
            Ok(Line::Whole) => {
                let held = budget.acquire(buf.len());
                decode(&buf).map(|m| hold(m, held))
            }
            Ok(Line::Eof) if buf.iter().all(u8::is_ascii_whitespace) => break,
            Ok(Line::Eof) => {
                let held = budget.acquire(buf.len());
                let last = decode(&buf).map(|m| hold(m, held));
                release(&mut buf);
                if let Some(m) = last {
                    let _ = tx.blocking_send(m);
                }
                break;
            }
            Ok(Line::Oversized) => {
                tracing::debug!(code = Code::CLI_INPUT_TOO_LARGE.as_str(), "request line over the limit");
                reject(&buf, Code::CLI_INPUT_TOO_LARGE)
            }
            Err(_) => {
                tracing::debug!("standard input failed; stopping");
                break;
            }
        };
        release(&mut buf);
        if let Some(m) = incoming {
            if tx.blocking_send(m).is_err() {
                break;
            }
        }
    }
    release(&mut buf);
}

/// Puts `held` in the extensions of a request, where the handler finds it; a notification or a
/// reply lets it go at once (their handling does not outlive the service loop's turn).
fn hold(incoming: Incoming, held: InFlight) -> Incoming {
    match incoming {
        Incoming::Message(JsonRpcMessage::Request(mut r)) => {
            r.request.extensions_mut().insert(held);
            Incoming::Message(JsonRpcMessage::Request(r))
        }
        other => other,
    }
}

/// Zeroizes the buffer; gives back memory a large line took. A large buffer is wiped over its
/// length only, then freed: its spare capacity holds nothing (bytes are wiped before a
/// truncation), and writing zeros over all of it would make the whole capacity resident.
fn release(buf: &mut Vec<u8>) {
    if buf.capacity() > KEEP {
        buf.as_mut_slice().zeroize();
        *buf = Vec::with_capacity(64 * 1024);
    } else {
        buf.zeroize();
    }
}

/// Decodes one line into a message, or into the answer to a request that cannot be read.
fn decode(line: &[u8]) -> Option<Incoming> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        // rmcp reads a `tools/call` whose params do not fit (say, `arguments` that is not an
        // object) as a custom request; it is a tool call with bad arguments.
        Ok(ClientJsonRpcMessage::Request(r)) if matches!(&r.request, ClientRequest::CustomRequest(c) if c.method == "tools/call") => {
            Some(rejected_call(r.id, Code::CLI_USAGE))
        }
        Ok(m) => Some(Incoming::Message(m)),
        Err(e) => {
            tracing::debug!(category = ?e.classify(), "a message could not be read");
            reject(line, Code::CLI_USAGE)
        }
    }
}

/// The answer to a request that cannot be delivered as sent: a rejected tool call, or an
/// invalid-request error. Nothing when no `id` can be found (a notification, or not JSON).
fn reject(line: &[u8], code: Code) -> Option<Incoming> {
    let envelope = Envelope::recover(line);
    let id = envelope.id?;
    if envelope.tool_call {
        Some(rejected_call(id, code))
    } else {
        let error = ErrorData::invalid_request("Invalid request", None);
        Some(Incoming::Reply(ServerJsonRpcMessage::error(error, Some(id))))
    }
}

/// A `tools/call` that the server answers with `code` alone.
fn rejected_call(id: RequestId, code: Code) -> Incoming {
    let mut request = CallToolRequest::new(CallToolRequestParams::new(""));
    request.extensions.insert(Rejected(code));
    Incoming::Message(ClientJsonRpcMessage::request(ClientRequest::CallToolRequest(request), id))
}

/// The `id` and whether the method is `tools/call`, read from as much of a JSON-RPC object as
/// parses (the line may be cut short or malformed further on).
#[derive(Debug, Default)]
struct Envelope {
    id: Option<RequestId>,
    tool_call: bool,
}

impl Envelope {
    fn recover(line: &[u8]) -> Envelope {
        let mut envelope = Envelope::default();
        let mut de = serde_json::Deserializer::from_slice(line);
        // Stops at the first error; what was read before it is kept.
        let _ = de.deserialize_map(EnvelopeVisitor(&mut envelope));
        envelope
    }
}

struct EnvelopeVisitor<'a>(&'a mut Envelope);

impl<'de> Visitor<'de> for EnvelopeVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "id" => {
                    let id: serde_json::Value = map.next_value()?;
                    self.0.id = match id {
                        serde_json::Value::Number(_) | serde_json::Value::String(_) => serde_json::from_value(id).ok(),
                        _ => None,
                    };
                }
                "method" => {
                    let method: Cow<'de, str> = map.next_value()?;
                    self.0.tool_call = method == "tools/call";
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

fn write_loop(rx: &std_mpsc::Receiver<ServerJsonRpcMessage>, mut output: impl Write) {
    let mut buf = Vec::with_capacity(64 * 1024);
    while let Ok(message) = rx.recv() {
        let serialized = serde_json::to_writer(&mut buf, &message);
        drop(message);
        if serialized.is_err() {
            tracing::warn!(code = Code::CLI_INTERNAL.as_str(), "a reply could not be serialized");
            release(&mut buf);
            continue;
        }
        buf.push(b'\n');
        let written = output.write_all(&buf).and_then(|()| output.flush());
        release(&mut buf);
        if written.is_err() {
            tracing::debug!(code = Code::CLI_OUTPUT_FAILED.as_str(), "standard output closed");
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_is_recovered_from_a_cut_line() {
        let e = Envelope::recover(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"parse","arguments":{"content":"MSH|^~\&|MKR"#);
        assert_eq!(e.id, Some(RequestId::Number(7)));
        assert!(e.tool_call);
        let e = Envelope::recover(br#"{"method":"initialize","id":"a"#);
        assert_eq!(e.id, None);
        assert!(!e.tool_call);
        let e = Envelope::recover(b"not json");
        assert!(e.id.is_none());
    }

    /// `len` bytes of `x`, then `tail`, made as they are read; counts the bytes handed out.
    struct Generated {
        left: usize,
        tail: &'static [u8],
        read: usize,
    }

    impl Read for Generated {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = if self.left > 0 {
                let n = self.left.min(out.len());
                out[..n].fill(b'x');
                self.left -= n;
                n
            } else {
                let n = self.tail.len().min(out.len());
                out[..n].copy_from_slice(&self.tail[..n]);
                self.tail = &self.tail[n..];
                n
            };
            self.read += n;
            Ok(n)
        }
    }

    /// A line of 64 MiB against a limit of 1 MiB: refused as oversized once the limit is
    /// passed, the rest read and dropped up to its newline (the next line is read whole), and
    /// the buffer never holds more than the limit.
    #[test]
    fn an_oversized_line_is_skipped_without_being_buffered() {
        let limit = 1024 * 1024;
        let long = 64 * 1024 * 1024;
        let mut source = Generated { left: long, tail: b"\n{}\n", read: 0 };
        let mut reader = BufReader::with_capacity(64 * 1024, &mut source);
        let mut buf = Vec::new();
        let outcome = read_line(&mut reader, &mut buf, limit);
        // A vector never gives back capacity on truncation: its capacity is the most it held.
        let peak = buf.capacity();
        assert!(matches!(outcome, Ok(Line::Oversized)));
        assert!(peak <= 2 * limit, "buffer grew to {peak}");
        assert_eq!(buf.len(), HEAD);
        buf.clear();
        assert!(matches!(read_line(&mut reader, &mut buf, limit), Ok(Line::Whole)));
        assert_eq!(buf, b"{}");
        drop(reader);
        assert_eq!(source.read, long + 4, "read through the newline and the next line");
    }

    /// Every JSON-RPC error leaves with the fixed text of its code and no data.
    #[test]
    fn errors_leave_with_fixed_texts() {
        let quoted = ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "MKR00001X", Some(serde_json::json!("MKR00002X")));
        let out = fixed_error(ServerJsonRpcMessage::error(quoted, Some(RequestId::Number(3))));
        let text = serde_json::to_string(&out).expect("serializes");
        assert!(!text.contains("MKR"), "{text}");
        assert!(text.contains("Method not found") && text.contains("-32601"), "{text}");
        let other = ErrorData::new(ErrorCode(-32099), "MKR00003X", None);
        let text = serde_json::to_string(&fixed_error(ServerJsonRpcMessage::error(other, None))).expect("serializes");
        assert!(!text.contains("MKR") && text.contains("Request failed"), "{text}");
    }

    /// The reader waits to hand on a request while those not yet answered hold the whole budget,
    /// and goes on once one is answered; small lines are counted apart, against their own budget.
    #[test]
    fn requests_in_flight_hold_back_the_next_one() {
        let cap = 10 * SMALL_LINE;
        let budget = Budget::new(cap);
        let first = budget.acquire(8 * SMALL_LINE);
        let (tx, rx) = std_mpsc::channel();
        let b = Arc::clone(&budget);
        let waiter = std::thread::spawn(move || {
            let held = b.acquire(3 * SMALL_LINE);
            tx.send(()).expect("send");
            drop(held);
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(rx.try_recv().is_err(), "handed on while 8 + 3 lines would pass the budget of 10");
        // A small line (a ping, a cancellation, a small call) is counted apart: not held up.
        drop(budget.acquire(SMALL_LINE));
        drop(first);
        rx.recv().expect("handed on once the first is answered");
        waiter.join().expect("join");
        assert_eq!(budget.used(), 0);
        // A line alone always fits.
        drop(budget.acquire(100 * SMALL_LINE));
        // Small lines wait for each other past their own budget.
        let small: Vec<InFlight> = (0..SMALL_BUDGET / SMALL_LINE).map(|_| budget.acquire(SMALL_LINE)).collect();
        let b = Arc::clone(&budget);
        let (tx, rx) = std_mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let held = b.acquire(1);
            tx.send(()).expect("send");
            drop(held);
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(rx.try_recv().is_err(), "a small line handed on past the small budget");
        drop(small);
        rx.recv().expect("handed on once the small ones are answered");
        waiter.join().expect("join");
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn long_lines_keep_only_their_head() {
        let mut input = Vec::new();
        input.extend(std::iter::repeat_n(b'x', HEAD * 3));
        input.extend_from_slice(b"\n{}\n");
        let mut reader = BufReader::with_capacity(1024, &input[..]);
        let mut buf = Vec::new();
        assert!(matches!(read_line(&mut reader, &mut buf, HEAD * 2), Ok(Line::Oversized)));
        assert_eq!(buf.len(), HEAD);
        buf.clear();
        assert!(matches!(read_line(&mut reader, &mut buf, HEAD * 2), Ok(Line::Whole)));
        assert_eq!(buf, b"{}");
        buf.clear();
        assert!(matches!(read_line(&mut reader, &mut buf, HEAD * 2), Ok(Line::Eof)));
    }
}
