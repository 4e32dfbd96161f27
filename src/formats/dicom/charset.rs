//! Specific Character Set (0008,0005): decoding the text of SH, LO, ST, LT, UC, UT and PN values
//! (PS3.5 6.1, PS3.3 C.12.1.1.2).
//!
//! A single defined term without code extensions (`ISO_IR 192`, `ISO_IR 100`, `GB18030`, ...)
//! decodes the whole value through `encoding_rs`. The ISO 2022 terms (PS3.5 6.1.2.5, or a
//! character set of more than one value) run the code extension techniques: value 1 sets the
//! initial G0 and G1 (absent or `ISO 2022 IR 6`: ASCII and nothing; `ISO 2022 IR 100` and the
//! other ISO 8859 parts: ASCII and the part's upper half; `ISO 2022 IR 13`: JIS X 0201 Romaji and
//! Katakana), and the escape sequences of PS3.3 Tables C.12-3 and C.12-4 switch them within a
//! value: `ESC ( B` ASCII and `ESC ( J` JIS X 0201 Romaji (G0), `ESC ) I` JIS X 0201 Katakana
//! (G1), `ESC - A/B/C/D/L/G/F/H/M/b/T` the ISO 8859 parts and TIS 620 (G1), `ESC $ B` JIS X 0208
//! (G0, two bytes 0x21-0x7E, decoded as EUC-JP), `ESC $ ( D` JIS X 0212 (G0, as EUC-JP's 0x8F
//! plane), `ESC $ ) C` KS X 1001 (G1, as EUC-KR) and `ESC $ ) A` GB 2312 (G1, as GBK). The state
//! returns to the initial sets (PS3.5 6.1.2.5.3) at every control character but ESC (CR, LF, FF,
//! TAB...), at the value delimiter `\` of a multi-valued VR, and at `^` and `=` of a PN, read
//! while G0 is a single-byte set (in a two-byte G0 those bytes are halves of a character).
//! An escape of a set phiward knows is followed even when (0008,0005) does not list it; an
//! unknown or cut escape sequence decodes as one U+FFFD and leaves the state as it was; a lone
//! half of a two-byte character decodes as U+FFFD. JIS X 0201 Romaji is decoded as ASCII (its
//! 05/12 YEN SIGN is the value delimiter there, PS3.5 6.1.2.5.3), as pydicom and the Japanese
//! writers do.
//!
//! The decoded text is the caller's to wipe; the scratch buffers here are wiped.

use super::dict::Vr;

/// A decoder for the text of one dataset (value-free: names of the standard's sets only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charset {
    /// The whole-value decoder (no code extensions), or the G1 fallback's.
    whole: &'static encoding_rs::Encoding,
    /// Code extensions (ISO 2022) are on.
    iso2022: bool,
    /// The initial state of the code extensions.
    initial: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum G0 {
    Ascii,
    Romaji,
    Jis0208,
    Jis0212,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum G1 {
    None,
    Single(&'static encoding_rs::Encoding),
    Katakana,
    Ksx1001,
    Gb2312,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct State {
    g0: G0,
    g1: G1,
}

const ESC: u8 = 0x1B;

impl Default for Charset {
    /// The default repertoire (no (0008,0005)): bytes over 0x7F decode as Windows-1252, as
    /// before any character set was read.
    fn default() -> Self {
        Self { whole: encoding_rs::WINDOWS_1252, iso2022: false, initial: State { g0: G0::Ascii, g1: G1::None } }
    }
}

/// The ISO 8859 part (or TIS 620) of a defined term's number.
fn single_byte(number: &[u8]) -> Option<&'static encoding_rs::Encoding> {
    Some(match number {
        b"100" => encoding_rs::WINDOWS_1252,
        b"101" => encoding_rs::ISO_8859_2,
        b"109" => encoding_rs::ISO_8859_3,
        b"110" => encoding_rs::ISO_8859_4,
        b"144" => encoding_rs::ISO_8859_5,
        b"127" => encoding_rs::ISO_8859_6,
        b"126" => encoding_rs::ISO_8859_7,
        b"138" => encoding_rs::ISO_8859_8,
        b"148" => encoding_rs::WINDOWS_1254,
        b"203" => encoding_rs::ISO_8859_15,
        b"166" => encoding_rs::WINDOWS_874,
        _ => return None,
    })
}

impl Charset {
    /// The decoder of a Specific Character Set value (its raw bytes).
    pub fn from_value(v: &[u8]) -> Self {
        let terms: Vec<&[u8]> = v.split(|&b| b == b'\\').map(<[u8]>::trim_ascii).collect();
        let first = terms.first().copied().unwrap_or_default();
        let iso2022 = terms.len() > 1 || terms.iter().any(|t| t.starts_with(b"ISO 2022"));
        let number = first.strip_prefix(b"ISO 2022 IR ").or_else(|| first.strip_prefix(b"ISO_IR "));
        let whole = match first {
            b"ISO_IR 192" => encoding_rs::UTF_8,
            b"GB18030" => encoding_rs::GB18030,
            b"GBK" => encoding_rs::GBK,
            b"ISO_IR 13" | b"ISO 2022 IR 13" => encoding_rs::SHIFT_JIS,
            _ => number.and_then(single_byte).unwrap_or(encoding_rs::WINDOWS_1252),
        };
        let initial = match number {
            Some(b"13") => State { g0: G0::Romaji, g1: G1::Katakana },
            // A two-byte set as value 1 (not a defined use): its G1 sets are taken, G0 stays ASCII.
            Some(b"149") => State { g0: G0::Ascii, g1: G1::Ksx1001 },
            Some(b"58") => State { g0: G0::Ascii, g1: G1::Gb2312 },
            Some(n) => State { g0: G0::Ascii, g1: single_byte(n).map_or(G1::None, G1::Single) },
            None => State { g0: G0::Ascii, g1: G1::None },
        };
        Self { whole, iso2022, initial }
    }

    /// True for UTF-8 (ISO_IR 192): lengths count characters, not bytes.
    pub fn is_utf8(&self) -> bool {
        !self.iso2022 && self.whole == encoding_rs::UTF_8
    }

    /// Decodes a text value of `vr` (all its values, delimiters kept).
    pub fn decode(&self, vr: Vr, v: &[u8]) -> String {
        let simple = self.initial.g0 == G0::Ascii && matches!(self.initial.g1, G1::None | G1::Single(_));
        if !self.iso2022 || (simple && !v.contains(&ESC)) {
            let (text, _) = self.whole.decode_without_bom_handling(v);
            return text.into_owned();
        }
        Decoder { out: String::with_capacity(v.len()), run: Vec::new(), fallback: self.whole }.run(self.initial, vr, v)
    }
}

/// The ISO 2022 state machine's output and scratch buffer.
struct Decoder {
    out: String,
    run: Vec<u8>,
    fallback: &'static encoding_rs::Encoding,
}

impl Decoder {
    fn run(mut self, initial: State, vr: Vr, v: &[u8]) -> String {
        let multi = !vr.is_single_text();
        let pn = vr.0 == *b"PN";
        let mut state = initial;
        let mut i = 0;
        while i < v.len() {
            let b = v[i];
            if b == ESC {
                match escape(&v[i..]) {
                    Some((len, Some(switch))) => {
                        switch.apply(&mut state);
                        i += len;
                    }
                    Some((len, None)) => {
                        self.out.push(char::REPLACEMENT_CHARACTER);
                        i += len;
                    }
                    None => {
                        // A cut escape: the rest is replaced.
                        self.out.push(char::REPLACEMENT_CHARACTER);
                        i = v.len();
                    }
                }
                continue;
            }
            if b < 0x20 || b == 0x7F {
                // A control character: the initial sets are active again (PS3.5 6.1.2.5.3).
                self.out.push(char::from(b));
                state = initial;
                i += 1;
                continue;
            }
            if b < 0x80 {
                match state.g0 {
                    G0::Ascii | G0::Romaji => {
                        if (multi && b == b'\\') || (pn && (b == b'^' || b == b'=')) {
                            state = initial;
                        }
                        self.out.push(char::from(b));
                        i += 1;
                    }
                    G0::Jis0208 | G0::Jis0212 => {
                        if b == b' ' {
                            self.out.push(' ');
                            i += 1;
                            continue;
                        }
                        let end = v[i..].iter().position(|&c| !(0x21..0x7F).contains(&c)).map_or(v.len(), |n| i + n);
                        self.run.clear();
                        for pair in v[i..end].chunks(2) {
                            if state.g0 == G0::Jis0212 && pair.len() == 2 {
                                self.run.push(0x8F);
                            }
                            self.run.extend(pair.iter().map(|&c| c | 0x80));
                        }
                        self.flush(encoding_rs::EUC_JP);
                        i = end;
                    }
                }
                continue;
            }
            let end = v[i..].iter().position(|&c| c < 0x80).map_or(v.len(), |n| i + n);
            match state.g1 {
                G1::Single(enc) => {
                    self.run.clear();
                    self.run.extend_from_slice(&v[i..end]);
                    self.flush(enc);
                }
                G1::Katakana => {
                    for &c in &v[i..end] {
                        let k = (0xA1..=0xDF)
                            .contains(&c)
                            .then(|| char::from_u32(0xFF61 + u32::from(c - 0xA1)))
                            .flatten()
                            .unwrap_or(char::REPLACEMENT_CHARACTER);
                        self.out.push(k);
                    }
                }
                G1::Ksx1001 | G1::Gb2312 => {
                    self.run.clear();
                    self.run.extend_from_slice(&v[i..end]);
                    self.flush(if state.g1 == G1::Ksx1001 { encoding_rs::EUC_KR } else { encoding_rs::GBK });
                }
                G1::None => {
                    self.run.clear();
                    self.run.extend_from_slice(&v[i..end]);
                    self.flush(self.fallback);
                }
            }
            i = end;
        }
        crate::phi::wipe(&mut self.run);
        self.out
    }

    /// Decodes the scratch run with `enc` onto the output, and wipes the run.
    fn flush(&mut self, enc: &'static encoding_rs::Encoding) {
        let (text, _) = enc.decode_without_bom_handling(&self.run);
        self.out.push_str(&text);
        if let std::borrow::Cow::Owned(mut s) = text {
            crate::phi::wipe_string(&mut s);
        }
        crate::phi::wipe_keep(&mut self.run);
    }
}

/// What an escape sequence designates.
#[derive(Debug, Clone, Copy)]
enum Switch {
    G0(G0),
    G1(G1),
}

impl Switch {
    fn apply(self, state: &mut State) {
        match self {
            Self::G0(g) => state.g0 = g,
            Self::G1(g) => state.g1 = g,
        }
    }
}

/// The escape sequence at the start of `v` (ISO 2022: ESC, intermediates 0x20-0x2F, a final
/// 0x30-0x7E): its length and what it designates (None: unknown); None when cut.
fn escape(v: &[u8]) -> Option<(usize, Option<Switch>)> {
    let n = v.iter().skip(1).position(|&b| !(0x20..0x30).contains(&b))? + 1;
    let last = *v.get(n)?;
    if !(0x30..0x7F).contains(&last) {
        // Not an escape sequence: the ESC alone is replaced.
        return Some((1, None));
    }
    let seq = &v[1..=n];
    let switch = match seq {
        b"(B" => Some(Switch::G0(G0::Ascii)),
        b"(J" => Some(Switch::G0(G0::Romaji)),
        b")I" => Some(Switch::G1(G1::Katakana)),
        b"$B" => Some(Switch::G0(G0::Jis0208)),
        b"$(D" => Some(Switch::G0(G0::Jis0212)),
        b"$)C" => Some(Switch::G1(G1::Ksx1001)),
        b"$)A" => Some(Switch::G1(G1::Gb2312)),
        [b'-', f] => {
            let number: &[u8] = match f {
                b'A' => b"100",
                b'B' => b"101",
                b'C' => b"109",
                b'D' => b"110",
                b'L' => b"144",
                b'G' => b"127",
                b'F' => b"126",
                b'H' => b"138",
                b'M' => b"148",
                b'b' => b"203",
                b'T' => b"166",
                _ => b"",
            };
            single_byte(number).map(|e| Switch::G1(G1::Single(e)))
        }
        _ => None,
    };
    Some((n + 1, switch))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cs(term: &str) -> Charset {
        Charset::from_value(term.as_bytes())
    }

    #[test]
    fn single_byte_sets_decode_whole_values() {
        assert_eq!(cs("ISO_IR 100").decode(Vr(*b"PN"), b"M\xfcller^Zo\xe9"), "Müller^Zoé");
        assert_eq!(cs("ISO_IR 192").decode(Vr(*b"LO"), "Ærøskøbing".as_bytes()), "Ærøskøbing");
        assert_eq!(cs("ISO_IR 144").decode(Vr(*b"PN"), b"\xbb\xee\xda\xd0"), "Люка");
        assert_eq!(cs("ISO_IR 126").decode(Vr(*b"PN"), b"\xc4\xe9\xef"), "Διο");
        assert_eq!(cs("ISO_IR 138").decode(Vr(*b"PN"), b"\xf9\xf8\xe4"), "שרה");
        assert_eq!(cs("ISO_IR 127").decode(Vr(*b"LO"), b"\xe2\xc8\xd1"), "قبر");
        assert_eq!(Charset::default().decode(Vr(*b"LO"), b"caf\xe9"), "café");
        assert!(cs("ISO_IR 192").is_utf8());
        assert!(!cs("ISO 2022 IR 6\\ISO 2022 IR 87").is_utf8());
    }

    #[test]
    fn iso_2022_latin_parts_switch_g1() {
        // Value 1 ISO 2022 IR 100, then Cyrillic and Greek designated into G1.
        let c = cs("ISO 2022 IR 100\\ISO 2022 IR 144\\ISO 2022 IR 126");
        assert_eq!(c.decode(Vr(*b"LO"), b"\xe9\x1b-L\xbb\xee\x1b-F\xc4"), "éЛюΔ");
        // The value delimiter resets G1 to value 1's set.
        assert_eq!(c.decode(Vr(*b"LO"), b"\x1b-L\xbb\\\xe9"), "Л\\é");
    }

    #[test]
    fn japanese_jis_x_0208_and_0212() {
        let c = cs("\\ISO 2022 IR 87");
        // "Yamada^Tarou=" in kanji (JIS X 0208 rows 0x3B33, 0x4544 / 0x4240, 0x4F3A).
        let v = b"Yamada^Tarou=\x1b$B;3ED\x1b(B^\x1b$BB@O:\x1b(B";
        assert_eq!(c.decode(Vr(*b"PN"), v), "Yamada^Tarou=山田^太郎");
        // JIS X 0212 (0x3021: the first row-16 character of the supplementary set).
        let c = cs("ISO 2022 IR 6\\ISO 2022 IR 159");
        assert_eq!(c.decode(Vr(*b"LO"), b"\x1b$(D\x30\x21\x1b(B"), "丂");
        // A 0x5C inside a two-byte character is not the value delimiter (JIS X 0208 0x305C).
        let c = cs("\\ISO 2022 IR 87");
        let d = c.decode(Vr(*b"LO"), b"\x1b$B\x30\x5c\x1b(B\\A");
        assert_eq!(d.split('\\').count(), 2, "one delimiter");
        assert!(d.ends_with("\\A"));
    }

    #[test]
    fn japanese_jis_x_0201_katakana_and_romaji() {
        let c = cs("ISO 2022 IR 13\\ISO 2022 IR 87");
        // Half-width katakana in G1 from value 1: ﾔﾏﾀﾞ (0xD4 0xCF 0xC0 0xDE).
        assert_eq!(c.decode(Vr(*b"PN"), b"\xd4\xcf\xc0\xde^\xc0\xdb\xb3"), "ﾔﾏﾀﾞ^ﾀﾛｳ");
        // ESC ( J: Romaji in G0, decoded as ASCII.
        assert_eq!(c.decode(Vr(*b"LO"), b"\x1b(JAB\x1b(B"), "AB");
        // A bad katakana byte is replaced.
        assert_eq!(c.decode(Vr(*b"LO"), b"\xe0"), "\u{FFFD}");
    }

    #[test]
    fn korean_and_chinese_in_g1() {
        // "Hong^Gildong=" then KS X 1001 (EUC-KR 0xC8AB 0xB1E6 0xB5BF: 홍 길 동).
        let c = cs("\\ISO 2022 IR 149");
        let v = b"Hong^Gildong=\x1b$)C\xc8\xab^\x1b$)C\xb1\xe6\xb5\xbf";
        assert_eq!(c.decode(Vr(*b"PN"), v), "Hong^Gildong=홍^길동");
        // GB 2312 (0xD5C5 0xC8FD: 张 三).
        let c = cs("ISO 2022 IR 6\\ISO 2022 IR 58");
        assert_eq!(c.decode(Vr(*b"PN"), b"Zhang^San=\x1b$)A\xd5\xc5^\x1b$)A\xc8\xfd"), "Zhang^San=张^三");
    }

    #[test]
    fn resets_at_delimiters_and_controls() {
        let c = cs("\\ISO 2022 IR 149");
        // Without a designation after `^`, the initial set (ASCII, no G1) holds: the high
        // bytes are not Korean any more.
        let d = c.decode(Vr(*b"PN"), b"\x1b$)C\xc8\xab^\xc8\xab");
        assert!(d.starts_with("홍^"));
        assert!(!d.ends_with('홍'));
        // `=` and `\` (multi-valued) reset too; CR, LF, FF and TAB in a text VR.
        let j = cs("\\ISO 2022 IR 87");
        for sep in [b"\r".as_slice(), b"\n", b"\x0c", b"\t"] {
            let mut v = b"\x1b$B;3".to_vec();
            v.extend_from_slice(sep);
            v.extend_from_slice(b";3");
            let d = j.decode(Vr(*b"LT"), &v);
            assert!(d.starts_with('山'), "kanji before the control");
            assert!(d.ends_with(";3"), "ASCII after the control");
        }
        let k = cs("\\ISO 2022 IR 149");
        let d = k.decode(Vr(*b"LO"), b"\x1b$)C\xc8\xab\\\xc8\xab");
        assert_eq!(d.split('\\').next(), Some("홍"));
        assert_ne!(d.split('\\').nth(1), Some("홍"));
        let d = k.decode(Vr(*b"PN"), b"\x1b$)C\xc8\xab=\xc8\xab");
        assert_eq!(d.split('=').next(), Some("홍"));
        assert_ne!(d.split('=').nth(1), Some("홍"));
        // In ST the backslash is text, not a delimiter: the state holds... until the writer
        // switches back.
        let d = j.decode(Vr(*b"ST"), b"\x1b$B;3\x1b(B\\");
        assert_eq!(d, "山\\");
        // `^` is no delimiter outside PN.
        let k = cs("ISO 2022 IR 6\\ISO 2022 IR 149");
        assert_eq!(k.decode(Vr(*b"LO"), b"\x1b$)C\xc8\xab^\xc8\xab"), "홍^홍");
    }

    #[test]
    fn malformed_escapes_never_panic() {
        let c = cs("ISO 2022 IR 6\\ISO 2022 IR 87");
        assert_eq!(c.decode(Vr(*b"LO"), b"A\x1b"), "A\u{FFFD}");
        assert_eq!(c.decode(Vr(*b"LO"), b"A\x1b$"), "A\u{FFFD}");
        assert_eq!(c.decode(Vr(*b"LO"), b"A\x1b$)ZB"), "A\u{FFFD}B");
        assert_eq!(c.decode(Vr(*b"LO"), b"\x1b\x01B"), "\u{FFFD}\u{1}B");
        // A lone half of a two-byte character.
        assert_eq!(c.decode(Vr(*b"LO"), b"\x1b$B;"), "\u{FFFD}");
        let k = cs("\\ISO 2022 IR 149");
        assert_eq!(k.decode(Vr(*b"LO"), b"\x1b$)C\xc8"), "\u{FFFD}");
        // Every byte string of a few bytes decodes without a panic.
        for a in 0..=255u8 {
            for b in [0x1B, b'$', b'(', b')', b'B', 0xA1, 0x21, b'\\'] {
                let _ = k.decode(Vr(*b"PN"), &[0x1B, a, b, 0xC8]);
                let _ = c.decode(Vr(*b"PN"), &[a, 0x1B, b'$', b]);
            }
        }
    }
}
