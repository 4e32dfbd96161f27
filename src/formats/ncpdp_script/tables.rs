//! The SCRIPT tables: element names (the only names a location writes), the message types of
//! each version, the Header's elements, what each message type requires, and the code lists.
//!
//! Built from public descriptions of NCPDP SCRIPT 10.6 and 2017071 (implementation guides' field
//! names, open projects' test messages, published summaries of the code lists), not from the
//! licensed NCPDP schemas: what is here is a subset, and docs/ncpdp-script.md says which.
//!
//! What it does not do: hold the full schema (element order, cardinality of every element, the
//! data types of every leaf); an element whose name is not here is written `*` in a location.

/// The SCRIPT namespace.
pub const SCRIPT_NS: &[u8] = b"http://www.ncpdp.org/schema/SCRIPT";

/// A SCRIPT version.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// SCRIPT 10.6 (`version="010" release="006"`).
    V10_6,
    /// SCRIPT 2017071 (`TransportVersion="20170715"` and the other version attributes).
    V2017071,
    /// Neither (or version attributes that disagree).
    Unknown,
}

impl crate::phi::sealed::Sealed for Version {}
impl crate::phi::ValueFree for Version {}

impl Version {
    /// The name `inspect` and `parse` write.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V10_6 => "10.6",
            Version::V2017071 => "2017071",
            Version::Unknown => "unknown",
        }
    }
}

/// Attribute names a location can name (a name of the input that is not here is not written).
pub const ATTRIBUTES: &[&str] = &[
    "Qualifier",
    "version",
    "release",
    "TransportVersion",
    "DatatypeVersion",
    "TransactionVersion",
    "TransactionDomain",
    "StructuresVersion",
    "ECLVersion",
];

/// The 2017071 version attributes of `Message` (each, when present, is `20170715`).
pub const V2017_ATTRIBUTES: &[&str] =
    &["TransportVersion", "DatatypeVersion", "TransactionVersion", "StructuresVersion", "ECLVersion"];

/// The message types (Body's transaction element): name, in 10.6, in 2017071.
pub const MESSAGE_TYPES: &[(&str, bool, bool)] = &[
    ("NewRx", true, true),
    ("RefillRequest", true, false),
    ("RefillResponse", true, false),
    ("RxRenewalRequest", false, true),
    ("RxRenewalResponse", false, true),
    ("RxChangeRequest", true, true),
    ("RxChangeResponse", true, true),
    ("CancelRx", true, true),
    ("CancelRxResponse", true, true),
    ("RxFill", true, true),
    ("RxFillIndicatorChange", false, true),
    ("RxHistoryRequest", true, true),
    ("RxHistoryResponse", true, true),
    ("Status", true, true),
    ("Error", true, true),
    ("Verify", true, true),
    ("GetMessage", true, true),
    ("PasswordChange", true, true),
    ("Census", true, true),
    ("Resupply", true, true),
    ("DrugAdministration", true, true),
    ("NewRxRequest", false, true),
    ("NewRxResponseDenied", false, true),
    ("RxTransferRequest", false, true),
    ("RxTransferResponse", false, true),
    ("RxTransferConfirm", false, true),
];

/// The message type named `name` in `version` (any version's when the version is unknown).
pub fn message_type(name: &[u8], version: Version) -> Option<&'static str> {
    MESSAGE_TYPES
        .iter()
        .find(|(n, v10, v17)| {
            n.as_bytes() == name
                && match version {
                    Version::V10_6 => *v10,
                    Version::V2017071 => *v17,
                    Version::Unknown => true,
                }
        })
        .map(|(n, _, _)| *n)
}

/// The elements of `Header`.
pub const HEADER: &[&str] = &[
    "To",
    "From",
    "MessageID",
    "RelatesToMessageID",
    "SentTime",
    "Security",
    "SenderSoftware",
    "Mailbox",
    "TestMessage",
    "RxReferenceNumber",
    "TraceNumber",
    "PrescriberOrderNumber",
    "DigitalSignature",
    "RetryCount",
];

/// The Header elements every message has.
pub const HEADER_REQUIRED: &[&str] = &["To", "From", "MessageID", "SentTime"];

/// The message types that answer another message: their Header names it (`RelatesToMessageID`).
pub const RESPONSES: &[&str] = &[
    "RefillResponse",
    "RxRenewalResponse",
    "RxChangeResponse",
    "CancelRxResponse",
    "RxHistoryResponse",
    "RxTransferResponse",
    "Status",
    "Error",
    "Verify",
];

/// The qualifiers of `To` and `From`.
pub const PARTY_QUALIFIERS: &[&str] = &["C", "D", "P", "M", "F", "PY", "ZZZ"];

/// What a message type's element requires among its children: each entry a list of
/// alternatives (one of them must be present).
pub const REQUIRED: &[(&str, &[&[&str]])] = &[
    ("NewRx", &[&["Patient"], &["Prescriber"], &["MedicationPrescribed"]]),
    (
        "RefillRequest",
        &[&["Patient"], &["Pharmacy"], &["Prescriber"], &["MedicationPrescribed", "MedicationDispensed"]],
    ),
    (
        "RxRenewalRequest",
        &[&["Patient"], &["Pharmacy"], &["Prescriber"], &["MedicationPrescribed", "MedicationDispensed"]],
    ),
    ("RefillResponse", &[&["Response"], &["Patient"], &["Pharmacy"], &["Prescriber"]]),
    ("RxRenewalResponse", &[&["Response"], &["Patient"], &["Pharmacy"], &["Prescriber"]]),
    ("RxChangeRequest", &[&["Patient"], &["Pharmacy"], &["Prescriber"], &["MedicationPrescribed"]]),
    ("RxChangeResponse", &[&["Response"], &["Patient"], &["Pharmacy"], &["Prescriber"]]),
    ("CancelRx", &[&["Patient"], &["Prescriber"], &["MedicationPrescribed"]]),
    ("CancelRxResponse", &[&["Response"]]),
    (
        "RxFill",
        &[
            &["FillStatus"],
            &["Patient"],
            &["Pharmacy"],
            &["Prescriber"],
            &["MedicationPrescribed", "MedicationDispensed"],
        ],
    ),
    ("RxHistoryRequest", &[&["Patient"], &["Prescriber"]]),
    ("RxHistoryResponse", &[&["Patient"]]),
    ("Status", &[&["Code"]]),
    ("Error", &[&["Code"]]),
    ("Verify", &[&["VerifyStatus"]]),
    // The parts, wherever a message type holds them (the 2017071 wrappers of Patient and
    // Prescriber are looked through: see `validate`).
    ("Patient", &[&["Name"]]),
    ("Prescriber", &[&["Identification"], &["Name"]]),
    ("Pharmacy", &[&["Identification"]]),
    ("MedicationPrescribed", &[&["DrugDescription"], &["Quantity"]]),
    ("MedicationDispensed", &[&["DrugDescription"], &["Quantity"]]),
    ("Quantity", &[&["Value"], &["CodeListQualifier"]]),
    ("Name", &[&["LastName"]]),
    (
        "Response",
        &[&[
            "Approved",
            "ApprovedWithChanges",
            "Denied",
            "DeniedNewPrescriptionToFollow",
            "Replace",
            "Validated",
            "Pending",
        ]],
    ),
    ("VerifyStatus", &[&["Code"]]),
];

/// Elements whose presence is their meaning (`<Approved/>`): required, and empty.
pub const MARKERS: &[&str] =
    &["Approved", "ApprovedWithChanges", "Denied", "DeniedNewPrescriptionToFollow", "Replace", "Validated", "Pending"];

/// The alternatives element `name` requires among its children.
pub fn required(name: &[u8]) -> &'static [&'static [&'static str]] {
    REQUIRED.iter().find(|(n, _)| n.as_bytes() == name).map_or(&[], |(_, r)| r)
}

/// Children that occur once in a message type's element (and in the parts above).
pub const SINGLE: &[&str] = &[
    "Patient",
    "Pharmacy",
    "Prescriber",
    "Response",
    "FillStatus",
    "MedicationPrescribed",
    "Code",
    "VerifyStatus",
    "Name",
    "Identification",
    "DrugDescription",
    "Quantity",
    "DaysSupply",
    "WrittenDate",
    "LastName",
    "FirstName",
    "Gender",
    "DateOfBirth",
];

/// The 2017071 wrappers of a party, looked through for its required parts.
pub const WRAPPERS: &[(&str, &[&str])] =
    &[("Patient", &["HumanPatient", "NonHumanPatient"]), ("Prescriber", &["NonVeterinarian", "Veterinarian"])];

/// What a leaf's text must be.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// One of a code list.
    Code(&'static [&'static str]),
    /// An NCI Thesaurus code (`C` and digits): units of measure, dosage forms.
    Nci,
    /// A single digit.
    Digit,
    /// A non-negative decimal.
    Number,
    /// An integer.
    Integer,
    /// `YYYY-MM-DD`.
    Date,
    /// `YYYY-MM-DDThh:mm:ss[.s][Z|+hh:mm|-hh:mm]`.
    DateTime,
    /// An NPI.
    Npi,
    /// A DEA number.
    Dea,
    /// An NCPDPID.
    NcpdpId,
}

/// Product code qualifiers (NDC, UPC, HRI, and the others public guides list).
pub const PRODUCT_QUALIFIERS: &[&str] = &["ND", "UP", "HI", "NH", "UN", "RT"];
/// Drug database code qualifiers: RxNorm term types (and the older GPK, BPK).
pub const DRUG_DB_QUALIFIERS: &[&str] = &[
    "SCD", "SBD", "GPCK", "BPCK", "SCDF", "SBDF", "SCDG", "SBDG", "SCDC", "SBDC", "IN", "PIN", "MIN", "BN", "DF",
    "DFG", "GPK", "BPK",
];
/// Quantity qualifiers: original (38), remaining (40), received (87), compound final (CF),
/// quantity sufficient (QS).
pub const QUANTITY_QUALIFIERS: &[&str] = &["38", "40", "87", "CF", "QS"];
/// Refills qualifiers (10.6): a number of refills, as needed.
pub const REFILLS_QUALIFIERS: &[&str] = &["R", "PRN"];
/// Communication number qualifiers (10.6).
pub const COMMUNICATION_QUALIFIERS: &[&str] = &["TE", "FX", "EM", "HP", "WP", "CP", "BN", "NP"];
/// Gender.
pub const GENDERS: &[&str] = &["M", "F", "U"];
/// Status codes (and Verify's).
pub const STATUS_CODES: &[&str] = &["000", "010"];
/// Error codes.
pub const ERROR_CODES: &[&str] = &["600", "601", "602", "900"];

/// The check of an element's text, by its name and its parent's (`""`: any parent).
pub const CHECKS: &[(&str, &str, Check)] = &[
    ("", "Gender", Check::Code(GENDERS)),
    ("DrugCoded", "ProductCodeQualifier", Check::Code(PRODUCT_QUALIFIERS)),
    ("ProductCode", "Qualifier", Check::Code(PRODUCT_QUALIFIERS)),
    ("DrugCoded", "DrugDBCodeQualifier", Check::Code(DRUG_DB_QUALIFIERS)),
    ("DrugDBCode", "Qualifier", Check::Code(DRUG_DB_QUALIFIERS)),
    ("Quantity", "CodeListQualifier", Check::Code(QUANTITY_QUALIFIERS)),
    ("Quantity", "PotencyUnitCode", Check::Nci),
    ("QuantityUnitOfMeasure", "Code", Check::Nci),
    ("StrengthUnitOfMeasure", "Code", Check::Nci),
    ("StrengthForm", "Code", Check::Nci),
    ("Refills", "Qualifier", Check::Code(REFILLS_QUALIFIERS)),
    ("Communication", "Qualifier", Check::Code(COMMUNICATION_QUALIFIERS)),
    ("Status", "Code", Check::Code(STATUS_CODES)),
    ("Error", "Code", Check::Code(ERROR_CODES)),
    ("VerifyStatus", "Code", Check::Code(STATUS_CODES)),
    ("", "Substitutions", Check::Digit),
    ("Quantity", "Value", Check::Number),
    ("Refills", "Value", Check::Integer),
    ("", "DaysSupply", Check::Integer),
    ("", "NumberOfRefills", Check::Integer),
    ("", "StrengthValue", Check::Number),
    ("", "Date", Check::Date),
    ("", "DateTime", Check::DateTime),
    ("", "SentTime", Check::DateTime),
    ("", "NPI", Check::Npi),
    ("", "DEANumber", Check::Dea),
    ("", "NCPDPID", Check::NcpdpId),
];

/// The check of element `name` under `parent`.
pub fn check_of(parent: &[u8], name: &[u8]) -> Option<Check> {
    CHECKS.iter().find(|(p, n, _)| n.as_bytes() == name && (p.is_empty() || p.as_bytes() == parent)).map(|(_, _, c)| *c)
}

/// The names of the SCRIPT elements phiward knows, sorted (binary search).
pub const NAMES: &[&str] = &[
    "AcknowledgementReason",
    "Address",
    "AddressLine1",
    "AddressLine2",
    "AddressLine3",
    "Agent",
    "Approved",
    "ApprovedWithChanges",
    "BINLocationNumber",
    "Beeper",
    "BenefitsCoordination",
    "BirthOrder",
    "Body",
    "BusinessName",
    "CancelRx",
    "CancelRxResponse",
    "CardholderID",
    "CardholderName",
    "Census",
    "CertificateToPrescribe",
    "ChangeReasonText",
    "City",
    "ClinicName",
    "ClinicalInformationQualifier",
    "ClinicalSignificanceCode",
    "CoAgent",
    "CoAgentCode",
    "CoAgentQualifier",
    "Code",
    "CodeListQualifier",
    "CodeSystem",
    "Communication",
    "CommunicationNumbers",
    "CompoundInformation",
    "Consent",
    "CountryCode",
    "Created",
    "DEANumber",
    "DEASchedule",
    "Data2000WaiverID",
    "Date",
    "DateOfBirth",
    "DateOfDeath",
    "DateTime",
    "DaysSupply",
    "DeliveredOnDate",
    "DenialReason",
    "DenialReasonCode",
    "Denied",
    "DeniedNewPrescriptionToFollow",
    "Description",
    "DescriptionCode",
    "Diagnosis",
    "DigestMethod",
    "DigestValue",
    "DigitalSignature",
    "Directions",
    "Dispensed",
    "DrugAdministration",
    "DrugCoded",
    "DrugCoverageStatusCode",
    "DrugDBCode",
    "DrugDBCodeQualifier",
    "DrugDescription",
    "DrugUseEvaluation",
    "EffectiveDate",
    "ElectronicMail",
    "EndDate",
    "Error",
    "ExpirationDate",
    "Extension",
    "Facility",
    "Fax",
    "FileID",
    "FillNumber",
    "FillStatus",
    "FirstName",
    "FormCode",
    "FormSourceCode",
    "From",
    "Gender",
    "GetMessage",
    "GroupID",
    "GroupName",
    "HIN",
    "Header",
    "History",
    "HistorySource",
    "HomeTelephone",
    "HumanPatient",
    "Identification",
    "Indicator",
    "ItemCountInOrderGroup",
    "LanguageNameCode",
    "LastFillDate",
    "LastName",
    "Mailbox",
    "Measurement",
    "MedicaidNumber",
    "MedicalRecordIdentificationNumberEHR",
    "MedicareNumber",
    "MedicationDispensed",
    "MedicationPrescribed",
    "MedicationRequested",
    "MedicationResponse",
    "Message",
    "MessageID",
    "MessageRequestCode",
    "MessageRequestSubCode",
    "MiddleName",
    "MultipleBirthIndicator",
    "MutuallyDefined",
    "NCPDPID",
    "NPI",
    "Name",
    "NeedNoLaterThan",
    "NewRx",
    "NewRxRequest",
    "NewRxResponseDenied",
    "NonHumanPatient",
    "NonVeterinarian",
    "Nonce",
    "NotDispensed",
    "Note",
    "Number",
    "NumberOfRefills",
    "Observation",
    "OrderGroup",
    "OrderGroupNumber",
    "OrderGroupReason",
    "OtherMedicationDate",
    "OtherMedicationDateQualifier",
    "OtherTelephone",
    "PBMMemberID",
    "PPONumber",
    "PartiallyDispensed",
    "Password",
    "PasswordChange",
    "Patient",
    "PatientAccountNumber",
    "PatientCodifiedNote",
    "PatientRelationship",
    "PayerID",
    "PayerIdentification",
    "PayerName",
    "PayerType",
    "Pending",
    "PeriodEnd",
    "Pharmacist",
    "Pharmacy",
    "PharmacyRequestedRefills",
    "PlaceLocationQualifier",
    "PlaceOfResidence",
    "PostalCode",
    "PotencyUnitCode",
    "Prefix",
    "Prescriber",
    "PrescriberAgent",
    "PrescriberOrderNumber",
    "Primary",
    "PrimaryTelephone",
    "PriorAuthorization",
    "PriorAuthorizationStatus",
    "ProcessorIdentificationNumber",
    "ProductCode",
    "ProductCodeQualifier",
    "ProfessionalServiceCode",
    "Qualifier",
    "Quantity",
    "QuantityQualifier",
    "QuantityUnitOfMeasure",
    "REMSHealthcareProviderEnrollmentID",
    "Reason",
    "ReasonCode",
    "Receiver",
    "ReferenceNumber",
    "RefillRequest",
    "RefillResponse",
    "Refills",
    "RelatesToMessageID",
    "Replace",
    "RequestReference",
    "RequestedDates",
    "Response",
    "Resupply",
    "RetryCount",
    "ReturnReceipt",
    "RxChangeRequest",
    "RxChangeResponse",
    "RxFill",
    "RxFillIndicatorChange",
    "RxHistoryRequest",
    "RxHistoryResponse",
    "RxReferenceNumber",
    "RxRenewalRequest",
    "RxRenewalResponse",
    "RxTransferConfirm",
    "RxTransferRequest",
    "RxTransferResponse",
    "SPI",
    "Secondary",
    "SecondaryIdentification",
    "Security",
    "Sender",
    "SenderSoftware",
    "SenderSoftwareDeveloper",
    "SenderSoftwareProduct",
    "SenderSoftwareVersionRelease",
    "SentTime",
    "ServiceReasonCode",
    "ServiceResultCode",
    "Sig",
    "SigText",
    "SignatureValue",
    "SocialSecurity",
    "Source",
    "SourceQualifier",
    "Specialty",
    "Species",
    "StartDate",
    "State",
    "StateControlSubstanceNumber",
    "StateLicenseNumber",
    "StateProvince",
    "Status",
    "StoreName",
    "Strength",
    "StrengthForm",
    "StrengthUnitOfMeasure",
    "StrengthValue",
    "StructuredSIG",
    "Substitutions",
    "Suffix",
    "Supervisor",
    "SupportsSMS",
    "TertiaryIdentification",
    "TestMessage",
    "To",
    "TotalCountForOrderGroup",
    "TraceNumber",
    "Transferred",
    "UPIN",
    "UnitSourceCode",
    "Username",
    "UsernameToken",
    "Validated",
    "Value",
    "Verify",
    "VerifyStatus",
    "Veterinarian",
    "WorkTelephone",
    "WrittenDate",
    "X509Data",
    "ZipCode",
];

/// The index of a name in [`NAMES`] (`u16::MAX`: not one).
pub fn name_id(name: &[u8]) -> u16 {
    NAMES.binary_search_by(|n| n.as_bytes().cmp(name)).map_or(u16::MAX, |i| i as u16)
}

/// The `&'static` name of [`NAMES`] or [`ATTRIBUTES`] equal to `name`.
pub fn static_name(name: &str) -> Option<&'static &'static str> {
    NAMES.binary_search(&name).ok().map(|i| &NAMES[i]).or_else(|| ATTRIBUTES.iter().find(|a| **a == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_consistent() {
        assert!(NAMES.windows(2).all(|w| w[0] < w[1]), "NAMES sorted");
        for (t, _, _) in MESSAGE_TYPES {
            assert_ne!(name_id(t.as_bytes()), u16::MAX, "{t}");
        }
        for n in HEADER.iter().chain(RESPONSES).chain(SINGLE) {
            assert_ne!(name_id(n.as_bytes()), u16::MAX, "{n}");
        }
        for (n, alts) in REQUIRED {
            assert_ne!(name_id(n.as_bytes()), u16::MAX, "{n}");
            for a in alts.iter().flat_map(|a| a.iter()) {
                assert_ne!(name_id(a.as_bytes()), u16::MAX, "{a}");
            }
        }
        for (p, n, _) in CHECKS {
            assert!(p.is_empty() || name_id(p.as_bytes()) != u16::MAX, "{p}");
            assert_ne!(name_id(n.as_bytes()), u16::MAX, "{n}");
        }
        assert_eq!(message_type(b"RefillRequest", Version::V2017071), None);
        assert_eq!(message_type(b"RxRenewalRequest", Version::V2017071), Some("RxRenewalRequest"));
        assert_eq!(check_of(b"Quantity", b"Value"), Some(Check::Number));
        assert_eq!(check_of(b"Other", b"Value"), None);
    }
}
