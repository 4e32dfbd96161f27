//! The policy engines keyed by format: [`Redacts`] is what the pipeline asks of a format's
//! engine, implemented here for each registered codec type over its engine module
//! ([`super::hl7v2`], [`super::fhir`], [`super::x12`], [`super::astm`], [`super::dicom`], [`super::ncpdp`], [`super::ccda`], [`super::ncpdp_script`]). A format without an engine cannot be registered: the
//! registry's dispatch requires the trait.
//!
//! What it does not do: decide anything (the engines' rules do).

use super::Policy;
use super::manifest::Counts;
use crate::formats::astm::Astm;
use crate::formats::codec::{Codec, Settings};
use crate::formats::dicom::Dicom;
use crate::formats::fhir::Fhir;
use crate::formats::hl7v2::Hl7;
use crate::formats::ncpdp::Ncpdp;
use crate::formats::x12::X12;
use crate::keys::Key;
use crate::phi::Disclosure;

/// A format's policy engine.
pub trait Redacts: Codec {
    /// True when the engine redacts (the format may then declare `redact`).
    const REDACTS: bool;

    /// The engine's state over one input (its counts).
    type Redactor<'p>;

    /// An engine for `policy`, with the key of keyed actions.
    fn redactor<'p>(policy: &'p Policy, key: Option<&'p Key>) -> Self::Redactor<'p>;

    /// Appends the redacted form of a record to `out` (data channel).
    fn redact(
        redactor: &mut Self::Redactor<'_>,
        doc: &Self::Document,
        settings: &Settings,
        disclosure: &Disclosure,
        out: &mut Vec<u8>,
    );

    /// The engine's counts (the manifest adds them up).
    fn counts<'a>(redactor: &'a mut Self::Redactor<'_>) -> &'a mut Counts;

    /// Why the last record was not written, when the engine refused it (a DICOM file whose
    /// pixel data may show burned-in text); None: not refused.
    fn refused(_redactor: &Self::Redactor<'_>) -> Option<crate::diag::Code> {
        None
    }
}

impl Redacts for Hl7 {
    const REDACTS: bool = true;
    type Redactor<'p> = super::hl7v2::Redactor<'p>;

    fn redactor<'p>(policy: &'p Policy, key: Option<&'p Key>) -> Self::Redactor<'p> {
        super::hl7v2::Redactor::new(policy, key)
    }

    fn redact(
        redactor: &mut Self::Redactor<'_>,
        doc: &Self::Document,
        _settings: &Settings,
        disclosure: &Disclosure,
        out: &mut Vec<u8>,
    ) {
        redactor.redact(doc, disclosure, out);
    }

    fn counts<'a>(redactor: &'a mut Self::Redactor<'_>) -> &'a mut Counts {
        &mut redactor.counts
    }
}

impl Redacts for Fhir {
    const REDACTS: bool = true;
    type Redactor<'p> = super::fhir::Redactor<'p>;

    fn redactor<'p>(policy: &'p Policy, key: Option<&'p Key>) -> Self::Redactor<'p> {
        super::fhir::Redactor::new(policy, key)
    }

    fn redact(
        redactor: &mut Self::Redactor<'_>,
        doc: &Self::Document,
        settings: &Settings,
        disclosure: &Disclosure,
        out: &mut Vec<u8>,
    ) {
        super::fhir::redact(redactor, doc, disclosure, settings.ndjson, out);
    }

    fn counts<'a>(redactor: &'a mut Self::Redactor<'_>) -> &'a mut Counts {
        &mut redactor.counts
    }
}

impl Redacts for X12 {
    const REDACTS: bool = true;
    type Redactor<'p> = super::x12::Redactor<'p>;

    fn redactor<'p>(policy: &'p Policy, key: Option<&'p Key>) -> Self::Redactor<'p> {
        super::x12::Redactor::new(policy, key)
    }

    fn redact(
        redactor: &mut Self::Redactor<'_>,
        doc: &Self::Document,
        _settings: &Settings,
        disclosure: &Disclosure,
        out: &mut Vec<u8>,
    ) {
        redactor.redact(doc, disclosure, out);
    }

    fn counts<'a>(redactor: &'a mut Self::Redactor<'_>) -> &'a mut Counts {
        &mut redactor.counts
    }
}

impl Redacts for Astm {
    const REDACTS: bool = true;
    type Redactor<'p> = super::astm::Redactor<'p>;

    fn redactor<'p>(policy: &'p Policy, key: Option<&'p Key>) -> Self::Redactor<'p> {
        super::astm::Redactor::new(policy, key)
    }

    fn redact(
        redactor: &mut Self::Redactor<'_>,
        doc: &Self::Document,
        _settings: &Settings,
        disclosure: &Disclosure,
        out: &mut Vec<u8>,
    ) {
        redactor.redact(doc, disclosure, out);
    }

    fn counts<'a>(redactor: &'a mut Self::Redactor<'_>) -> &'a mut Counts {
        &mut redactor.counts
    }
}

impl Redacts for Dicom {
    const REDACTS: bool = true;
    type Redactor<'p> = super::dicom::Redactor<'p>;

    fn redactor<'p>(policy: &'p Policy, key: Option<&'p Key>) -> Self::Redactor<'p> {
        super::dicom::Redactor::new(policy, key)
    }

    fn redact(
        redactor: &mut Self::Redactor<'_>,
        doc: &Self::Document,
        _settings: &Settings,
        disclosure: &Disclosure,
        out: &mut Vec<u8>,
    ) {
        redactor.redact(doc, disclosure, out);
    }

    fn counts<'a>(redactor: &'a mut Self::Redactor<'_>) -> &'a mut Counts {
        &mut redactor.counts
    }

    fn refused(redactor: &Self::Redactor<'_>) -> Option<crate::diag::Code> {
        redactor.refused
    }
}

impl Redacts for Ncpdp {
    const REDACTS: bool = true;
    type Redactor<'p> = super::ncpdp::Redactor<'p>;

    fn redactor<'p>(policy: &'p Policy, key: Option<&'p Key>) -> Self::Redactor<'p> {
        super::ncpdp::Redactor::new(policy, key)
    }

    fn redact(
        redactor: &mut Self::Redactor<'_>,
        doc: &Self::Document,
        _settings: &Settings,
        disclosure: &Disclosure,
        out: &mut Vec<u8>,
    ) {
        redactor.redact(doc, disclosure, out);
    }

    fn counts<'a>(redactor: &'a mut Self::Redactor<'_>) -> &'a mut Counts {
        &mut redactor.counts
    }
}

impl Redacts for crate::formats::ccda::Ccda {
    const REDACTS: bool = true;
    type Redactor<'p> = super::ccda::Redactor<'p>;

    fn redactor<'p>(policy: &'p Policy, key: Option<&'p Key>) -> Self::Redactor<'p> {
        super::ccda::Redactor::new(policy, key)
    }

    fn redact(
        redactor: &mut Self::Redactor<'_>,
        doc: &Self::Document,
        _settings: &Settings,
        disclosure: &Disclosure,
        out: &mut Vec<u8>,
    ) {
        redactor.redact(doc, disclosure, out);
    }

    fn counts<'a>(redactor: &'a mut Self::Redactor<'_>) -> &'a mut Counts {
        &mut redactor.counts
    }
}

impl Redacts for crate::formats::ncpdp_script::NcpdpScript {
    const REDACTS: bool = true;
    type Redactor<'p> = super::ncpdp_script::Redactor<'p>;

    fn redactor<'p>(policy: &'p Policy, key: Option<&'p Key>) -> Self::Redactor<'p> {
        super::ncpdp_script::Redactor::new(policy, key)
    }

    fn redact(
        redactor: &mut Self::Redactor<'_>,
        doc: &Self::Document,
        _settings: &Settings,
        disclosure: &Disclosure,
        out: &mut Vec<u8>,
    ) {
        redactor.redact(doc, disclosure, out);
    }

    fn counts<'a>(redactor: &'a mut Self::Redactor<'_>) -> &'a mut Counts {
        &mut redactor.counts
    }
}
