//! The README, followed literally (issue 35): every ```console block is run, command by
//! command, and each command must print exactly what the README shows after it.
//!
//! A block's lines starting with `$ ` are commands (run by `sh -c`, with the phiward built for
//! this test first on `PATH`, in a fresh folder holding links to `examples/`, `policy/` and
//! `fixtures/`, so that files the README makes, such as `phiward.key`, land there); the lines up
//! to the next command are its expected standard output (and standard error where the command
//! redirects it). The blocks run in order in one folder, as a reader would type them.
//!
//! The first ```sh block (install and test) is checked for what it says, not run: it is the
//! command that runs this test.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{bin, root};

/// The README's ```console blocks: (command, expected output) in order.
fn console_commands(readme: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut in_console = false;
    for line in readme.lines() {
        if !in_console {
            in_console = line.trim_end() == "```console";
            continue;
        }
        if line.trim_end() == "```" {
            in_console = false;
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.push((cmd.to_owned(), String::new()));
        } else if let Some((_, expected)) = out.last_mut() {
            expected.push_str(line);
            expected.push('\n');
        }
    }
    out
}

/// A fresh folder with links to what the README's commands read.
fn workdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("phiward-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the work folder");
    for name in ["examples", "policy", "fixtures"] {
        #[cfg(unix)]
        std::os::unix::fs::symlink(root().join(name), dir.join(name)).expect("link");
    }
    dir
}

#[cfg(unix)]
#[test]
fn every_console_block_prints_what_the_readme_says() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let commands = console_commands(&readme);
    assert!(commands.len() >= 12, "only {} README commands found", commands.len());
    let dir = workdir();
    let bin_dir = bin().parent().map(PathBuf::from).expect("the binary's folder");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut failures = Vec::new();
    for (cmd, expected) in &commands {
        assert!(cmd.starts_with("phiward ") || cmd.starts_with("head "), "unexpected README command {cmd:?}");
        let o = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(&dir)
            .env("PATH", &path)
            .env_remove("RUST_LOG")
            .output()
            .expect("run sh");
        let stdout = String::from_utf8_lossy(&o.stdout);
        if stdout != *expected {
            failures.push(format!("$ {cmd}\n--- README:\n{expected}--- printed:\n{stdout}"));
        }
        if !o.stderr.is_empty() {
            failures.push(format!("$ {cmd}\n--- unexpected stderr:\n{}", String::from_utf8_lossy(&o.stderr)));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "README commands differ:\n{}", failures.join("\n"));
}

/// The first block: install with `cargo install --path .` (and where the binary lands), test
/// with the command `.ci/run` runs.
#[test]
fn first_lines_install_and_test_as_ci_does() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let first = readme.split("```sh").nth(1).and_then(|b| b.split("```").next()).expect("a first sh block");
    let lines: Vec<&str> = first.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 2, "the first block is the two commands: {lines:?}");
    assert!(lines[0].starts_with("cargo install --path . --locked"), "{}", lines[0]);
    let test_command = lines[1].split('#').next().map(str::trim).expect("a test command");
    assert!(readme.contains("~/.cargo/bin"), "the README says where the binary lands");
    let ci = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    assert!(
        ci.lines().any(|l| l.trim() == test_command),
        ".ci/run does not run the README's test command {test_command:?}"
    );
}

/// `--quiet` has one meaning, in the README and in every command's `--help`.
#[test]
fn quiet_means_the_same_everywhere() {
    const QUIET: &str = "Print nothing on standard output; the exit code is the answer";
    let readme: String = std::fs::read_to_string(root().join("README.md"))
        .expect("README.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(readme.contains(QUIET), "the README does not describe --quiet as the help does");
    for command in ["validate", "inspect", "fmt"] {
        let o = crate::common::run(&[command, "--help"]);
        let help: String = String::from_utf8_lossy(&o.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(help.contains(&format!("-q, --quiet {QUIET}")), "{command} --help: {help}");
    }
    for command in ["parse", "redact", "convert"] {
        let o = crate::common::run(&[command, "--help"]);
        assert!(!String::from_utf8_lossy(&o.stdout).contains("--quiet"), "{command} offers --quiet");
    }
}
