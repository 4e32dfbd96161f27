//! Two jobs: the bundled terminology indexes are built in their compact form, and the phiward
//! binaries are linked statically and position-dependent on Linux with glibc.
//!
//! **Terminology** (issue 32): `find-equivalent` searches pre-tokenized indexes. Each bundled
//! index text (`src/terminology/data/*.tsv`) is tokenized here, by the crate's own tokenizer and
//! builder (`src/terminology/score.rs` and `compact.rs`, compiled into this script), into
//! `$OUT_DIR/<name>.idx`, which the crate embeds next to the text and reads in place: a
//! one-term CLI call no longer tokenizes 9.5 MB of labels (about 140 ms of CPU) before searching.
//!
//! **Linking.** Why: a start-up of about 1 ms is part of every one-message call (issue 32).
//! Figures: BENCHMARKS.md, "Start-up: a 1 KB message, whole process".
//!
//! - Position-dependent (`-no-pie`): a PIE has its ~44,000 relative relocations applied at every
//!   start, which writes (and so copies) every page of its relocated read-only data; linked
//!   without PIE, the linker resolves them once (a 1 KB `parse`: 469 to 215 page faults).
//! - Static (`-static`): no dynamic loader, which mapped libc, libm and libgcc_s and looked up
//!   and bound their symbols at every start (a third of the instructions of a 1 KB `parse`).
//!   rustc's `+crt-static` cannot be had for the binaries alone without `--target`, which would
//!   move `target/release/phiward` (the flag in `.cargo/config.toml` also reaches the proc-macro
//!   crates, which cannot be linked statically). So rustc links as usual, asking for `-lgcc_s
//!   -lutil -lrt -lpthread -lm -ldl -lc` after `-Bdynamic`, and this script gives the linker,
//!   in a directory searched before the system's, a linker script named like each shared
//!   library that names its static archive instead, found by the C compiler that links
//!   (`cc -print-file-name`); for libgcc_s, libgcc_eh and libgcc, what `+crt-static` links. The
//!   gcc driver's `-static` picks the static start files and leaves out the program
//!   interpreter. Only a native build does this (the compiler knows its own target's archives);
//!   when an archive is missing (glibc's static libraries are a separate package on some
//!   systems) the binaries are linked dynamically, position-dependent, as before. A library
//!   added later by a dependency (`#[link]`) and not listed here would be linked dynamically
//!   into a binary without an interpreter, which does not start: every test that runs the
//!   binary would fail.
//!
//! The cost: the executable's code and data, glibc's included, are not at a random address
//! (ASLR still randomizes the stack, the heap and mmap). The code is Rust with
//! `#![forbid(unsafe_code)]` in this crate. A static glibc cannot load NSS modules or iconv
//! converters; phiward looks up no user, group or host name and converts encodings with
//! `encoding_rs`. `PHIWARD_LINK=dynamic` when building keeps the position-dependent dynamic
//! link, `PHIWARD_LINK=pie` (or `PHIWARD_PIE=1`) the platform's default (a dynamic PIE). Only
//! bins are affected (`rustc-link-arg-bins`); tests and other targets keep the default.

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
    link_bins(&out);
}

/// How the binaries are linked on Linux with glibc (module docs): statically when the C
/// toolchain has the static archives and the build is native, else position-dependent.
fn link_bins(out: &std::path::Path) {
    println!("cargo:rerun-if-env-changed=PHIWARD_PIE");
    println!("cargo:rerun-if-env-changed=PHIWARD_LINK");
    let var = |key: &str| std::env::var(key).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux" || var("CARGO_CFG_TARGET_ENV") != "gnu" {
        return;
    }
    let mode = match (var("PHIWARD_PIE").as_str(), var("PHIWARD_LINK").as_str()) {
        ("1", _) | (_, "pie") => return,
        (_, "dynamic") => "dynamic",
        _ => "static",
    };
    // The archives are looked up with the compiler that links (`cc` unless one is configured),
    // which knows only its own target's: a cross build stays dynamic.
    let shims = if mode == "static" && var("TARGET") == var("HOST") {
        let cc = std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".to_owned());
        static_shims(&cc, &out.join("static-link"))
    } else {
        None
    };
    println!("cargo:rustc-link-arg-bins=-no-pie");
    if let Some(dir) = shims {
        println!("cargo:rustc-link-arg-bins=-static");
        println!("cargo:rustc-link-arg-bins=-L{}", dir.display());
    }
}

/// The static archive for each library rustc names for std on linux-gnu (`-lgcc_s -lutil -lrt
/// -lpthread -lm -ldl -lc`), written as a linker script named like the shared library into
/// `dir`, which is searched before the system's directories: the linker, asked for the shared
/// library, takes the archive. `None` (nothing written) when the compiler does not know one of
/// them (glibc's static archives are a separate package on some systems).
fn static_shims(cc: &str, dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let find = |file: &str| -> Option<String> {
        let found = std::process::Command::new(cc).arg(format!("-print-file-name={file}")).output().ok()?;
        let path = String::from_utf8(found.stdout).ok()?.trim().to_owned();
        // An unknown file is printed back as given, without a directory.
        let known = std::path::Path::new(&path).is_absolute() && std::path::Path::new(&path).is_file();
        // A space, a parenthesis or a quote would split or end the linker script's list.
        (known && !path.contains(['(', ')', '"', ' '])).then_some(path)
    };
    let (c, gcc_eh, gcc) = (find("libc.a")?, find("libgcc_eh.a")?, find("libgcc.a")?);
    let mut scripts = vec![
        // The unwinder of the static runtime (what `+crt-static` links in place of libgcc_s);
        // libc and libgcc refer to each other, hence one group.
        ("gcc_s", format!("GROUP({gcc_eh} {gcc} {c})")),
        ("c", format!("GROUP({c} {gcc_eh} {gcc})")),
    ];
    for lib in ["util", "rt", "pthread", "m", "dl"] {
        scripts.push((lib, format!("INPUT({})", find(&format!("lib{lib}.a"))?)));
    }
    std::fs::create_dir_all(dir).ok()?;
    for (lib, script) in scripts {
        std::fs::write(dir.join(format!("lib{lib}.so")), format!("{script}\n")).ok()?;
    }
    Some(dir.to_path_buf())
}
