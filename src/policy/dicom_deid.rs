//! The DICOM settings of a policy's `[policy]` table that are not rules: burned-in annotation
//! (PS3.15 E.3.1, PS3.3 C.7.6.1 General Image Module's (0028,0301)) and the De-identification Method Code Sequence
//! (0012,0064) (PS3.3 C.12.1, PS3.16 CID 7050).
//!
//! Burned-in annotation: pixel data is kept as it is (the Clean Pixel Data option is not
//! implemented), so a file whose pixel data may show identifying text is refused
//! (`DICOM_BURNED_IN_ANNOTATION`), unless the policy accepts that residual risk
//! (`dicom_burned_in_annotation = "accept-residual-risk"`; the manifest then counts the files
//! accepted). A file is at risk when it has pixel data and Burned In Annotation (0028,0301) is
//! `YES`, or is absent, empty or another value while its Modality (0008,0060) or SOP Class UID
//! (0008,0016) is one whose images commonly carry burned-in text ([`AT_RISK_MODALITIES`],
//! [`AT_RISK_SOP_CLASSES`]); `NO` is the file's statement that there is none.
//!
//! What it does not do: look at the pixels, or clean them.

/// What a policy does with a file whose pixel data may show burned-in text.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum BurnedIn {
    /// Refuse the file (fail closed; the default).
    #[default]
    Refuse,
    /// Write it, pixel data as it is; the manifest counts it.
    AcceptResidualRisk,
}

impl BurnedIn {
    /// The setting's value in the policy language.
    pub fn parse(s: &str) -> Option<BurnedIn> {
        match s {
            "refuse" => Some(BurnedIn::Refuse),
            "accept-residual-risk" => Some(BurnedIn::AcceptResidualRisk),
            _ => None,
        }
    }
}

/// PS3.16 CID 7050 De-identification Method: the profile (`basic`) and its options, by their
/// name in the policy language; code values and meanings as `formats::dicom::codes` lists them
/// (DCM).
pub const METHODS: &[(&str, &str, &str)] = &[
    ("basic", "113100", "Basic Application Confidentiality Profile"),
    ("clean-pixel-data", "113101", "Clean Pixel Data Option"),
    ("clean-recognizable-visual-features", "113102", "Clean Recognizable Visual Features Option"),
    ("clean-graphics", "113103", "Clean Graphics Option"),
    ("clean-structured-content", "113104", "Clean Structured Content Option"),
    ("clean-descriptors", "113105", "Clean Descriptors Option"),
    ("retain-longitudinal-full-dates", "113106", "Retain Longitudinal Temporal Information Full Dates Option"),
    ("retain-longitudinal-modified-dates", "113107", "Retain Longitudinal Temporal Information Modified Dates Option"),
    ("retain-patient-characteristics", "113108", "Retain Patient Characteristics Option"),
    ("retain-device-identity", "113109", "Retain Device Identity Option"),
    ("retain-uids", "113110", "Retain UIDs Option"),
    ("retain-safe-private", "113111", "Retain Safe Private Option"),
    ("retain-institution-identity", "113112", "Retain Institution Identity Option"),
];

/// The index in [`METHODS`] of a name (`dicom_deidentification_method`).
pub fn method(name: &str) -> Option<usize> {
    METHODS.iter().position(|m| m.0 == name)
}

/// Modalities (0008,0060) whose images commonly carry burned-in text: ultrasound (US, IVUS:
/// PS3.15 E.3.1 note 1, "Ultrasound images routinely do"); secondary capture and other (SC,
/// OT, DOC: a screen or a document captured, whatever it showed); angiography and
/// fluoroscopy (XA, RF: the video chain's overlay of patient and exam data); visible light,
/// endoscopy and photography (ES, XC, GM, OP, SM: the camera's or the processor's overlay, and
/// a slide's label); projection radiography (CR, DX, MG, IO, PX: labels and digitised film).
pub const AT_RISK_MODALITIES: &[&[u8]] = &[
    b"CR", b"DOC", b"DX", b"ES", b"GM", b"IO", b"IVUS", b"MG", b"OP", b"OT", b"PX", b"RF", b"SC", b"SM", b"US", b"XA",
    b"XC",
];

/// SOP classes of the same images, for a file whose Modality is absent or another: Computed
/// Radiography, Digital X-Ray, Mammography and Intra-Oral (1.1 to 1.3.1), Ultrasound (3, 3.1,
/// 6, 6.1: retired and current), Secondary Capture (7, 7.1 to 7.4), X-Ray Angiographic and
/// Radiofluoroscopic (12.1, 12.1.1, 12.2, 12.2.1), Visible Light (77.1.1 to 77.1.6: endoscopic,
/// microscopic, photographic, ophthalmic photography, whole slide).
pub const AT_RISK_SOP_CLASSES: &[&str] = &[
    "1.2.840.10008.5.1.4.1.1.1",
    "1.2.840.10008.5.1.4.1.1.1.1",
    "1.2.840.10008.5.1.4.1.1.1.1.1",
    "1.2.840.10008.5.1.4.1.1.1.2",
    "1.2.840.10008.5.1.4.1.1.1.2.1",
    "1.2.840.10008.5.1.4.1.1.1.3",
    "1.2.840.10008.5.1.4.1.1.1.3.1",
    "1.2.840.10008.5.1.4.1.1.3",
    "1.2.840.10008.5.1.4.1.1.3.1",
    "1.2.840.10008.5.1.4.1.1.6",
    "1.2.840.10008.5.1.4.1.1.6.1",
    "1.2.840.10008.5.1.4.1.1.7",
    "1.2.840.10008.5.1.4.1.1.7.1",
    "1.2.840.10008.5.1.4.1.1.7.2",
    "1.2.840.10008.5.1.4.1.1.7.3",
    "1.2.840.10008.5.1.4.1.1.7.4",
    "1.2.840.10008.5.1.4.1.1.12.1",
    "1.2.840.10008.5.1.4.1.1.12.1.1",
    "1.2.840.10008.5.1.4.1.1.12.2",
    "1.2.840.10008.5.1.4.1.1.12.2.1",
    "1.2.840.10008.5.1.4.1.1.77.1.1",
    "1.2.840.10008.5.1.4.1.1.77.1.1.1",
    "1.2.840.10008.5.1.4.1.1.77.1.2",
    "1.2.840.10008.5.1.4.1.1.77.1.2.1",
    "1.2.840.10008.5.1.4.1.1.77.1.3",
    "1.2.840.10008.5.1.4.1.1.77.1.4",
    "1.2.840.10008.5.1.4.1.1.77.1.4.1",
    "1.2.840.10008.5.1.4.1.1.77.1.5.1",
    "1.2.840.10008.5.1.4.1.1.77.1.5.2",
    "1.2.840.10008.5.1.4.1.1.77.1.6",
];

/// Pixel Data, Float Pixel Data, Double Float Pixel Data.
pub const PIXEL_DATA: [u32; 3] = [0x7FE0_0010, 0x7FE0_0008, 0x7FE0_0009];

/// The attributes the decision reads: Burned In Annotation, Modality, SOP Class UID.
pub const READ: [u32; 3] = [0x0028_0301, 0x0008_0060, 0x0008_0016];

/// True when a file's pixel data may show burned-in text (see the module's doc), from whether
/// it has pixel data and the values of [`READ`] (None: absent).
pub fn at_risk(has_pixels: bool, burned_in: Option<&[u8]>, modality: Option<&[u8]>, sop: Option<&[u8]>) -> bool {
    if !has_pixels {
        return false;
    }
    // CS: leading and trailing spaces are not significant (PS3.5 6.2).
    match burned_in.map(<[u8]>::trim_ascii) {
        Some(b"YES") => return true,
        Some(b"NO") => return false,
        _ => {}
    }
    if modality.map(<[u8]>::trim_ascii).is_some_and(|m| AT_RISK_MODALITIES.contains(&m)) {
        return true;
    }
    let sop = sop.map(crate::formats::dicom::dict::trim_uid);
    sop.is_some_and(|s| AT_RISK_SOP_CLASSES.iter().any(|c| c.as_bytes() == s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes written are PS3.16's, as the bundled concept table lists them.
    #[test]
    fn method_codes_are_ps3_16s() {
        for (_, code, meaning) in METHODS {
            assert!(
                crate::formats::dicom::codes::CODES.contains(&("DCM", *code, *meaning)),
                "DCM {code}: not with this meaning in codes.rs"
            );
        }
        assert_eq!(method("basic"), Some(0));
        assert_eq!(method("Basic"), None);
        assert_eq!(BurnedIn::parse("refuse"), Some(BurnedIn::Refuse));
        assert_eq!(BurnedIn::parse("accept"), None);
    }

    /// YES refuses whatever the modality; NO accepts; absent, empty or another value refuses on
    /// a modality or SOP class that burns text in; no pixel data, no risk.
    #[test]
    fn at_risk_by_statement_modality_and_sop_class() {
        let us = Some(&b"1.2.840.10008.5.1.4.1.1.6.1\0"[..]);
        let ct = Some(&b"1.2.840.10008.5.1.4.1.1.2"[..]);
        assert!(at_risk(true, Some(b"YES "), Some(b"CT"), ct));
        assert!(!at_risk(true, Some(b"NO"), Some(b"US"), us));
        assert!(at_risk(true, None, Some(b"US"), us));
        assert!(at_risk(true, Some(b""), Some(b"US"), us));
        assert!(at_risk(true, Some(b"MAYBE"), Some(b"XA"), ct));
        assert!(at_risk(true, None, None, us), "by SOP class, Modality absent");
        assert!(at_risk(true, None, Some(b"CT"), Some(b"1.2.840.10008.5.1.4.1.1.7")), "secondary capture");
        assert!(!at_risk(true, None, Some(b"CT"), ct));
        assert!(!at_risk(true, None, None, None));
        assert!(!at_risk(false, Some(b"YES"), Some(b"US"), us), "no pixel data");
    }
}
