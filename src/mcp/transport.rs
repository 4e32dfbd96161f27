//! The newline-delimited JSON-RPC transport over stdin/stdout.
//!
//! **This module writes to standard output**: in MCP mode stdout is the protocol channel, and
//! the writer thread below is the only code that touches it. Standard error is left to logging.
//!
//! It replaces rmcp's own stdio transport for three reasons, all about not losing or leaking a
//! request:
//!
//! - A line longer than the limit is not buffered. Its head (64 KiB) is kept to recover the
//!   JSON-RPC `id`; a `tools/call` is then answered by the server as a `failed` reply with
//!   `CLI_INPUT_TOO_LARGE`, and the server keeps serving. (rmcp drops such a line silently and
//!   the client waits forever.)
//! - A request whose shape rmcp cannot read (for example `arguments` that is not an object) gets
//!   an answer with its own `id`: a `tools/call` becomes a `failed` reply with `CLI_USAGE`,
//!   anything else a JSON-RPC "Invalid request" error with a fixed message.
//! - Nothing of a line is ever logged: parse errors are reduced to their category.
//!
//! Line buffers are zeroized after use. What it does not do: interpret requests (rmcp's service
//! loop and [`super::server`] do).

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, ErrorData, RequestId,
    ServerJsonRpcMessage,
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
    /// delivered (see the module docs). Returns the transport and the writer thread, which
    /// ends once every reply has been written after the transport is dropped.
    pub fn spawn<R, W>(input: R, output: W, max_line: usize) -> io::Result<(LineTransport, JoinHandle<()>)>
    where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
    {
        let (in_tx, in_rx) = mpsc::channel(16);
        let (out_tx, out_rx) = std_mpsc::channel();
        std::thread::Builder::new()
            .name("mcp-stdin".to_owned())
            .spawn(move || read_loop(BufReader::with_capacity(64 * 1024, input), &in_tx, max_line))?;
        let writer =
            std::thread::Builder::new().name("mcp-stdout".to_owned()).spawn(move || write_loop(&out_rx, output))?;
        Ok((LineTransport { incoming: in_rx, outgoing: Some(out_tx) }, writer))
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
            Some(tx) => tx.send(item).map_err(|_| Closed),
            None => Err(Closed),
        };
        std::future::ready(sent)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.incoming.recv().await? {
                Incoming::Message(m) => return Some(m),
                Incoming::Reply(r) => {
                    if let Some(tx) = &self.outgoing {
                        if tx.send(r).is_err() {
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

fn read_loop(mut input: impl BufRead, tx: &mpsc::Sender<Incoming>, max_line: usize) {
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        let line = read_line(&mut input, &mut buf, max_line);
        let incoming = match line {
            Ok(Line::Whole) => decode(&buf),
            Ok(Line::Eof) if buf.iter().all(u8::is_ascii_whitespace) => break,
            Ok(Line::Eof) => {
                let last = decode(&buf);
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

/// Zeroizes the buffer; gives back memory a large line took.
fn release(buf: &mut Vec<u8>) {
    buf.zeroize();
    if buf.capacity() > KEEP {
        *buf = Vec::with_capacity(64 * 1024);
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
