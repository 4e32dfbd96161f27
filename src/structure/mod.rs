//! Conformance resources from FHIR packages: what `--ig` and `--package-dir` load.
//!
//! - [`package`]: reading packages (`.tgz`, folders, loose resource files, the package cache)
//!   and following their dependencies, offline.

pub mod package;
