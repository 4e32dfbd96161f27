//! Conformance resources from FHIR packages: what `--ig` and `--package-dir` load.
//!
//! - [`package`]: reading packages (`.tgz`, folders, loose resource files, the package cache)
//!   and following their dependencies, offline.
//! - [`conformance`]: the store of StructureDefinitions, ValueSets and CodeSystems, snapshots
//!   and expansions; [`Context`] what the FHIR profile checks read.
//! - [`profile_id`] and [`profile_canonical`]: the numbers a finding carries for the profile it
//!   was made against (a canonical URL: conformance metadata, never a value).

pub mod conformance;
pub mod package;

use std::sync::{Mutex, OnceLock};

pub use conformance::{Conformance, Context, SourceId};

use crate::diag::ProfileId;

fn profiles() -> &'static Mutex<Vec<&'static str>> {
    static PROFILES: OnceLock<Mutex<Vec<&'static str>>> = OnceLock::new();
    PROFILES.get_or_init(|| Mutex::new(Vec::new()))
}

/// The number of canonical `url` (interned once per process; at most `u16::MAX` of them, then
/// `None`). The text is kept for the life of the process: canonicals come from the loaded
/// packages and `--profile`, a bounded set.
pub fn profile_id(url: &str) -> Option<ProfileId> {
    let mut list = profiles().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(k) = list.iter().position(|u| *u == url) {
        return u16::try_from(k).ok().map(ProfileId);
    }
    let k = u16::try_from(list.len()).ok().filter(|&k| k < u16::MAX)?;
    list.push(Box::leak(url.to_owned().into_boxed_str()));
    Some(ProfileId(k))
}

/// The canonical URL of profile `id`.
pub fn profile_canonical(id: ProfileId) -> Option<&'static str> {
    let list = profiles().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    list.get(usize::from(id.0)).copied()
}
