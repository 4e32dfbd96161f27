//! Vocabulary maps, after the V2-to-FHIR IG's ConceptMaps (`table-hl70001-to-administrative-
//! gender`, `table-hl70004-to-v3-ActCode`, `table-hl70085-to-observation-status`, ...) and the
//! FHIR R4 code systems. A code without a map returns `None`: the caller keeps it (a coding in
//! the v2 table's system, or the `originalText` extension) and reports `CONVERT_CODE_UNMAPPED`.
//!
//! What it does not do: terminology services, or maps for local (Z) tables.

/// The FHIR system of an HL7 v2 table (`0203` to `http://terminology.hl7.org/CodeSystem/v2-0203`).
pub fn v2_table_system(table: &str) -> String {
    format!("http://terminology.hl7.org/CodeSystem/v2-{table}")
}

/// Coding system names of HL7 table 0396 (and common legacy names) to their FHIR URIs.
pub fn coding_system(name: &str) -> Option<String> {
    let uri = match name {
        "LN" | "LOINC" => "http://loinc.org",
        "SCT" | "SNM" | "SNOMED" | "SNOMEDCT" => "http://snomed.info/sct",
        "I10" | "ICD10" => "http://hl7.org/fhir/sid/icd-10",
        "I10C" | "ICD10CM" | "ICD-10-CM" => "http://hl7.org/fhir/sid/icd-10-cm",
        "I10P" | "ICD10PCS" => "http://www.cms.gov/Medicare/Coding/ICD10",
        "I9C" | "I9CM" | "ICD9CM" => "http://hl7.org/fhir/sid/icd-9-cm",
        "CVX" => "http://hl7.org/fhir/sid/cvx",
        "MVX" => "http://hl7.org/fhir/sid/mvx",
        "RXNORM" | "RXN" => "http://www.nlm.nih.gov/research/umls/rxnorm",
        "NDC" => "http://hl7.org/fhir/sid/ndc",
        "UCUM" => "http://unitsofmeasure.org",
        "C4" | "CPT" | "CPT4" => "http://www.ama-assn.org/go/cpt",
        "HCPCS" | "HCPT" => "urn:oid:2.16.840.1.113883.6.285",
        "NCIT" => "http://ncimeta.nci.nih.gov",
        "NUCCPID" => "http://nucc.org/provider-taxonomy",
        "ISO639" | "ISO6391" | "ISO6392" | "BCP47" => "urn:ietf:bcp:47",
        "ISO+" | "ANS+" => return None,
        _ => {
            let table = name.strip_prefix("HL7")?;
            if table.len() == 4 && table.bytes().all(|b| b.is_ascii_digit()) {
                return Some(v2_table_system(table));
            }
            return None;
        }
    };
    Some(super::tree::copy(uri))
}

/// Table 0001 (administrative sex) to AdministrativeGender.
pub fn gender(code: &str) -> Option<&'static str> {
    Some(match code {
        "F" => "female",
        "M" => "male",
        "O" | "A" | "N" => "other",
        "U" => "unknown",
        _ => return None,
    })
}

/// Table 0200 (name type) to NameUse.
pub fn name_use(code: &str) -> Option<&'static str> {
    Some(match code {
        "L" | "D" => "official",
        "A" | "S" | "I" => "anonymous",
        "B" | "M" | "BAD" => "old",
        "N" | "R" | "C" => "usual",
        "T" => "temp",
        "P" => "nickname",
        "U" => "usual",
        "K" => "anonymous",
        _ => return None,
    })
}

/// Table 0190 (address type) to (AddressUse, AddressType).
pub fn address_use(code: &str) -> Option<(Option<&'static str>, Option<&'static str>)> {
    Some(match code {
        "H" | "HV" => (Some("home"), None),
        "B" | "O" => (Some("work"), None),
        "C" | "TMP" => (Some("temp"), None),
        "BA" | "BDL" => (Some("old"), None),
        "M" => (None, Some("postal")),
        "SH" => (None, Some("physical")),
        "P" | "L" | "F" | "N" | "BR" | "RH" | "BI" | "V" => return None,
        _ => return None,
    })
}

/// Table 0004 (patient class) to v3 ActCode (Encounter.class).
pub fn patient_class(code: &str) -> Option<(&'static str, &'static str)> {
    Some(match code {
        "E" => ("EMER", "emergency"),
        "I" => ("IMP", "inpatient encounter"),
        "O" => ("AMB", "ambulatory"),
        "P" => ("PRENC", "pre-admission"),
        "B" => ("IMP", "inpatient encounter"),
        _ => return None,
    })
}

/// Table 0085 (observation result status) to ObservationStatus.
pub fn observation_status(code: &str) -> Option<&'static str> {
    Some(match code {
        "C" => "corrected",
        "D" | "W" => "entered-in-error",
        "F" | "U" => "final",
        "I" | "O" => "registered",
        "P" | "R" | "S" => "preliminary",
        "X" | "N" => "cancelled",
        _ => return None,
    })
}

/// Table 0123 (result status) to DiagnosticReportStatus.
pub fn report_status(code: &str) -> Option<&'static str> {
    Some(match code {
        "A" | "R" | "S" => "partial",
        "C" => "corrected",
        "F" => "final",
        "I" | "O" => "registered",
        "P" => "preliminary",
        "X" => "cancelled",
        _ => return None,
    })
}

/// Table 0038 (order status) to RequestStatus (ServiceRequest).
pub fn request_status(code: &str) -> Option<&'static str> {
    Some(match code {
        "A" | "IP" | "SC" => "active",
        "CA" | "DC" | "RP" => "revoked",
        "CM" => "completed",
        "ER" => "entered-in-error",
        "HD" => "on-hold",
        _ => return None,
    })
}

/// Table 0038 (order status) to MedicationRequest status.
pub fn medication_request_status(code: &str) -> Option<&'static str> {
    Some(match code {
        "A" | "IP" | "SC" => "active",
        "CA" => "cancelled",
        "DC" | "RP" => "stopped",
        "CM" => "completed",
        "ER" => "entered-in-error",
        "HD" => "on-hold",
        _ => return None,
    })
}

/// Table 0078 (abnormal flags): the codes the v3 ObservationInterpretation system defines with
/// the same meaning.
pub fn interpretation(code: &str) -> Option<&'static str> {
    Some(match code {
        "L" => "L",
        "H" => "H",
        "LL" => "LL",
        "HH" => "HH",
        "N" => "N",
        "A" => "A",
        "AA" => "AA",
        "<" => "<",
        ">" => ">",
        "S" => "S",
        "R" => "R",
        "I" => "I",
        "NEG" => "NEG",
        "POS" => "POS",
        "IND" => "IND",
        "U" => "U",
        "D" => "D",
        "B" => "B",
        "W" => "W",
        "MS" => "MS",
        "VS" => "VS",
        "E" => "E",
        "EX" => "EX",
        "HX" => "HX",
        "LX" => "LX",
        "DET" => "DET",
        "ND" => "ND",
        "NR" => "NR",
        "RR" => "RR",
        "QCF" => "QCF",
        "TOX" => "TOX",
        "WR" => "WR",
        "CAR" => "CAR",
        "SDD" => "SDD",
        "SYN-R" => "SYN-R",
        "SYN-S" => "SYN-S",
        "NCL" => "NCL",
        "IE" => "IE",
        "H>" => "H>",
        "L<" => "L<",
        "A>" | "AC" | "NS" | "TX" => return None,
        _ => return None,
    })
}

/// Table 0127 (allergen type) to AllergyIntoleranceCategory.
pub fn allergy_category(code: &str) -> Option<&'static str> {
    Some(match code {
        "DA" | "MA" => "medication",
        "FA" => "food",
        "EA" | "AA" | "PA" | "LA" => "environment",
        _ => return None,
    })
}

/// Table 0128 (allergy severity) to AllergyIntoleranceCriticality.
pub fn allergy_criticality(code: &str) -> Option<&'static str> {
    Some(match code {
        "SV" => "high",
        "MO" | "MI" => "low",
        "U" => "unable-to-assess",
        _ => return None,
    })
}

/// Table 0322 (completion status) to ImmunizationStatus.
pub fn immunization_status(code: &str) -> Option<&'static str> {
    Some(match code {
        "CP" | "PA" => "completed",
        "RE" | "NA" => "not-done",
        _ => return None,
    })
}

/// Tables 0027 (OBR-5, TQ-6) and 0485 (TQ1-9) priority to RequestPriority (the IG's map: the
/// other codes, preop, callback, timing critical, as needed, have none).
pub fn request_priority(code: &str) -> Option<&'static str> {
    Some(match code {
        "S" => "stat",
        "A" => "asap",
        "R" => "routine",
        _ => return None,
    })
}

/// Table 0278 (filler status) to AppointmentStatus. The table's codes are words in mixed case
/// (`Booked`); senders also write them in capitals (`BOOKED`), so case is ignored.
pub fn appointment_status(code: &str) -> Option<&'static str> {
    const MAP: &[(&str, &str)] = &[
        ("Booked", "booked"),
        ("Confirmed", "booked"),
        ("Overbook", "booked"),
        ("Pending", "pending"),
        ("Waitlist", "pending"),
        ("Cancelled", "cancelled"),
        ("Deleted", "cancelled"),
        ("Dc", "cancelled"),
        ("Noshow", "noshow"),
        ("Complete", "fulfilled"),
        ("Started", "arrived"),
        ("Arrived", "arrived"),
        ("Blocked", "proposed"),
    ];
    MAP.iter().find(|(v2, _)| v2.eq_ignore_ascii_case(code)).map(|&(_, fhir)| fhir)
}

/// Table 0271 (document completion status) to CompositionStatus (DocumentReference.docStatus).
pub fn doc_status(code: &str) -> Option<&'static str> {
    Some(match code {
        "AU" | "LA" | "DO" => "final",
        "IP" | "IN" | "PA" | "DI" => "preliminary",
        _ => return None,
    })
}

/// Table 0063 (relationship) to the subscriber-relationship codes (Coverage.relationship).
pub fn subscriber_relationship(code: &str) -> Option<&'static str> {
    Some(match code {
        "SEL" => "self",
        "SPO" => "spouse",
        "CHD" | "FCH" | "SCH" | "DEP" => "child",
        "DOM" => "common",
        "PAR" => "parent",
        "EMC" => "injured",
        "OTH" | "EME" | "GRD" | "SIB" | "ASC" | "BRO" | "CGV" | "EXF" | "FND" | "GCH" | "GRP" | "MTH" | "FTH"
        | "NCH" | "NON" | "OAD" | "ONE" | "OWN" | "SIS" | "TRA" | "UNK" | "WRD" => "other",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filler_status_ignores_case() {
        assert_eq!(appointment_status("Booked"), Some("booked"));
        assert_eq!(appointment_status("BOOKED"), Some("booked"));
        assert_eq!(appointment_status("arrived"), Some("arrived"));
        assert_eq!(appointment_status("Rescheduled"), None);
    }
}
