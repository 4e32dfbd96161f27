//! Character sets declared by MSH-18 (HL7 table 0211), and decoding of field bytes into text for
//! the data channel.
//!
//! Decodes ASCII, UTF-8, the ISO 8859 parts 1 to 10 and 13 to 16 (and their `ISO IR` names),
//! and the multi-byte sets GB 18030, KS X 1001 (`KS C 5601`; EUC-KR) and BIG-5. Every table is
//! `encoding_rs`'s (the WHATWG Encoding Standard's indexes), with two exceptions that keep ISO
//! 8859 exact: part 1 is the identity on bytes (the WHATWG name `iso-8859-1` means
//! windows-1252), and 0x80 to 0x9F are the C1 controls in every part (part 9 is read through
//! windows-1254, which agrees with it from 0xA0 up). A message without MSH-18 is read as UTF-8
//! when its bytes are valid UTF-8 (many senders omit MSH-18), else as ISO 8859-1. Invalid bytes
//! never panic: they decode to U+FFFD, and the validator reports them for the sets that can be
//! invalid ([`Charset::invalid_offsets`]).
//!
//! What it does not do: the ISO 2022 sets (`ISO IR87`, `ISO IR159`: JIS X 0208/0212 switched
//! in by escape sequences, which the byte-level lexer would have to track across delimiters),
//! `CNS 11643-1992` (no table in `encoding_rs`), `UNICODE`, `UNICODE UTF-16` and `UNICODE
//! UTF-32` (a message in those is not in an ASCII-compatible encoding: its delimiters cannot
//! be found byte-wise; it would have to be transcoded before it is read), and the code
//! extension escapes `\C..\`/`\M..\`. Such text is decoded as UTF-8 with replacement, and the
//! validator reports `CHARSET_UNKNOWN`. Nor does it re-split fields: in GB 18030 and BIG-5 a
//! second byte can equal a delimiter (`\`, `^`, `|`, `~`, `&` are in their trail-byte range);
//! the lexer splits there, and the validator reports the broken characters
//! ([`Charset::invalid_offsets`] checks each field alone).

use encoding_rs::{CoderResult, Encoding};

/// A decodable character set.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Charset {
    /// No MSH-18: ASCII by the standard, read as UTF-8 or Latin-1 in practice.
    Default,
    /// `ASCII` / `ISO IR6`: 7-bit.
    Ascii,
    /// A single-byte ISO 8859 part (1 to 10, 13 to 16).
    Iso8859(u8),
    /// `UNICODE UTF-8`.
    Utf8,
    /// A multi-byte set.
    Multibyte(Multibyte),
    /// Anything else (reported, decoded as UTF-8 with replacement).
    Unknown,
}

/// The multi-byte sets of table 0211 that are decoded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Multibyte {
    /// `GB 18030-2000` (also written `GB 18030`): the Chinese national standard (GB 2312 and GBK
    /// included).
    Gb18030,
    /// `KS X 1001` (formerly `KS C 5601`): Korean, in its EUC-KR form.
    KsX1001,
    /// `BIG-5`: traditional Chinese.
    Big5,
}

impl Multibyte {
    fn encoding(self) -> &'static Encoding {
        match self {
            Multibyte::Gb18030 => encoding_rs::GB18030,
            Multibyte::KsX1001 => encoding_rs::EUC_KR,
            Multibyte::Big5 => encoding_rs::BIG5,
        }
    }
}

/// The decoder of ISO 8859 part `part` from 0xA0 up (`None` for part 1, the identity).
fn iso8859(part: u8) -> Option<&'static Encoding> {
    Some(match part {
        2 => encoding_rs::ISO_8859_2,
        3 => encoding_rs::ISO_8859_3,
        4 => encoding_rs::ISO_8859_4,
        5 => encoding_rs::ISO_8859_5,
        6 => encoding_rs::ISO_8859_6,
        7 => encoding_rs::ISO_8859_7,
        8 => encoding_rs::ISO_8859_8,
        9 => encoding_rs::WINDOWS_1254,
        10 => encoding_rs::ISO_8859_10,
        13 => encoding_rs::ISO_8859_13,
        14 => encoding_rs::ISO_8859_14,
        15 => encoding_rs::ISO_8859_15,
        16 => encoding_rs::ISO_8859_16,
        _ => return None,
    })
}

/// Appends `bytes` decoded by `encoding` (malformed sequences become U+FFFD).
fn decode_with(encoding: &'static Encoding, bytes: &[u8], out: &mut String) {
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut src = bytes;
    loop {
        let room = decoder.max_utf8_buffer_length(src.len()).unwrap_or(src.len().saturating_mul(3));
        out.reserve(room.max(4));
        let (result, read, _) = decoder.decode_to_string(src, out, true);
        src = src.get(read..).unwrap_or_default();
        if result == CoderResult::InputEmpty {
            return;
        }
    }
}

impl Charset {
    /// Reads MSH-18 (its first repetition).
    pub fn from_msh18(value: &[u8]) -> Charset {
        let v = value.trim_ascii();
        match v {
            b"" => Charset::Default,
            b"ASCII" | b"ISO IR6" => Charset::Ascii,
            b"UNICODE UTF-8" | b"UTF-8" => Charset::Utf8,
            b"8859/1" | b"ISO IR100" => Charset::Iso8859(1),
            b"8859/2" | b"ISO IR101" => Charset::Iso8859(2),
            b"8859/3" | b"ISO IR109" => Charset::Iso8859(3),
            b"8859/4" | b"ISO IR110" => Charset::Iso8859(4),
            b"8859/5" | b"ISO IR144" => Charset::Iso8859(5),
            b"8859/6" | b"ISO IR127" => Charset::Iso8859(6),
            b"8859/7" | b"ISO IR126" => Charset::Iso8859(7),
            b"8859/8" | b"ISO IR138" => Charset::Iso8859(8),
            b"8859/9" | b"ISO IR148" => Charset::Iso8859(9),
            b"8859/10" | b"ISO IR157" => Charset::Iso8859(10),
            b"8859/13" | b"ISO IR179" => Charset::Iso8859(13),
            b"8859/14" | b"ISO IR199" => Charset::Iso8859(14),
            b"8859/15" | b"ISO IR203" => Charset::Iso8859(15),
            b"8859/16" | b"ISO IR226" => Charset::Iso8859(16),
            b"GB 18030-2000" | b"GB 18030" => Charset::Multibyte(Multibyte::Gb18030),
            b"KS X 1001" | b"KS C 5601" => Charset::Multibyte(Multibyte::KsX1001),
            b"BIG-5" => Charset::Multibyte(Multibyte::Big5),
            _ => Charset::Unknown,
        }
    }

    /// True when every byte is allowed by the set.
    pub fn accepts(self, bytes: &[u8]) -> bool {
        match self {
            Charset::Ascii => bytes.is_ascii(),
            Charset::Utf8 => std::str::from_utf8(bytes).is_ok(),
            Charset::Multibyte(m) => m.encoding().decode_without_bom_handling_and_without_replacement(bytes).is_some(),
            Charset::Default | Charset::Iso8859(_) | Charset::Unknown => true,
        }
    }

    /// The offsets in `bytes` where a malformed sequence of a multi-byte set starts (at most
    /// `max`); empty for every other set. Each slice given is decoded alone (a field, or a
    /// message whose delimiters are all ASCII and outside characters).
    pub fn invalid_offsets(self, bytes: &[u8], max: usize) -> Vec<usize> {
        let Charset::Multibyte(m) = self else { return Vec::new() };
        let mut decoder = m.encoding().new_decoder_without_bom_handling();
        let mut out = Vec::new();
        let mut scratch = [0u8; 1024];
        let mut pos = 0usize;
        while out.len() < max {
            let src = bytes.get(pos..).unwrap_or_default();
            let (result, read, _) = decoder.decode_to_utf8_without_replacement(src, &mut scratch, true);
            pos += read;
            match result {
                encoding_rs::DecoderResult::InputEmpty => break,
                encoding_rs::DecoderResult::OutputFull => {}
                encoding_rs::DecoderResult::Malformed(bad, after) => {
                    // The malformed bytes end `after` bytes before the read position.
                    let end = pos.saturating_sub(usize::from(after));
                    out.push(end.saturating_sub(usize::from(bad)));
                }
            }
        }
        // The scratch output held decoded text: wipe it.
        zeroize::Zeroize::zeroize(&mut scratch);
        out
    }

    /// Appends the bytes decoded as text.
    pub fn decode_into(self, bytes: &[u8], out: &mut String) {
        if bytes.is_ascii() {
            // Invariant: ASCII is valid UTF-8.
            out.push_str(std::str::from_utf8(bytes).unwrap_or_default());
            return;
        }
        match self {
            Charset::Iso8859(part) => {
                let Some(encoding) = iso8859(part) else {
                    // Part 1 (and a part never built by `from_msh18`): byte = code point.
                    out.extend(bytes.iter().map(|&b| char::from(b)));
                    return;
                };
                // Runs decoded by the part's table; the C1 controls (0x80 to 0x9F) as such.
                for run in bytes.split_inclusive(|b| (0x80..=0x9F).contains(b)) {
                    match run.split_last() {
                        Some((&last, head)) if (0x80..=0x9F).contains(&last) => {
                            decode_with(encoding, head, out);
                            out.push(char::from(last));
                        }
                        _ => decode_with(encoding, run, out),
                    }
                }
            }
            Charset::Multibyte(m) => decode_with(m.encoding(), bytes, out),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(msh18: &str, bytes: &[u8]) -> String {
        let mut out = String::new();
        Charset::from_msh18(msh18.as_bytes()).decode_into(bytes, &mut out);
        out
    }

    #[test]
    fn each_iso_8859_part_by_its_own_table() {
        assert_eq!(decode("8859/1", b"M\xfcller"), "Müller");
        assert_eq!(decode("8859/2", b"\xa3\xf3d\xbc"), "Łódź");
        assert_eq!(decode("ISO IR144", b"\xb8\xd2\xd0\xdd"), "Иван");
        assert_eq!(decode("8859/7", b"\xc1\xe8\xde\xed\xe1"), "Αθήνα");
        assert_eq!(decode("8859/15", b"5 \xa4"), "5 €");
        assert_eq!(decode("8859/9", b"\xdd\xfe"), "İş");
        // A byte the part leaves undefined (8859-3 0xA5) is the replacement character.
        assert_eq!(decode("8859/3", b"\xa5"), "\u{FFFD}");
        // The C1 controls stay C1 controls, in part 9 too (windows-1254 has letters there).
        assert_eq!(decode("8859/9", b"\x80\x9f\xdd"), "\u{80}\u{9F}İ");
        assert_eq!(decode("8859/1", b"\x80"), "\u{80}");
    }

    /// The parts decode as the Unicode mapping tables say (every byte of every part was compared
    /// with the generated tables these replaced): spot checks where the WHATWG indexes could
    /// differ (the 2003 additions of 8859-7, the direction marks of 8859-8, the holes of 8859-6,
    /// 8859-7 and 8859-8, the last letters of 8859-4, 10, 13, 14, 16).
    #[test]
    fn iso_8859_tables_match_the_unicode_mappings() {
        let cases: &[(&str, u8, char)] = &[
            ("8859/7", 0xA4, '\u{20AC}'),
            ("8859/7", 0xA5, '\u{20AF}'),
            ("8859/7", 0xAA, '\u{037A}'),
            ("8859/7", 0xAE, '\u{FFFD}'),
            ("8859/7", 0xD2, '\u{FFFD}'),
            ("8859/8", 0xFD, '\u{200E}'),
            ("8859/8", 0xFE, '\u{200F}'),
            ("8859/8", 0xDF, '\u{2017}'),
            ("8859/8", 0xA1, '\u{FFFD}'),
            ("8859/6", 0xAC, '\u{060C}'),
            ("8859/6", 0xA1, '\u{FFFD}'),
            ("8859/10", 0xFF, '\u{0138}'),
            ("8859/13", 0xFF, '\u{2019}'),
            ("8859/14", 0xA1, '\u{1E02}'),
            ("8859/16", 0xA5, '\u{201E}'),
            ("8859/4", 0xA2, '\u{0138}'),
        ];
        for &(set, byte, want) in cases {
            assert_eq!(decode(set, &[byte]), want.to_string(), "{set} {byte:#x}");
        }
    }

    #[test]
    fn multibyte_sets() {
        // 中文 in GB 18030, 한국 in EUC-KR, 中文 in BIG-5.
        assert_eq!(decode("GB 18030", b"\xd6\xd0\xce\xc4"), "中文");
        assert_eq!(decode("GB 18030", b"\x81\x30\x81\x30"), "\u{80}", "a four-byte sequence");
        assert_eq!(decode("GB 18030-2000", b"\xd6\xd0"), "中", "the name table 0211 gives");
        assert_eq!(decode("KS X 1001", b"\xc7\xd1\xb1\xb9"), "한국");
        assert_eq!(decode("KS C 5601", b"\xc7\xd1"), "한");
        assert_eq!(decode("BIG-5", b"\xa4\xa4\xa4\xe5"), "中文");
        // Truncated or malformed: replacement, and the offsets the validator reports.
        assert_eq!(decode("BIG-5", b"a\xa4"), "a\u{FFFD}");
        let big5 = Charset::from_msh18(b"BIG-5");
        assert!(big5.accepts(b"\xa4\xa4"));
        assert!(!big5.accepts(b"\xa4"));
        assert_eq!(big5.invalid_offsets(b"ab\xa4\xa4c\xff\xffd\xa4", 10), vec![5, 6, 8]);
        assert_eq!(big5.invalid_offsets(b"\xff\xff\xff", 2), vec![0, 1]);
        assert!(Charset::Utf8.invalid_offsets(b"\xff", 10).is_empty());
        let long: Vec<u8> = b"\xa4\xa4".repeat(2000);
        assert!(big5.invalid_offsets(&long, 10).is_empty(), "longer than the scratch buffer");
    }

    #[test]
    fn names_not_decoded_stay_unknown() {
        for name in [
            "ISO IR87",
            "ISO IR159",
            "ISO IR14",
            "CNS 11643-1992",
            "UNICODE",
            "UNICODE UTF-16",
            "UNICODE UTF-32",
            "latin1",
        ] {
            assert_eq!(Charset::from_msh18(name.as_bytes()), Charset::Unknown, "{name}");
        }
    }
}
