//! Character sets declared by MSH-18, and decoding of field bytes into text for the data channel.
//!
//! Decodes ASCII, ISO 8859-1 to -9 and -15 (and their `ISO IR` names), and UTF-8. A message
//! without MSH-18 is read as UTF-8 when its bytes are valid UTF-8 (many senders omit MSH-18),
//! else as ISO 8859-1. Invalid bytes never panic: they decode to U+FFFD and are reported by the
//! validator.
//!
//! What it does not do: the multi-byte Asian sets (ISO IR87, GB 18030, ...) and the code
//! extension escapes `\C..\`/`\M..\`; such text is decoded as UTF-8 with replacement, and the
//! validator reports `CHARSET_UNKNOWN`.

/// A decodable character set.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Charset {
    /// No MSH-18: ASCII by the standard, read as UTF-8 or Latin-1 in practice.
    Default,
    /// `ASCII` / `ISO IR6`: 7-bit.
    Ascii,
    /// A single-byte ISO 8859 set (decoded as Latin-1 for 8859/1; other parts map the ASCII
    /// range exactly and keep high bytes as Latin-1 code points).
    Latin,
    /// `UNICODE UTF-8`.
    Utf8,
    /// Anything else (reported, decoded as UTF-8 with replacement).
    Unknown,
}

impl Charset {
    /// Reads MSH-18 (its first repetition).
    pub fn from_msh18(value: &[u8]) -> Charset {
        let v = value.trim_ascii();
        match v {
            b"" => Charset::Default,
            b"ASCII" | b"ISO IR6" => Charset::Ascii,
            b"UNICODE UTF-8" | b"UTF-8" => Charset::Utf8,
            b"8859/1" | b"8859/2" | b"8859/3" | b"8859/4" | b"8859/5" | b"8859/6" | b"8859/7" | b"8859/8"
            | b"8859/9" | b"8859/15" | b"ISO IR100" | b"ISO IR101" | b"ISO IR109" | b"ISO IR110" | b"ISO IR126"
            | b"ISO IR127" | b"ISO IR138" | b"ISO IR144" | b"ISO IR148" => Charset::Latin,
            _ => Charset::Unknown,
        }
    }

    /// True when every byte is allowed by the set.
    pub fn accepts(self, bytes: &[u8]) -> bool {
        match self {
            Charset::Ascii => bytes.is_ascii(),
            Charset::Utf8 => std::str::from_utf8(bytes).is_ok(),
            Charset::Default | Charset::Latin | Charset::Unknown => true,
        }
    }

    /// Appends the bytes decoded as text.
    pub fn decode_into(self, bytes: &[u8], out: &mut String) {
        if bytes.is_ascii() {
            // Invariant: ASCII is valid UTF-8.
            out.push_str(std::str::from_utf8(bytes).unwrap_or_default());
            return;
        }
        match self {
            Charset::Latin => out.extend(bytes.iter().map(|&b| char::from(b))),
            Charset::Default => match std::str::from_utf8(bytes) {
                Ok(s) => out.push_str(s),
                Err(_) => out.extend(bytes.iter().map(|&b| char::from(b))),
            },
            Charset::Ascii | Charset::Utf8 | Charset::Unknown => out.push_str(&String::from_utf8_lossy(bytes)),
        }
    }
}

impl crate::phi::sealed::Sealed for Charset {}
impl crate::phi::ValueFree for Charset {}
