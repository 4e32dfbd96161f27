//! A regular file as a codec's input: read through a buffer like any stream, and able to skip
//! bytes without reading them (a seek), which a codec that does not need some bytes (DICOM bulk
//! values under `parse`, `validate`, `inspect`) uses instead of reading them through.
//!
//! The pipeline reads the input's first bytes (the detection prefix) before it knows the
//! format; [`FileInput`] gives those out first, from the buffer they were read into (not copied
//! again), then the rest of the file.
//!
//! What it does not do: open the file (see `ops`), or know what it reads. A skip never goes past
//! the length the file had when it was opened: what is skipped is what reading through would
//! have given (a file that grows meanwhile is read through from there, one that shrinks is read
//! to its new end).

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};

/// The read buffer of a file after its prefix.
const BUFFER: usize = 64 * 1024;

/// What a [`FileInput`] reads: a regular file (a `Cursor` in tests).
pub trait SeekRead: Read + Seek {}

impl<T: Read + Seek> SeekRead for T {}

/// A regular file read from its start, its first bytes read already.
pub struct FileInput {
    /// The first bytes, read before (the detection prefix).
    prefix: Vec<u8>,
    /// How much of `prefix` was given out.
    at: usize,
    /// `None` once handed to [`FileInput::into_stream`].
    file: Option<Box<dyn SeekRead>>,
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
    /// The file's offset of its cursor.
    cursor: u64,
    /// The file's length when it was opened.
    len: u64,
}

crate::debug_placeholder!(FileInput);

impl Drop for FileInput {
    fn drop(&mut self) {
        crate::phi::wipe(&mut self.prefix);
        crate::phi::wipe(&mut self.buf);
    }
}

impl FileInput {
    /// A regular file of `len` bytes whose first bytes, `prefix`, were read from it already
    /// (its cursor is at `prefix.len()`).
    pub fn new(prefix: Vec<u8>, file: impl SeekRead + 'static, len: u64) -> Self {
        let cursor = prefix.len() as u64;
        FileInput { prefix, at: 0, file: Some(Box::new(file)), buf: Vec::new(), pos: 0, filled: 0, cursor, len }
    }

    /// The file's length when it was opened.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// The input as a plain stream, read as any other input is: the prefix, then the file,
    /// through a buffer of `capacity` bytes. Only before anything was read.
    pub fn into_stream(mut self, capacity: usize) -> Box<dyn BufRead> {
        let prefix = std::mem::take(&mut self.prefix);
        match self.file.take() {
            Some(file) => Box::new(BufReader::with_capacity(capacity, io::Cursor::new(prefix).chain(file))),
            None => Box::new(io::Cursor::new(prefix)),
        }
    }

    /// The whole input, read into one buffer of the file's length (the prefix, then the rest of
    /// the file to its end). Only before anything was read.
    pub fn read_whole(mut self) -> io::Result<Vec<u8>> {
        let len = usize::try_from(self.len).unwrap_or(0).max(self.prefix.len());
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&self.prefix);
        if let Some(file) = &mut self.file {
            file.read_to_end(&mut out)?;
        }
        Ok(out)
    }

    /// Skips up to `n` bytes, seeking past what is not buffered; returns how many were skipped
    /// (fewer than `n` only at the end of the input).
    pub fn skip(&mut self, n: u64) -> u64 {
        let mut left = n;
        let from_prefix = (self.prefix.len() - self.at).min(usize::try_from(left).unwrap_or(usize::MAX));
        self.at += from_prefix;
        left -= from_prefix as u64;
        let from_buf = (self.filled - self.pos).min(usize::try_from(left).unwrap_or(usize::MAX));
        self.pos += from_buf;
        left -= from_buf as u64;
        if left == 0 {
            return n;
        }
        let seek = left.min(self.len.saturating_sub(self.cursor));
        if let Ok(step) = i64::try_from(seek)
            && step > 0
            && let Some(file) = &mut self.file
            && file.seek(SeekFrom::Current(step)).is_ok()
        {
            self.cursor += seek;
            left -= seek;
        }
        // Past the length the file had (it grew), or the seek failed: read through.
        while left > 0 {
            let take = match self.fill_buf() {
                Ok(b) if !b.is_empty() => b.len().min(usize::try_from(left).unwrap_or(usize::MAX)),
                _ => break,
            };
            self.consume(take);
            left -= take as u64;
        }
        n - left
    }
}

impl Read for FileInput {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let chunk = self.fill_buf()?;
        let n = chunk.len().min(out.len());
        out[..n].copy_from_slice(&chunk[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for FileInput {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.at < self.prefix.len() {
            return Ok(&self.prefix[self.at..]);
        }
        if self.pos == self.filled {
            let Some(file) = &mut self.file else { return Ok(&[]) };
            if self.buf.is_empty() {
                // At the end already (a skip went there): asked without a buffer, which is
                // then not made (a 64 KiB buffer zeroed, then wiped, for every header read).
                if self.cursor >= self.len {
                    let mut probe = [0u8; 64];
                    let n = read_some(file, &mut probe)?;
                    if n == 0 {
                        return Ok(&[]);
                    }
                    self.buf = vec![0; BUFFER];
                    self.buf[..n].copy_from_slice(&probe[..n]);
                    probe.fill(0);
                    self.cursor += n as u64;
                    (self.pos, self.filled) = (0, n);
                    return Ok(&self.buf[..n]);
                }
                self.buf = vec![0; BUFFER];
            }
            let n = read_some(file, &mut self.buf)?;
            self.cursor += n as u64;
            (self.pos, self.filled) = (0, n);
        }
        Ok(&self.buf[self.pos..self.filled])
    }

    fn consume(&mut self, n: usize) {
        if self.at < self.prefix.len() {
            self.at = (self.at + n).min(self.prefix.len());
        } else {
            self.pos = (self.pos + n).min(self.filled);
        }
    }
}

/// One read (again when interrupted).
fn read_some(file: &mut dyn SeekRead, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match file.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
