//! Two jobs: the bundled terminology indexes are built in their compact form, and the phiward
//! binaries are linked as position-dependent executables on x86_64 Linux (glibc).
//!
//! **Terminology** (issue 32): `find-equivalent` searches pre-tokenized indexes. Each bundled
//! index text (`src/terminology/data/*.tsv`) is tokenized here, by the crate's own tokenizer and
//! builder (`src/terminology/score.rs` and `compact.rs`, compiled into this script), into
//! `$OUT_DIR/<name>.idx`, which the crate embeds next to the text and reads in place: a
//! one-term CLI call no longer tokenizes 9.5 MB of labels (about 140 ms of CPU) before searching.
//!
//! **Linking.** Why: a start-up of about 1 ms is part of every one-message call (issue 32). A PIE binary has
//! its ~44,000 relative relocations applied by the dynamic loader at every start, which writes
//! (and so copies) every page of its relocated read-only data: about 250 of the 470 page faults
//! of a 1 KB `parse`, and a third of its CPU time. Linked with `-no-pie`, the linker resolves
//! them once: `perf stat` over 300 runs of `parse --json` of a 1.1 KB ADT^A01 went from 2.4-3.2 ms
//! to 1.8 ms of CPU and from 469 to 215 page faults, with the same output bytes.
//!
//! The cost: the executable's own code and data are not at a random address (ASLR still
//! randomizes the stack, the heap, the shared libraries and mmap). The code is Rust with
//! `#![forbid(unsafe_code)]` in this crate. Set `PHIWARD_PIE=1` when building to keep the
//! platform's default (a PIE) instead. Only bins are affected (`rustc-link-arg-bins`); tests
//! and other targets keep the default.

#[path = "src/terminology/score.rs"]
#[allow(dead_code)]
mod score;

#[path = "src/terminology/compact.rs"]
mod compact;

/// The bundled code systems searched by `find-equivalent` (the other bundled datasets are maps).
const INDEXES: [&str; 3] = ["icd10cm", "loinc", "mesh"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/terminology/score.rs");
    println!("cargo:rerun-if-changed=src/terminology/compact.rs");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for name in INDEXES {
        let source = format!("src/terminology/data/{name}.tsv");
        println!("cargo:rerun-if-changed={source}");
        let text = std::fs::read_to_string(&source).expect("a bundled index text is UTF-8");
        let blob = compact::build(&text).expect("a bundled index fits the compact form");
        std::fs::write(out.join(format!("{name}.idx")), blob).expect("OUT_DIR is writable");
    }
    println!("cargo:rerun-if-env-changed=PHIWARD_PIE");
    let target = std::env::var("TARGET").unwrap_or_default();
    let pie = std::env::var_os("PHIWARD_PIE").is_some_and(|v| v == "1");
    if target == "x86_64-unknown-linux-gnu" && !pie {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
