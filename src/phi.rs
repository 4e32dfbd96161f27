//! The boundary type: every field value of a message is a `Phi`.
//!
//! A [`Phi<T>`] owns a value and zeroizes it on drop (it is built on `secrecy::SecretBox`). A
//! [`PhiBytes<'a>`] is a borrowed span of a zeroizing message buffer, so a parser can keep one
//! buffer per message and hand out spans without an allocation per field.
//!
//! Neither type implements `Display`, `Serialize` or `Clone`; their `Debug` prints a placeholder.
//! There are exactly two ways to read the value, both explicit and greppable:
//!
//! - [`Phi::expose_value`] / [`PhiBytes::expose_value`] take a [`Disclosure`], a capability that
//!   only `ops` creates, for operations whose purpose is to return data, and that only the
//!   data-channel writers receive. Diagnostics, errors and logs never hold one.
//! - [`Phi::classify`] / [`PhiBytes::classify`] run a function over the value that may only
//!   return a [`ValueFree`] type (a flag, a code, a small enum): this is how validators look at a
//!   value without being able to carry it anywhere.
//!
//! What this module does not do: decide *whether* a value may be disclosed (that is the policy's
//! job, in `ops`), or encode values (that is the data-channel writer's job).

use std::fmt;

use secrecy::{ExposeSecret, ExposeSecretMut, SecretBox};
use zeroize::Zeroize;

/// Zeroizes a byte buffer's whole allocation (its bytes and its spare capacity) and releases it.
///
/// What `Zeroize::zeroize` does for a `Vec<u8>`, at memory speed: `zeroize` writes the bytes of
/// a `Vec` one volatile store at a time (about 5% of the CPU of `parse --json` on a stream), while
/// its slice path used here writes them in bulk and then an optimization barrier keeps the
/// writes. The allocation is released afterwards, so nothing is left to zeroize again.
pub fn wipe(buf: &mut Vec<u8>) {
    let mut owned = std::mem::take(buf);
    wipe_keep(&mut owned);
}

/// [`wipe`] that keeps the allocation (empty, zeroed) for reuse: a scratch buffer.
pub fn wipe_keep(buf: &mut Vec<u8>) {
    buf.clear();
    // With the length at 0, the spare capacity is the whole allocation.
    buf.spare_capacity_mut().zeroize();
}

/// A scratch buffer of message bytes, wiped in bulk ([`wipe`]) when dropped: what
/// `zeroize::Zeroizing<Vec<u8>>` does, without its one volatile store per byte (a redacted
/// DICOM file is a buffer of 100s of KB).
#[derive(Default)]
pub struct Scratch(Vec<u8>);

crate::debug_placeholder!(Scratch);

impl From<Vec<u8>> for Scratch {
    fn from(bytes: Vec<u8>) -> Scratch {
        Scratch(bytes)
    }
}

impl Scratch {
    /// An empty buffer with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Scratch {
        Scratch(Vec::with_capacity(capacity))
    }
}

impl std::ops::Deref for Scratch {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.0
    }
}

impl std::ops::DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        wipe(&mut self.0);
    }
}

/// [`wipe`] for a `String` (its bytes moved into a `Vec`, without a copy, then wiped).
pub fn wipe_string(text: &mut String) {
    let mut bytes = std::mem::take(text).into_bytes();
    wipe(&mut bytes);
}

/// A value type a [`Phi`] can own: zeroizable, with a fast wipe.
pub trait Wipe: Zeroize {
    /// Zeroizes the value in bulk (and may release its allocation).
    fn wipe(&mut self);
}

impl Wipe for Vec<u8> {
    fn wipe(&mut self) {
        wipe(self);
    }
}

impl Wipe for String {
    fn wipe(&mut self) {
        wipe_string(self);
    }
}

/// An owned message value, zeroized on drop, never displayed or serialized.
pub struct Phi<T: Wipe>(SecretBox<T>);

impl<T: Wipe> Drop for Phi<T> {
    fn drop(&mut self) {
        // Wiped in bulk here; `SecretBox` then zeroizes what is left (an empty value).
        self.0.expose_secret_mut().wipe();
    }
}

impl<T: Wipe> Phi<T> {
    /// Wraps a value.
    pub fn new(value: T) -> Self {
        Phi(SecretBox::new(Box::new(value)))
    }

    /// Reads the value for the data channel. Requires the disclosure capability.
    pub fn expose_value(&self, _disclosure: &Disclosure) -> &T {
        self.0.expose_secret()
    }

    /// Runs `check` over the value; the result can only be a value-free type.
    pub fn classify<R: ValueFree>(&self, check: impl FnOnce(&T) -> R) -> R {
        check(self.0.expose_secret())
    }

    /// Borrows the value as a span, for owners such as a message buffer.
    pub(crate) fn span(&self) -> PhiBytes<'_>
    where
        T: AsRef<[u8]>,
    {
        PhiBytes(self.0.expose_secret().as_ref())
    }
}

impl<T: Wipe> fmt::Debug for Phi<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Phi(<redacted>)")
    }
}

/// A borrowed span of message bytes (inside a zeroizing buffer owned by a [`Phi`]).
#[derive(Copy, Clone)]
pub struct PhiBytes<'a>(&'a [u8]);

impl<'a> PhiBytes<'a> {
    /// Reads the bytes for the data channel. Requires the disclosure capability.
    pub fn expose_value(self, _disclosure: &Disclosure) -> &'a [u8] {
        self.0
    }

    /// Runs `check` over the bytes; the result can only be a value-free type.
    pub fn classify<R: ValueFree>(self, check: impl FnOnce(&[u8]) -> R) -> R {
        check(self.0)
    }

    /// True when the span holds no byte. Emptiness is structure, not content.
    pub fn is_empty(self) -> bool {
        self.0.is_empty()
    }

    /// A sub-span; `range` is clamped to the span.
    pub(crate) fn slice(self, start: usize, end: usize) -> PhiBytes<'a> {
        let end = end.min(self.0.len());
        let start = start.min(end);
        PhiBytes(&self.0[start..end])
    }

    /// Crate-internal raw access for the parsers that build structure out of the bytes.
    /// Only `formats::*` lexers use it; the architecture test pins where.
    pub(crate) fn raw(self) -> &'a [u8] {
        self.0
    }
}

impl fmt::Debug for PhiBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PhiBytes(<redacted>)")
    }
}

/// The capability to turn a value into output bytes.
///
/// Created only by `ops` (for parse, fmt, convert, redact and the `--unsafe-show-values` door),
/// after the policy has decided. It is neither `Clone` nor `Copy`: it is lent, by reference, to
/// the data-channel writer for the length of one operation.
#[derive(Debug)]
pub struct Disclosure {
    _private: (),
}

impl Disclosure {
    /// Grants disclosure. Called only from `ops` (checked by the architecture test).
    pub(crate) fn grant() -> Disclosure {
        #[cfg(test)]
        GRANTS.with(|g| g.set(g.get() + 1));
        Disclosure { _private: () }
    }
}

#[cfg(test)]
thread_local! {
    /// Grants made on this thread (tests prove which operations are never granted).
    static GRANTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Grants made on this thread so far (tests only).
#[cfg(test)]
pub(crate) fn grants() -> u64 {
    GRANTS.with(std::cell::Cell::get)
}

/// A type that cannot carry a message value: flags, counts of structure, codes.
///
/// Sealed: only the types listed in this crate implement it.
pub trait ValueFree: Copy + 'static + sealed::Sealed {}

pub(crate) mod sealed {
    /// Seals [`super::ValueFree`]: only this crate decides what is value-free.
    pub trait Sealed {}
}

/// Implements `Debug` as a placeholder for a type that can hold a message value outside `Phi`
/// (a converter's tree, a FHIRPath string, a redaction context): an `assert_eq!`, a panic
/// message or a `tracing` field then shows the type's name, never the value.
#[macro_export]
#[doc(hidden)]
macro_rules! debug_placeholder {
    ($($ty:ident $(<$($lt:lifetime),+>)?),+ $(,)?) => {$(
        impl $(<$($lt),+>)? ::std::fmt::Debug for $ty $(<$($lt),+>)? {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(concat!(stringify!($ty), "(<redacted>)"))
            }
        }
    )+};
}

macro_rules! value_free {
    ($($t:ty),* $(,)?) => {
        $(impl sealed::Sealed for $t {} impl ValueFree for $t {})*
    };
}

value_free!((), bool, crate::diag::Code, crate::diag::Severity, Option<crate::diag::Code>,);

impl<A: ValueFree, B: ValueFree> sealed::Sealed for (A, B) {}
impl<A: ValueFree, B: ValueFree> ValueFree for (A, B) {}

/// Compile-time proof that `Phi` and `PhiBytes` are not `Display`, `Serialize` or (for `Phi`)
/// `Clone`: each assertion is ambiguous, and fails to compile, if the trait is implemented.
macro_rules! assert_not_impl {
    ($t:ty: $($tr:path),+) => {
        const _: fn() = || {
            trait AmbiguousIfImpl<A> {
                fn some_item() {}
            }
            impl<T: ?Sized> AmbiguousIfImpl<()> for T {}
            $({
                #[allow(dead_code)]
                struct Invalid;
                impl<T: ?Sized + $tr> AmbiguousIfImpl<Invalid> for T {}
            })+
            let _ = <$t as AmbiguousIfImpl<_>>::some_item;
        };
    };
}

assert_not_impl!(Phi<String>: fmt::Display);
assert_not_impl!(Phi<String>: serde::Serialize);
assert_not_impl!(Phi<String>: Clone);
assert_not_impl!(Phi<Vec<u8>>: fmt::Display);
assert_not_impl!(Phi<Vec<u8>>: serde::Serialize);
assert_not_impl!(PhiBytes<'static>: fmt::Display);
assert_not_impl!(PhiBytes<'static>: serde::Serialize);

/// Compile-fail proofs (run as doc tests by `cargo test`): none of these compile.
///
/// `format!("{}", phi)`:
/// ```compile_fail,E0277
/// let phi = phiward::phi::Phi::new(String::from("DOE^JANE"));
/// let _ = format!("{}", phi);
/// ```
///
/// `serde_json::to_string(&phi)`:
/// ```compile_fail,E0277
/// let phi = phiward::phi::Phi::new(String::from("DOE^JANE"));
/// let _ = serde_json::to_string(&phi);
/// ```
///
/// `tracing::info!(%phi)`:
/// ```compile_fail,E0277
/// let phi = phiward::phi::Phi::new(String::from("DOE^JANE"));
/// tracing::info!(%phi);
/// ```
///
/// `phi.clone()`:
/// ```compile_fail,E0599
/// let phi = phiward::phi::Phi::new(String::from("DOE^JANE"));
/// let _ = phi.clone();
/// ```
///
/// Reading a value without the disclosure capability (its constructor is crate-private):
/// ```compile_fail,E0624
/// let phi = phiward::phi::Phi::new(String::from("DOE^JANE"));
/// let d = phiward::phi::Disclosure::grant();
/// let _ = phi.expose_value(&d);
/// ```
///
/// And the control: `Debug` compiles and prints a placeholder.
/// ```
/// let phi = phiward::phi::Phi::new(String::from("DOE^JANE"));
/// assert_eq!(format!("{phi:?}"), "Phi(<redacted>)");
/// ```
pub mod compile_fail_proofs {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_a_placeholder() {
        let phi = Phi::new(String::from("SMITH^JOHN"));
        assert_eq!(format!("{phi:?}"), "Phi(<redacted>)");
        let span = PhiBytes(b"SMITH");
        assert_eq!(format!("{span:?}"), "PhiBytes(<redacted>)");
    }

    #[test]
    fn wipe_zeroes_the_whole_allocation_and_releases_it() {
        let mut v = Vec::with_capacity(64);
        v.extend_from_slice(b"SMITH^JOHN");
        wipe(&mut v);
        assert!(v.is_empty());
        assert_eq!(v.capacity(), 0);
        let mut s = String::from("DOE^JANE");
        wipe_string(&mut s);
        assert!(s.is_empty());
        assert_eq!(s.capacity(), 0);
        // A `Phi` wipes its value when dropped (the bytes themselves are gone with the
        // allocation; what is observable here is that dropping works for both owned types).
        drop(Phi::new(b"19700101".to_vec()));
        drop(Phi::new(String::from("X")));
    }

    #[test]
    fn classify_returns_value_free_results() {
        let phi = Phi::new(b"19700101".to_vec());
        assert!(phi.classify(|v| v.len() == 8));
    }
}
