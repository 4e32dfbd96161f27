//! `phiward ig list|info`: what FHIR packages are loaded or cached, value-free (package names,
//! versions, canonical URLs and counts: conformance metadata, never an instance's values).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::args::{IgInfoArgs, IgListArgs, PackageArgs};
use super::output;
use crate::diag::Code;
use crate::error::{exit, exit_code_for};
use crate::structure::package::{self, LoadError, Package};

fn fail(code: Code, hint: Option<String>) -> u8 {
    match hint {
        Some(h) => output::failure_hint(code, &h),
        None => output::failure(code, None),
    }
    exit_code_for(code)
}

/// The stderr hint of a failed load: which `--ig` (by its place, never its text) or which
/// package's dependency.
pub fn load_hint(e: &LoadError) -> Option<String> {
    match (&e.argument, &e.dependency) {
        (Some(i), _) => Some(format!("argument --ig, occurrence {}", i + 1)),
        (None, Some(d)) => Some(format!("a dependency of {d} in the package cache")),
        (None, None) => None,
    }
}

fn emit(value: &Value, json: bool, human: impl FnOnce(&Value) -> String) -> u8 {
    let r = if json { output::json_value(value, true) } else { output::text(&human(value)) };
    match r {
        Ok(()) => exit::OK,
        Err(_) => fail(Code::CLI_OUTPUT_FAILED, None),
    }
}

/// Counts of a package's resources by type.
fn by_type(p: &Package) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for e in &p.resources {
        let t = e.head().map_or_else(|| "(not a resource)".to_owned(), |h| h.resource_type);
        *counts.entry(t).or_insert(0) += 1;
    }
    counts
}

fn package_json(p: &Package, resources: bool) -> Value {
    let mut v = json!({
        "package": p.id(),
        "name": p.name,
        "version": p.version,
        "fhir_versions": p.fhir_versions,
        "canonical": p.canonical,
        "origin": p.origin.kind(),
        "path": p.origin.path().to_string_lossy(),
        "dependencies": p.dependencies,
        "examples": p.examples,
    });
    if let Some(n) = &p.needed_by {
        v["needed_by"] = json!(n);
    }
    if resources {
        v["resources"] = json!(p.resources.len());
        v["by_type"] = json!(by_type(p));
        v["not_loaded"] = json!(p.skipped);
    } else {
        v["resources"] = json!(p.skipped);
    }
    v
}

/// `phiward ig list`.
pub fn list(a: &IgListArgs) -> u8 {
    let cache = a.packages.cache();
    let limits = package::Limits::default();
    let value = if a.packages.igs.is_empty() {
        let Some(dir) = cache.as_deref().filter(|d| d.is_dir()) else {
            let v =
                json!({"package_dir": cache.map(|c| c.to_string_lossy().into_owned()), "packages": [], "missing": []});
            return emit(&v, a.json, human_list);
        };
        match package::list_cache(dir, &limits) {
            Ok(packages) => json!({
                "package_dir": dir.to_string_lossy(),
                "packages": packages.iter().map(|p| package_json(p, false)).collect::<Vec<_>>(),
                "missing": [],
            }),
            Err(code) => return fail(code, Some("argument --package-dir".to_owned())),
        }
    } else {
        match load(&a.packages) {
            Ok(loaded) => json!({
                "package_dir": cache.map(|c| c.to_string_lossy().into_owned()),
                "packages": loaded.packages.iter().map(|p| package_json(p, true)).collect::<Vec<_>>(),
                "missing": loaded.missing.iter().map(|m| json!({
                    "package": format!("{}#{}", m.name, m.version),
                    "needed_by": m.needed_by,
                    "substituted": m.substituted,
                })).collect::<Vec<_>>(),
            }),
            Err(e) => return fail(e.code, load_hint(&e)),
        }
    };
    emit(&value, a.json, human_list)
}

/// Loads the `--ig`s of `a` and their dependencies.
pub fn load(a: &PackageArgs) -> Result<package::Loaded, LoadError> {
    package::load(&a.igs, a.cache().as_deref(), &package::Limits::default())
}

/// The conformance context of `validate`: the packages of `--ig` (and their dependencies from
/// the cache) loaded once, each resource (XML converted) added to the store, `--profile` and
/// `--must-support`. `None` when nothing is asked. A load failure is printed with its hint; a
/// `--profile` that names no loaded StructureDefinition is `CLI_USAGE` naming the option.
/// Dependencies not in the cache are one notice on stderr (package names only).
pub fn structures(
    a: &PackageArgs,
    profiles: &[String],
    must_support: bool,
) -> Result<Option<std::sync::Arc<crate::structure::Context>>, u8> {
    if a.igs.is_empty() && profiles.is_empty() {
        return Ok(None);
    }
    let loaded = if a.igs.is_empty() {
        package::Loaded { packages: Vec::new(), missing: Vec::new() }
    } else {
        load(a).map_err(|e| fail(e.code, load_hint(&e)))?
    };
    if !loaded.missing.is_empty() {
        let names: Vec<String> = loaded
            .missing
            .iter()
            .map(|m| match &m.substituted {
                Some(s) => format!("{}#{} (used {s})", m.name, m.version),
                None => format!("{}#{}", m.name, m.version),
            })
            .collect();
        output::notice(&format!(
            "{} package dependenc{} not in the package cache: {}",
            names.len(),
            if names.len() == 1 { "y" } else { "ies" },
            names.join(", ")
        ));
    }
    let limits = crate::limits::Limits::default();
    let mut conformance = crate::structure::Conformance::new();
    let mut unreadable = 0u64;
    for (k, p) in loaded.packages.into_iter().enumerate() {
        let source = crate::structure::SourceId(u32::try_from(k).unwrap_or(u32::MAX));
        for e in p.resources {
            if let Some((path, head)) = e.lazy {
                conformance.add_file(path, head, source);
                continue;
            }
            let added = crate::ops::conformance_json(e.bytes, &limits).and_then(|j| conformance.add_bytes(j, source));
            if added.is_err() {
                unreadable += 1;
            }
        }
    }
    if unreadable > 0 {
        output::notice(&format!(
            "{}: {unreadable} resource file(s) of the packages left out",
            Code::CONFORMANCE_RESOURCE_INVALID.as_str()
        ));
    }
    if profiles.iter().any(|p| conformance.structure_definition(p).is_none()) {
        output::failure_hint(Code::CLI_USAGE, "--profile names no StructureDefinition of the packages --ig loads");
        return Err(exit::USAGE);
    }
    let context = crate::structure::Context { conformance, profiles: profiles.to_vec(), must_support };
    Ok(Some(std::sync::Arc::new(context)))
}

fn s(v: &Value, k: &str) -> String {
    match v.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "-".to_owned(),
        Some(other) => other.to_string(),
    }
}

fn human_list(v: &Value) -> String {
    let mut out = format!("package cache: {}\n", s(v, "package_dir"));
    let packages = v.get("packages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if packages.is_empty() {
        out.push_str("no packages\n");
    }
    for p in packages {
        out.push_str(&format!("\n{}  ({} {})\n", s(p, "package"), s(p, "origin"), s(p, "path")));
        let versions: Vec<String> = p
            .get("fhir_versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|x| x.as_str().map(str::to_owned))
            .collect();
        out.push_str(&format!(
            "  FHIR {}; {} resources, {} examples\n",
            if versions.is_empty() { "-".to_owned() } else { versions.join(", ") },
            s(p, "resources"),
            s(p, "examples")
        ));
        if let Some(types) = p.get("by_type").and_then(Value::as_object) {
            let list: Vec<String> = types.iter().map(|(t, n)| format!("{t} {n}")).collect();
            if !list.is_empty() {
                out.push_str(&format!("  {}\n", list.join(", ")));
            }
        }
        if let Some(by) = p.get("needed_by").and_then(Value::as_str) {
            out.push_str(&format!("  loaded for: {by}\n"));
        }
    }
    let missing = v.get("missing").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if !missing.is_empty() {
        out.push_str(&format!("\nnot in the package cache at the version asked ({}):\n", missing.len()));
        for m in missing {
            let instead = match m.get("substituted").and_then(Value::as_str) {
                Some(v) => format!("; version {v} loaded instead"),
                None => String::new(),
            };
            out.push_str(&format!("  {} (needed by {}{instead})\n", s(m, "package"), s(m, "needed_by")));
        }
    }
    out
}

/// `phiward ig info`.
pub fn info(a: &IgInfoArgs) -> u8 {
    let cache = a.package_dir.clone().or_else(package::default_package_dir);
    let p = match package::open_spec(&a.package, cache.as_deref(), &package::Limits::default()) {
        Ok(p) => p,
        Err(code) => return fail(code, Some("argument PACKAGE".to_owned())),
    };
    let mut heads: Vec<(package::Head, &str)> =
        p.resources.iter().filter_map(|e| e.head().map(|h| (h, e.file.as_str()))).collect();
    heads.sort();
    let mut v = package_json(&p, true);
    v["list"] = json!(
        heads
            .iter()
            .map(|(h, file)| json!({"type": h.resource_type, "url": h.url, "version": h.version, "file": file}))
            .collect::<Vec<_>>()
    );
    emit(&v, a.json, |v| {
        let listed = human_list(&json!({"package_dir": v.get("path"), "packages": [v], "missing": []}));
        // Not a cache listing: the first line (the cache) is dropped.
        let mut out = listed.split_once('\n').map_or(listed.clone(), |(_, rest)| rest.trim_start().to_owned());
        let deps = v.get("dependencies").and_then(Value::as_object);
        if let Some(deps) = deps.filter(|d| !d.is_empty()) {
            out.push_str("\ndependencies:\n");
            for (n, ver) in deps {
                out.push_str(&format!("  {n}#{}\n", ver.as_str().unwrap_or("-")));
            }
        }
        out.push_str("\nresources:\n");
        for r in v.get("list").and_then(Value::as_array).into_iter().flatten() {
            let url = s(r, "url");
            let version = r.get("version").and_then(Value::as_str).map(|x| format!("|{x}")).unwrap_or_default();
            out.push_str(&format!("  {:<24} {url}{version}\n", s(r, "type")));
        }
        out
    })
}
