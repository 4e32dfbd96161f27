//! Secret keys and the keyed derivations built on them (HMAC-SHA-256).
//!
//! Two features need a key: `convert` derives resource ids from identifiers (`--id-key-file`), and
//! `redact` hashes, pseudonymizes and shifts dates (`--key-file`). Both go through [`Key::mac`]:
//! never a bare hash of a value, which anyone could recompute from a guessed MRN.
//!
//! A key is read from a file, never from argv (argv is visible to every process on the host). The
//! file holds at least [`Key::MIN_BYTES`] bytes of secret; one trailing newline (LF or CR LF) is
//! not part of the key, so `head -c 32 /dev/urandom | base64 > key` and an editor-saved file
//! agree. The bytes live in a zeroizing [`SecretBox`] and have no `Display`, `Debug` shows a
//! placeholder.
//!
//! Every derivation is domain-separated (a fixed label per purpose) and its parts are
//! length-prefixed, so `("ab", "c")` and `("a", "bc")` never collide.
//!
//! What it does not do: generate keys (use the operating system's random source), or store them.

use std::fmt;
use std::io::Read;
use std::path::Path;

use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretBox};
use sha2::Sha256;
use zeroize::Zeroize;

use crate::diag::Code;
use crate::error::{Error, from_read_io};

type HmacSha256 = Hmac<Sha256>;

/// A secret key for keyed derivations.
pub struct Key {
    bytes: SecretBox<Vec<u8>>,
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key([REDACTED])")
    }
}

impl Key {
    /// Fewest secret bytes a key may hold (128 bits).
    pub const MIN_BYTES: usize = 16;
    /// Most bytes a key file may hold.
    pub const MAX_BYTES: usize = 4096;

    /// Reads a key file. A missing or unreadable file is `CLI_NO_INPUT`; a file too short or
    /// too long is `CLI_KEY_INVALID`. Neither error shows the path or the content.
    pub fn from_file(path: &Path) -> Result<Key, Error> {
        let file = std::fs::File::open(path).map_err(|e| from_read_io(&e))?;
        let mut buf = Vec::new();
        let read = file.take(Self::MAX_BYTES as u64 + 1).read_to_end(&mut buf);
        if let Err(e) = read {
            buf.zeroize();
            return Err(from_read_io(&e));
        }
        if buf.len() > Self::MAX_BYTES {
            buf.zeroize();
            return Err(Error::new(Code::CLI_KEY_INVALID));
        }
        Key::from_bytes(buf)
    }

    /// A key from bytes (one trailing LF or CR LF is dropped). Too short or too long is
    /// `CLI_KEY_INVALID`; the bytes are zeroized either way.
    pub fn from_bytes(mut bytes: Vec<u8>) -> Result<Key, Error> {
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
            if bytes.last() == Some(&b'\r') {
                bytes.pop();
            }
        }
        if bytes.len() < Self::MIN_BYTES || bytes.len() > Self::MAX_BYTES {
            bytes.zeroize();
            return Err(Error::new(Code::CLI_KEY_INVALID));
        }
        Ok(Key { bytes: SecretBox::new(Box::new(bytes)) })
    }

    /// HMAC-SHA-256 over a purpose label and length-prefixed parts.
    ///
    /// `domain` names the purpose (`"phiward/convert/resource-id/v1"`, `"phiward/redact/hash/v1"`,
    /// ...) so that a value hashed for one purpose cannot be matched against another.
    pub fn mac(&self, domain: &str, parts: &[&[u8]]) -> [u8; 32] {
        // HMAC accepts keys of any length; new_from_slice cannot fail for it.
        let mut mac = match HmacSha256::new_from_slice(self.bytes.expose_secret()) {
            Ok(m) => m,
            Err(_) => unreachable_hmac(),
        };
        feed(&mut mac, domain.as_bytes());
        for part in parts {
            feed(&mut mac, part);
        }
        mac.finalize().into_bytes().into()
    }

    /// The SHA-256 digest of the key, as lower-case hex: a key identity a manifest can record
    /// without revealing the key. Domain-separated from every [`Key::mac`] use.
    pub fn fingerprint(&self) -> String {
        use sha2::Digest;
        let mut h = Sha256::new();
        h.update(b"phiward/key-fingerprint/v1\0");
        h.update(self.bytes.expose_secret());
        hex(&h.finalize())
    }
}

fn feed(mac: &mut HmacSha256, part: &[u8]) {
    mac.update(&(part.len() as u64).to_be_bytes());
    mac.update(part);
}

#[cold]
fn unreachable_hmac() -> ! {
    // Hmac::new_from_slice only fails for fixed-key-size MACs; HMAC has none.
    std::panic::panic_any(Code::CLI_INTERNAL)
}

/// SHA-256 of bytes, lower-case hex (for digests of policy files and other non-secret data).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex(&Sha256::digest(bytes))
}

/// Lower-case hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    s
}

/// The first eight bytes of a MAC as an unsigned integer (for keyed choices: a date shift in a
/// range, a pseudonym from a list).
pub fn mac_u64(mac: &[u8; 32]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&mac[..8]);
    u64::from_be_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key::from_bytes(b"0123456789abcdef0123456789abcdef\n".to_vec()).expect("a 32-byte key")
    }

    #[test]
    fn rfc4231_case_2_shape() {
        // RFC 4231 test case 2 ("Jefe", "what do ya want for nothing?") through the raw HMAC,
        // to pin the primitive; Key itself refuses a 4-byte key.
        let mut m = HmacSha256::new_from_slice(b"Jefe").expect("any key length");
        m.update(b"what do ya want for nothing?");
        assert_eq!(hex(&m.finalize().into_bytes()), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }

    #[test]
    fn parts_are_length_prefixed_and_domain_separated() {
        let k = key();
        assert_ne!(k.mac("d", &[b"ab", b"c"]), k.mac("d", &[b"a", b"bc"]));
        assert_ne!(k.mac("d1", &[b"x"]), k.mac("d2", &[b"x"]));
        assert_eq!(k.mac("d", &[b"x"]), key().mac("d", &[b"x"]));
    }

    #[test]
    fn short_and_long_keys_are_refused_and_newline_is_trimmed() {
        assert_eq!(Key::from_bytes(b"short\n".to_vec()).expect_err("too short").code(), Code::CLI_KEY_INVALID);
        assert_eq!(Key::from_bytes(vec![b'a'; 5000]).expect_err("too long").code(), Code::CLI_KEY_INVALID);
        let a = Key::from_bytes(b"0123456789abcdef0123456789abcdef\r\n".to_vec()).expect("a 32-byte key");
        assert_eq!(a.mac("d", &[]), key().mac("d", &[]));
        assert_eq!(format!("{a:?}"), "Key([REDACTED])");
    }
}
