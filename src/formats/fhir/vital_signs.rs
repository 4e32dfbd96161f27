//! The vital signs profiles an Observation is held to by its code (FHIR R4, Observation 2.1.3.1.1:
//! "If implementations use this Resource when expressing the profile-specific concepts as
//! structured data, they SHALL conform to the following profiles"; observation-vitalsigns.html).
//!
//! [`implied_profile`] names the profile of an Observation whose `code` carries one of the vital
//! signs codes: the LOINC codes of the specification's table and, as the reference (Java)
//! validator applies the rule (`ObservationValidator`), the more specific LOINC and SNOMED CT codes
//! of the same measurements. Such an Observation must then also carry the profile's own LOINC
//! code (the specification: "If a more specific code is recorded, the generic code and the
//! translated coded must be sent"), which is what the profile's slice of `code.coding` checks.
//! The profiles themselves are built in (`definitions/vitalsigns.json`, generated from R4).
//!
//! The first row whose codes one of the codings matches decides, in the table's order (a code in
//! two rows belongs to the first), as in the reference validator.
//!
//! What it does not do: read the codes' system versions, or apply the rule to other resources.

use super::model::Document;

const LOINC: &[u8] = b"http://loinc.org";
const SNOMED: &[u8] = b"http://snomed.info/sct";

// The canonicals of the profiles.
const VITALSPANEL: &str = "http://hl7.org/fhir/StructureDefinition/vitalspanel";
const RESPRATE: &str = "http://hl7.org/fhir/StructureDefinition/resprate";
const HEARTRATE: &str = "http://hl7.org/fhir/StructureDefinition/heartrate";
const OXYGENSAT: &str = "http://hl7.org/fhir/StructureDefinition/oxygensat";
const BODYTEMP: &str = "http://hl7.org/fhir/StructureDefinition/bodytemp";
const BODYHEIGHT: &str = "http://hl7.org/fhir/StructureDefinition/bodyheight";
const HEADCIRCUM: &str = "http://hl7.org/fhir/StructureDefinition/headcircum";
const BODYWEIGHT: &str = "http://hl7.org/fhir/StructureDefinition/bodyweight";
const BMI: &str = "http://hl7.org/fhir/StructureDefinition/bmi";
const BP: &str = "http://hl7.org/fhir/StructureDefinition/bp";

/// `(code system, codes, profile canonical)`, in the order they are tried.
const TABLE: &[(&[u8], &[&str], &str)] = &[
    (LOINC, &["85353-1"], VITALSPANEL),
    (LOINC, &["9279-1", "76170-0", "76172-6", "76171-8", "19840-8", "33438-3", "76270-8", "11291-2"], RESPRATE),
    (
        LOINC,
        &[
            "60978-4", "73795-7", "73799-9", "76476-1", "76477-9", "8867-4", "8889-8", "8890-6", "8891-4", "8892-2",
            "8893-0", "40443-4", "55425-3", "68999-2", "11328-2", "69000-8", "8886-4",
        ],
        HEARTRATE,
    ),
    (
        LOINC,
        &[
            "2708-6", "19224-5", "20564-1", "2709-4", "2710-2", "2711-0", "2713-6", "51733-4", "59408-5", "59417-6",
            "89276-0", "97549-0",
        ],
        OXYGENSAT,
    ),
    (
        LOINC,
        &[
            "8310-5", "60834-9", "60835-6", "60836-4", "60838-0", "60955-2", "61009-7", "75539-7", "75987-8",
            "76010-8", "76011-6", "76278-1", "8309-7", "8328-7", "8329-5", "8330-3", "8331-1", "8332-9", "8333-7",
            "8334-5", "91371-5", "98657-0", "98663-8",
        ],
        BODYTEMP,
    ),
    (LOINC, &["8302-2", "3137-7", "3138-5", "8306-3", "8308-9"], BODYHEIGHT),
    (LOINC, &["9843-4", "8287-5"], HEADCIRCUM),
    (LOINC, &["29463-7", "3141-9", "3142-7", "75292-3", "79348-9", "8350-1", "8351-9"], BODYWEIGHT),
    (LOINC, &["39156-5", "59574-4", "89270-3"], BMI),
    (LOINC, &["85354-9", "35094-2", "8459-0", "76534-7", "55284-4", "8480-6"], BP),
    (SNOMED, &["46680005"], VITALSPANEL),
    // The reference validator lists respiratory rate's SNOMED CT codes (86290005, 271625008,
    // 271306003) with a profile URL that names nothing, so it checks no profile for them: they
    // are left out, and 271306003 goes to the next row as there.
    (SNOMED, &["271306003", "249043002", "444981005", "399017001", "251670001", "429525003", "429614003"], HEARTRATE),
    (SNOMED, &["103228002", "442349007", "442476006", "442440005", "431314004", "442734002", "713194001"], OXYGENSAT),
    (
        SNOMED,
        &[
            "386725007",
            "276885007",
            "300076005",
            "1222808002",
            "364246006",
            "307047009",
            "708499008",
            "431598003",
            "698831002",
            "698832009",
            "415882003",
            "415974002",
            "415929009",
            "415945006",
        ],
        BODYTEMP,
    ),
    (
        SNOMED,
        &["1153637007", "1162419008", "50373000", "1162418000", "1230278008", "1162392001", "1162417005"],
        BODYHEIGHT,
    ),
    (SNOMED, &["363812007", "169876006", "1269262007", "363811000"], HEADCIRCUM),
    (SNOMED, &["735395000", "425024002", "424927000", "784399000", "1162416001", "1162415002"], BODYWEIGHT),
    // Body mass index: the reference validator lists 60621009 under body weight too (first), so
    // it never reaches this row there; phiward holds it to the profile of what it measures.
    (SNOMED, &["60621009"], BMI),
    (
        SNOMED,
        &[
            "75367002",
            "251076008",
            "163033001",
            "163035008",
            "386534000",
            "386536003",
            "271649006",
            "271650006",
            "407556006",
            "407554009",
            "716579001",
            "399304008",
        ],
        BP,
    ),
];

/// The canonical of the vital signs profile Observation node `r` is held to, if any.
pub fn implied_profile(doc: &Document, r: u32) -> Option<&'static str> {
    let node = doc.node(r);
    if !node.is_resource() || node.ty.map(super::definitions::type_name) != Some("Observation") {
        return None;
    }
    // The first row any coding matches: the least of each coding's first matching row.
    doc.named(r, "code")
        .flat_map(|code| doc.named(code, "coding"))
        .filter_map(|c| {
            let (system, code) = (child_value(doc, c, "system")?, child_value(doc, c, "code")?);
            TABLE.iter().position(|(s, codes, _)| *s == system && codes.iter().any(|k| k.as_bytes() == code))
        })
        .min()
        .map(|row| TABLE[row].2)
}

/// The value of primitive child `name` of node `n`.
#[expect(
    clippy::disallowed_methods,
    reason = "a validator: a Coding's system and code are compared with the specification's codes; nothing of them is returned"
)]
fn child_value<'d>(doc: &'d Document, n: u32, name: &str) -> Option<&'d [u8]> {
    doc.named(n, name).find(|&c| doc.node(c).has_value()).map(|c| doc.value(c))
}

#[cfg(test)]
mod tests {
    use crate::limits::Limits;

    /// `code severity location profile` of each finding of a validation with nothing loaded.
    fn findings(input: &str) -> Vec<String> {
        let doc = super::super::read(input.as_bytes().to_vec(), &Limits::default()).expect("reads");
        super::super::validate::validate(&doc, super::super::validate::Options::default())
            .iter()
            .filter(|d| d.profile.is_some())
            .map(|d| {
                let p = d.profile.and_then(crate::structure::profile_canonical).unwrap_or("-");
                format!("{} {} {} {}", d.code.as_str(), d.severity.as_str(), d.location, p)
            })
            .collect()
    }

    fn obs(code: &str, rest: &str) -> String {
        format!(
            r#"{{"resourceType":"Observation","status":"final",
            "category":[{{"coding":[{{"system":"http://terminology.hl7.org/CodeSystem/observation-category","code":"vital-signs"}}]}}],
            "code":{{"coding":[{code}]}},"subject":{{"reference":"Patient/p"}},"effectiveDateTime":"2024-03-01"{rest}}}"#
        )
    }

    const TEMP: &str = r#"{"system":"http://loinc.org","code":"8310-5"}"#;
    const CELSIUS: &str =
        r#","valueQuantity":{"value":37.2,"unit":"C","system":"http://unitsofmeasure.org","code":"Cel"}"#;

    #[test]
    fn a_body_temperature_conforms_to_bodytemp() {
        assert_eq!(findings(&obs(TEMP, CELSIUS)), Vec::<String>::new());
    }

    #[test]
    fn a_vital_sign_is_held_to_its_profile_without_a_package() {
        let input = obs(TEMP, CELSIUS).replace("\"effectiveDateTime\":\"2024-03-01\",", "");
        let bodytemp = "http://hl7.org/fhir/StructureDefinition/bodytemp";
        assert_eq!(findings(&input), vec![format!("PROFILE_CARDINALITY_MIN error Observation.effective {bodytemp}")]);
        // A unit outside the required value set, and no vital-signs category.
        let input = obs(TEMP, &CELSIUS.replace("Cel", "K")).replace("vital-signs", "laboratory");
        let got = findings(&input);
        assert!(got.contains(&format!("SLICE_CARDINALITY_MIN error Observation.category {bodytemp}")), "{got:?}");
        assert!(got.contains(&format!("PROFILE_BINDING error Observation.valueQuantity.code {bodytemp}")), "{got:?}");
    }

    #[test]
    fn a_specific_code_needs_the_profiles_own_loinc_code() {
        // Oral temperature (LOINC), body temperature (SNOMED CT): the generic 8310-5 is missing.
        for code in [
            r#"{"system":"http://loinc.org","code":"8331-1"}"#,
            r#"{"system":"http://snomed.info/sct","code":"386725007"}"#,
        ] {
            let got = findings(&obs(code, CELSIUS));
            assert!(
                got.iter().any(|f| f.starts_with("SLICE_CARDINALITY_MIN error Observation.code.coding ")),
                "{got:?}"
            );
        }
    }

    #[test]
    fn other_observations_are_not_held_to_a_vital_signs_profile() {
        let glucose = r#"{"system":"http://loinc.org","code":"2339-0"}"#;
        let input =
            obs(glucose, r#","valueQuantity":{"value":5,"system":"http://unitsofmeasure.org","code":"mmol/L"}"#);
        assert_eq!(findings(&input), Vec::<String>::new());
        // A vital sign code in another system is not one.
        let local = r#"{"system":"http://example.org/codes","code":"8310-5"}"#;
        assert_eq!(findings(&obs(local, CELSIUS)), Vec::<String>::new());
    }

    #[test]
    fn blood_pressure_components_match_their_slices_by_the_code_inside() {
        let component = |code: &str, value: u32| {
            format!(
                r#"{{"code":{{"coding":[{{"system":"http://loinc.org","code":"{code}"}}]}},
                "valueQuantity":{{"value":{value},"unit":"mmHg","system":"http://unitsofmeasure.org","code":"mm[Hg]"}}}}"#
            )
        };
        let bp = r#"{"system":"http://loinc.org","code":"85354-9"}"#;
        let both = format!(r#","component":[{},{}]"#, component("8480-6", 120), component("8462-4", 80));
        assert_eq!(findings(&obs(bp, &both)), Vec::<String>::new());
        let one = format!(r#","component":[{}]"#, component("8480-6", 120));
        let got = findings(&obs(bp, &one));
        let profile = "http://hl7.org/fhir/StructureDefinition/bp";
        // Two components at least, one of them the diastolic pressure.
        assert_eq!(
            got,
            vec![
                format!("PROFILE_CARDINALITY_MIN error Observation.component {profile}"),
                format!("SLICE_CARDINALITY_MIN error Observation.component {profile}")
            ]
        );
    }
}
