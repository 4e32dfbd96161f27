//! The formats phiward knows, and which operations each one implements.
//!
//! The support matrix is derived from the format modules themselves: each declares the
//! operations it implements (`OPERATIONS`), and [`Format::supports`] reads those declarations.
//! The CLI's `CLI_FORMAT_UNSUPPORTED` and the MCP tool descriptions both come from here, so the
//! matrix cannot drift from the code.
//!
//! Architecture Invariant: `formats/` depends only on `phi`, `diag`, `limits` (and `detect` for
//! delimiter rules); it knows nothing of `policy`, `convert`, `ops`, `cli` or `mcp`.

pub mod astm;
pub(crate) mod calendar;
pub mod ccda;
pub mod codec;
pub mod dicom;
pub mod fhir;
pub mod file_input;
pub mod hl7v2;
pub mod lines;
pub mod mllp;
pub mod ncpdp;
pub mod ncpdp_script;
pub mod planned;
pub mod sniff;
pub mod x12;
pub mod xml;

use serde::Serialize;

pub use codec::Codec;

/// The registry: one line per format. `codecs` are the formats built into phiward (a type
/// that implements [`Codec`], and, in their own modules, the policy engine's and the
/// converter's traits); `planned` are formats phiward recognises (name and signature) and
/// answers `CLI_FORMAT_UNSUPPORTED` for. Everything else is generated from this list by the
/// macro given as `$then`: the [`Format`] enum, names, detection, the operation matrix here,
/// and the one dispatch point in `ops`.
///
/// Adding a format: ARCHITECTURE.md, "Adding a format".
macro_rules! with_registry {
    ($then:ident) => {
        $then! {
            codecs {
                Hl7: crate::formats::hl7v2::Hl7,
                Fhir: crate::formats::fhir::Fhir,
                X12: crate::formats::x12::X12,
                Astm: crate::formats::astm::Astm,
                Dicom: crate::formats::dicom::Dicom,
                Ncpdp: crate::formats::ncpdp::Ncpdp,
                Ccda: crate::formats::ccda::Ccda,
                NcpdpScript: crate::formats::ncpdp_script::NcpdpScript,
            }
            planned {
            }
        }
    };
}
pub(crate) use with_registry;

/// Generates [`Format`] and its tables from the registry (no `match`: tables indexed by the
/// variant).
macro_rules! define_formats {
    (
        codecs { $($codec:ident: $ty:path,)* }
        planned { $($planned:ident: $pname:literal, text = $text:literal, $psniff:path;)* }
    ) => {
        /// A message format (see the registry, [`with_registry`]).
        #[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Format {
            $(
                #[doc = concat!("Built in: [`", stringify!($ty), "`].")]
                $codec,
            )*
            $(
                #[doc = concat!("Recognised, not built yet: `", $pname, "`.")]
                $planned,
            )*
        }

        impl Format {
            /// Every format, in registry order.
            pub const ALL: &'static [Format] = &[$(Format::$codec,)* $(Format::$planned,)*];
            const NAMES: &'static [&'static str] = &[$(<$ty as Codec>::NAME,)* $($pname,)*];
            const OPERATIONS: &'static [&'static [Operation]] =
                &[$(<$ty as Codec>::OPERATIONS,)* $({ let _ = $pname; &[] },)*];
            const TEXT: &'static [bool] = &[$(<$ty as Codec>::TEXT,)* $($text,)*];
            const SNIFFERS: &'static [fn(&[u8], &[u8]) -> bool] = &[$(<$ty as Codec>::sniff,)* $($psniff,)*];
            /// True for a format built into this binary (a codec), false for a planned one.
            const BUILT: &'static [bool] = &[$({ let _ = stringify!($codec); true },)* $({ let _ = $pname; false },)*];
        }
    };
}

with_registry!(define_formats);

/// Names `--format` and the MCP tools accept besides the formats' own: a framing names the
/// format it carries, framed.
pub const ALIASES: &[(&str, Format, codec::Framing)] = &[("mllp", Format::Hl7, codec::Framing::Mllp)];

impl Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// An operation on a parsed input.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    /// The message as typed JSON (data channel).
    Parse,
    /// A value-free verdict with findings.
    Validate,
    /// A value-free summary.
    Inspect,
    /// Canonical re-serialization.
    Fmt,
    /// Conversion to FHIR R4.
    Convert,
    /// De-identification under a policy (same format out).
    Redact,
    /// An acknowledgment of what was received (X12 999 and TA1).
    Ack,
}

impl Operation {
    /// Every operation, in a stable order.
    pub const ALL: [Operation; 7] = [
        Operation::Parse,
        Operation::Validate,
        Operation::Inspect,
        Operation::Fmt,
        Operation::Convert,
        Operation::Redact,
        Operation::Ack,
    ];

    /// The stable lower-case name, as on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Parse => "parse",
            Operation::Validate => "validate",
            Operation::Inspect => "inspect",
            Operation::Fmt => "fmt",
            Operation::Convert => "convert",
            Operation::Redact => "redact",
            Operation::Ack => "ack",
        }
    }
}

impl Format {
    /// The entry of a table generated from the registry (the tables have one entry per
    /// variant, in declaration order, so the index is always inside).
    fn entry<T: Copy>(self, table: &[T]) -> T {
        table[self as usize]
    }

    /// The stable lower-case name, as in `--format` and in output JSON.
    pub fn as_str(self) -> &'static str {
        self.entry(Self::NAMES)
    }

    /// Looks a format up by its stable name (aliases are not formats: see [`resolve`]).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.iter().copied().find(|f| f.as_str() == name)
    }

    /// The operations this build implements for the format, as declared by its codec.
    pub fn operations(self) -> &'static [Operation] {
        self.entry(Self::OPERATIONS)
    }

    /// True when the operation is implemented for the format.
    pub fn supports(self, op: Operation) -> bool {
        self.operations().contains(&op)
    }

    /// True for a format built into this binary (not only recognised).
    pub fn is_built(self) -> bool {
        self.entry(Self::BUILT)
    }

    /// False for a binary format (an input of white space may still be one).
    pub fn is_text(self) -> bool {
        self.entry(Self::TEXT)
    }

    /// True when the input's first bytes look like this format (`body`: after a BOM and
    /// white space; `raw`: as they are).
    pub fn sniff(self, body: &[u8], raw: &[u8]) -> bool {
        self.entry(Self::SNIFFERS)(body, raw)
    }
}

/// A name as given to `--format` or an MCP tool: a format, or an alias with its framing.
pub fn resolve(name: &str) -> Option<(Format, Option<codec::Framing>)> {
    if let Some(f) = Format::from_name(name) {
        return Some((f, None));
    }
    ALIASES.iter().find(|(n, _, _)| *n == name).map(|&(_, f, framing)| (f, Some(framing)))
}

/// The names of the formats built into this binary, then the aliases of those (what the CLI's
/// `--format` offers: a format that is only recognised would answer `CLI_FORMAT_UNSUPPORTED`).
pub fn built_names() -> Vec<&'static str> {
    Format::ALL
        .iter()
        .filter(|f| f.is_built())
        .map(|f| f.as_str())
        .chain(ALIASES.iter().filter(|(_, f, _)| f.is_built()).map(|(n, _, _)| *n))
        .collect()
}

/// Every name `--format` accepts: the formats', then the aliases.
pub fn accepted_names() -> Vec<&'static str> {
    Format::ALL.iter().map(|f| f.as_str()).chain(ALIASES.iter().map(|(n, _, _)| *n)).collect()
}
