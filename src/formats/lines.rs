//! Line and column of a byte offset in a record, for the positions of findings
//! (`codec::Position`). A line ends at CR, LF or CR LF (HL7 v2 segments end with CR; JSON and
//! XML files with LF or CR LF); lines and columns are 1-based, a column counts characters
//! (UTF-8 sequences), not bytes.
//!
//! Built once per record and only when it has findings to place: one pass over the record with
//! `memchr`, then a binary search per finding.
//!
//! What it does not do: look at what a line holds; it returns numbers only.

use super::codec::Position;

/// The start of every line of a record.
#[derive(Debug, Default)]
pub struct Lines {
    starts: Vec<u32>,
}

impl Lines {
    /// The line starts of `bytes`.
    pub fn new(bytes: &[u8]) -> Self {
        let mut starts = vec![0u32];
        let mut prev_cr = false;
        for i in memchr::memchr2_iter(b'\r', b'\n', bytes) {
            let b = bytes[i];
            // The LF of a CR LF ends the line the CR ended.
            if b == b'\n' && prev_cr && starts.last() == Some(&(i as u32)) {
                if let Some(last) = starts.last_mut() {
                    *last = i as u32 + 1;
                }
                prev_cr = false;
                continue;
            }
            prev_cr = b == b'\r';
            starts.push(i as u32 + 1);
        }
        Lines { starts }
    }

    /// The 1-based line and column of `offset` in `bytes` (the bytes the index was built on).
    pub fn position(&self, bytes: &[u8], offset: u64) -> Position {
        let offset = u32::try_from(offset).unwrap_or(u32::MAX).min(bytes.len() as u32);
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts.get(line - 1).copied().unwrap_or(0);
        let column =
            bytes.get(start as usize..offset as usize).map_or(0, |l| l.iter().filter(|&&b| b & 0xC0 != 0x80).count());
        Position { line: line as u32, column: column as u32 + 1 }
    }

    /// The 1-based line of `offset`.
    pub fn line(&self, offset: u64) -> u32 {
        let offset = u32::try_from(offset).unwrap_or(u32::MAX);
        self.starts.partition_point(|&s| s <= offset).max(1) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_at_cr_lf_or_crlf_and_columns_count_characters() {
        let text = "ab\r\ncd\ref\ngé h\n\nx".as_bytes();
        let lines = Lines::new(text);
        let at = |o: u64| {
            let p = lines.position(text, o);
            (p.line, p.column)
        };
        assert_eq!(at(0), (1, 1));
        assert_eq!(at(1), (1, 2));
        assert_eq!(at(4), (2, 1));
        assert_eq!(at(7), (3, 1));
        assert_eq!(at(10), (4, 1));
        // `g`, `é` (two bytes), ` `, then `h`.
        assert_eq!(at(14), (4, 4));
        assert_eq!(at(17), (6, 1));
        assert_eq!(lines.line(17), 6);
    }
}
