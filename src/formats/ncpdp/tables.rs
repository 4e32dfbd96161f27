//! The D.0 tables phiward carries: the transaction codes, the segments, the field ids of the data
//! dictionary with their names, which fields repeat, the formats of the date, numeric and amount
//! fields, the fields a segment defines (for the segments listed in [`SEGMENT_FIELDS`]), and the
//! segments and fields required per transaction code.
//!
//! Sources: the public D.0 payer sheet template (NCPDP's "Request Claim Billing/Claim Rebill",
//! "Claim Reversal" and "Eligibility Verification" templates as published in payer sheets: which
//! segments are "always sent"), and the field dictionaries of open projects (Mirth Connect's
//! NCPDP data type, MPL; NCPDPSerDe, MIT). The NCPDP standard itself is licensed; what is not here
//! is not checked (docs/ncpdp.md).
//!
//! What it does not do: hold payer-specific rules (which situational segments and fields a payer
//! requires), or external code lists (reject codes, qualifiers' values).

/// The D.0 transaction codes (103-A3), with their names.
pub const TRANSACTION_CODES: &[(&str, &str)] = &[
    ("E1", "EligibilityVerification"),
    ("B1", "Billing"),
    ("B2", "Reversal"),
    ("B3", "Rebill"),
    ("P1", "PriorAuthorizationRequestAndBilling"),
    ("P2", "PriorAuthorizationReversal"),
    ("P3", "PriorAuthorizationInquiry"),
    ("P4", "PriorAuthorizationRequestOnly"),
    ("N1", "InformationReporting"),
    ("N2", "InformationReportingReversal"),
    ("N3", "InformationReportingRebill"),
    ("C1", "ControlledSubstanceReporting"),
    ("C2", "ControlledSubstanceReportingReversal"),
    ("C3", "ControlledSubstanceReportingRebill"),
    ("S1", "ServiceBilling"),
    ("S2", "ServiceReversal"),
    ("S3", "ServiceRebill"),
];

/// The D.0 segments: id (`AM` and the two-digit segment id), name, and whether it is a response
/// segment.
pub const SEGMENTS: &[(&str, &str, bool)] = &[
    ("AM01", "Patient", false),
    ("AM02", "PharmacyProvider", false),
    ("AM03", "Prescriber", false),
    ("AM04", "Insurance", false),
    ("AM05", "CoordinationOfBenefitsOtherPayments", false),
    ("AM06", "WorkersCompensation", false),
    ("AM07", "Claim", false),
    ("AM08", "DurPps", false),
    ("AM09", "Coupon", false),
    ("AM10", "Compound", false),
    ("AM11", "Pricing", false),
    ("AM12", "PriorAuthorization", false),
    ("AM13", "Clinical", false),
    ("AM14", "AdditionalDocumentation", false),
    ("AM15", "Facility", false),
    ("AM16", "Narrative", false),
    ("AM20", "ResponseMessage", true),
    ("AM21", "ResponseStatus", true),
    ("AM22", "ResponseClaim", true),
    ("AM23", "ResponsePricing", true),
    ("AM24", "ResponseDurPps", true),
    ("AM25", "ResponseInsurance", true),
    ("AM26", "ResponsePriorAuthorization", true),
];

/// The index in [`SEGMENTS`] of a segment id's two digits (`b"07"`).
pub fn segment(digits: &[u8]) -> Option<usize> {
    SEGMENTS.iter().position(|(id, _, _)| id.as_bytes().get(2..) == Some(digits))
}

/// The index in [`SEGMENTS`] of a segment id (`"AM07"`), for policy selectors.
pub fn segment_by_id(id: &str) -> Option<usize> {
    SEGMENTS.iter().position(|(s, _, _)| *s == id)
}

/// The D.0 data dictionary's field ids (the two characters after the field separator) and names.
pub const FIELDS: &[(&str, &str)] = &[
    ("28", "UnitOfMeasure"),
    ("1C", "SmokerNonSmokerCode"),
    ("1E", "PrescriberLocationCode"),
    ("2A", "MedigapId"),
    ("2B", "MedicaidIndicator"),
    ("2C", "PregnancyIndicator"),
    ("2D", "ProviderAcceptAssignmentIndicator"),
    ("2E", "PrimaryCareProviderIdQualifier"),
    ("2F", "NetworkReimbursementId"),
    ("2G", "CompoundIngredientModifierCodeCount"),
    ("2H", "CompoundIngredientModifierCode"),
    ("2J", "PrescriberFirstName"),
    ("2K", "PrescriberStreetAddress"),
    ("2M", "PrescriberCityAddress"),
    ("2N", "PrescriberStateAddress"),
    ("2P", "PrescriberZipAddress"),
    ("2Q", "AdditionalDocumentationTypeId"),
    ("2R", "LengthOfNeed"),
    ("2S", "LengthOfNeedQualifier"),
    ("2T", "PrescriberSupplierDateSigned"),
    ("2U", "RequestStatus"),
    ("2V", "RequestPeriodBeginDate"),
    ("2W", "RequestPeriodRecertDate"),
    ("2X", "SupportingDocumentation"),
    ("2Y", "PlanSalesTaxAmount"),
    ("2Z", "QuestionNumberLetterCount"),
    ("3Q", "FacilityName"),
    ("3U", "FacilityStreetAddress"),
    ("3V", "FacilityStateAddress"),
    ("4B", "QuestionNumberLetter"),
    ("4C", "CoordinationOfBenefitsOtherPaymentsCount"),
    ("4D", "QuestionPercentResponse"),
    ("4E", "PrimaryCareProviderLastName"),
    ("4F", "RejectFieldOccurrenceIndicator"),
    ("4G", "QuestionDateResponse"),
    ("4H", "QuestionDollarAmountResponse"),
    ("4J", "QuestionNumericResponse"),
    ("4K", "QuestionAlphaNumericResponse"),
    ("4U", "AmountOfCoinsurance"),
    ("4V", "BasisOfCalculationCoinsurance"),
    ("4X", "PatientResidence"),
    ("5C", "OtherPayerCoverageType"),
    ("5E", "OtherPayerRejectCount"),
    ("5F", "ApprovedMessageCodeCount"),
    ("5J", "FacilityCityAddress"),
    ("6C", "OtherPayerIdQualifier"),
    ("6D", "FacilityZipAddress"),
    ("6E", "OtherPayerRejectCode"),
    ("6F", "ApprovedMessageCode"),
    ("7C", "OtherPayerId"),
    ("7E", "DurPpsCodeCounter"),
    ("7F", "HelpDeskPhoneNumberQualifier"),
    ("8C", "FacilityId"),
    ("8E", "DurPpsLevelOfEffort"),
    ("8F", "HelpDeskPhoneNumber"),
    ("9F", "PreferredProductCount"),
    ("A7", "InternalControlNumber"),
    ("AM", "SegmentIdentification"),
    ("AN", "TransactionResponseStatus"),
    ("AP", "PreferredProductIdQualifier"),
    ("AR", "PreferredProductId"),
    ("AS", "PreferredProductIncentive"),
    ("AT", "PreferredProductCostShareIncentive"),
    ("AU", "PreferredProductDescription"),
    ("AV", "TaxExemptIndicator"),
    ("AW", "FlatSalesTaxAmountPaid"),
    ("AX", "PercentageSalesTaxAmountPaid"),
    ("AY", "PercentageSalesTaxRatePaid"),
    ("AZ", "PercentageSalesTaxBasisPaid"),
    ("BE", "ProfessionalServiceFeeSubmitted"),
    ("BM", "NarrativeMessage"),
    ("C1", "GroupId"),
    ("C2", "CardholderId"),
    ("C3", "PersonCode"),
    ("C4", "DateOfBirth"),
    ("C5", "PatientGenderCode"),
    ("C6", "PatientRelationshipCode"),
    ("C7", "PlaceOfService"),
    ("C8", "OtherCoverageCode"),
    ("C9", "EligibilityClarificationCode"),
    ("CA", "PatientFirstName"),
    ("CB", "PatientLastName"),
    ("CC", "CardholderFirstName"),
    ("CD", "CardholderLastName"),
    ("CE", "HomePlan"),
    ("CF", "EmployerName"),
    ("CG", "EmployerStreetAddress"),
    ("CH", "EmployerCityAddress"),
    ("CI", "EmployerStateProvinceAddress"),
    ("CJ", "EmployerZipPostalZone"),
    ("CK", "EmployerPhoneNumber"),
    ("CL", "EmployerContactName"),
    ("CM", "PatientStreetAddress"),
    ("CN", "PatientCityAddress"),
    ("CO", "PatientStateProvinceAddress"),
    ("CP", "PatientZipPostalCode"),
    ("CQ", "PatientPhoneNumber"),
    ("CR", "CarrierId"),
    ("CW", "AlternateId"),
    ("CX", "PatientIdQualifier"),
    ("CY", "PatientId"),
    ("CZ", "EmployerId"),
    ("D2", "PrescriptionServiceReferenceNumber"),
    ("D3", "FillNumber"),
    ("D5", "DaysSupply"),
    ("D6", "CompoundCode"),
    ("D7", "ProductServiceId"),
    ("D8", "DispenseAsWrittenProductSelectionCode"),
    ("D9", "IngredientCostSubmitted"),
    ("DB", "PrescriberId"),
    ("DC", "DispensingFeeSubmitted"),
    ("DE", "DatePrescriptionWritten"),
    ("DF", "NumberOfRefillsAuthorized"),
    ("DI", "LevelOfService"),
    ("DJ", "PrescriptionOriginCode"),
    ("DK", "SubmissionClarificationCode"),
    ("DL", "PrimaryCareProviderId"),
    ("DN", "BasisOfCostDetermination"),
    ("DO", "DiagnosisCode"),
    ("DQ", "UsualAndCustomaryCharge"),
    ("DR", "PrescriberLastName"),
    ("DT", "SpecialPackagingIndicator"),
    ("DU", "GrossAmountDue"),
    ("DV", "OtherPayerAmountPaid"),
    ("DX", "PatientPaidAmountSubmitted"),
    ("DY", "DateOfInjury"),
    ("DZ", "ClaimReferenceId"),
    ("E1", "ProductServiceIdQualifier"),
    ("E2", "RouteOfAdministration"),
    ("E3", "IncentiveAmountSubmitted"),
    ("E4", "ReasonForServiceCode"),
    ("E5", "ProfessionalServiceCode"),
    ("E6", "ResultOfServiceCode"),
    ("E7", "QuantityDispensed"),
    ("E8", "OtherPayerDate"),
    ("E9", "ProviderId"),
    ("EA", "OriginallyPrescribedProductServiceCode"),
    ("EB", "OriginallyPrescribedQuantity"),
    ("EC", "CompoundIngredientComponentCount"),
    ("ED", "CompoundIngredientQuantity"),
    ("EE", "CompoundIngredientDrugCost"),
    ("EF", "CompoundDosageFormDescriptionCode"),
    ("EG", "CompoundDispensingUnitFormIndicator"),
    ("EJ", "OriginallyPrescribedProductServiceIdQualifier"),
    ("EK", "ScheduledPrescriptionIdNumber"),
    ("EM", "PrescriptionServiceReferenceNumberQualifier"),
    ("EN", "AssociatedPrescriptionServiceReferenceNumber"),
    ("EP", "AssociatedPrescriptionServiceDate"),
    ("EQ", "PatientSalesTaxAmount"),
    ("ER", "ProcedureModifierCode"),
    ("ET", "QuantityPrescribed"),
    ("EU", "PriorAuthorizationTypeCode"),
    ("EV", "PriorAuthorizationNumberSubmitted"),
    ("EW", "IntermediaryAuthorizationTypeId"),
    ("EX", "IntermediaryAuthorizationId"),
    ("EY", "ProviderIdQualifier"),
    ("EZ", "PrescriberIdQualifier"),
    ("F3", "AuthorizationNumber"),
    ("F4", "Message"),
    ("F5", "PatientPayAmount"),
    ("F6", "IngredientCostPaid"),
    ("F7", "DispensingFeePaid"),
    ("F9", "TotalAmountPaid"),
    ("FA", "RejectCount"),
    ("FB", "RejectCode"),
    ("FC", "AccumulatedDeductibleAmount"),
    ("FD", "RemainingDeductibleAmount"),
    ("FE", "RemainingBenefitAmount"),
    ("FF", "FormularyId"),
    ("FH", "AmountAppliedToPeriodicDeductible"),
    ("FI", "AmountOfCopay"),
    ("FJ", "AmountAttributedToProductSelectionBrand"),
    ("FK", "AmountExceedingPeriodicBenefitMaximum"),
    ("FL", "IncentiveAmountPaid"),
    ("FM", "BasisOfReimbursementDetermination"),
    ("FN", "AmountAttributedToSalesTax"),
    ("FO", "PlanId"),
    ("FQ", "AdditionalMessageInformation"),
    ("FS", "ClinicalSignificanceCode"),
    ("FT", "OtherPharmacyIndicator"),
    ("FU", "PreviousDateOfFill"),
    ("FV", "QuantityOfPreviousFill"),
    ("FW", "DatabaseIndicator"),
    ("FX", "OtherPrescriberIndicator"),
    ("FY", "DurFreeTextMessage"),
    ("G1", "CompoundType"),
    ("G2", "CmsPartDDefinedQualifiedFacility"),
    ("G3", "EstimatedGenericSavings"),
    ("GE", "PercentageSalesTaxAmountSubmitted"),
    ("H1", "MeasurementTime"),
    ("H2", "MeasurementDimension"),
    ("H3", "MeasurementUnit"),
    ("H4", "MeasurementValue"),
    ("H5", "PrimaryCareProviderLocationCode"),
    ("H6", "DurCoAgentId"),
    ("H7", "OtherAmountClaimedSubmittedCount"),
    ("H8", "OtherAmountClaimedSubmittedQualifier"),
    ("H9", "OtherAmountClaimedSubmitted"),
    ("HA", "FlatSalesTaxAmountSubmitted"),
    ("HB", "OtherPayerAmountPaidCount"),
    ("HC", "OtherPayerAmountPaidQualifier"),
    ("HD", "DispensingStatus"),
    ("HE", "PercentageSalesTaxRateSubmitted"),
    ("HF", "QuantityIntendedToBeDispensed"),
    ("HG", "DaysSupplyIntendedToBeDispensed"),
    ("HH", "BasisOfCalculationDispensingFee"),
    ("HJ", "BasisOfCalculationCopay"),
    ("HK", "BasisOfCalculationFlatSalesTax"),
    ("HM", "BasisOfCalculationPercentageSalesTax"),
    ("HN", "PatientEmailAddress"),
    ("J1", "ProfessionalServiceFeePaid"),
    ("J2", "OtherAmountPaidCount"),
    ("J3", "OtherAmountPaidQualifier"),
    ("J4", "OtherAmountPaid"),
    ("J5", "OtherPayerAmountRecognized"),
    ("J6", "DurPpsResponseCodeCounter"),
    ("J7", "PayerIdQualifier"),
    ("J8", "PayerId"),
    ("J9", "DurCoAgentIdQualifier"),
    ("JE", "PercentageSalesTaxBasisSubmitted"),
    ("K5", "TransactionReferenceNumber"),
    ("KE", "CouponType"),
    ("MA", "Url"),
    ("ME", "CouponNumber"),
    ("MG", "OtherPayerBinNumber"),
    ("MH", "OtherPayerProcessorControlNumber"),
    ("MJ", "OtherPayerGroupId"),
    ("MT", "PatientAssignmentIndicator"),
    ("MU", "BenefitStageCount"),
    ("MV", "BenefitStageQualifier"),
    ("MW", "BenefitStageAmount"),
    ("N3", "MedicaidPaidAmount"),
    ("N4", "MedicaidSubrogationInternalControlNumber"),
    ("N5", "MedicaidIdNumber"),
    ("N6", "MedicaidAgencyNumber"),
    ("NE", "CouponValueAmount"),
    ("NP", "OtherPayerPatientResponsibilityAmountQualifier"),
    ("NQ", "OtherPayerPatientResponsibilityAmount"),
    ("NR", "OtherPayerPatientResponsibilityAmountCount"),
    ("NT", "OtherPayerIdCount"),
    ("NU", "OtherPayerCardholderId"),
    ("NV", "DelayReasonCode"),
    ("NX", "SubmissionClarificationCodeCount"),
    ("PA", "RequestType"),
    ("PB", "RequestPeriodDateBegin"),
    ("PC", "RequestPeriodDateEnd"),
    ("PD", "BasisOfRequest"),
    ("PE", "AuthorizedRepresentativeFirstName"),
    ("PF", "AuthorizedRepresentativeLastName"),
    ("PG", "AuthorizedRepresentativeStreetAddress"),
    ("PH", "AuthorizedRepresentativeCityAddress"),
    ("PJ", "AuthorizedRepresentativeStateProvinceAddress"),
    ("PK", "AuthorizedRepresentativeZipPostalCode"),
    ("PM", "PrescriberPhoneNumber"),
    ("PP", "PriorAuthorizationSupportingDocumentation"),
    ("PR", "PriorAuthorizationProcessedDate"),
    ("PS", "PriorAuthorizationEffectiveDate"),
    ("PT", "PriorAuthorizationExpirationDate"),
    ("PW", "PriorAuthorizationNumberOfRefillsAuthorized"),
    ("PX", "PriorAuthorizationQuantityAccumulated"),
    ("PY", "PriorAuthorizationNumberAssigned"),
    ("RA", "PriorAuthorizationQuantity"),
    ("RB", "PriorAuthorizationDollarsAuthorized"),
    ("RE", "CompoundProductIdQualifier"),
    ("SE", "ProcedureModifierCodeCount"),
    ("TE", "CompoundProductId"),
    ("TR", "BillingEntityTypeIndicator"),
    ("TS", "PayToQualifier"),
    ("TT", "PayToId"),
    ("TU", "PayToName"),
    ("TV", "PayToStreetAddress"),
    ("TW", "PayToCityAddress"),
    ("TX", "PayToStateProvinceAddress"),
    ("TY", "PayToZipPostalCode"),
    ("TZ", "GenericEquivalentProductIdQualifier"),
    ("U1", "ContractNumber"),
    ("U6", "BenefitId"),
    ("U7", "PharmacyServiceType"),
    ("U8", "IngredientCostContractedReimbursableAmount"),
    ("U9", "DispensingFeeContractedReimbursableAmount"),
    ("UA", "GenericEquivalentProductId"),
    ("UB", "OtherPayerHelpDeskPhoneNumber"),
    ("UC", "SpendingAccountAmountRemaining"),
    ("UD", "HealthPlanFundedAssistanceAmount"),
    ("UE", "CompoundIngredientBasisOfCostDetermination"),
    ("UF", "AdditionalMessageInformationCount"),
    ("UG", "AdditionalMessageInformationContinuity"),
    ("UH", "AdditionalMessageInformationQualifier"),
    ("UJ", "AmountAttributedToProviderNetworkSelection"),
    ("UK", "AmountAttributedToProductSelectionBrandDrug"),
    ("UM", "AmountAttributedToProductSelectionNonPreferredFormulary"),
    ("UN", "AmountAttributedToProductSelectionBrandNonPreferredFormulary"),
    ("UP", "AmountAttributedToCoverageGap"),
    ("UQ", "CmsLowIncomeCostSharingLevel"),
    ("UR", "MedicarePartDCoverageCode"),
    ("US", "NextMedicarePartDEffectiveDate"),
    ("UT", "NextMedicarePartDTerminationDate"),
    ("UV", "OtherPayerPersonCode"),
    ("UW", "OtherPayerPatientRelationshipCode"),
    ("UX", "OtherPayerBenefitEffectiveDate"),
    ("UY", "OtherPayerBenefitTerminationDate"),
    ("VE", "DiagnosisCodeCount"),
    ("WE", "DiagnosisCodeQualifier"),
    ("XE", "ClinicalInformationCounter"),
    ("ZE", "MeasurementDate"),
];

/// A field id character's place among `0-9A-Z` (36: not one).
const fn id_code(b: u8) -> usize {
    match b {
        b'0'..=b'9' => (b - b'0') as usize,
        b'A'..=b'Z' => (b - b'A') as usize + 10,
        _ => 36,
    }
}

/// [`FIELDS`] indexed by the two characters of the id (`u16::MAX`: no field), built at compile
/// time: a lookup per field read, not a search.
const FIELD_INDEX: [u16; 36 * 36] = {
    let mut t = [u16::MAX; 36 * 36];
    let mut i = 0;
    while i < FIELDS.len() {
        let id = FIELDS[i].0.as_bytes();
        t[id_code(id[0]) * 36 + id_code(id[1])] = i as u16;
        i += 1;
    }
    t
};

/// The index in [`FIELDS`] of a field id.
pub fn field(id: &[u8]) -> Option<usize> {
    let [a, b] = id else { return None };
    let (a, b) = (id_code(*a), id_code(*b));
    if a >= 36 || b >= 36 {
        return None;
    }
    let i = FIELD_INDEX[a * 36 + b];
    (i != u16::MAX).then_some(usize::from(i))
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn listed(list: &[&str], id: &str) -> bool {
    let mut i = 0;
    while i < list.len() {
        if same(list[i], id) {
            return true;
        }
        i += 1;
    }
    false
}

/// Flag: the field repeats ([`REPEATING`]).
pub const REPEATS: u8 = 1;
/// Flag: a date field ([`DATES`]).
pub const DATE: u8 = 2;
/// Flag: a numeric field ([`NUMBERS`]).
pub const NUMBER: u8 = 4;
/// Flag: an amount ([`AMOUNTS`]).
pub const AMOUNT: u8 = 8;

/// The flags of each field of [`FIELDS`], by index, built at compile time from the lists.
pub const FIELD_FLAGS: [u8; FIELDS.len()] = {
    let mut t = [0u8; FIELDS.len()];
    let mut i = 0;
    while i < FIELDS.len() {
        let id = FIELDS[i].0;
        t[i] = (if listed(REPEATING, id) { REPEATS } else { 0 })
            | (if listed(DATES, id) { DATE } else { 0 })
            | (if listed(NUMBERS, id) { NUMBER } else { 0 })
            | (if listed(AMOUNTS, id) { AMOUNT } else { 0 });
        i += 1;
    }
    t
};

/// The flags of a field, by its index in [`FIELDS`].
pub fn flags(def: usize) -> u8 {
    FIELD_FLAGS.get(def).copied().unwrap_or(0)
}

/// The fields of the data dictionary that repeat in their segment (each occurrence is one
/// entry of a counted group).
pub const REPEATING: &[&str] = &[
    "ER", "5C", "6C", "7C", "E8", "HC", "DV", "6E", "H8", "H9", "RE", "TE", "ED", "EE", "UE", "WE", "DO", "FB", "4F",
    "6F", "AP", "AR", "AS", "AT", "AU", "J3", "J4", "DK", "MV", "MW", "NQ", "NP", "A7", "2H", "4B", "4D", "4G", "4H",
    "4J", "4K", "FQ", "UG", "UH", "MH", "NU", "MJ", "UV", "UB", "UW", "UX", "UY", "MG", "7E", "E4", "E5", "E6", "8E",
    "J9", "H6", "J6", "FS", "FT", "FU", "FV", "FW", "FX", "FY", "H1", "H2", "H3", "H4", "ZE", "XE", "BM",
];

/// The date fields (CCYYMMDD).
pub const DATES: &[&str] = &[
    "C4", "DE", "DY", "E8", "EP", "FU", "PR", "PS", "PT", "ZE", "2T", "2V", "2W", "US", "UT", "UX", "UY", "4G", "PB",
    "PC",
];

/// The numeric fields: counts, counters, quantities, days supply, fill number, refills.
pub const NUMBERS: &[&str] = &[
    "D3", "D5", "DF", "E7", "ET", "EB", "HF", "HG", "ED", "SE", "NX", "4C", "HB", "5E", "NR", "MU", "H7", "EC", "7E",
    "VE", "J6", "FA", "UF", "9F", "J2", "5F", "2Z", "2G", "XE", "NT", "PW", "PX", "RA", "FV", "2R",
];

/// The dollar amounts and rates (signed numeric, the last character an overpunch).
pub const AMOUNTS: &[&str] = &[
    "D9", "DC", "BE", "DX", "E3", "H9", "HA", "GE", "HE", "DQ", "DU", "N3", "DV", "NQ", "MW", "F5", "F6", "F7", "F9",
    "AW", "AX", "AY", "FC", "FD", "FE", "FH", "FI", "FJ", "FK", "FL", "FN", "J1", "J4", "J5", "EE", "4H", "UC", "UD",
    "EQ", "2Y", "4U", "G3", "UJ", "UK", "UM", "UN", "UP", "NE", "RB", "AS", "AT", "U8", "U9",
];

/// The fields a segment defines, for the segments checked (others are not: their fields are
/// only checked against the dictionary). `AM` is every segment's first field.
pub const SEGMENT_FIELDS: &[(&str, &[&str])] = &[
    ("AM01", &["CX", "CY", "C4", "C5", "CA", "CB", "CM", "CN", "CO", "CP", "CQ", "C7", "CZ", "1C", "2C", "HN", "4X"]),
    ("AM02", &["EY", "E9"]),
    ("AM03", &["EZ", "DB", "DR", "PM", "2E", "DL", "4E", "2J", "2K", "2M", "2N", "2P"]),
    (
        "AM04",
        &[
            "C2", "CC", "CD", "CE", "FO", "C9", "C1", "C3", "C6", "2A", "2B", "2D", "G2", "N5", "N6", "MG", "MH", "NU",
            "MJ",
        ],
    ),
    (
        "AM07",
        &[
            "EM", "D2", "E1", "D7", "EN", "EP", "SE", "ER", "E7", "D3", "D5", "D6", "D8", "DE", "DF", "DJ", "NX", "DK",
            "ET", "C8", "DT", "EJ", "EA", "EB", "CW", "EK", "28", "DI", "EU", "EV", "EW", "EX", "HD", "HF", "HG", "NV",
            "K5", "MT", "E2", "G1", "U7",
        ],
    ),
    ("AM11", &["D9", "DC", "BE", "DX", "E3", "H7", "H8", "H9", "HA", "GE", "HE", "JE", "DQ", "DU", "DN", "N3"]),
    ("AM20", &["F4"]),
    ("AM21", &["AN", "F3", "FA", "FB", "4F", "5F", "6F", "UF", "UH", "FQ", "UG", "7F", "8F", "K5", "A7", "MA"]),
];

/// The fields a segment requires (mandatory in the D.0 segment definitions).
pub const REQUIRED_FIELDS: &[(&str, &[&str])] = &[
    ("AM02", &["EY", "E9"]),
    ("AM03", &["EZ", "DB"]),
    ("AM04", &["C2"]),
    ("AM07", &["EM", "D2", "E1", "D7"]),
    ("AM20", &["F4"]),
    ("AM21", &["AN"]),
    ("AM22", &["EM", "D2"]),
];

/// Where a required segment must be.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Anywhere in the transmission (transmission level or a transaction).
    Transmission,
    /// In every transaction (group).
    EachTransaction,
}

/// The segments a request's transaction code requires (the payer sheet template's "always sent"
/// segments besides the header).
pub fn required_request(code: &[u8]) -> &'static [(&'static str, Scope)] {
    match code {
        b"B1" | b"B3" => {
            &[("AM04", Scope::Transmission), ("AM07", Scope::EachTransaction), ("AM11", Scope::EachTransaction)]
        }
        b"B2" => &[("AM07", Scope::EachTransaction)],
        b"E1" => &[("AM04", Scope::Transmission)],
        _ => &[],
    }
}

/// The segments every transaction of a response requires.
pub const REQUIRED_RESPONSE: &[(&str, Scope)] = &[("AM21", Scope::EachTransaction)];

/// The request header's fields: id, name, width (56 characters in all).
pub const REQUEST_HEADER: &[(&str, &str, usize)] = &[
    ("A1", "BinNumber", 6),
    ("A2", "VersionReleaseNumber", 2),
    ("A3", "TransactionCode", 2),
    ("A4", "ProcessorControlNumber", 10),
    ("A9", "TransactionCount", 1),
    ("B2", "ServiceProviderIdQualifier", 2),
    ("B1", "ServiceProviderId", 15),
    ("D1", "DateOfService", 8),
    ("AK", "SoftwareVendorCertificationId", 10),
];

/// The response header's fields: id, name, width (31 characters in all).
pub const RESPONSE_HEADER: &[(&str, &str, usize)] = &[
    ("A2", "VersionReleaseNumber", 2),
    ("A3", "TransactionCode", 2),
    ("A9", "TransactionCount", 1),
    ("F1", "HeaderResponseStatus", 1),
    ("B2", "ServiceProviderIdQualifier", 2),
    ("B1", "ServiceProviderId", 15),
    ("D1", "DateOfService", 8),
];

/// Width of a request header.
pub const REQUEST_HEADER_LEN: usize = 56;
/// Width of a response header.
pub const RESPONSE_HEADER_LEN: usize = 31;

/// The header response status values (501-F1): accepted, rejected.
pub const HEADER_STATUS: &[&str] = &["A", "R"];

/// True when `id` is in `list`.
pub fn contains(list: &[&str], id: &str) -> bool {
    list.contains(&id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_consistent() {
        assert_eq!(REQUEST_HEADER.iter().map(|f| f.2).sum::<usize>(), REQUEST_HEADER_LEN);
        assert_eq!(RESPONSE_HEADER.iter().map(|f| f.2).sum::<usize>(), RESPONSE_HEADER_LEN);
        for (i, (id, _)) in FIELDS.iter().enumerate() {
            assert_eq!(id.len(), 2);
            assert_eq!(field(id.as_bytes()), Some(i), "{id} twice");
        }
        for list in [REPEATING, DATES, NUMBERS, AMOUNTS] {
            for id in list {
                assert!(field(id.as_bytes()).is_some(), "{id}");
            }
        }
        for (seg, fields) in SEGMENT_FIELDS.iter().chain(REQUIRED_FIELDS) {
            assert!(segment_by_id(seg).is_some(), "{seg}");
            for id in *fields {
                assert!(field(id.as_bytes()).is_some(), "{seg} {id}");
            }
        }
        for (seg, fields) in REQUIRED_FIELDS {
            if let Some((_, defined)) = SEGMENT_FIELDS.iter().find(|(s, _)| s == seg) {
                assert!(fields.iter().all(|f| defined.contains(f)), "{seg}");
            }
        }
        assert_eq!(segment(b"07"), segment_by_id("AM07"));
        for (i, (id, _)) in FIELDS.iter().enumerate() {
            let f = flags(i);
            assert_eq!(f & REPEATS != 0, REPEATING.contains(id), "{id}");
            assert_eq!(f & DATE != 0, DATES.contains(id), "{id}");
            assert_eq!(f & NUMBER != 0, NUMBERS.contains(id), "{id}");
            assert_eq!(f & AMOUNT != 0, AMOUNTS.contains(id), "{id}");
        }
        assert_eq!(field(b"2k"), None);
        assert_eq!(field(b"C"), None);
        assert_eq!(field(b"C4\x00"), None);
        // The validator marks the segments seen in a transaction in a 32-entry table.
        assert!(SEGMENTS.len() <= 32);
    }
}
