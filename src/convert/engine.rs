//! Conversion keyed by format: [`Converts`] is what the pipeline asks of a format's converter,
//! implemented here for each registered codec type (HL7 v2 converts to FHIR R4; the others do
//! not convert). A format without an implementation cannot be registered.
//!
//! What it does not do: convert (see [`super::hl7v2_fhir`]).

use super::Options;
use super::hl7v2_fhir::{self, Converted};
use crate::diag::Code;
use crate::formats::astm::Astm;
use crate::formats::codec::Codec;
use crate::formats::dicom::Dicom;
use crate::formats::fhir::Fhir;
use crate::formats::fhir::direct::Spill;
use crate::formats::hl7v2::Hl7;
use crate::formats::ncpdp::Ncpdp;
use crate::formats::x12::X12;
use crate::limits::Limits;
use crate::phi::Disclosure;

/// A format's converter to FHIR R4.
pub trait Converts: Codec {
    /// True when the format converts (it may then declare `convert`).
    const CONVERTS: bool;

    /// Converts one record, writing the Bundle after `prefix` (the start of its record's
    /// object) in a buffer with `room_per_finding` bytes left per finding. Record `record` of the
    /// input. With `spill`, memory does not grow with the Bundle: its bytes (the prefix first)
    /// may go to `spill` as they are written (see `Converted::spilled`). `CLI_FORMAT_UNSUPPORTED`
    /// when the format does not convert.
    #[allow(clippy::too_many_arguments)]
    fn convert(
        doc: &Self::Document,
        prefix: &[u8],
        room_per_finding: usize,
        options: &Options,
        record: u64,
        limits: &Limits,
        disclosure: &Disclosure,
        spill: Option<Spill<'_>>,
    ) -> Result<Converted, Code> {
        let _ = (doc, prefix, room_per_finding, options, record, limits, disclosure, spill);
        Err(Code::CLI_FORMAT_UNSUPPORTED)
    }
}

impl Converts for Hl7 {
    const CONVERTS: bool = true;

    #[allow(clippy::too_many_arguments)]
    fn convert(
        doc: &Self::Document,
        prefix: &[u8],
        room_per_finding: usize,
        options: &Options,
        record: u64,
        limits: &Limits,
        disclosure: &Disclosure,
        spill: Option<Spill<'_>>,
    ) -> Result<Converted, Code> {
        Ok(hl7v2_fhir::convert_after(prefix, room_per_finding, doc, options, record, limits, disclosure, spill))
    }
}

impl Converts for Fhir {
    const CONVERTS: bool = false;
}

impl Converts for X12 {
    const CONVERTS: bool = false;
}

impl Converts for Astm {
    const CONVERTS: bool = false;
}

impl Converts for Dicom {
    const CONVERTS: bool = false;
}

impl Converts for Ncpdp {
    const CONVERTS: bool = false;
}

impl Converts for crate::formats::ccda::Ccda {
    const CONVERTS: bool = false;
}

impl Converts for crate::formats::ncpdp_script::NcpdpScript {
    const CONVERTS: bool = false;
}
