//! FHIR NPM packages: what `--ig` and `--package-dir` load, offline.
//!
//! A package is a gzip'd tar (`.tgz`) or an unpacked folder holding `package/package.json` and
//! the package's resources as JSON files directly under `package/` (the layout of the FHIR
//! package specification; examples live under `package/example/` and are counted, not loaded).
//! `--ig` also takes a folder of loose resource files, one resource file (JSON, or a Bundle of
//! resources), or `NAME#VERSION` of a package in the package cache.
//!
//! The cache (`--package-dir`, by default `~/.fhir/packages`, the folder the reference validator
//! and the FHIR tooling fill) holds one folder per package, `NAME#VERSION/package/...`.
//! Dependencies named by a loaded package's `package.json` are looked up there (an exact
//! version, or the highest matching a `x` wildcard such as `4.0.x`); the ones that are not found
//! are reported, never fetched. The FHIR core package (`hl7.fhir.r4.core`) is built into phiward
//! and counts as present.
//!
//! Loading costs what a validation uses: a package's resources are indexed by their head
//! (`resourceType`, `url`, `version`), from the package's `.index.json` when it has one (the FHIR
//! package tooling writes it into the cache), else from each file's first bytes, and the
//! conformance store parses a resource when it is first resolved. Bundles at a package's root
//! are not loaded (a package's conformance resources are its files).
//!
//! Limits bound what a hostile package can cost: the compressed and uncompressed sizes, the
//! number of entries, the size of one resource file, the depth of dependencies.
//!
//! What it does not do: fetch from a registry (no network at run time), read FHIR XML resource
//! files (the caller converts them), or interpret the resources (see the conformance store).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::diag::Code;

/// The package of the FHIR R4 core definitions, built in.
pub const CORE_PACKAGE: &str = "hl7.fhir.r4.core";

/// Limits on what a package may hold.
#[derive(Copy, Clone, Debug)]
pub struct Limits {
    /// Largest `.tgz` file, compressed.
    pub max_archive_bytes: u64,
    /// Most bytes read out of one package (uncompressed, all entries).
    pub max_unpacked_bytes: u64,
    /// Most entries (files and folders) in one package.
    pub max_entries: u32,
    /// Largest single resource file.
    pub max_resource_bytes: u64,
    /// Most packages loaded in all (the `--ig`s and their dependencies).
    pub max_packages: u32,
}

impl Limits {
    /// The default largest resource file.
    pub const DEFAULT_MAX_RESOURCE_BYTES: u64 = 64 * 1024 * 1024;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_archive_bytes: 512 * 1024 * 1024,
            max_unpacked_bytes: 2 * 1024 * 1024 * 1024,
            max_entries: 200_000,
            max_resource_bytes: Limits::DEFAULT_MAX_RESOURCE_BYTES,
            max_packages: 256,
        }
    }
}

/// Where a package was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A `.tgz` named by `--ig`.
    Archive(PathBuf),
    /// A package folder (or a folder of loose resources) named by `--ig`.
    Folder(PathBuf),
    /// One resource file named by `--ig`.
    File(PathBuf),
    /// A folder of the package cache (`--package-dir`).
    Cache(PathBuf),
}

impl Origin {
    /// The path.
    pub fn path(&self) -> &Path {
        match self {
            Origin::Archive(p) | Origin::Folder(p) | Origin::File(p) | Origin::Cache(p) => p,
        }
    }

    /// `archive`, `folder`, `file` or `cache`.
    pub fn kind(&self) -> &'static str {
        match self {
            Origin::Archive(_) => "archive",
            Origin::Folder(_) => "folder",
            Origin::File(_) => "file",
            Origin::Cache(_) => "cache",
        }
    }
}

/// One resource file of a package.
#[derive(Debug)]
pub struct Entry {
    /// Its name inside the package (`StructureDefinition-x.json`).
    pub file: String,
    /// Its bytes (a conformance resource: not patient data); empty when `lazy` is set.
    pub bytes: Vec<u8>,
    /// A file of an unpacked package whose head was read from its first bytes: the file and its
    /// head. The rest stays on disk until the resource is first used.
    pub lazy: Option<(PathBuf, Head)>,
}

impl Entry {
    /// What `ig info` shows of it.
    pub fn head(&self) -> Option<Head> {
        match &self.lazy {
            Some((_, h)) => Some(h.clone()),
            None => head(&self.bytes),
        }
    }
}

/// How much of a package file is read to find its head; a file whose head is not within it is
/// read whole.
const HEAD_PREFIX: usize = 8 * 1024;

/// A loaded package.
#[derive(Debug)]
pub struct Package {
    /// `name` of package.json (`loose` resources: the file or folder name).
    pub name: String,
    /// `version` of package.json (`""` for loose resources).
    pub version: String,
    /// `fhirVersions` (or the older `fhir-version-list`) of package.json.
    pub fhir_versions: Vec<String>,
    /// `canonical` of package.json.
    pub canonical: Option<String>,
    /// `dependencies` of package.json, by name (sorted).
    pub dependencies: BTreeMap<String, String>,
    /// Where it was read from.
    pub origin: Origin,
    /// The resource files (JSON) at the package's root, in name order.
    pub resources: Vec<Entry>,
    /// Resource files at the root not loaded: other syntaxes (XML) and, in a package, Bundles
    /// (a package's conformance resources are its files; a Bundle there holds examples or
    /// provenance, as hl7.terminology's 25 MB of Provenance Bundles).
    pub skipped: u32,
    /// Files under `example/`.
    pub examples: u32,
    /// The `--ig` that loaded it, or the package whose dependency it is (`name#version`).
    pub needed_by: Option<String>,
}

impl Package {
    /// `name#version` (or the name alone).
    pub fn id(&self) -> String {
        if self.version.is_empty() { self.name.clone() } else { format!("{}#{}", self.name, self.version) }
    }
}

/// A dependency that is in no loaded package and not in the cache.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Missing {
    /// The package name.
    pub name: String,
    /// The version (or pattern) asked for.
    pub version: String,
    /// `name#version` of the package that needs it.
    pub needed_by: String,
    /// The version of the same package loaded in its place (the highest in the cache), when
    /// the version asked for is not there: offline, a near version beats none.
    pub substituted: Option<String>,
}

/// What a load produced.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The packages, the `--ig`s first in their order, then dependencies as found.
    pub packages: Vec<Package>,
    /// Dependencies not found.
    pub missing: Vec<Missing>,
}

/// Why a load failed: the code, and which `--ig` (0-based) or the package dir.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// `CLI_IG_UNREADABLE` (not found, unreadable) or `CLI_IG_INVALID` (not a package, over a
    /// limit, a resource file that is not a JSON object).
    pub code: Code,
    /// The `--ig` argument (0-based) that failed; `None` for a dependency from the cache.
    pub argument: Option<usize>,
    /// The package (`name#version`) whose dependency failed to load, if any.
    pub dependency: Option<String>,
}

impl LoadError {
    fn ig(code: Code, argument: usize) -> Self {
        LoadError { code, argument: Some(argument), dependency: None }
    }
}

/// The conventional package cache: `$HOME/.fhir/packages` (`%USERPROFILE%` on Windows).
pub fn default_package_dir() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"))?;
    if home.is_empty() {
        return None;
    }
    Some(PathBuf::from(home).join(".fhir").join("packages"))
}

/// Loads the `--ig`s in order, then their dependencies from `cache` (breadth first, each
/// `name#version` once).
pub fn load(igs: &[String], cache: Option<&Path>, limits: &Limits) -> Result<Loaded, LoadError> {
    let mut loaded = Loaded::default();
    for (i, spec) in igs.iter().enumerate() {
        let mut package = open_spec(spec, cache, limits).map_err(|code| LoadError::ig(code, i))?;
        package.needed_by = Some(format!("--ig {}", i + 1));
        if !loaded.packages.iter().any(|p| same(p, &package)) {
            loaded.packages.push(package);
        }
        if loaded.packages.len() as u64 > u64::from(limits.max_packages) {
            return Err(LoadError::ig(Code::CLI_IG_INVALID, i));
        }
    }
    resolve_dependencies(&mut loaded, cache, limits)?;
    loaded.missing.sort();
    loaded.missing.dedup();
    Ok(loaded)
}

fn same(a: &Package, b: &Package) -> bool {
    !a.version.is_empty() && a.name == b.name && a.version == b.version
}

/// Follows `dependencies` through the cache.
fn resolve_dependencies(loaded: &mut Loaded, cache: Option<&Path>, limits: &Limits) -> Result<(), LoadError> {
    let mut next = 0;
    while next < loaded.packages.len() {
        let deps: Vec<(String, String)> =
            loaded.packages[next].dependencies.iter().map(|(n, v)| (n.clone(), v.clone())).collect();
        let parent = loaded.packages[next].id();
        next += 1;
        for (name, version) in deps {
            if name == CORE_PACKAGE || satisfied(&loaded.packages, &name, &version) {
                continue;
            }
            let found = cache.and_then(|dir| find_in_cache(dir, &name, &version));
            let (folder, substituted) = match found {
                Some(folder) => (folder, false),
                None => match cache.and_then(|dir| find_in_cache(dir, &name, "latest")) {
                    Some(folder) => (folder, true),
                    None => {
                        loaded.missing.push(Missing { name, version, needed_by: parent.clone(), substituted: None });
                        continue;
                    }
                },
            };
            // A cache folder already loaded (the same substitute for two dependents: IPS and
            // the extensions pack both name hl7.terminology.r4 6.5.0) is not read again.
            if let Some(p) =
                loaded.packages.iter().find(|p| !p.version.is_empty() && p.origin == Origin::Cache(folder.clone()))
            {
                if substituted {
                    let substituted = Some(p.version.clone());
                    loaded.missing.push(Missing { name, version, needed_by: parent.clone(), substituted });
                }
                continue;
            }
            let mut package = read_folder(&folder, limits).map_err(|code| LoadError {
                code,
                argument: None,
                dependency: Some(parent.clone()),
            })?;
            package.origin = Origin::Cache(folder);
            package.needed_by = Some(parent.clone());
            if substituted {
                loaded.missing.push(Missing {
                    name: name.clone(),
                    version: version.clone(),
                    needed_by: parent.clone(),
                    substituted: Some(package.version.clone()),
                });
            }
            if !loaded.packages.iter().any(|p| same(p, &package)) {
                loaded.packages.push(package);
            }
            if loaded.packages.len() as u64 > u64::from(limits.max_packages) {
                return Err(LoadError { code: Code::CLI_IG_INVALID, argument: None, dependency: Some(parent) });
            }
        }
    }
    Ok(())
}

/// True when a loaded package of `name` matches `version`.
fn satisfied(packages: &[Package], name: &str, version: &str) -> bool {
    packages.iter().any(|p| p.name == name && version_matches(version, &p.version))
}

/// True when `version` satisfies `wanted`: equal, a `x`/`*` wildcard in a part (`4.0.x`), or
/// `current`/`dev`/`latest` (any version).
pub fn version_matches(wanted: &str, version: &str) -> bool {
    if wanted == version || matches!(wanted, "current" | "dev" | "latest" | "") {
        return true;
    }
    let w: Vec<&str> = wanted.split('.').collect();
    let v: Vec<&str> = version.split('.').collect();
    if !w.iter().any(|p| matches!(*p, "x" | "X" | "*")) {
        return false;
    }
    w.len() <= v.len() && w.iter().zip(&v).all(|(a, b)| matches!(*a, "x" | "X" | "*") || a == b)
}

/// Compares versions part by part, numerically where both parts are numbers.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let key = |s: &str| -> Vec<(u64, String)> {
        s.split(['.', '-'])
            .map(|p| match p.parse::<u64>() {
                Ok(n) => (n, String::new()),
                Err(_) => (u64::MAX, p.to_owned()),
            })
            .collect()
    };
    key(a).cmp(&key(b))
}

/// The cache folder of `name` matching `version` (the highest match), if any.
fn find_in_cache(dir: &Path, name: &str, version: &str) -> Option<PathBuf> {
    let exact = dir.join(format!("{name}#{version}"));
    if exact.join("package").join("package.json").is_file() {
        return Some(exact);
    }
    let mut best: Option<(String, PathBuf)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let file_name = entry.file_name();
        let Some(folder) = file_name.to_str() else { continue };
        let Some((n, v)) = folder.split_once('#') else { continue };
        if n != name || !version_matches(version, v) || !entry.path().join("package").join("package.json").is_file() {
            continue;
        }
        if best.as_ref().is_none_or(|(b, _)| compare_versions(v, b).is_gt()) {
            best = Some((v.to_owned(), entry.path()));
        }
    }
    best.map(|(_, p)| p)
}

/// The packages of a cache folder, manifests only (`resources` empty; `skipped` holds the
/// number of root resource files), in name and version order.
pub fn list_cache(dir: &Path, limits: &Limits) -> Result<Vec<Package>, Code> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|_| Code::CLI_IG_UNREADABLE)?.flatten() {
        let folder = entry.path();
        let manifest = folder.join("package").join("package.json");
        if !manifest.is_file() {
            continue;
        }
        let Ok(bytes) = read_capped(&manifest, limits) else { continue };
        let Ok(mut p) = package_from_manifest(&bytes, Origin::Cache(folder.clone())) else { continue };
        let files = std::fs::read_dir(folder.join("package")).map(|d| {
            d.flatten().filter(|e| e.file_name().to_str().is_some_and(|n| classify(n) == Class::Resource)).count()
        });
        p.skipped = files.unwrap_or(0).min(u32::MAX as usize) as u32;
        out.push(p);
        if out.len() as u64 > u64::from(limits.max_entries) {
            return Err(Code::CLI_IG_INVALID);
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| compare_versions(&a.version, &b.version)));
    Ok(out)
}

/// What `ig info` shows of one resource file: its type, and its canonical and version when it
/// has them (conformance metadata, never an instance's values).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Head {
    /// `resourceType` (the root element's name for XML).
    pub resource_type: String,
    /// `url`.
    pub url: Option<String>,
    /// `version`.
    pub version: Option<String>,
}

/// The head of a resource file; `None` when it is not a resource.
pub fn head(bytes: &[u8]) -> Option<Head> {
    if looks_like_xml(bytes) {
        return xml_root_name(bytes).map(|name| Head { resource_type: name, url: None, version: None });
    }
    #[derive(serde::Deserialize)]
    struct Raw {
        #[serde(rename = "resourceType")]
        resource_type: Option<String>,
        url: Option<serde_json::Value>,
        version: Option<serde_json::Value>,
    }
    let raw: Raw = serde_json::from_slice(bytes).ok()?;
    let text = |v: Option<serde_json::Value>| v.and_then(|v| v.as_str().map(str::to_owned));
    let resource_type = raw.resource_type.filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric()))?;
    Some(Head { resource_type, url: text(raw.url), version: text(raw.version) })
}

/// The local name of an XML document's root element (after the declaration, comments and
/// processing instructions), when it is a plain name.
fn xml_root_name(bytes: &[u8]) -> Option<String> {
    let mut rest = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    loop {
        let start = rest.iter().position(|&b| b == b'<')?;
        rest = &rest[start + 1..];
        match rest.first()? {
            b'?' | b'!' => {
                let end = memchr::memchr(b'>', rest)?;
                rest = &rest[end + 1..];
            }
            _ => {
                let end = rest.iter().position(|b| b.is_ascii_whitespace() || *b == b'>' || *b == b'/')?;
                let name = &rest[..end];
                let local = name.rsplit(|&b| b == b':').next()?;
                return (!local.is_empty() && local.iter().all(u8::is_ascii_alphanumeric))
                    .then(|| String::from_utf8_lossy(local).into_owned());
            }
        }
    }
}

/// Opens one `--ig`: a file, a folder, or `NAME#VERSION` in the cache.
pub fn open_spec(spec: &str, cache: Option<&Path>, limits: &Limits) -> Result<Package, Code> {
    let path = Path::new(spec);
    if path.is_dir() {
        let mut p = read_folder(path, limits)?;
        p.origin = Origin::Folder(path.to_owned());
        return Ok(p);
    }
    if path.is_file() {
        return read_file(path, limits);
    }
    if let Some((name, version)) = spec.split_once('#')
        && !name.is_empty()
        && !name.contains(['/', '\\'])
    {
        let folder = cache.and_then(|dir| find_in_cache(dir, name, version)).ok_or(Code::CLI_IG_UNREADABLE)?;
        let mut p = read_folder(&folder, limits)?;
        p.origin = Origin::Cache(folder);
        return Ok(p);
    }
    Err(Code::CLI_IG_UNREADABLE)
}

/// A `.tgz` package, or one resource file.
fn read_file(path: &Path, limits: &Limits) -> Result<Package, Code> {
    let size = std::fs::metadata(path).map_err(|_| Code::CLI_IG_UNREADABLE)?.len();
    let mut file = std::fs::File::open(path).map_err(|_| Code::CLI_IG_UNREADABLE)?;
    let mut magic = [0u8; 2];
    let gz = file.read_exact(&mut magic).is_ok() && magic == [0x1f, 0x8b];
    if gz {
        if size > limits.max_archive_bytes {
            return Err(Code::CLI_IG_INVALID);
        }
        let file = std::fs::File::open(path).map_err(|_| Code::CLI_IG_UNREADABLE)?;
        let mut p = read_archive(std::io::BufReader::new(file), limits)?;
        p.origin = Origin::Archive(path.to_owned());
        return Ok(p);
    }
    if size > limits.max_resource_bytes {
        return Err(Code::CLI_IG_INVALID);
    }
    let bytes = std::fs::read(path).map_err(|_| Code::CLI_IG_UNREADABLE)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("resource").to_owned();
    let mut p = loose(name.clone(), Origin::File(path.to_owned()));
    if is_json_object(&bytes) {
        p.resources.push(Entry { file: name, bytes, lazy: None });
    } else if looks_like_xml(&bytes) {
        p.skipped = 1;
        p.resources.push(Entry { file: name, bytes, lazy: None });
    } else {
        return Err(Code::CLI_IG_INVALID);
    }
    Ok(p)
}

fn loose(name: String, origin: Origin) -> Package {
    Package {
        name,
        version: String::new(),
        fhir_versions: Vec::new(),
        canonical: None,
        dependencies: BTreeMap::new(),
        origin,
        resources: Vec::new(),
        skipped: 0,
        examples: 0,
        needed_by: None,
    }
}

/// A gzip'd tar: `package/package.json` and the root resources.
fn read_archive(reader: impl Read, limits: &Limits) -> Result<Package, Code> {
    let gz = flate2::read::GzDecoder::new(reader);
    // The uncompressed stream is capped: a gzip bomb stops at the limit.
    let capped = gz.take(limits.max_unpacked_bytes);
    let mut archive = tar::Archive::new(capped);
    let mut manifest: Option<Vec<u8>> = None;
    let mut resources = Vec::new();
    let mut examples = 0u32;
    let mut skipped = 0u32;
    let mut count = 0u32;
    for entry in archive.entries().map_err(|_| Code::CLI_IG_INVALID)? {
        let mut entry = entry.map_err(|_| Code::CLI_IG_INVALID)?;
        count += 1;
        if count > limits.max_entries {
            return Err(Code::CLI_IG_INVALID);
        }
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path().map_err(|_| Code::CLI_IG_INVALID)?;
        let Some(path) = path.to_str().map(|p| p.trim_start_matches("./").to_owned()) else { continue };
        let Some(rest) = path.strip_prefix("package/") else { continue };
        let class = classify(rest);
        if class == Class::Example {
            examples += 1;
            continue;
        }
        if class == Class::Other {
            continue;
        }
        if entry.size() > limits.max_resource_bytes {
            return Err(Code::CLI_IG_INVALID);
        }
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry.read_to_end(&mut bytes).map_err(|_| Code::CLI_IG_INVALID)?;
        match class {
            Class::Manifest => manifest = Some(bytes),
            Class::Resource if scan_head(&bytes, true).head.is_some_and(|h| h.resource_type == "Bundle") => {
                skipped += 1
            }
            Class::Resource => resources.push(Entry { file: rest.to_owned(), bytes, lazy: None }),
            Class::Xml => skipped += 1,
            Class::Example | Class::Other => {}
        }
    }
    let manifest = manifest.ok_or(Code::CLI_IG_INVALID)?;
    let mut p = package_from_manifest(&manifest, Origin::Archive(PathBuf::new()))?;
    resources.sort_by(|a, b| a.file.cmp(&b.file));
    p.resources = resources;
    p.examples = examples;
    p.skipped = skipped;
    Ok(p)
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Class {
    Manifest,
    Resource,
    Xml,
    Example,
    Other,
}

/// What a path under `package/` is.
fn classify(rest: &str) -> Class {
    if rest == "package.json" {
        return Class::Manifest;
    }
    if rest.starts_with("example/") || rest.starts_with("examples/") {
        return if rest.ends_with(".json") { Class::Example } else { Class::Other };
    }
    if rest.contains('/') || rest.starts_with('.') {
        return Class::Other;
    }
    if rest.ends_with(".schema.json") || rest.ends_with(".openapi.json") {
        return Class::Other;
    }
    if rest.ends_with(".json") {
        Class::Resource
    } else if rest.ends_with(".xml") {
        Class::Xml
    } else {
        Class::Other
    }
}

/// A package folder (holding `package/package.json`, or `package.json` itself), or a folder of
/// loose resource files.
fn read_folder(dir: &Path, limits: &Limits) -> Result<Package, Code> {
    let root = if dir.join("package").join("package.json").is_file() { dir.join("package") } else { dir.to_owned() };
    let manifest = root.join("package.json");
    let mut p = if manifest.is_file() {
        let bytes = read_capped(&manifest, limits)?;
        package_from_manifest(&bytes, Origin::Folder(dir.to_owned()))?
    } else {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("folder").to_owned();
        loose(name, Origin::Folder(dir.to_owned()))
    };
    let is_package = manifest.is_file();
    let mut names: Vec<String> = Vec::new();
    let entries = std::fs::read_dir(&root).map_err(|_| Code::CLI_IG_UNREADABLE)?;
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else { continue };
        // The type from the directory listing (no stat per file), following a symbolic link.
        let is_dir = match entry.file_type() {
            Ok(t) if !t.is_symlink() => t.is_dir(),
            _ => entry.path().is_dir(),
        };
        if is_dir {
            if is_package && (name == "example" || name == "examples") {
                p.examples = std::fs::read_dir(entry.path())
                    .map(|d| {
                        d.flatten().filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".json"))).count()
                    })
                    .unwrap_or(0)
                    .min(u32::MAX as usize) as u32;
            }
            continue;
        }
        names.push(name);
        if names.len() as u64 > u64::from(limits.max_entries) {
            return Err(Code::CLI_IG_INVALID);
        }
    }
    names.sort_unstable();
    // The package's `.index.json` (written by the FHIR package tooling into the cache) gives
    // each file's head without opening the file.
    let index_bytes = if is_package { read_capped(&root.join(".index.json"), limits).ok() } else { None };
    let mut index = index_bytes.as_deref().map(read_index).unwrap_or_default();
    let mut total = 0u64;
    for name in names {
        let path = root.join(&name);
        match classify(&name) {
            Class::Resource => {
                if let Some(h) = index.remove(name.as_str()) {
                    // Not opened now: its size is checked against `max_resource_bytes` when it
                    // is first read (and only what is read counts).
                    if h.resource_type == "Bundle" {
                        p.skipped += 1;
                    } else {
                        let head = Head {
                            resource_type: h.resource_type.into_owned(),
                            url: h.url.map(std::borrow::Cow::into_owned),
                            version: h.version.map(std::borrow::Cow::into_owned),
                        };
                        p.resources.push(Entry { file: name, bytes: Vec::new(), lazy: Some((path, head)) });
                    }
                    continue;
                }
                if is_package {
                    // The head from the file's first bytes; the rest is read when the resource
                    // is first used (a dependency's thousands of definitions cost their heads).
                    let size = std::fs::metadata(&path).map_err(|_| Code::CLI_IG_UNREADABLE)?.len();
                    if size > limits.max_resource_bytes {
                        return Err(Code::CLI_IG_INVALID);
                    }
                    if size > HEAD_PREFIX as u64 {
                        total += size;
                        if total > limits.max_unpacked_bytes {
                            return Err(Code::CLI_IG_INVALID);
                        }
                        let prefix = read_prefix(&path, HEAD_PREFIX)?;
                        let scan = scan_head(&prefix, false);
                        match scan.head {
                            Some(h) if h.resource_type == "Bundle" => p.skipped += 1,
                            Some(h) if scan.complete => {
                                p.resources.push(Entry { file: name, bytes: Vec::new(), lazy: Some((path, h)) });
                            }
                            _ => {
                                let bytes = read_capped(&path, limits)?;
                                p.resources.push(Entry { file: name, bytes, lazy: None });
                            }
                        }
                        continue;
                    }
                }
                let bytes = read_capped(&path, limits)?;
                total += bytes.len() as u64;
                if total > limits.max_unpacked_bytes {
                    return Err(Code::CLI_IG_INVALID);
                }
                if !is_package && !is_json_object(&bytes) {
                    // A loose folder may hold other JSON files: only resources are loaded.
                    p.skipped += 1;
                    continue;
                }
                if is_package && scan_head(&bytes, true).head.is_some_and(|h| h.resource_type == "Bundle") {
                    p.skipped += 1;
                    continue;
                }
                p.resources.push(Entry { file: name, bytes, lazy: None });
            }
            Class::Xml if !is_package => {
                let bytes = read_capped(&path, limits)?;
                total += bytes.len() as u64;
                if total > limits.max_unpacked_bytes {
                    return Err(Code::CLI_IG_INVALID);
                }
                if looks_like_xml(&bytes) {
                    p.resources.push(Entry { file: name, bytes, lazy: None });
                }
            }
            Class::Xml => p.skipped += 1,
            _ => {}
        }
    }
    Ok(p)
}

fn read_capped(path: &Path, limits: &Limits) -> Result<Vec<u8>, Code> {
    let size = std::fs::metadata(path).map_err(|_| Code::CLI_IG_UNREADABLE)?.len();
    if size > limits.max_resource_bytes {
        return Err(Code::CLI_IG_INVALID);
    }
    std::fs::read(path).map_err(|_| Code::CLI_IG_UNREADABLE)
}

/// One file's head in a package's `.index.json`, borrowed from its text.
#[derive(serde::Deserialize)]
struct IndexFile<'a> {
    #[serde(borrow)]
    filename: std::borrow::Cow<'a, str>,
    #[serde(rename = "resourceType", borrow)]
    resource_type: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    url: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    version: Option<std::borrow::Cow<'a, str>>,
}

/// The heads of a package folder's `.index.json` (its bytes) by file name (FHIR package
/// specification: `{"index-version": n, "files": [{"filename", "resourceType", "url",
/// "version", ...}]}`); empty when it does not read (the files are then read for their heads).
/// The last of a file listed twice wins.
fn read_index(bytes: &[u8]) -> std::collections::HashMap<std::borrow::Cow<'_, str>, IndexFile<'_>> {
    #[derive(serde::Deserialize)]
    struct Index<'a> {
        #[serde(borrow)]
        files: Vec<IndexFile<'a>>,
    }
    // serde's error text may quote the file: dropped (the files are read instead).
    let Ok(index) = serde_json::from_slice::<Index>(bytes) else { return Default::default() };
    index
        .files
        .into_iter()
        .filter(|f| !f.resource_type.is_empty() && f.resource_type.bytes().all(|c| c.is_ascii_alphanumeric()))
        .filter(|f| classify(&f.filename) == Class::Resource)
        .map(|f| (f.filename.clone(), f))
        .collect()
}

/// The first `n` bytes of a file (fewer when it is shorter).
fn read_prefix(path: &Path, n: usize) -> Result<Vec<u8>, Code> {
    let file = std::fs::File::open(path).map_err(|_| Code::CLI_IG_UNREADABLE)?;
    let mut out = Vec::with_capacity(n);
    file.take(n as u64).read_to_end(&mut out).map_err(|_| Code::CLI_IG_UNREADABLE)?;
    Ok(out)
}

/// What [`scan_head`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// The head, when `resourceType` was found (a non-empty name of letters and digits).
    pub head: Option<Head>,
    /// True when nothing after the bytes scanned could change the head: all three keys were
    /// found, or the object ended.
    pub complete: bool,
}

/// The top-level `resourceType`, `url` and `version` of a JSON object, read without building
/// the document: the values of other keys are skipped (strings to their closing quote, objects
/// and arrays by depth). `whole`: the bytes are the whole text (otherwise a prefix, which may
/// end anywhere). Never panics; a text that is not a JSON object gives no head.
pub fn scan_head(bytes: &[u8], whole: bool) -> Scan {
    let b = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let (mut rt, mut url, mut version): (Option<String>, Option<String>, Option<String>) = (None, None, None);
    let finish = |rt: Option<String>, url, version, complete: bool| Scan {
        head: rt
            .filter(|t: &String| !t.is_empty() && t.bytes().all(|c| c.is_ascii_alphanumeric()))
            .map(|resource_type| Head { resource_type, url, version }),
        complete,
    };
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return Scan::default();
    }
    i += 1;
    loop {
        i = skip_ws(b, i);
        match b.get(i) {
            None => return finish(rt, url, version, false),
            Some(b'}') => return finish(rt, url, version, true),
            Some(b',') => {
                i += 1;
                continue;
            }
            Some(b'"') => {}
            Some(_) => return Scan::default(),
        }
        let Some(key_end) = string_end(b, i) else { return finish(rt, url, version, false) };
        let key = &b[i + 1..key_end - 1];
        i = skip_ws(b, key_end);
        match b.get(i) {
            None => return finish(rt, url, version, false),
            Some(b':') => i = skip_ws(b, i + 1),
            Some(_) => return Scan::default(),
        }
        let slot = match key {
            b"resourceType" => Some(&mut rt),
            b"url" => Some(&mut url),
            b"version" => Some(&mut version),
            _ => None,
        };
        match (slot, b.get(i)) {
            (Some(slot), Some(b'"')) => {
                let Some(end) = string_end(b, i) else { return finish(rt, url, version, false) };
                // The string decoded (escapes) by serde: a few bytes.
                *slot = serde_json::from_slice::<String>(&b[i..end]).ok();
                i = end;
                if rt.is_some() && url.is_some() && version.is_some() {
                    return finish(rt, url, version, true);
                }
            }
            _ => match skip_value(b, i) {
                Some(end) => i = end,
                None if whole => return Scan::default(),
                None => return finish(rt, url, version, false),
            },
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// Past the closing quote of the string opening at `i`; `None` when the bytes end first.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let k = j + memchr::memchr2(b'"', b'\\', b.get(j..)?)?;
        if b[k] == b'"' {
            return Some(k + 1);
        }
        j = k + 2;
    }
}

/// Past the value starting at `i`; `None` when the bytes end first.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match b.get(j)? {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let n = b.get(i..)?.iter().position(|c| matches!(c, b',' | b'}' | b']') || c.is_ascii_whitespace())?;
            Some(i + n)
        }
    }
}

/// True when the bytes start (after white space and a BOM) with `{`.
fn is_json_object(bytes: &[u8]) -> bool {
    let b = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    b.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'{')
}

/// True when the bytes start (after white space and a BOM) with `<`.
pub fn looks_like_xml(bytes: &[u8]) -> bool {
    let b = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    b.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'<')
}

/// The package described by a `package.json`.
fn package_from_manifest(bytes: &[u8], origin: Origin) -> Result<Package, Code> {
    // serde_json's error text quotes input: it is dropped for a code.
    let json: serde_json::Value = serde_json::from_slice(bytes).map_err(|_| Code::CLI_IG_INVALID)?;
    let obj = json.as_object().ok_or(Code::CLI_IG_INVALID)?;
    let text = |k: &str| obj.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    let name = text("name").filter(|n| !n.is_empty()).ok_or(Code::CLI_IG_INVALID)?;
    let version = text("version").unwrap_or_default();
    let list = |k: &str| -> Vec<String> {
        obj.get(k)
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let mut fhir_versions = list("fhirVersions");
    if fhir_versions.is_empty() {
        fhir_versions = list("fhir-version-list");
    }
    let dependencies = obj
        .get("dependencies")
        .and_then(|v| v.as_object())
        .map(|d| d.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned()))).collect())
        .unwrap_or_default();
    Ok(Package {
        name,
        version,
        fhir_versions,
        canonical: text("canonical"),
        dependencies,
        origin,
        resources: Vec::new(),
        skipped: 0,
        examples: 0,
        needed_by: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.tgz` of `files` (path, bytes), as npm packs them.
    fn tgz(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for (path, bytes) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, path, *bytes).expect("test setup");
        }
        let raw = tar.into_inner().expect("test setup");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &raw).expect("test setup");
        gz.finish().expect("test setup")
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("phiward-package-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("test setup");
        dir
    }

    const SD: &[u8] = br#"{"resourceType":"StructureDefinition","url":"http://example.org/sd/a","version":"1.0.0"}"#;

    #[test]
    fn an_archive_gives_its_manifest_root_resources_and_counts_examples() {
        let dir = scratch("archive");
        let manifest = br#"{"name":"example.ig","version":"1.2.0","fhirVersions":["4.0.1"],
            "dependencies":{"hl7.fhir.r4.core":"4.0.1","example.base":"2.0.x"},"canonical":"http://example.org"}"#;
        let bytes = tgz(&[
            ("package/package.json", manifest),
            ("package/StructureDefinition-a.json", SD),
            ("package/.index.json", b"{}"),
            ("package/example/Patient-p.json", b"{}"),
            ("package/other/x.json", b"{}"),
            ("package/openapi/a.openapi.json", b"{}"),
            ("package/ValueSet-v.xml", b"<ValueSet/>"),
        ]);
        let path = dir.join("example.ig.tgz");
        std::fs::write(&path, bytes).expect("test setup");
        let loaded = load(&[path.to_string_lossy().into_owned()], None, &Limits::default()).expect("test setup");
        assert_eq!(loaded.packages.len(), 1);
        let p = &loaded.packages[0];
        assert_eq!(p.id(), "example.ig#1.2.0");
        assert_eq!(p.fhir_versions, ["4.0.1"]);
        assert_eq!(p.canonical.as_deref(), Some("http://example.org"));
        assert_eq!(p.resources.iter().map(|e| e.file.as_str()).collect::<Vec<_>>(), ["StructureDefinition-a.json"]);
        assert_eq!((p.examples, p.skipped), (1, 1));
        assert_eq!(p.origin.kind(), "archive");
        // The core is built in; the other dependency is reported missing (no cache given).
        assert_eq!(
            loaded.missing,
            [Missing {
                name: "example.base".into(),
                version: "2.0.x".into(),
                needed_by: "example.ig#1.2.0".into(),
                substituted: None
            }]
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A package `NAME#VERSION` in the cache folder `cache`, with `deps` (a JSON object) as its
    /// dependencies and one StructureDefinition.
    fn cached_package(cache: &Path, folder: &str, version: &str, deps: &str) {
        let name = folder.split('#').next().expect("test setup");
        let root = cache.join(folder).join("package");
        std::fs::create_dir_all(&root).expect("test setup");
        std::fs::write(
            root.join("package.json"),
            format!(r#"{{"name":"{name}","version":"{version}","dependencies":{deps}}}"#),
        )
        .expect("test setup");
        std::fs::write(root.join("StructureDefinition-a.json"), SD).expect("test setup");
    }

    /// The unpacked package `example.ig#1.0.0` under `dir/ig`, with `deps` as its dependencies.
    fn ig_package(dir: &Path, deps: &str) -> std::path::PathBuf {
        let ig = dir.join("ig");
        std::fs::create_dir_all(ig.join("package")).expect("test setup");
        std::fs::write(
            ig.join("package").join("package.json"),
            format!(r#"{{"name":"example.ig","version":"1.0.0","dependencies":{deps}}}"#),
        )
        .expect("test setup");
        ig
    }

    #[test]
    fn dependencies_come_from_the_cache_by_exact_version_or_the_highest_wildcard_match() {
        let dir = scratch("cache");
        let cache = dir.join("packages");
        for (folder, version, deps) in [
            ("example.base#2.0.1", "2.0.1", r#"{"example.leaf":"1.0.0"}"#),
            ("example.base#2.0.10", "2.0.10", r#"{"example.leaf":"1.0.0"}"#),
            ("example.base#2.1.0", "2.1.0", "{}"),
            ("example.leaf#1.0.0", "1.0.0", "{}"),
        ] {
            cached_package(&cache, folder, version, deps);
        }
        let ig = ig_package(&dir, r#"{"example.base":"2.0.x","example.gone":"9.9.9","example.leaf":"0.9.0"}"#);
        let loaded = load(&[ig.to_string_lossy().into_owned()], Some(&cache), &Limits::default()).expect("test setup");
        let ids: Vec<String> = loaded.packages.iter().map(Package::id).collect();
        assert_eq!(ids, ["example.ig#1.0.0", "example.base#2.0.10", "example.leaf#1.0.0"]);
        assert_eq!(loaded.packages[1].origin.kind(), "cache");
        // The leaf stands in for the IG's 0.9.0 (found first) and meets the base's 1.0.0.
        assert_eq!(loaded.packages[2].needed_by.as_deref(), Some("example.ig#1.0.0"));
        // example.gone is nowhere; example.leaf 0.9.0 is not cached, 1.0.0 stands in for it.
        assert_eq!(loaded.missing.len(), 2);
        assert_eq!((loaded.missing[0].name.as_str(), loaded.missing[0].substituted.as_deref()), ("example.gone", None));
        assert_eq!(
            (loaded.missing[1].name.as_str(), loaded.missing[1].substituted.as_deref()),
            ("example.leaf", Some("1.0.0"))
        );
        // NAME#VERSION names a cached package directly.
        let direct = load(&["example.base#2.1.0".to_owned()], Some(&cache), &Limits::default()).expect("test setup");
        assert_eq!(direct.packages[0].id(), "example.base#2.1.0");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_substitute_two_packages_need_is_loaded_once_and_reported_for_each() {
        let dir = scratch("substitute");
        let cache = dir.join("packages");
        for (folder, deps) in [("example.base#2.0.0", r#"{"example.leaf":"0.9.0"}"#), ("example.leaf#1.0.0", "{}")] {
            let version = folder.split_once('#').expect("test setup").1;
            cached_package(&cache, folder, version, deps);
        }
        let ig = ig_package(&dir, r#"{"example.base":"2.0.0","example.leaf":"0.9.0"}"#);
        let loaded = load(&[ig.to_string_lossy().into_owned()], Some(&cache), &Limits::default()).expect("test setup");
        let ids: Vec<String> = loaded.packages.iter().map(Package::id).collect();
        assert_eq!(ids, ["example.ig#1.0.0", "example.base#2.0.0", "example.leaf#1.0.0"]);
        let reported: Vec<(&str, Option<&str>)> =
            loaded.missing.iter().map(|m| (m.needed_by.as_str(), m.substituted.as_deref())).collect();
        assert_eq!(reported, [("example.base#2.0.0", Some("1.0.0")), ("example.ig#1.0.0", Some("1.0.0"))]);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn loose_files_and_folders_load_their_resources() {
        let dir = scratch("loose");
        std::fs::write(dir.join("a.json"), SD).expect("test setup");
        std::fs::write(dir.join("b.xml"), b"<StructureDefinition xmlns=\"http://hl7.org/fhir\"/>").expect("test setup");
        std::fs::write(dir.join("notes.txt"), b"x").expect("test setup");
        std::fs::write(dir.join("list.json"), b"[1]").expect("test setup");
        let folder = load(&[dir.to_string_lossy().into_owned()], None, &Limits::default()).expect("test setup");
        let p = &folder.packages[0];
        assert_eq!(p.resources.iter().map(|e| e.file.as_str()).collect::<Vec<_>>(), ["a.json", "b.xml"]);
        assert_eq!(p.skipped, 1);
        let file =
            load(&[dir.join("a.json").to_string_lossy().into_owned()], None, &Limits::default()).expect("test setup");
        assert_eq!(file.packages[0].origin.kind(), "file");
        assert_eq!(file.packages[0].resources.len(), 1);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn bad_packages_are_refused_with_a_code_naming_the_argument() {
        let dir = scratch("bad");
        let no_manifest = dir.join("no-manifest.tgz");
        std::fs::write(&no_manifest, tgz(&[("package/StructureDefinition-a.json", SD)])).expect("test setup");
        let truncated = dir.join("truncated.tgz");
        let whole = tgz(&[("package/package.json", br#"{"name":"x","version":"1"}"#), ("package/a.json", SD)]);
        std::fs::write(&truncated, &whole[..whole.len() / 2]).expect("test setup");
        let text = dir.join("text.json");
        std::fs::write(&text, b"not json").expect("test setup");
        let ok = dir.join("ok.json");
        std::fs::write(&ok, SD).expect("test setup");
        let s = |p: &Path| p.to_string_lossy().into_owned();
        let limits = Limits::default();
        assert_eq!(
            load(&[s(&ok), s(&no_manifest)], None, &limits).expect_err("the load fails"),
            LoadError::ig(Code::CLI_IG_INVALID, 1)
        );
        assert_eq!(load(&[s(&truncated)], None, &limits).expect_err("the load fails").code, Code::CLI_IG_INVALID);
        assert_eq!(load(&[s(&text)], None, &limits).expect_err("the load fails").code, Code::CLI_IG_INVALID);
        assert_eq!(
            load(&[s(&dir.join("absent.tgz"))], None, &limits).expect_err("the load fails").code,
            Code::CLI_IG_UNREADABLE
        );
        assert_eq!(
            load(&["no.such#1.0.0".into()], Some(&dir), &limits).expect_err("the load fails").code,
            Code::CLI_IG_UNREADABLE
        );
        // A gzip bomb stops at the unpacked limit.
        let big = vec![b' '; 1 << 20];
        let bomb = dir.join("bomb.tgz");
        std::fs::write(&bomb, tgz(&[("package/package.json", br#"{"name":"x"}"#), ("package/a.json", &big)]))
            .expect("test setup");
        let tight = Limits { max_unpacked_bytes: 64 * 1024, ..Limits::default() };
        assert_eq!(load(&[s(&bomb)], None, &tight).expect_err("the load fails").code, Code::CLI_IG_INVALID);
        let small = Limits { max_resource_bytes: 1024, ..Limits::default() };
        assert_eq!(load(&[s(&bomb)], None, &small).expect_err("the load fails").code, Code::CLI_IG_INVALID);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn versions_compare_by_number_and_match_wildcards() {
        assert!(version_matches("4.0.x", "4.0.1"));
        assert!(!version_matches("4.0.x", "4.1.0"));
        assert!(version_matches("current", "0.1.0"));
        assert!(!version_matches("1.0.0", "1.0.1"));
        assert!(compare_versions("2.0.10", "2.0.9").is_gt());
        assert!(compare_versions("1.0.0", "1.0.0-ballot").is_lt());
    }

    #[test]
    fn the_head_scan_reads_the_top_level_keys_only_and_never_panics() {
        let h = |rt: &str, url: Option<&str>, v: Option<&str>| Head {
            resource_type: rt.to_owned(),
            url: url.map(str::to_owned),
            version: v.map(str::to_owned),
        };
        // Nested url/version keys (in text, snapshot, extensions) are not the resource's.
        let sd = br#"{"resourceType":"StructureDefinition","text":{"div":"<div>\"url\": \"x\" {[</div>"},
            "extension":[{"url":"http://example.org/ext","valueString":"version"}],"url":"http://example.org/sd",
            "version":"1.2.\u0033","snapshot":{"element":[{"url":"nested"}]}}"#;
        let scan = scan_head(sd, true);
        assert_eq!(
            scan,
            Scan { head: Some(h("StructureDefinition", Some("http://example.org/sd"), Some("1.2.3"))), complete: true }
        );
        // No version: the whole object is scanned.
        let vs = br#" {"url":"u","n":[1,2.5e3,true,null,{"a":[]}],"resourceType":"ValueSet"} "#;
        assert_eq!(scan_head(vs, true), Scan { head: Some(h("ValueSet", Some("u"), None)), complete: true });
        // A prefix that ends before the object does: what was found, not complete.
        let prefix = &sd[..60];
        let scan = scan_head(prefix, false);
        assert_eq!(scan.head.map(|h| h.resource_type), Some("StructureDefinition".to_owned()));
        assert!(!scan.complete);
        // Not a resource: no head.
        for bad in
            [&b""[..], b"[1]", b"{", b"{\"resourceType\":", b"{\"resourceType\":\"a b\"}", b"{1:2}", b"{\"a\" 1}"]
        {
            assert_eq!(scan_head(bad, true).head, None, "{bad:?}");
        }
        // Every prefix of a resource, and of bytes flipped, is scanned without panicking.
        for n in 0..=sd.len() {
            let _ = scan_head(&sd[..n], false);
            let _ = scan_head(&sd[..n], true);
            let mut flipped = sd.to_vec();
            flipped[n.min(sd.len() - 1)] = b'"';
            let _ = scan_head(&flipped, true);
        }
    }

    #[test]
    fn a_package_folder_is_indexed_by_heads_and_its_bundles_are_not_loaded() {
        let dir = scratch("lazy");
        let pkg = dir.join("package");
        std::fs::create_dir_all(&pkg).expect("scratch folder");
        std::fs::write(pkg.join("package.json"), br#"{"name":"example.lazy","version":"1.0.0"}"#).expect("write");
        // A large file whose head is in its first bytes: indexed without being read whole.
        let big = format!(
            r#"{{"resourceType":"CodeSystem","url":"http://example.org/cs","version":"2","concept":[{}]}}"#,
            vec![r#"{"code":"c"}"#; 2000].join(",")
        );
        std::fs::write(pkg.join("CodeSystem-cs.json"), &big).expect("write");
        std::fs::write(pkg.join("Bundle-b.json"), br#"{"resourceType":"Bundle","type":"collection","entry":[]}"#)
            .expect("write");
        let p = read_folder(&dir, &Limits::default()).expect("reads");
        assert_eq!(p.resources.len(), 1);
        assert_eq!(p.skipped, 1);
        let e = &p.resources[0];
        assert!(e.bytes.is_empty());
        assert_eq!(e.head().and_then(|h| h.url), Some("http://example.org/cs".to_owned()));
        // With an index, the heads come from it.
        std::fs::write(
            pkg.join(".index.json"),
            br#"{"index-version":2,"files":[{"filename":"CodeSystem-cs.json","resourceType":"CodeSystem","url":"http://example.org/indexed","version":"2"}]}"#,
        )
        .expect("write");
        let p = read_folder(&dir, &Limits::default()).expect("reads");
        assert_eq!(p.resources[0].head().and_then(|h| h.url), Some("http://example.org/indexed".to_owned()));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
