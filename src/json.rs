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

/// Appends bytes that are valid UTF-8 (the caller guarantees it) as a JSON string literal.
pub fn string_utf8(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut last = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !NEEDS_ESCAPE[b as usize] {
            continue;
        }
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
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes() {
        let mut out = Vec::new();
        super::string(&mut out, "a\"b\\c\nd\u{1}é");
        assert_eq!(String::from_utf8_lossy(&out), "\"a\\\"b\\\\c\\nd\\u0001é\"");
    }
}
