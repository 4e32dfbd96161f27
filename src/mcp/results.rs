//! The result store: the data of replies asked for with `deliver: resource` or `deliver: link`,
//! kept in this process's memory for the session, each under its own URI
//! (`phiward://result/<n>`, `n` counted from 1 per session: a URI says nothing of the data), and
//! read back with `resources/read`.
//!
//! A stored text is exactly the `data` the reply would have carried inline, whole (selection
//! and findings filters applied, no paging), produced under the server's policy like any reply:
//! reading it back discloses nothing a call did not. Nothing is written to disk.
//!
//! Bounded: at most [`MAX_RESULTS`] texts and [`MAX_BYTES`] bytes; the oldest go first to make
//! room, and a URI whose text has gone reads as an unknown resource. A text larger than
//! [`MAX_BYTES`] is not stored: the call fails with `CLI_RESULT_TOO_LARGE`. The texts' memory
//! is wiped when they leave the store.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use zeroize::Zeroizing;

/// The scheme and path of every stored result's URI.
pub const URI_PREFIX: &str = "phiward://result/";

/// Most results kept at once.
pub const MAX_RESULTS: usize = 32;

/// Most bytes kept at once, and the largest result stored.
pub const MAX_BYTES: usize = 256 * 1024 * 1024;

/// The store of one server (cloned handles share it).
#[derive(Debug, Clone)]
pub struct Results {
    inner: Arc<Mutex<Store>>,
}

impl Default for Results {
    fn default() -> Results {
        Results::with_caps(MAX_RESULTS, MAX_BYTES)
    }
}

#[derive(Debug)]
struct Store {
    max_results: usize,
    max_bytes: usize,
    /// The last number given.
    last: u64,
    /// Oldest first.
    kept: VecDeque<(u64, Arc<Zeroizing<String>>)>,
    bytes: usize,
}

impl Results {
    /// A store of at most `max_results` texts and `max_bytes` bytes.
    fn with_caps(max_results: usize, max_bytes: usize) -> Results {
        let store = Store { max_results, max_bytes, last: 0, kept: VecDeque::new(), bytes: 0 };
        Results { inner: Arc::new(Mutex::new(store)) }
    }

    /// Keeps `text` and returns its URI; `None` when it is larger than the store.
    pub fn put(&self, text: String) -> Option<String> {
        let len = text.len();
        let text = Zeroizing::new(text);
        let mut store = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if len > store.max_bytes {
            return None;
        }
        while !store.kept.is_empty() && (store.kept.len() >= store.max_results || store.bytes + len > store.max_bytes) {
            if let Some((_, old)) = store.kept.pop_front() {
                store.bytes -= old.len();
            }
        }
        store.last += 1;
        let n = store.last;
        store.kept.push_back((n, Arc::new(text)));
        store.bytes += len;
        Some(format!("{URI_PREFIX}{n}"))
    }

    /// The text kept under `uri`, when it is one of ours and still kept.
    pub fn get(&self, uri: &str) -> Option<Arc<Zeroizing<String>>> {
        let n = number(uri)?;
        let store = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        store.kept.iter().find(|(k, _)| *k == n).map(|(_, t)| Arc::clone(t))
    }
}

/// The number of a result URI: `phiward://result/` then digits without a leading zero.
fn number(uri: &str) -> Option<u64> {
    let digits = uri.strip_prefix(URI_PREFIX)?;
    if digits.is_empty() || digits.len() > 19 || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_kept_under_their_own_numbers_and_read_back() {
        let r = Results::default();
        let a = r.put("{\"a\":1}".to_owned()).expect("small");
        let b = r.put("{\"b\":2}".to_owned()).expect("small");
        assert_eq!(a, "phiward://result/1");
        assert_eq!(b, "phiward://result/2");
        assert_eq!(r.get(&a).expect("kept").as_str(), "{\"a\":1}");
        assert_eq!(r.get(&b).expect("kept").as_str(), "{\"b\":2}");
        for bad in ["phiward://result/3", "phiward://result/01", "phiward://result/", "phiward://result/1x", "x"] {
            assert!(r.get(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_oldest_results_go_first_and_the_store_stays_bounded() {
        let r = Results::default();
        let uris: Vec<String> = (0..MAX_RESULTS + 3).map(|i| r.put(format!("{i}")).expect("small")).collect();
        assert!(r.get(&uris[0]).is_none());
        assert!(r.get(&uris[2]).is_none());
        assert_eq!(r.get(&uris[3]).expect("kept").as_str(), "3");
        assert_eq!(r.get(&uris[MAX_RESULTS + 2]).expect("kept").as_str(), format!("{}", MAX_RESULTS + 2));
        let store = r.inner.lock().expect("not poisoned");
        assert_eq!(store.kept.len(), MAX_RESULTS);
    }

    #[test]
    fn bytes_are_bounded_too() {
        let r = Results::with_caps(MAX_RESULTS, 100);
        let first = r.put("x".repeat(50)).expect("fits");
        let second = r.put("x".repeat(50)).expect("fits");
        assert!(r.get(&first).is_some());
        let third = r.put("y".to_owned()).expect("fits");
        assert!(r.get(&first).is_none(), "the oldest made room");
        assert!(r.get(&second).is_some() && r.get(&third).is_some());
        assert!(r.put("z".repeat(101)).is_none());
        assert!(r.get(&second).is_some(), "a refused text takes nothing out");
    }
}
