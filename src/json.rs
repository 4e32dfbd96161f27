//! A small JSON text writer for the data channel: strings, with the escaping RFC 8259 requires.
//!
//! The data-channel writers build their output with it directly into a byte buffer, so a
//! message's values never pass through a general-purpose value tree.
//!
//! What it does not do: pretty-printing (the output module re-indents when asked).

/// Appends `s` as a JSON string literal.
pub fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut last = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1F | 0x7F => {
                out.extend_from_slice(&bytes[last..i]);
                out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
                last = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[last..i]);
        out.extend_from_slice(esc);
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
