//! A small JSON text writer for the data channel: strings, with the escaping RFC 8259 requires.
//!
//! The data-channel writers build their output with it directly into a byte buffer, so a
//! message's values never pass through a general-purpose value tree.
//!
//! What it does not do: pretty-printing (the output module re-indents when asked).

/// Appends `s` as a JSON string literal.
pub fn string(out: &mut Vec<u8>, s: &str) {
    string_utf8(out, s.as_bytes());
}

/// Which bytes need an escape in a JSON string: `"`, `\`, and control characters (and DEL,
/// escaped for readability of logs that might capture the data channel).
static NEEDS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[0x7F] = true;
    t
};

/// Whether `b` needs an escape in a JSON string literal.
pub const fn needs_escape(b: u8) -> bool {
    NEEDS_ESCAPE[b as usize]
}

/// True when one of the 8 bytes of `w` may need an escape (never false when one does: a
/// chunk it flags is scanned byte by byte).
fn word_may_need_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte below 0x20; a byte equal to `"`, `\\` or DEL (zero after the XOR).
    let below = w.wrapping_sub(ONES * 0x20) & !w;
    let quote = w ^ (ONES * b'"' as u64);
    let backslash = w ^ (ONES * b'\\' as u64);
    let del = w ^ (ONES * 0x7F);
    let zero = |x: u64| x.wrapping_sub(ONES) & !x;
    (below | zero(quote) | zero(backslash) | zero(del)) & HIGH != 0
}

/// The index of the first byte of `bytes[from..]` that needs an escape (`bytes.len()`: none),
/// eight bytes at a time.
fn next_escape(bytes: &[u8], mut from: usize) -> usize {
    while let Some(chunk) = bytes.get(from..from + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if word_may_need_escape(u64::from_le_bytes(word)) {
            if let Some(k) = chunk.iter().position(|&b| NEEDS_ESCAPE[b as usize]) {
                return from + k;
            }
        }
        from += 8;
    }
    // The last 1 to 7 bytes: when there are 8 bytes in all, as the last word (its first bytes
    // were scanned already: a flag from them only costs the byte scan below).
    if from < bytes.len() && bytes.len() >= 8 {
        if let Some(last) = bytes.get(bytes.len() - 8..) {
            let mut word = [0u8; 8];
            word.copy_from_slice(last);
            if !word_may_need_escape(u64::from_le_bytes(word)) {
                return bytes.len();
            }
        }
    }
    while let Some(&b) = bytes.get(from) {
        if NEEDS_ESCAPE[b as usize] {
            return from;
        }
        from += 1;
    }
    from
}

/// Appends bytes that are valid UTF-8 (the caller guarantees it) as a JSON string literal.
pub fn string_utf8(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    body(out, bytes);
    out.push(b'"');
}

/// A [`std::fmt::Write`] that appends text as the inside of a JSON string literal (escaped, as
/// [`string`] would): a `Display` is written into a literal without a `String` in between.
pub struct Escaped<'a>(pub &'a mut Vec<u8>);

impl std::fmt::Debug for Escaped<'_> {
    /// The buffer holds message values: only the type is shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Escaped")
    }
}

impl std::fmt::Write for Escaped<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        body(self.0, s.as_bytes());
        Ok(())
    }
}

/// Appends the escaped text of a string literal, without its quotes.
fn body(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut last = 0;
    loop {
        let i = next_escape(bytes, last);
        let Some(&b) = bytes.get(i) else { break };
        out.extend_from_slice(&bytes[last..i]);
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 0xF) as usize]]);
            }
        }
        last = i + 1;
    }
    out.extend_from_slice(&bytes[last..]);
}

/// True when `s` is written as a JSON string literal without any escape.
pub fn is_plain(s: &str) -> bool {
    next_escape(s.as_bytes(), 0) == s.len()
}

/// Appends an object key and its colon (`"key":`): [`string`] then `:`, in one step.
pub fn key(out: &mut Vec<u8>, key: &str) {
    let bytes = key.as_bytes();
    if next_escape(bytes, 0) < bytes.len() {
        string(out, key);
        out.push(b':');
        return;
    }
    out.reserve(bytes.len() + 3);
    out.push(b'"');
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\":");
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes() {
        let mut out = Vec::new();
        super::string(&mut out, "a\"b\\c\nd\u{1}é");
        assert_eq!(String::from_utf8_lossy(&out), "\"a\\\"b\\\\c\\nd\\u0001é\"");
    }

    /// The word-at-a-time scan escapes exactly what the byte table says, at every position.
    #[test]
    fn fast_scan_matches_the_table() {
        let mut reference = Vec::new();
        let mut fast = Vec::new();
        for b in 0u8..=255 {
            for len in 0..20 {
                for at in 0..len {
                    let mut text = vec![b'a'; len];
                    text[at] = b;
                    if at + 1 < len {
                        text[at + 1] = 0xC3;
                    }
                    let text = String::from_utf8_lossy(&text).into_owned();
                    reference.clear();
                    reference.push(b'"');
                    for c in text.bytes() {
                        if super::needs_escape(c) {
                            reference.extend_from_slice(match c {
                                b'"' => b"\\\"".as_slice(),
                                b'\\' => b"\\\\",
                                b'\n' => b"\\n",
                                b'\r' => b"\\r",
                                b'\t' => b"\\t",
                                _ => b"",
                            });
                            if !matches!(c, b'"' | b'\\' | b'\n' | b'\r' | b'\t') {
                                reference.extend_from_slice(format!("\\u{c:04x}").as_bytes());
                            }
                        } else {
                            reference.push(c);
                        }
                    }
                    reference.push(b'"');
                    fast.clear();
                    super::string(&mut fast, &text);
                    assert_eq!(fast, reference, "byte {b:#x} at {at} of {len}");
                    fast.clear();
                    super::key(&mut fast, &text);
                    reference.push(b':');
                    assert_eq!(fast, reference);
                }
            }
        }
    }
}
