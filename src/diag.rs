//! Diagnostics: a stable code, a severity and a structural location. Nothing else.
//!
//! [`Diagnostic`] is `Copy + 'static` and holds no string, byte slice or length of a value: a
//! broken message can put a patient's name where a segment id belongs, so a location is built
//! only from integers and names out of the standard's own schema (`&'static str`).
//!
//! Every [`Code`] is public API: registered in DIAGNOSTICS.md (a test checks the registry
//! against [`Code::ALL`]), never renamed, never reused.
//!
//! Location grammar (documented in DIAGNOSTICS.md):
//! - HL7 v2: `SEG[n]` (the n-th segment with that id, 1-based) followed by `-field[rep]`,
//!   `.component`, `.subcomponent`, e.g. `PID[1]-5[1].1.2`. A segment whose id is neither a
//!   standard id nor a Z id is written `segment[n]`, with `n` its 1-based position in the message.
//! - A structural path from the standard's schema: `ADT_A01.PATIENT/PID`.
//! - FHIR: `Patient.name[0].given[1]` (0-based indexes on repeating elements), qualified by
//!   `/offset:N` (an element without a definition) or `/invariant:key` (see [`FhirPath`]).
//! - A byte position in the input: `offset:N`; a record in a stream: `record:N`.
//! - Nothing: `-` (the finding concerns the whole input).

use std::fmt;

use serde::Serialize;

/// How bad a finding is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Processing of the record stopped.
    Fatal,
    /// The input does not conform.
    Error,
    /// Suspicious or non-canonical, but conformant in tolerant mode.
    Warning,
    /// For the reader's information; never affects a verdict.
    Information,
}

impl Severity {
    /// The stable lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Fatal => "fatal",
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "information",
        }
    }

    /// True for `fatal` and `error`: the verdict is negative.
    pub fn is_failure(self) -> bool {
        matches!(self, Severity::Fatal | Severity::Error)
    }
}

macro_rules! codes {
    ($( $(#[$doc:meta])* $name:ident => $sev:ident, $meaning:literal; )*) => {
        /// A stable diagnostic or command-level code.
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum Code { $( $(#[$doc])* $name, )* }

        impl Code {
            /// Every code, in registry order.
            pub const ALL: &'static [Code] = &[ $( Code::$name, )* ];

            /// The stable SCREAMING_SNAKE name.
            pub fn as_str(self) -> &'static str {
                match self { $( Code::$name => stringify!($name), )* }
            }

            /// The severity this code is reported with by default.
            pub fn default_severity(self) -> Severity {
                match self { $( Code::$name => Severity::$sev, )* }
            }

            /// A fixed, value-free sentence saying what the code means.
            pub fn meaning(self) -> &'static str {
                match self { $( Code::$name => $meaning, )* }
            }

            /// Looks a code up by its stable name.
            pub fn from_name(name: &str) -> Option<Code> {
                match name { $( stringify!($name) => Some(Code::$name), )* _ => None }
            }
        }
    };
}

codes! {
    // ---- command level -------------------------------------------------------------------
    CLI_USAGE => Fatal, "the command line or tool arguments are not valid";
    CLI_NO_INPUT => Fatal, "the input file does not exist or cannot be read";
    CLI_EMPTY_INPUT => Fatal, "the input is empty or only white space";
    CLI_FORMAT_UNDETECTED => Fatal, "the input matches no known format signature";
    CLI_FORMAT_AMBIGUOUS => Fatal, "the input matches more than one format signature";
    CLI_FORMAT_UNSUPPORTED => Fatal, "the operation is not implemented for this format";
    CLI_PARSE_FAILED => Fatal, "the input could not be parsed";
    CLI_INPUT_TOO_LARGE => Fatal, "the input exceeds a configured limit";
    CLI_PARSER_UNAVAILABLE => Fatal, "the component is not built into this binary";
    CLI_INTERNAL => Fatal, "an internal error occurred; no detail is shown";
    CLI_RESULT_TOO_LARGE => Fatal, "the result is larger than the MCP server keeps for `deliver: resource` or `link`";
    CLI_OUTPUT_FAILED => Fatal, "the output could not be written";
    CLI_KEY_INVALID => Fatal, "the key file holds fewer than 16 or more than 4096 bytes";
    CLI_RECORDS_FAILED => Error, "records of a stream could not be processed; the others were";
    CLI_NAMING_SYSTEMS_INVALID => Fatal, "the naming-system file is not UTF-8 lines of an authority and an absolute URI";
    CLI_KEY_FILE_UNREADABLE => Fatal, "the --key-file file does not exist or cannot be read";
    CLI_ID_KEY_FILE_UNREADABLE => Fatal, "the --id-key-file file does not exist or cannot be read";
    CLI_POLICY_UNREADABLE => Fatal, "the policy file (--policy, or the POLICY argument) does not exist or cannot be read";
    CLI_NAMING_SYSTEMS_UNREADABLE => Fatal, "the --naming-systems file does not exist or cannot be read";
    CLI_SAMPLES_UNREADABLE => Fatal, "the --samples folder does not exist, cannot be read or holds no file";
    CLI_AUDIT_LOG_FAILED => Fatal, "the --audit-log file cannot be opened, read or appended; the operation is not carried out";
    AUDIT_CHAIN_BROKEN => Error, "a line of the audit log is missing, altered, inserted or out of order (`audit verify`)";
    CLI_IG_UNREADABLE => Fatal, "an --ig package, folder or file (or NAME#VERSION in the package cache) does not exist or cannot be read";
    CLI_IG_INVALID => Fatal, "an --ig package is not a FHIR package (no package.json, not gzip and tar, a resource file that is not JSON) or exceeds a package limit";
    CLI_CONFIG_INVALID => Fatal, "the configuration file (phiward.toml or --config) cannot be read, or has an unknown key, code, format or a value of the wrong type";

    // ---- policy (load, lint, enforcement) ------------------------------------------------
    POLICY_SYNTAX => Fatal, "the policy file is not valid TOML (or not UTF-8)";
    POLICY_UNKNOWN_KEY => Fatal, "the policy file has a key or table this version does not know";
    POLICY_INVALID_VALUE => Fatal, "a policy value has the wrong type or is out of range";
    POLICY_UNKNOWN_SELECTOR => Fatal, "a policy rule's selector names no segment, field, element or type";
    POLICY_UNKNOWN_ACTION => Fatal, "a policy rule names an action that does not exist";
    POLICY_ACTION_NOT_ALLOWED => Fatal, "a policy rule applies an action to a type it cannot apply to";
    POLICY_KEY_REQUIRED => Fatal, "the policy uses a keyed action (hash, pseudonym, date_shift) and no key file was given";
    POLICY_RULE_SHADOWED => Warning, "a policy rule can never apply: an earlier rule matches everything it matches";
    POLICY_TOOL_NOT_ALLOWED => Fatal, "the policy does not allow this tool";
    POLICY_SHOW_VALUES_FORBIDDEN => Fatal, "the policy forbids --unsafe-show-values";
    POLICY_MARKER_SURVIVED => Error, "a marker put into a sample survived redaction outside the fields the policy documents as kept (`policy test`)";
    POLICY_MARKER_DOCUMENTED => Information, "a marker survived only in a field a keep rule documents as safe with a reason (`policy test`)";
    POLICY_SAMPLE_FAILED => Error, "a sample could not be redacted once marked, so the policy test could not check it";

    // ---- input and framing ---------------------------------------------------------------
    BOM_PRESENT => Information, "the input starts with a UTF-8 byte order mark";
    MLLP_FRAME_TRUNCATED => Error, "the last MLLP frame has no end block (0x1C 0x0D)";
    MLLP_DATA_OUTSIDE_FRAME => Error, "bytes other than white space occur between MLLP frames";

    // ---- HL7 v2 syntax -------------------------------------------------------------------
    NO_MSH_SEGMENT => Fatal, "the message does not start with an MSH segment";
    MSH_TOO_SHORT => Fatal, "the MSH segment is too short to hold its encoding characters";
    INVALID_ENCODING_CHARACTERS => Fatal, "MSH-1/MSH-2 delimiters are missing, repeated or not allowed";
    ENCODING_CHARACTERS_DOUBLED_ESCAPE => Error, "MSH-2 writes its escape character twice (`^~\\\\&`, a slip of text escaping); read as the four characters without the repeat";
    MSH_FIELD_MISSING => Error, "a required MSH field is empty";
    MESSAGE_TYPE_INVALID => Error, "MSH-9 does not match the message type pattern";
    VERSION_INVALID => Error, "MSH-12 does not match the version pattern";
    PROCESSING_ID_INVALID => Error, "MSH-11 is not a valid processing id";
    SEGMENT_ID_INVALID => Error, "a segment id is not three upper-case letters or digits";
    SEGMENT_EMPTY => Warning, "an empty line occurs between segments";
    SEGMENT_TERMINATOR_NONSTANDARD => Information, "segments end with LF or CR LF instead of CR";
    Z_SEGMENT => Information, "a locally defined Z segment occurs";
    UNKNOWN_SEGMENT => Information, "a segment id is not defined by any HL7 v2 version";
    ESCAPE_UNTERMINATED => Error, "an escape sequence has no closing escape character";
    ESCAPE_HEX_INVALID => Error, "a \\X..\\ escape does not hold an even number of hex digits";
    ESCAPE_UNKNOWN => Warning, "an escape sequence is not defined by the standard; it is kept";
    CHARSET_UNKNOWN => Warning, "MSH-18 names a character set this tool does not decode";
    CHARSET_INVALID_BYTES => Error, "bytes are not valid in the declared character set";
    CHARSET_NON_ASCII => Warning, "bytes above 0x7F occur in a message without MSH-18";
    CONTROL_CHARACTER => Error, "a control character occurs inside a field";
    TRUNCATION_CHARACTER => Information, "MSH-2 declares a truncation character (v2.7 and later)";
    BATCH_HEADER_MISSING => Error, "a batch trailer occurs without its header";
    BATCH_TRAILER_MISSING => Error, "a batch or file header has no trailer";
    BATCH_COUNT_MISMATCH => Error, "BTS-1 or FTS-1 does not match the number of messages or batches";
    BATCH_COUNT_INVALID => Error, "BTS-1 or FTS-1 is not a number";
    BATCH_SEGMENT_MISPLACED => Error, "a batch header or trailer occurs out of order";

    // ---- HL7 v2 conformance --------------------------------------------------------------
    // formats/hl7v2/conformance: a message against its version's definitions. Rows in
    // DIAGNOSTICS.md. With --strict, warnings and the information codes marked "deviation" in
    // docs/hl7v2-conformance.md become errors.
    VERSION_UNKNOWN => Warning, "MSH-12 names a version without definitions here; the nearest known version is used";
    STRUCTURE_UNKNOWN => Information, "MSH-9 names a message structure or event the version does not define; segment order is checked only if the event gives one";
    STRUCTURE_MISMATCH => Warning, "MSH-9.3 names a structure other than the one the version gives the message type and event";
    SEGMENT_UNEXPECTED => Error, "a segment of the message structure occurs where the structure does not allow it";
    SEGMENT_REPEATED => Error, "a segment occurs more often than the message structure allows";
    SEGMENT_NOT_IN_STRUCTURE => Warning, "a standard segment occurs that the message structure does not define";
    SEGMENT_MISSING => Error, "a segment the message structure requires is absent";
    GROUP_MISSING => Error, "a segment group the message structure requires is absent";
    FIELD_REQUIRED_MISSING => Error, "a field the segment definition requires is empty";
    FIELD_REPEATED => Error, "a field has more repetitions than its definition allows";
    FIELD_NOT_DEFINED => Information, "a field beyond the segment's definition in the declared version is populated";
    FIELD_WITHDRAWN => Information, "a field the declared version withdraws is populated";
    COMPONENT_REQUIRED_MISSING => Warning, "a component the data type requires is empty in a populated field";
    COMPONENT_NOT_DEFINED => Information, "a component or subcomponent beyond the data type's definition is populated";
    LENGTH_EXCEEDED => Warning, "a field repetition or component is longer than the version's maximum length";
    DATE_INVALID => Error, "a DT value is not a date YYYY[MM[DD]]";
    DATETIME_INVALID => Error, "a DTM or TS value is not a date and time YYYY[MM[DD[HH[MM[SS[.S...]]]]]][+/-ZZZZ]";
    TIME_INVALID => Error, "a TM value is not a time HH[MM[SS[.S...]]][+/-ZZZZ]";
    DATETIME_PRECISION => Warning, "a date or time uses a precision the declared version does not define (a later version does)";
    NUMBER_INVALID => Error, "an NM value is not a number";
    SEQUENCE_ID_INVALID => Error, "an SI value is not a non-negative integer";
    TABLE_VALUE_UNKNOWN => Error, "an ID value is not in its HL7-defined table";
    TRAILING_DELIMITER => Warning, "a field, component or subcomponent separator ends a segment or field (reported with --strict only)";

    // ---- FHIR ----------------------------------------------------------------------------
    MALFORMED_JSON => Fatal, "the input is not well-formed JSON";
    JSON_DUPLICATE_KEY => Error, "a JSON object has the same key twice";
    TYPE_MISMATCH => Error, "a JSON value has the wrong kind (object, array, string, number, boolean, null) for its element";
    JSON_ARRAY_EXPECTED => Error, "a repeating FHIR element is not written as a JSON array";
    JSON_ARRAY_UNEXPECTED => Error, "a non-repeating FHIR element is written as a JSON array";
    JSON_ARRAY_EMPTY => Error, "a JSON array is empty";
    JSON_PRIMITIVE_MISMATCH => Error, "the arrays of a primitive element and its _element differ in length or are both null at a position";
    MALFORMED_XML => Fatal, "the input is not well-formed XML";
    XML_DTD_FORBIDDEN => Fatal, "the XML input has a document type declaration; DTDs and entities are refused";
    XML_NAMESPACE_INVALID => Error, "an XML element or attribute is not in the FHIR (for div, the XHTML) namespace";
    XML_TEXT_UNEXPECTED => Error, "text occurs where FHIR XML allows only elements";
    ELEMENT_OUT_OF_ORDER => Error, "an XML element occurs after a sibling that the FHIR definitions order after it";
    RESOURCE_TYPE_MISSING => Error, "a resource has no resourceType";
    RESOURCE_TYPE_UNKNOWN => Error, "resourceType names no FHIR R4 resource";
    UNKNOWN_ELEMENT => Error, "an element is not defined for its parent; it is located by byte offset";
    CARDINALITY_MIN => Error, "a required element is missing or occurs too few times";
    CARDINALITY_MAX => Error, "an element occurs more times than allowed, or two types of a choice element occur";
    PRIMITIVE_INVALID => Error, "a primitive value does not match the syntax or range of its type";
    CODE_INVALID => Error, "a code is not in the value set of a required binding";
    CODE_NOT_IN_VALUESET => Warning, "a code is not in the value set of an extensible (warning) or preferred (information) binding";
    CODE_MISSING => Error, "a bound element holds no code: a primitive with no value under a required binding, or a CodeableConcept with no coding (error for a required binding, warning for extensible)";
    REFERENCE_UNRESOLVED => Error, "a reference to a Bundle entry or a contained resource does not resolve";
    REFERENCE_AMBIGUOUS => Error, "a reference inside a Bundle matches several entries (entries that share a fullUrl or a type and id, the reference naming no version that tells them apart)";
    BUNDLE_ENTRY_ID_MISSING => Error, "a resource of a searchset Bundle's entry has no id";
    BUNDLE_LINK_DUPLICATE => Error, "a Bundle has two links of the same relation";
    BUNDLE_ENTRY_FULLURL_MISSING => Error, "an entry of a Bundle other than a transaction or batch (or their responses) has no fullUrl";
    BUNDLE_REFERENCE_TYPE_MISMATCH => Error, "a relative reference from an entry whose fullUrl is a URN names, by its id, an entry whose resource is of another type than the reference names";
    FULLURL_MISMATCH => Error, "a Bundle entry's fullUrl does not agree with its resource's type and id";
    ATTACHMENT_SIZE_MISMATCH => Error, "an Attachment's size is not the decoded length of its data";
    IDENTIFIER_URI_INVALID => Error, "an Identifier whose system is urn:ietf:rfc:3986 has a value that is not an absolute URI";
    CODING_SYSTEM_INVALID => Error, "a Coding's system is not an absolute URI, or is the URL of a core value set rather than a code system";
    CODING_SYSTEM_UNKNOWN => Warning, "a Coding's system is in the namespaces STU3 used for HL7 v2 tables and v3 code systems (http://hl7.org/fhir/v2/..., /v3/...), where R4 defines none";
    UCUM_CODE_INVALID => Error, "a code of the UCUM code system (a Coding's, or a Quantity's with system http://unitsofmeasure.org) is not a valid UCUM expression";
    CANONICAL_URL_RELATIVE => Error, "the url of a canonical resource (not contained) is not an absolute URI";
    CODESYSTEM_PROPERTY_DUPLICATE => Error, "a CodeSystem defines two properties with the same code or the same uri";
    CODESYSTEM_PROPERTY_TYPE => Error, "a CodeSystem property whose uri is a concept property R4 defines has another type than that definition's";
    CODESYSTEM_CONCEPT_PROPERTY_TYPE => Error, "a concept's property value has another type than the CodeSystem's property of that code";
    CODESYSTEM_PROPERTY_UNDEFINED => Warning, "a concept's property names a code the CodeSystem defines no property for";
    CODESYSTEM_SUPPLEMENT_CONTENT => Error, "a CodeSystem that supplements another has a content other than supplement";
    VALUESET_EXPRESSION_LANGUAGE => Error, "a ValueSet filter's parameter expression (cqf-expression) has a language other than text/fhirpath";
    VALUESET_EXPRESSION_INVALID => Error, "a ValueSet filter's parameter expression (cqf-expression) is not FHIRPath by the grammar";
    VALUESET_PARAMETER_UNKNOWN => Error, "a ValueSet filter's parameter expression uses a %variable that is neither a parameter the ValueSet declares (valueset-parameter) nor a FHIRPath or FHIR environment variable";
    VALUESET_PARAMETER_UNUSED => Warning, "a parameter a ValueSet declares (valueset-parameter) is used by none of its filter expressions";
    VALUESET_FILTER_VALUE_TYPE => Error, "a ValueSet filter's value is not true or false where its operator (exists) or its property (inactive, notSelectable with =) asks for a boolean";
    VALUESET_FILTER_ECL_INVALID => Error, "a SNOMED CT ValueSet filter on property constraint holds a value that is not ECL 2.x by the grammar";
    SEARCHPARAMETER_COMPOSITE_COMPONENTS => Error, "a composite SearchParameter has fewer than two components";
    SEARCHPARAMETER_DERIVED_BASE => Error, "a SearchParameter derived from a core one has a base resource type the core one does not";
    SEARCHPARAMETER_DERIVED_TYPE => Error, "a SearchParameter derived from a core one has another type";
    CAPABILITYSTATEMENT_SEARCHPARAM_TYPE => Error, "a CapabilityStatement's searchParam has another type than the core search parameter its definition names";
    STRUCTUREDEFINITION_PATH_UNKNOWN => Error, "a constraint StructureDefinition's differential names an element its type does not have";
    STRUCTUREDEFINITION_DISCRIMINATOR_PATH_UNKNOWN => Error, "a slicing discriminator's path starts with a name that is no element of the sliced element";
    STRUCTUREDEFINITION_FIXED_CONFLICT => Error, "a constraint StructureDefinition fixes an element to another value than its loaded base fixes it to";
    STRUCTUREDEFINITION_SPECIALIZATION_TYPE => Error, "a specialization StructureDefinition has the same type as its loaded base";
    STRUCTUREDEFINITION_TYPE_UNKNOWN => Error, "a StructureDefinition's type is a relative name no type of the specification has, or an absolute URL outside a logical model";
    STRUCTUREDEFINITION_TYPE_PROFILE_WRONG => Error, "an element type's profile is the definition of a core type that the element's type is not and does not derive from";
    URI_NOT_ABSOLUTE => Error, "an element the specification defines as an absolute URI (Bundle.entry.fullUrl, ValueSet.compose.include.system) holds a relative or local one";
    EXTENSION_URL_INVALID => Error, "an extension's url is not an absolute URI (outside a complex extension), or names no part of the core (or cross-version) complex extension it is in";
    EXTENSION_CONTEXT_INVALID => Error, "a core or extensions pack extension is used on an element that its definition's contexts do not allow";
    EXTENSION_TYPE_INVALID => Error, "the value of a core or cross-version extension (or of a part of one) has a type that its definition does not allow";
    EXTENSION_UNKNOWN => Error, "an extension's url is in the namespace of the core and extensions pack definitions (http://hl7.org/fhir/StructureDefinition/) and names none of them, or is a cross-version url whose version or element has no definition";
    EXTENSION_MODIFIER_MISMATCH => Error, "a core, extensions pack, cross-version or loaded extension is used as modifierExtension and is not a modifier, or as extension and is one";
    NARRATIVE_LINK_UNRESOLVED => Error, "a # link of the narrative names no id or anchor of its resource (nor of the Bundle around it)";
    NARRATIVE_LINK_AMBIGUOUS => Warning, "a # link of the narrative names more than one id or anchor";
    NARRATIVE_LINK_EMPTY => Error, "a link of the narrative has an empty href";
    NARRATIVE_LINK_SCHEME => Error, "a link of the narrative is a urn: or cid: identifier, not a location to follow";
    INVARIANT_VIOLATED => Error, "an invariant of the FHIR core definitions is not met; its key is in the location";
    INVARIANT_UNCHECKED => Information, "an invariant uses FHIRPath that phiward does not evaluate; reported once per key";
    // Codings against the loaded CodeSystems (formats/fhir/codings.rs).
    CODING_SYSTEM_SUPPLEMENT => Error, "a Coding's system is the url of a loaded CodeSystem that is a supplement (it defines no codes of its own)";
    CODE_UNKNOWN_IN_CODESYSTEM => Error, "a Coding's code is not a concept of its CodeSystem whose content is complete (a loaded one, or one of FHIR R4's own code systems)";
    // MeasureReport against its type and its Measure (formats/fhir/measure.rs).
    MEASUREREPORT_SUBJECTS_UNEXPECTED => Error, "a population of a MeasureReport whose type is not subject-list lists subjects (subjectResults)";
    MEASUREREPORT_SUBJECTS_NOT_LIST => Error, "a MeasureReport population's subjectResults refers to a resource that is not a List";
    MEASUREREPORT_COUNT_MISMATCH => Error, "a MeasureReport population's count differs from the number of entries of its subjectResults List";
    MEASUREREPORT_GROUP_UNMATCHED => Error, "a MeasureReport group matches no group of its Measure (by code, or as the only group of both)";
    MEASUREREPORT_SCORE_UNEXPECTED => Error, "a MeasureReport group has a measureScore and its Measure's scoring is cohort (no score)";
    MEASUREREPORT_POPULATION_UNMATCHED => Error, "a MeasureReport population's code is not a population of the matching group of its Measure";
    // QuestionnaireResponse against its Questionnaire (formats/fhir/questionnaire.rs).
    QR_QUESTIONNAIRE_UNKNOWN => Warning, "the Questionnaire of a QuestionnaireResponse cannot be found, so its answers are not checked against it";
    QR_QUESTIONNAIRE_WRONG_TYPE => Error, "a QuestionnaireResponse's questionnaire names a resource that is not a Questionnaire";
    QR_ITEM_UNKNOWN => Error, "a QuestionnaireResponse item's linkId is not an item of the Questionnaire at that level";
    QR_ITEM_REPEATED => Error, "a Questionnaire item that does not repeat occurs in several QuestionnaireResponse items";
    QR_ANSWER_NOT_ALLOWED => Error, "an item of type group, display or question has answers";
    QR_ANSWER_TYPE => Error, "an answer's type is not the one its item's type (or answer options) asks for";
    QR_ANSWER_REPEATED => Error, "an item that does not repeat has several answers";
    QR_ANSWER_COUNT => Error, "an item has fewer answers than its minOccurs or more than its maxOccurs";
    QR_REQUIRED_MISSING => Error, "a required, enabled item has no answer (no sub-items, for a group) in a completed response (information while in progress)";
    QR_ANSWER_DISABLED => Error, "an item whose enableWhen conditions do not hold has answers";
    QR_ANSWER_NOT_IN_OPTIONS => Error, "an answer is not one of its item's answerOptions";
    QR_ANSWER_EXCLUSIVE => Error, "an exclusive answer option is chosen together with other answers";
    QR_ANSWER_NOT_IN_VALUESET => Error, "a coded answer is not in its item's answerValueSet";
    QR_VALUESET_UNKNOWN => Warning, "an item's answerValueSet cannot be found, so the answer is not checked against it";
    QR_ANSWER_LENGTH => Error, "a text answer is longer than the item's maxLength or shorter than its minLength";
    QR_ANSWER_FORMAT => Error, "a text answer does not match the item's regex";
    QR_ANSWER_RANGE => Error, "an answer is below the item's minimum or above its maximum, or a quantity cannot be compared with them";
    QR_ANSWER_DECIMALS => Error, "a decimal answer has more decimal places than the item's maxDecimalPlaces";
    QR_ATTACHMENT_TYPE => Error, "an attachment answer's contentType is not one of the item's mimeTypes";
    QR_ATTACHMENT_SIZE => Error, "an attachment answer is larger than the item's maxSize";
    QR_REFERENCE_TYPE => Error, "a reference answer names no resource type, or one the item's referenceResource does not allow";
    QR_QUANTITY_UNIT => Error, "a quantity answer's unit is not one of the item's unitOptions";
    QUESTIONNAIRE_ENABLEWHEN_INNER => Error, "a Questionnaire item's enableWhen depends on the item itself or one of its descendants";

    // ---- FHIR profiles (structure, formats/fhir/profile.rs) ---------------------------------
    // Findings against a profile of a loaded IG carry the profile's canonical (`profile`).
    PROFILE_UNKNOWN => Warning, "a profile the resource claims in meta.profile is not among the loaded packages (a warning), or one an element's type names (an error)";
    PROFILE_SNAPSHOT_FAILED => Warning, "a profile's snapshot could not be generated (its base is not loaded, or its differential names an element the base lacks)";
    PROFILE_CARDINALITY_MIN => Error, "an element occurs fewer times than its profile requires";
    PROFILE_CARDINALITY_MAX => Error, "an element occurs more times than its profile allows";
    PROFILE_TYPE => Error, "an element has a type its profile does not allow";
    PROFILE_FIXED => Error, "an element differs from the fixed value of its profile";
    PROFILE_PATTERN => Error, "an element does not contain the pattern value of its profile";
    PROFILE_MIN_VALUE => Error, "a value is below its profile's minValue";
    PROFILE_MAX_VALUE => Error, "a value is above its profile's maxValue";
    PROFILE_VALUE_DURATION_NO_NOW => Information, "a minValueDuration/maxValueDuration bound (relative to the current time) was not compared: no --now was given; reported once per profile element";
    PROFILE_REFERENCE_TARGET => Error, "a reference points to a resource type its profile's target profiles do not allow";
    STRING_HTML_CONTENT => Error, "a string or markdown value holds text that looks like an HTML tag (reported only with --security-checks)";
    MARKDOWN_HTML => Error, "a markdown value holds raw HTML (reported only with --no-html-in-markdown)";
    URL_EXAMPLE => Error, "a URL names an example domain (example.org, acme.com) that nothing loaded answers to (reported only with --no-example-urls)";
    HL7_WORKGROUP_MISSING => Error, "a canonical resource HL7 publishes (url under http://hl7.org/fhir/) does not name its owning work group with the structuredefinition-wg extension (reported only with --for-publication)";
    SHAREABLE_ELEMENT_MISSING => Error, "a ValueSet, CodeSystem or ConceptMap lacks an element a shareable one has: url, version, title, status, experimental, description (error when its url is HL7's, warning otherwise) or name (warning); reported only with --for-publication";
    REFERENCE_TARGET_ABSENT => Error, "a reference names a resource the input does not hold (reported only with --validate-reference check-exists)";
    PROFILE_LENGTH => Error, "a string value is longer than its profile's maxLength or shorter than its minLength";
    PROFILE_VALUE_ABSENT => Error, "a primitive element has no value where its profile requires one (mustHaveValue), or none of the extensions its profile allows in place of the value (valueAlternatives)";
    PROFILE_NARRATIVE_LANGUAGE => Error, "the narrative's language sections are not what its profile requires (narrative-language-control)";
    PROFILE_NARRATIVE_SOURCE => Warning, "the narrative holds content without a source class where its profile asks for one (narrative-source-control)";
    PROFILE_BINDING => Error, "a code is not in the value set its profile binds (error for required, warning for extensible)";
    PROFILE_BINDING_ADDITIONAL => Error, "a code is not in the value set of an additional binding of its profile (error for the purposes required and maximum, warning for extensible)";
    PROFILE_INVARIANT => Error, "an invariant of a profile is not met; its key is in the location";
    PROFILE_INVARIANT_UNCHECKED => Information, "an invariant of a profile uses FHIRPath that phiward does not evaluate; reported once per key";
    PROFILE_MUST_SUPPORT => Information, "a must-support element of the profile is absent (reported only with --must-support)";
    PROFILE_EXTENSION_UNKNOWN => Error, "an extension's definition is not among the loaded packages, the core or the extensions pack, and no option allows it (example domains, --allow-extension-domain, --allow-any-extensions)";
    PROFILE_EXTENSION_CONTEXT => Error, "an extension of a loaded definition is used on an element its contexts do not allow";
    SLICE_UNMATCHED => Error, "an element of a closed slicing matches none of its slices";
    SLICE_CARDINALITY_MIN => Error, "a slice occurs fewer times than its profile requires";
    SLICE_CARDINALITY_MAX => Error, "a slice occurs more times than its profile allows";
    SLICE_ORDER => Error, "the elements of an ordered slicing are not in the order of their slices";
    CONFORMANCE_VALUESET_UNEXPANDABLE => Information, "a value set a profile binds cannot be expanded from the loaded packages (a filter, or a code system not bundled); reported once per value set";
    CONFORMANCE_RESOURCE_INVALID => Warning, "a conformance resource of a loaded package cannot be read (not a JSON object, no resourceType)";

    // ---- X12 (HIPAA 5010) ------------------------------------------------------------------
    // formats/x12: the envelope (ISA/IEA, GS/GE, ST/SE, TA1) and the implementation guides.
    // Location: `ISA-13`, `GS[1]-06`, `GS[1]/GE-01`, `ST[3]/2000B/2010BA/NM1[1]-03` (see
    // [`X12Position`]). Rows in DIAGNOSTICS.md.
    X12_ISA_INVALID => Fatal, "the interchange does not start with an ISA segment of 16 elements whose separators can be read";
    X12_ISA_WIDTH => Error, "an ISA element does not have its fixed width (the separators are not at their fixed positions)";
    X12_DATA_OUTSIDE_INTERCHANGE => Error, "bytes other than white space occur outside an interchange (before ISA or after IEA)";
    X12_SEGMENT_OUTSIDE_SET => Error, "a segment occurs between transaction sets or groups, outside ST/SE";
    X12_ENVELOPE_VALUE_INVALID => Error, "an envelope element (ISA, GS, ST, SE, GE, IEA, TA1) is empty, too long or not a valid code, number, date or time";
    X12_TRAILER_MISSING => Error, "an ISA, GS or ST has no IEA, GE or SE before the next header or the end";
    X12_HEADER_MISSING => Error, "a GE or IEA occurs without its GS or ISA";
    X12_CONTROL_NUMBER_MISMATCH => Error, "a trailer's control number (IEA02, GE02, SE02) differs from its header's (ISA13, GS06, ST02)";
    X12_COUNT_MISMATCH => Error, "a trailer's count (IEA01 groups, GE01 sets, SE01 segments) differs from what the envelope holds";
    X12_VERSION_MISMATCH => Error, "ST03 differs from GS08, or GS08 names a version other than ISA12's";
    X12_TRANSACTION_SET_UNKNOWN => Warning, "no implementation guide here for the transaction set and version; only the envelope is checked";
    X12_SEGMENT_ID_INVALID => Error, "a segment id is not two or three upper-case letters or digits";
    X12_SEGMENT_UNEXPECTED => Error, "a segment is not defined by the implementation guide at this place";
    X12_SEGMENT_OUT_OF_ORDER => Error, "a segment the guide defines earlier in the same loop occurs after later ones";
    X12_SEGMENT_MISSING => Error, "a segment the guide requires in a loop is absent";
    X12_SEGMENT_REPEATED => Error, "a segment occurs more often in a loop than the guide allows";
    X12_LOOP_MISSING => Error, "a loop the guide requires is absent";
    X12_LOOP_REPEATED => Error, "a loop repeats more often than the guide allows";
    X12_ELEMENT_MISSING => Error, "an element or component the guide requires is empty";
    X12_ELEMENT_NOT_USED => Warning, "an element or component the guide marks not used is populated";
    X12_ELEMENT_TOO_MANY => Error, "a segment or composite has more elements or components than the guide defines";
    X12_ELEMENT_TOO_LONG => Error, "an element is longer than its maximum length";
    X12_ELEMENT_TOO_SHORT => Error, "an element is shorter than its minimum length";
    X12_ELEMENT_TYPE_INVALID => Error, "an element does not match its data type (N0-N9 numbers, R decimals, AN/ID characters)";
    X12_ELEMENT_TRAILING_SPACES => Warning, "an AN element ends with spaces, which X12.6 says a sender suppresses";
    X12_DATE_INVALID => Error, "a DT element is not a valid date CCYYMMDD (or YYMMDD)";
    X12_TIME_INVALID => Error, "a TM element is not a valid time HHMM[SS[D..]]";
    X12_CODE_INVALID => Error, "an ID element holds a code that is not in the guide's list for it";
    X12_SYNTAX_RULE => Error, "a segment breaks one of its syntax rules (paired, required, exclusive, conditional, list conditional)";
    X12_REPETITION_INVALID => Error, "an element repeats (ISA11 separator) where the guide does not allow repetitions";

    // ---- ASTM (E1394 / LIS2-A2 records, E1381 / LIS1-A frames) ---------------------------
    // formats/astm: the record hierarchy of a message (H .. L) and its framing. Location: an
    // ASTM position (`P[1]-6[1].2`, `record[7]`, `frame[3]/offset:120`; see [`AstmPosition`]).
    // Rows in DIAGNOSTICS.md.
    ASTM_DELIMITERS_INVALID => Fatal, "the H record does not define four distinct delimiters (field, repeat, component, escape) that are not letters, digits, space or line ends";
    ASTM_HEADER_MISSING => Error, "a message does not start with an H (header) record";
    ASTM_TERMINATOR_MISSING => Error, "a message has no L (terminator) record before the next H record or the end of the input";
    ASTM_RECORD_TYPE_UNKNOWN => Error, "a record's type is not one of H, P, O, R, C, Q, M, S, L";
    ASTM_RECORD_OUT_OF_ORDER => Error, "a record breaks the hierarchy (P after H, O under P, R under O, Q after H, C after a record, nothing after L)";
    ASTM_SEQUENCE_INVALID => Error, "a sequence number is empty, not a number, or not the next one at its level (1 under each new parent)";
    ASTM_FIELD_TOO_MANY => Error, "a record has more fields than the standard defines for its type";
    ASTM_FIELD_EMPTY_EXTRA => Warning, "a record has empty fields after the last one the standard defines for its type (a trailing delimiter)";
    ASTM_DATE_INVALID => Error, "a date or date and time field is not YYYYMMDD[HHMM[SS]] with a valid date and time";
    ASTM_TERMINATION_CODE_INVALID => Error, "the L record's termination code (L-3) is not one of N, T, R, E, Q, I, F";
    E1381_CHECKSUM_MISMATCH => Error, "a frame's checksum is not the modulo-256 sum of its bytes from the frame number through ETB or ETX";
    E1381_FRAME_NUMBER_INVALID => Error, "a frame number is not a digit 0-7, or not the next one (1 after ENQ, then counting modulo 8)";
    E1381_FRAME_END_MISSING => Error, "a frame has no ETB or ETX before a line feed, the next STX, EOT or the end of the input";
    E1381_FRAME_TRAILER_INVALID => Error, "a frame's ETB or ETX is not followed by two hexadecimal checksum characters, CR and LF";
    E1381_FRAME_TOO_LONG => Warning, "a frame carries more than 240 characters of text";
    E1381_DATA_OUTSIDE_FRAME => Error, "bytes other than white space and ENQ, ACK, NAK, EOT occur between frames";
    E1381_RECORD_END_MISSING => Warning, "an ETX frame's text does not end with the record's CR: the record is ended at ETX";
    // ---- DICOM (Part 10) -------------------------------------------------------------------
    // Location: `(0008,1140)[2].(0008,1155)/offset:N` (see [`DicomPosition`]). Rows in
    // DIAGNOSTICS.md.
    DICOM_PREAMBLE_MISSING => Warning, "the file has no 128-byte preamble and DICM prefix; it is read as a dataset that starts with group 0002 or 0008";
    DICOM_META_MISSING => Error, "the file has no file meta information (group 0002); the transfer syntax is inferred from the first element";
    DICOM_META_ELEMENT_MISSING => Error, "a file meta element the standard requires (0002,0001), (0002,0002), (0002,0003), (0002,0010) is absent or empty";
    DICOM_META_GROUP_LENGTH => Error, "the file meta group length (0002,0000) is absent or differs from the bytes of the group";
    DICOM_META_MISMATCH => Error, "the Media Storage SOP Class or Instance UID (0002,0002/0003) differs from the SOP Class or Instance UID (0008,0016/0018)";
    DICOM_TRANSFER_SYNTAX_UNKNOWN => Warning, "the transfer syntax UID is not one phiward knows; the dataset is read as explicit VR little endian";
    DICOM_TRANSFER_SYNTAX_UNSUPPORTED => Fatal, "not reported: every transfer syntax of the tables is read (a deflated dataset is inflated); registered so the code is never reused";
    DICOM_DEFLATE_INVALID => Fatal, "the deflated dataset (1.2.840.10008.1.2.1.99) is not a valid raw deflate stream (RFC 1951), or the input ends before its final block";
    DICOM_ENCODING_MISMATCH => Warning, "the transfer syntax names explicit VR little endian but the dataset's first element has no VR; the dataset is read as implicit VR little endian";
    DICOM_TRUNCATED => Fatal, "the input ends inside an element's header or value, or inside an open sequence or item";
    DICOM_LENGTH_INVALID => Fatal, "an element's or item's length runs past the end of its enclosing item or sequence (a lying length)";
    DICOM_DELIMITER_UNEXPECTED => Fatal, "an item or delimitation tag occurs where none may (outside a sequence, or an element inside a sequence)";
    DICOM_VR_INVALID => Fatal, "an explicit VR is not one of the standard's two-letter value representations";
    DICOM_VR_MISMATCH => Warning, "an explicit VR differs from the VR the data dictionary gives the tag";
    DICOM_ODD_LENGTH => Error, "a value's length is odd (every value has an even length)";
    DICOM_TAG_ORDER => Error, "an element's tag is not greater than the tag before it in the same dataset";
    DICOM_PRIVATE_CREATOR_MISSING => Error, "a private element's block has no private creator (gggg,00xx) in its dataset";
    DICOM_VALUE_INVALID => Error, "a value does not match its VR's syntax (DA, TM, DT, AS, CS, DS, IS, UI, PN, AE) or its fixed binary size";
    DICOM_VALUE_TOO_LONG => Error, "a value is longer than its VR allows (AE, AS, CS, DA, DS, IS, LO, LT, PN, SH, ST, TM, UI, DT)";
    DICOM_VM_INVALID => Error, "the number of values differs from the value multiplicity the data dictionary gives the tag";
    DICOM_ATTRIBUTE_MISSING => Error, "an attribute of type 1 or 2 of a mandatory module of the SOP class's IOD is absent, or of type 1C or 2C when its condition, read from PS3.3 (another attribute present, absent or holding one of the values named), holds; or absent from an item of a sequence of the file that the IOD's modules define, where the item's attributes (a macro's) make it type 1 or 2 (or 1C/2C, its condition on the item read and holding)";
    DICOM_ATTRIBUTE_EMPTY => Error, "an attribute of type 1 of a mandatory module of the SOP class's IOD (or 1C, its condition read and holding), at the top level or in an item of a sequence the IOD's modules define, is present without a value";
    DICOM_SOP_CLASS_UNKNOWN => Warning, "the SOP Class UID is absent or not one phiward has the IOD of; the IOD's modules are not checked";
    DICOM_BURNED_IN_ANNOTATION => Fatal, "redact refuses the file: its pixel data may show burned-in text (Burned In Annotation (0028,0301) YES, or absent or empty on a modality or SOP class whose images commonly carry it) and the policy does not accept that residual risk (`dicom_burned_in_annotation`); nothing is written (exit 65)";
    DICOM_PIXEL_ENCODING_UNKNOWN => Fatal, "redact refuses the file: its pixel data is encapsulated (compressed) and it names no transfer syntax phiward knows, so no transfer syntax can state how the output's pixel data is encoded; nothing is written (exit 65)";
    DICOM_ENUMERATED_VALUE => Error, "a value is not one of the enumerated values PS3.3 lists for its attribute in a module of the SOP class's IOD (per value position where the standard lists them per value; defined terms are not checked)";
    DICOM_PHOTOMETRIC_INVALID => Error, "Photometric Interpretation (0028,0004) is a standard term PS3.5 Section 8.2 does not allow for the pixel data's encoding: not in the valid values of the transfer syntax's table for its Samples per Pixel (JPEG, JPEG-LS, JPEG 2000, RLE), or YBR_RCT, YBR_ICT or YBR_PARTIAL_420 with native pixel data";
    DICOM_MULTI_FRAME_INVALID => Error, "Number of Frames (0028,0008) is greater than 1 in an instance of a single-frame IOD (no module of the SOP class's IOD has the attribute; PS3.3 C.7.6.6 defines it in the Multi-frame Module)";
    DICOM_CONDITION_UNCHECKED => Information, "the IOD has conditional modules or type 1C/2C attributes whose conditions are stated in prose phiward does not read; they are not evaluated (reported once per file)";
    CCDA_NAMESPACE_INVALID => Fatal, "the root is not a ClinicalDocument or a CDA element in the CDA namespace urn:hl7-org:v3";
    CCDA_ELEMENT_UNKNOWN => Error, "an element is not one its parent's CDA class defines (in the CDA or SDTC namespace, in none, or in another inside a data type)";
    CCDA_ELEMENT_OUT_OF_ORDER => Error, "an element comes before an element its CDA class orders ahead of it";
    CCDA_ELEMENT_MISSING => Error, "an element the CDA class requires is absent (the parent has no nullFlavor)";
    CCDA_ELEMENT_TOO_MANY => Error, "an element occurs more times than its CDA class allows";
    CCDA_ATTRIBUTE_UNKNOWN => Error, "an attribute is not one the element's CDA class defines, or one it prohibits";
    CCDA_ATTRIBUTE_MISSING => Error, "an attribute the CDA class requires is absent (the element has no nullFlavor)";
    CCDA_FIXED_VALUE_MISMATCH => Error, "an attribute differs from the value the CDA class fixes";
    CCDA_VALUE_INVALID => Error, "an attribute is not of its kind (boolean, integer, decimal, code without surrounding white space)";
    CCDA_TS_INVALID => Error, "a TS is not YYYY[MM[DD[HH[MM[SS[.S]]]]]][+|-ZZzz] with each part in range";
    CCDA_TEXT_UNEXPECTED => Error, "text occurs in an element whose data type has no text";
    CCDA_DATATYPE_INVALID => Error, "xsi:type names no data type the element allows, or is absent where the element has several";
    CCDA_II_INVALID => Error, "an II has neither root nor nullFlavor, or its root is not an OID, UUID or RUID";
    CCDA_CD_INVALID => Error, "a coded value has a code without a codeSystem, or a codeSystem that is not an OID or UUID";
    CCDA_PQ_INVALID => Error, "a PQ's unit is not a UCUM unit";
    CCDA_NULLFLAVOR_INVALID => Error, "a nullFlavor is not one of value set CDANullFlavor";
    CCDA_TEMPLATE_VALUE_MISMATCH => Error, "an attribute a declared C-CDA template fixes (classCode, moodCode, a code) is absent or differs";
    CCDA_TEMPLATE_ELEMENT_MISSING => Error, "an element a declared C-CDA template requires is absent";
    CCDA_TEMPLATE_CONTENT_MISSING => Error, "a section or entry a declared C-CDA template requires (by its templateId) is absent";
    CCDA_FRAGMENT_NAMESPACES_IMPLIED => Warning, "a C-CDA fragment (not a ClinicalDocument) uses the CDA namespace, xsi: or sdtc: without declaring them: read with those namespaces (reported once)";
    CCDA_EXTENSION_ELEMENT => Warning, "an element in a namespace other than CDA's, SDTC's or XML Schema instance's, in a CDA class (CDA R2 extensibility): accepted, its content not checked";
    CCDA_BINDING => Error, "a code is not in the bundled value set its CDA class or C-CDA template binds: error for a required binding, warning for extensible";
    CCDA_BINDING_UNCHECKED => Information, "a required or extensible binding's value set is not bundled (VSAC's, SNOMED CT's, LOINC's...), so its codes are not checked; reported once per document and value set";
    CCDA_TEMPLATE_VERSION_OTHER => Information, "a templateId's root is a known C-CDA template but its extension is another version: only its fixed values are checked";

    // ---- NCPDP Telecommunication Standard D.0 (pharmacy claims) ----------------------------
    // Location: `header/A3`, `AM04/C2`, `transaction[2]/AM07/D7[2]`, `transaction[1]/segment[3]/field[4]`
    // (see [`NcpdpPosition`]). Rows in DIAGNOSTICS.md.
    NCPDP_HEADER_INVALID => Fatal, "the transmission does not start with a D.0 request header (56 characters, then a segment or group separator) or response header (31 characters, then a segment or group separator)";
    NCPDP_VERSION_UNSUPPORTED => Error, "the header's version/release number (102-A2) is not D0";
    NCPDP_HEADER_FIELD_INVALID => Error, "a header field does not have its format (BIN 6 digits, service provider id qualifier 2 digits, transaction count 1-4, date of service CCYYMMDD, header response status A or R)";
    NCPDP_TRANSACTION_CODE_UNKNOWN => Error, "the header's transaction code (103-A3) is not one of the D.0 transaction codes (E1, B1-B3, P1-P4, N1-N3, C1-C3, S1-S3)";
    NCPDP_TRANSACTION_COUNT_MISMATCH => Error, "the header's transaction count (109-A9) differs from the number of transactions (groups) the transmission carries (an E1 of count 1 may carry none)";
    NCPDP_DATA_OUTSIDE_SEGMENT => Error, "bytes other than a segment occur after the header or a group separator (a segment starts with the segment separator 0x1E and a field separator 0x1C)";
    NCPDP_SEGMENT_ID_MISSING => Error, "a segment does not start with its segment identification field (111-AM) and a two-digit segment id";
    NCPDP_SEGMENT_UNKNOWN => Error, "a segment id is not one of the D.0 segments of its kind (request segments 01-16 in a request, response segments 20-26 in a response)";
    NCPDP_SEGMENT_DUPLICATE => Error, "a segment occurs more than once in the same transaction (or in the transmission-level part)";
    NCPDP_SEGMENT_REQUIRED => Error, "a segment the transaction code requires is absent (B1, B3: Insurance, Claim, Pricing; B2: Claim; E1: Insurance; a response transaction: Response Status)";
    NCPDP_FIELD_ID_INVALID => Error, "a field is shorter than its two-character field id, or its id is not two letters or digits";
    NCPDP_FIELD_UNKNOWN => Warning, "a field id is not in the D.0 data dictionary phiward carries";
    NCPDP_FIELD_NOT_IN_SEGMENT => Warning, "a field id of the data dictionary is not one of the fields its segment defines (checked for the Patient, Pharmacy Provider, Prescriber, Insurance, Claim, Pricing, Response Message and Response Status segments)";
    NCPDP_FIELD_DUPLICATE => Error, "a field that does not repeat occurs more than once in a segment";
    NCPDP_FIELD_REQUIRED => Error, "a field its segment requires is absent (Claim: EM, D2, E1, D7; Insurance: C2; Pharmacy Provider: EY, E9; Prescriber: EZ, DB; Response Status: AN; Response Message: F4; Response Claim: EM, D2)";
    NCPDP_DATE_INVALID => Error, "a date field is not CCYYMMDD with a valid date";
    NCPDP_NUMBER_INVALID => Error, "a numeric field (counts, quantities, days supply, fill number) is not all digits";
    NCPDP_AMOUNT_INVALID => Error, "a dollar amount or rate is not digits with a signed overpunch last character ({, A-I positive; }, J-R negative) or a digit";
    // ---- NCPDP SCRIPT (XML e-prescribing, 10.6 and 2017071) --------------------------------
    // Location: `Message/Body/NewRx/Patient/HumanPatient/Name/LastName`, `Message/Header/To/@Qualifier`
    // (see [`ScriptPosition`]). Rows in DIAGNOSTICS.md.
    SCRIPT_ROOT_INVALID => Fatal, "the root element is not Message in the SCRIPT namespace http://www.ncpdp.org/schema/SCRIPT";
    SCRIPT_VERSION_UNSUPPORTED => Error, "the Message's version attributes name neither SCRIPT 10.6 (version 010, release 006) nor 2017071 (TransportVersion 20170715)";
    SCRIPT_MESSAGE_TYPE_UNKNOWN => Error, "the Body's transaction element is not a message type of the Message's version (RefillRequest is 10.6, RxRenewalRequest 2017071)";
    SCRIPT_BODY_INVALID => Error, "the Body holds no transaction element, or more than one";
    SCRIPT_ELEMENT_MISSING => Error, "an element the message type requires (Header To, From, MessageID, SentTime; the parts of the transaction) is absent or empty";
    SCRIPT_ELEMENT_DUPLICATE => Error, "an element that occurs once at its place (a Header element, a party, Body, Header) occurs more than once";
    SCRIPT_ELEMENT_UNEXPECTED => Warning, "an element under Message or Header is not one SCRIPT defines there (or is in another namespace)";
    SCRIPT_QUALIFIER_INVALID => Error, "a To or From Qualifier attribute is absent (2017071) or not one of C, D, P, M, F, PY, ZZZ";
    SCRIPT_CODE_INVALID => Error, "a coded element is not of its code list (Gender, product and drug database code qualifiers, quantity qualifier, NCI unit of measure code, refills qualifier, communication qualifier, Status, Error and Verify codes, Substitutions)";
    SCRIPT_DATE_INVALID => Error, "a Date is not YYYY-MM-DD, or a DateTime or SentTime not YYYY-MM-DDThh:mm:ss[.s][Z|+hh:mm|-hh:mm], with each part in range";
    SCRIPT_NUMBER_INVALID => Error, "a numeric element (quantity value, days supply, number of refills, strength value) is not a non-negative decimal of at most 11 digits";
    SCRIPT_NPI_INVALID => Error, "an NPI is not 10 digits with its Luhn check digit (over the prefix 80840)";
    SCRIPT_DEA_INVALID => Error, "a DEA number is not two letters (or a letter and 9) and seven digits with its check digit";
    SCRIPT_NCPDPID_INVALID => Error, "an NCPDPID (the NCPDP provider id of a pharmacy) is not seven digits";
    // ---- terminology ---------------------------------------------------------------------
    // terminology/: find-equivalent, map-codes, the importers. Rows in DIAGNOSTICS.md.
    TERMINOLOGY_FILE_INVALID => Fatal, "the terminology file is not in the format its importer reads";
    TERMINOLOGY_DATA_DIR_UNAVAILABLE => Fatal, "the terminology data folder is not set or cannot be written";
    CONCEPTMAP_INVALID => Fatal, "the ConceptMap is not a FHIR R4 ConceptMap in JSON, or no bundled map has that URL";
    CODE_UNMAPPED => Error, "a code has no target in the ConceptMap (or its system has no group there)";
    CODE_MAPPED_NARROWER => Information, "a code maps only to a target that is narrower, wider or inexact";
    // ---- conversion (HL7 v2 to FHIR R4) ---------------------------------------------------
    // Location: the v2 position, `->`, the FHIR element path (`-` when there is none).
    CONVERT_MESSAGE_UNSUPPORTED => Warning, "MSH-9 names a message type or event the converter is not built for; its segments are converted one by one";
    CONVERT_SEGMENT_UNMAPPED => Warning, "a segment has no mapping here (or nothing to attach to); none of its fields is in the Bundle";
    CONVERT_FIELD_UNMAPPED => Information, "a populated field (or a further repetition) has no mapping; it is not in the Bundle";
    CONVERT_COMPONENT_UNMAPPED => Information, "a populated component has no mapping; it is not in the Bundle";
    CONVERT_CODE_UNMAPPED => Warning, "a code has no equivalent in the FHIR value set; it is kept (v2 table coding, or the originalText extension beside the closest code of a required status) or its optional element left out, never coerced";
    CONVERT_CODE_SYSTEM_UNKNOWN => Warning, "a coding system name has no known URI and no naming-system entry; the coding has no system";
    CONVERT_IDENTIFIER_SYSTEM_UNKNOWN => Warning, "an assigning authority has no naming-system entry; the identifier has no system (the authority is kept as assigner)";
    CONVERT_TIMEZONE_MISSING => Warning, "a time without offset, and no --default-timezone: reduced to the date (or left out where FHIR needs an instant)";
    CONVERT_PRECISION_INSUFFICIENT => Warning, "a timestamp is less precise than the FHIR instant its element needs; it is left out";
    CONVERT_CONTROL_CHARACTER_REPLACED => Warning, "a field holds control characters a FHIR string cannot (below U+0020 other than tab, CR and LF, raw or from a hex escape); each is written as a space";
    CONVERT_UNIT_NOT_UCUM => Warning, "a code whose coding system is UCUM is not a UCUM expression (mcg, mEq, ea): it is kept without the UCUM system (a quantity's unit keeps it as text)";
    CONVERT_VALUE_INVALID => Warning, "a value does not match its v2 data type (number, date, time); it is kept as text where FHIR allows, else left out";
    CONVERT_VALUE_TYPE_UNSUPPORTED => Warning, "OBX-2 names a value type without a FHIR mapping here; dataAbsentReason is set";
    CONVERT_VALUE_MISSING => Warning, "an element FHIR requires has no source in the message; a data-absent-reason extension stands in";
    CONVERT_CONTROL_ID_MISSING => Warning, "MSH-10 is empty; resource ids derive from the record number instead";
    CONVERT_TIMING_INCOMPLETE => Warning, "an appointment has a start without an end (or the reverse) and no duration to derive it, or no time at all: FHIR needs both or neither (app-2), and both unless proposed, cancelled or waitlist (app-3); the lone time is left out and a status that needs times becomes proposed (the v2 status kept as originalText)";
}

/// A name out of the standard's schema, or nothing when the name is not one.
pub type SchemaName = Option<&'static str>;

/// Where a finding is, built from numbers and schema names only.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Location {
    /// The whole input.
    Input,
    /// A byte offset into the input (0-based).
    Offset(u64),
    /// A record of a multi-record input (1-based).
    Record(u32),
    /// An HL7 v2 position.
    Hl7(Hl7Position),
    /// A path of schema names (message structure, group, segment), such as `ADT_A01.PATIENT/PID`.
    Path(&'static str, &'static str),
    /// A FHIR element path such as `Patient.name[0].given[1]` (see [`FhirPath`]).
    Fhir(FhirPath),
    /// A position in a policy file: 1-based line and column (in characters).
    Policy {
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
    },
    /// A conversion: the HL7 v2 position and the FHIR element path it maps to (`-`: none), a
    /// name from the FHIR definitions: `PID[1]-8->Patient.gender`.
    Convert(Hl7Position, &'static str),
    /// An X12 position: `ISA-13`, `GS[1]/GE-01`, `ST[3]/2000B/2010BA/NM1[1]-03`.
    X12(X12Position),
    /// An ASTM position: `P[1]-6[1].2`, `record[7]`, `frame[3]/offset:120`.
    Astm(AstmPosition),
    /// A DICOM position: `(0008,1140)[2].(0008,1155)/offset:1234`.
    Dicom(DicomPosition),
    /// An NCPDP Telecommunication D.0 position: `header/A3`, `transaction[2]/AM07/D7`.
    Ncpdp(NcpdpPosition),
    /// A C-CDA position: element names and indexes only,
    /// `ClinicalDocument/component/structuredBody/component[3]/section/entry[2]/act/@moodCode`.
    Ccda(CcdaPosition),
    /// An NCPDP SCRIPT position: element names of the SCRIPT tables and indexes only,
    /// `Message/Body/NewRx/MedicationPrescribed[2]/Quantity/Value`, `Message/Header/To/@Qualifier`.
    Script(ScriptPosition),
}

/// An NCPDP SCRIPT position: the element names from the root down (names of
/// `crate::formats::ncpdp_script::tables::NAMES` only; `*` for a name they lack), each with its
/// 1-based index among its same-named siblings when it has some, then an attribute
/// (`/@Qualifier`, a name of `crate::formats::ncpdp_script::tables::ATTRIBUTES`). Paths deeper than
/// [`ScriptPosition::CAPACITY`] keep their first 2 and last steps (`...` for the others); the
/// output writes the whole path from `node`. Names and indexes are structure, never a value.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ScriptPosition {
    steps: [(u16, u16); ScriptPosition::CAPACITY],
    len: u8,
    skipped: u8,
    /// The last step is a missing child of `node` (not an element of the message).
    pub child: bool,
    /// An attribute of the element.
    pub attr: Option<&'static &'static str>,
    /// The element's index in its record's tree (`u32::MAX`: none).
    pub node: u32,
}

impl ScriptPosition {
    /// Most steps kept.
    pub const CAPACITY: usize = 12;
    const HEAD: usize = 2;

    /// An empty path (renders `-`).
    pub const fn new() -> Self {
        ScriptPosition {
            steps: [(0, 0); ScriptPosition::CAPACITY],
            len: 0,
            skipped: 0,
            child: false,
            attr: None,
            node: u32::MAX,
        }
    }

    /// Appends a step: a name id (`u16::MAX`: not a name of the tables) and its index (0: not
    /// written); middle steps beyond the capacity are dropped.
    pub fn push(&mut self, name: u16, index: u16) {
        let len = usize::from(self.len);
        if len < Self::CAPACITY {
            self.steps[len] = (name, index);
            self.len += 1;
        } else {
            self.steps.copy_within(Self::HEAD + 1.., Self::HEAD);
            self.steps[Self::CAPACITY - 1] = (name, index);
            self.skipped = self.skipped.saturating_add(1);
        }
    }

    /// True when steps were left out.
    pub fn shortened(&self) -> bool {
        self.skipped > 0
    }

    /// Writes one step.
    pub fn write_step(f: &mut impl fmt::Write, name: u16, index: u16) -> fmt::Result {
        let names = crate::formats::ncpdp_script::tables::NAMES;
        f.write_str(names.get(usize::from(name)).copied().unwrap_or("*"))?;
        if index > 0 {
            write!(f, "[{index}]")?;
        }
        Ok(())
    }

    /// The last step (the name id and index), if any.
    pub fn last(&self) -> Option<(u16, u16)> {
        usize::from(self.len).checked_sub(1).map(|i| self.steps[i])
    }
}

impl Default for ScriptPosition {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for ScriptPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = usize::from(self.len);
        if len == 0 && self.attr.is_none() {
            return f.write_str("-");
        }
        for (i, &(name, index)) in self.steps[..len].iter().enumerate() {
            if i == Self::HEAD && self.skipped > 0 {
                f.write_str("/.../")?;
            } else if i > 0 {
                f.write_str("/")?;
            }
            ScriptPosition::write_step(f, name, index)?;
        }
        if let Some(a) = self.attr {
            write!(f, "/@{a}")?;
        }
        Ok(())
    }
}

/// A C-CDA position: the element names from the root down (names of the CDA definitions only,
/// `crate::formats::ccda::tables::NAMES`; `*` for a name they do not define), each with its
/// 1-based index among its same-named siblings when it has some, then an attribute
/// (`/@moodCode`) and the template a finding checks (`/template:2.16.840.1.113883.10.20.22.1.2:2024-05-01`).
/// Paths deeper than [`CcdaPosition::CAPACITY`] steps keep their first 2 and last steps, with
/// `...` for those left out; the output writes the whole path from `node`. Names and indexes
/// are structure: a position holds nothing of a value.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CcdaPosition {
    /// (name id, index; 0: not written); name id `u16::MAX`: a name the definitions lack.
    steps: [(u16, u16); CcdaPosition::CAPACITY],
    len: u8,
    skipped: u8,
    /// The last step is a missing child of `node` (not an element of the document).
    pub child: bool,
    /// An attribute of the element.
    pub attr: Option<&'static &'static str>,
    /// The template (or the required template) a finding checks.
    pub rule: Option<&'static &'static str>,
    /// The value set a binding finding names (its canonical url, from the generated tables).
    pub value_set: Option<&'static &'static str>,
    /// The element's index in its record's document (`u32::MAX`: none).
    pub node: u32,
}

impl CcdaPosition {
    /// Most steps kept.
    pub const CAPACITY: usize = 12;
    const HEAD: usize = 2;

    /// An empty path (renders `-`).
    pub const fn new() -> Self {
        CcdaPosition {
            steps: [(0, 0); CcdaPosition::CAPACITY],
            len: 0,
            skipped: 0,
            child: false,
            attr: None,
            rule: None,
            value_set: None,
            node: u32::MAX,
        }
    }

    /// Appends a step: a name id (`u16::MAX`: not a name of the definitions) and its index;
    /// middle steps beyond the capacity are dropped.
    pub fn push(&mut self, name: u16, index: u16) {
        let len = usize::from(self.len);
        if len < Self::CAPACITY {
            self.steps[len] = (name, index);
            self.len += 1;
        } else {
            self.steps.copy_within(Self::HEAD + 1.., Self::HEAD);
            self.steps[Self::CAPACITY - 1] = (name, index);
            self.skipped = self.skipped.saturating_add(1);
        }
    }

    /// True when steps were left out.
    pub fn shortened(&self) -> bool {
        self.skipped > 0
    }

    /// The last step (the name id and index), if any.
    pub fn last(&self) -> Option<(u16, u16)> {
        usize::from(self.len).checked_sub(1).map(|i| self.steps[i])
    }

    /// Writes one step.
    pub fn write_step(f: &mut impl fmt::Write, name: u16, index: u16) -> fmt::Result {
        let names = crate::formats::ccda::tables::NAMES;
        f.write_str(names.get(usize::from(name)).copied().unwrap_or("*"))?;
        if index > 0 {
            write!(f, "[{index}]")?;
        }
        Ok(())
    }

    /// Writes the attribute and template suffixes.
    pub fn write_tail(&self, f: &mut impl fmt::Write) -> fmt::Result {
        if let Some(a) = self.attr {
            write!(f, "/@{a}")?;
        }
        if let Some(r) = self.rule {
            write!(f, "/template:{r}")?;
        }
        if let Some(v) = self.value_set {
            write!(f, "/valueSet:{v}")?;
        }
        Ok(())
    }
}

impl Default for CcdaPosition {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for CcdaPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = usize::from(self.len);
        if len == 0 && self.attr.is_none() && self.rule.is_none() && self.value_set.is_none() {
            return f.write_str("-");
        }
        for (i, &(name, index)) in self.steps[..len].iter().enumerate() {
            if i == Self::HEAD && self.skipped > 0 {
                f.write_str("/.../")?;
            } else if i > 0 {
                f.write_str("/")?;
            }
            CcdaPosition::write_step(f, name, index)?;
        }
        self.write_tail(f)
    }
}

/// An ASTM E1394 position (a record of a message and its parts), or an E1381 frame. Zero means
/// "not this deep".
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AstmPosition {
    /// A record: `P[1]-6[1].2`.
    Record {
        /// The record type (`H`, `P`, ...); `None` for a type that is not one (then `index` is
        /// the record's 1-based position in the message).
        kind: SchemaName,
        /// 1-based occurrence of the type in the message (or position, see `kind`).
        index: u32,
        /// 1-based field (field 1 is the record type; 0: the whole record).
        field: u16,
        /// 1-based repeat (0: the whole field).
        repeat: u16,
        /// 1-based component (0: the whole repeat).
        component: u16,
    },
    /// An E1381 frame: its 1-based position among the frames of the input, and the byte offset
    /// of its STX.
    Frame {
        /// 1-based frame count in the input.
        frame: u32,
        /// Byte offset of the frame's STX.
        offset: u64,
    },
}

impl AstmPosition {
    /// A record of a type (or of an unknown type: `None`, `index` its position).
    pub fn record(kind: SchemaName, index: u32) -> Self {
        AstmPosition::Record { kind, index, field: 0, repeat: 0, component: 0 }
    }

    /// The same record position, narrowed to a field, repeat and component.
    pub fn part(self, field: u16, repeat: u16, component: u16) -> Self {
        match self {
            AstmPosition::Record { kind, index, .. } => AstmPosition::Record { kind, index, field, repeat, component },
            frame => frame,
        }
    }
}

/// A DICOM position: the tags of the sequences down to an element, each with its 1-based item
/// number, then the element's tag, and the byte offset of the element's header in the input
/// (`u64::MAX`: none). Paths deeper than [`DicomPosition::CAPACITY`] steps keep their first
/// and last steps, with `...` for those left out. Tags are numbers: a position holds nothing
/// of a value.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DicomPosition {
    /// (tag, item number; 0 for the last step).
    steps: [(u32, u32); DicomPosition::CAPACITY],
    len: u8,
    skipped: u16,
    /// The byte offset of the element's header (`u64::MAX`: none).
    pub offset: u64,
}

impl DicomPosition {
    /// Most steps kept.
    pub const CAPACITY: usize = 5;
    const HEAD: usize = 2;

    /// No element (renders `-`, or `offset:N`).
    pub const fn new(offset: u64) -> Self {
        DicomPosition { steps: [(0, 0); DicomPosition::CAPACITY], len: 0, skipped: 0, offset }
    }

    /// Appends a step: a sequence's tag and the item number inside it, or (item 0) the
    /// element's own tag; middle steps beyond the capacity are dropped.
    pub fn push(&mut self, tag: u32, item: u32) {
        let len = usize::from(self.len);
        if len < Self::CAPACITY {
            self.steps[len] = (tag, item);
            self.len += 1;
        } else {
            self.steps.copy_within(Self::HEAD + 1.., Self::HEAD);
            self.steps[Self::CAPACITY - 1] = (tag, item);
            self.skipped = self.skipped.saturating_add(1);
        }
    }
}

impl fmt::Display for AstmPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AstmPosition::Frame { frame, offset } => write!(f, "frame[{frame}]/offset:{offset}"),
            AstmPosition::Record { kind, index, field, repeat, component } => {
                match kind {
                    Some(k) => write!(f, "{k}[{index}]")?,
                    None => write!(f, "record[{index}]")?,
                }
                if field > 0 {
                    write!(f, "-{field}")?;
                    if repeat > 0 {
                        write!(f, "[{repeat}]")?;
                    }
                    if component > 0 {
                        write!(f, ".{component}")?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// An NCPDP Telecommunication D.0 position: the transaction (group) a segment is in (0: the
/// header and the transmission-level segments before the first group), the segment (the header,
/// a D.0 segment id such as `AM07`, or the 1-based position of a segment whose id is not one),
/// and the field (a D.0 field id with its 1-based occurrence in the segment, or the 1-based
/// position of a field whose id is not one). Ids come from the D.0 tables: a position holds
/// nothing of a value.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct NcpdpPosition {
    /// 1-based transaction (group); 0: the transmission level.
    pub transaction: u32,
    /// The segment.
    pub segment: NcpdpSegment,
    /// The field.
    pub field: NcpdpField,
}

/// The segment of an [`NcpdpPosition`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum NcpdpSegment {
    /// None (the whole transmission or transaction).
    None,
    /// The fixed-width transaction header.
    Header,
    /// A D.0 segment: `AM01` .. `AM26`.
    Id(&'static str),
    /// A segment whose id is not one: its 1-based position in its transaction.
    Index(u32),
}

/// The field of an [`NcpdpPosition`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum NcpdpField {
    /// None (the whole segment).
    None,
    /// A D.0 field id (`D7`) and its 1-based occurrence in the segment (0: not written).
    Id(&'static str, u16),
    /// A field whose id is not one: its 1-based position in the segment.
    Index(u16),
}

impl NcpdpPosition {
    /// A segment of a transaction (0: the transmission level).
    pub fn segment(transaction: u32, segment: NcpdpSegment) -> Self {
        NcpdpPosition { transaction, segment, field: NcpdpField::None }
    }

    /// A header field.
    pub fn header(field: &'static str) -> Self {
        NcpdpPosition { transaction: 0, segment: NcpdpSegment::Header, field: NcpdpField::Id(field, 0) }
    }

    /// The same position, narrowed to a field.
    pub fn field(self, field: NcpdpField) -> Self {
        NcpdpPosition { field, ..self }
    }
}

impl fmt::Display for NcpdpPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = 0;
        let mut sep = |f: &mut fmt::Formatter<'_>| {
            parts += 1;
            if parts > 1 { f.write_str("/") } else { Ok(()) }
        };
        if self.transaction > 0 {
            sep(f)?;
            write!(f, "transaction[{}]", self.transaction)?;
        }
        match self.segment {
            NcpdpSegment::None => {}
            NcpdpSegment::Header => {
                sep(f)?;
                f.write_str("header")?;
            }
            NcpdpSegment::Id(id) => {
                sep(f)?;
                f.write_str(id)?;
            }
            NcpdpSegment::Index(n) => {
                sep(f)?;
                write!(f, "segment[{n}]")?;
            }
        }
        match self.field {
            NcpdpField::None => {}
            NcpdpField::Id(id, 0) => {
                sep(f)?;
                f.write_str(id)?;
            }
            NcpdpField::Id(id, n) => {
                sep(f)?;
                write!(f, "{id}[{n}]")?;
            }
            NcpdpField::Index(n) => {
                sep(f)?;
                write!(f, "field[{n}]")?;
            }
        }
        if parts == 0 {
            f.write_str("transmission")?;
        }
        Ok(())
    }
}

impl fmt::Display for DicomPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = usize::from(self.len);
        for (i, &(tag, item)) in self.steps[..len].iter().enumerate() {
            if i == Self::HEAD && self.skipped > 0 {
                f.write_str("...")?;
            } else if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "({:04X},{:04X})", tag >> 16, tag & 0xFFFF)?;
            if item > 0 {
                write!(f, "[{item}]")?;
            }
        }
        match (len, self.offset) {
            (0, u64::MAX) => f.write_str("-"),
            (0, o) => write!(f, "offset:{o}"),
            (_, u64::MAX) => Ok(()),
            (_, o) => write!(f, "/offset:{o}"),
        }
    }
}

/// The envelope level an X12 position is in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum X12Scope {
    /// The interchange (ISA, IEA, TA1).
    #[default]
    Interchange,
    /// The n-th functional group of the interchange (1-based).
    Group(u32),
    /// The n-th transaction set of its group (1-based).
    Set(u32),
}

/// An X12 position, made of numbers and names of the implementation guides' tables only; zero
/// means "not this deep".
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct X12Position {
    /// Interchange, group or transaction set.
    pub scope: X12Scope,
    /// The loop path inside a transaction set (`2000B/2010BA`), from the guide's tables; `""`.
    pub path: &'static str,
    /// The segment id (from the tables); `None` for an id that is not one (then `index` is the
    /// segment's 1-based position in the set).
    pub segment: SchemaName,
    /// 1-based occurrence of the segment id in its loop (0: not written: the envelope's own
    /// header or trailer).
    pub index: u32,
    /// 1-based element (0: the whole segment).
    pub element: u8,
    /// 1-based component of a composite (0: the whole element).
    pub component: u8,
}

impl X12Position {
    /// The position of an envelope segment (`ISA`, `GS`, `GE` ...) of a scope.
    pub fn envelope(scope: X12Scope, segment: &'static str) -> Self {
        X12Position { scope, segment: Some(segment), ..Default::default() }
    }

    /// The same position, narrowed to an element and component.
    pub fn element(self, element: u8, component: u8) -> Self {
        X12Position { element, component, ..self }
    }
}

impl fmt::Display for X12Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The scope's own header is the scope itself (`GS[1]-06`, `ST[2]-02`).
        let (own, mut sep) = match self.scope {
            X12Scope::Interchange => ("", ""),
            X12Scope::Group(g) => {
                write!(f, "GS[{g}]")?;
                ("GS", "/")
            }
            X12Scope::Set(s) => {
                write!(f, "ST[{s}]")?;
                ("ST", "/")
            }
        };
        if !self.path.is_empty() {
            write!(f, "{sep}{}", self.path)?;
            sep = "/";
        }
        match self.segment {
            Some(id) if id == own && self.path.is_empty() => {}
            Some(id) => {
                write!(f, "{sep}{id}")?;
                if self.index > 0 {
                    write!(f, "[{}]", self.index)?;
                }
            }
            None => write!(f, "{sep}segment[{}]", self.index)?,
        }
        if self.element > 0 {
            write!(f, "-{:02}", self.element)?;
            if self.component > 0 {
                write!(f, ".{}", self.component)?;
            }
        }
        Ok(())
    }
}

/// An HL7 v2 position; zero means "not this deep".
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Hl7Position {
    /// The segment id when it is a standard or Z id; `None` otherwise.
    pub segment: SchemaName,
    /// 1-based: the occurrence among segments with that id, or, when `segment` is `None`, the
    /// position of the segment in the message.
    pub index: u32,
    /// 1-based field number (0: the whole segment).
    pub field: u32,
    /// 1-based repetition (0: the whole field).
    pub repetition: u32,
    /// 1-based component (0: the whole repetition).
    pub component: u32,
    /// 1-based subcomponent (0: the whole component).
    pub subcomponent: u32,
}

impl Hl7Position {
    /// A segment-level position.
    pub fn segment(segment: SchemaName, index: u32) -> Self {
        Hl7Position { segment, index, ..Default::default() }
    }

    /// The same position, narrowed to a field (and first repetition when `repetition` is 0).
    pub fn field(self, field: u32, repetition: u32) -> Self {
        Hl7Position { field, repetition, component: 0, subcomponent: 0, ..self }
    }

    /// The same position, narrowed to a component and subcomponent.
    pub fn component(self, component: u32, subcomponent: u32) -> Self {
        Hl7Position { component, subcomponent, ..self }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Location::Input => f.write_str("-"),
            Location::Offset(n) => write!(f, "offset:{n}"),
            Location::Record(n) => write!(f, "record:{n}"),
            Location::Path(a, "") => f.write_str(a),
            Location::Path(a, b) => write!(f, "{a}/{b}"),
            Location::Fhir(ref p) => p.fmt(f),
            Location::Policy { line, column } => write!(f, "policy:{line}:{column}"),
            Location::Convert(p, path) => {
                Location::Hl7(p).fmt(f)?;
                write!(f, "->{path}")
            }
            Location::X12(p) => p.fmt(f),
            Location::Astm(p) => p.fmt(f),
            Location::Dicom(p) => p.fmt(f),
            Location::Ncpdp(p) => p.fmt(f),
            Location::Ccda(ref p) => p.fmt(f),
            Location::Script(ref p) => p.fmt(f),
            Location::Hl7(p) => {
                match p.segment {
                    Some(id) => write!(f, "{id}[{}]", p.index)?,
                    None => write!(f, "segment[{}]", p.index)?,
                }
                if p.field > 0 {
                    write!(f, "-{}", p.field)?;
                    if p.repetition > 0 {
                        write!(f, "[{}]", p.repetition)?;
                    }
                    if p.component > 0 {
                        write!(f, ".{}", p.component)?;
                        if p.subcomponent > 0 {
                            write!(f, ".{}", p.subcomponent)?;
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

/// A name of the FHIR definitions: an element (or resource type) name, and the type of a choice
/// element (`value` + `Quantity` renders `valueQuantity`; `""` when not a choice). Instances live
/// in the decoded definition tables, so a path holds thin `&'static` references to them.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct FhirName {
    /// The element name (`name`, `value`), or a resource type.
    pub name: &'static str,
    /// The type of a choice element (`Quantity`), or `""`.
    pub choice_type: &'static str,
}

/// A FHIR location: `Patient.name[0].given[1]`, optionally qualified by the byte offset of an
/// element that has no definition (`Patient.contact[0]/offset:123`) or by the key of an
/// invariant (`Patient/invariant:dom-6`). Paths deeper than [`FhirPath::CAPACITY`] steps keep
/// their first 3 and last steps, with `...` for the steps left out. Indexes are 0-based and
/// present on repeating elements only.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct FhirPath {
    names: [Option<&'static FhirName>; FhirPath::CAPACITY],
    /// `u32::MAX`: not a repeating element.
    indexes: [u32; FhirPath::CAPACITY],
    len: u8,
    skipped: u16,
    /// The byte offset of an element without a definition (written `/offset:N`), or, with
    /// [`FhirPath::offset_is_position`], where the element the last step names starts (not
    /// written: only its line and column come from it).
    pub offset: Option<u32>,
    /// `offset` only positions the named element (see `offset`).
    pub offset_is_position: bool,
    /// The key of an invariant (`ele-1`).
    pub invariant: Option<&'static &'static str>,
    /// The element's node in its record's document (`u32::MAX`: none): where the output finds
    /// the element's line and column, and its whole path when the steps kept here are not all
    /// of it. A number: it holds nothing of the element.
    pub node: u32,
}

impl FhirPath {
    /// Most steps kept.
    pub const CAPACITY: usize = 6;
    const HEAD: usize = 3;

    /// An empty path (renders `-`).
    pub const fn new() -> Self {
        FhirPath {
            names: [None; FhirPath::CAPACITY],
            indexes: [u32::MAX; FhirPath::CAPACITY],
            len: 0,
            skipped: 0,
            offset: None,
            offset_is_position: false,
            invariant: None,
            node: u32::MAX,
        }
    }

    /// True when middle steps were left out (the path is deeper than [`FhirPath::CAPACITY`]).
    pub fn is_shortened(&self) -> bool {
        self.skipped > 0
    }

    /// The number of steps pushed, kept or not.
    pub fn depth(&self) -> usize {
        usize::from(self.len) + usize::from(self.skipped)
    }

    /// The last step kept, with its index (`u32::MAX`: not repeating).
    pub fn last_step(&self) -> Option<(&'static FhirName, u32)> {
        let i = usize::from(self.len).checked_sub(1)?;
        Some((self.names[i]?, self.indexes[i]))
    }

    /// Appends a step (`index` for repeating elements), dropping middle steps beyond the
    /// capacity.
    pub fn push(&mut self, name: &'static FhirName, index: Option<u32>) {
        let len = usize::from(self.len);
        let index = index.unwrap_or(u32::MAX);
        if len < Self::CAPACITY {
            self.names[len] = Some(name);
            self.indexes[len] = index;
            self.len += 1;
        } else {
            self.names.copy_within(Self::HEAD + 1.., Self::HEAD);
            self.indexes.copy_within(Self::HEAD + 1.., Self::HEAD);
            self.names[Self::CAPACITY - 1] = Some(name);
            self.indexes[Self::CAPACITY - 1] = index;
            self.skipped = self.skipped.saturating_add(1);
        }
    }

    /// The offset the location text carries (`/offset:N`): an element without a definition's.
    pub fn written_offset(&self) -> Option<u32> {
        self.offset.filter(|_| !self.offset_is_position)
    }

    /// The number of steps kept.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True when the path has no step.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends the text `Display` gives (unescaped), without the formatting machinery: the
    /// findings of a stream's records hold many paths.
    pub fn write_text(&self, out: &mut Vec<u8>) {
        if self.len == 0 {
            out.push(b'-');
        }
        for i in 0..usize::from(self.len) {
            let Some(step) = self.names[i] else { continue };
            if i == Self::HEAD && self.skipped > 0 {
                out.extend_from_slice(b"...");
            } else if i > 0 {
                out.push(b'.');
            }
            out.extend_from_slice(step.name.as_bytes());
            let mut ty = step.choice_type.chars();
            if let Some(first) = ty.next() {
                let mut utf8 = [0u8; 4];
                out.extend_from_slice(first.to_ascii_uppercase().encode_utf8(&mut utf8).as_bytes());
                out.extend_from_slice(ty.as_str().as_bytes());
            }
            if self.indexes[i] != u32::MAX {
                out.push(b'[');
                decimal(u64::from(self.indexes[i]), out);
                out.push(b']');
            }
        }
        if let Some(o) = self.written_offset() {
            out.extend_from_slice(b"/offset:");
            decimal(u64::from(o), out);
        }
        if let Some(key) = self.invariant {
            out.extend_from_slice(b"/invariant:");
            out.extend_from_slice(key.as_bytes());
        }
    }
}

/// Appends `n` in decimal (also the record numbers and positions of `ops`' JSON).
pub(crate) fn decimal(mut n: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    for slot in digits.iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        n /= 10;
        start -= 1;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(digits.get(start..).unwrap_or_default());
}

impl Default for FhirPath {
    fn default() -> Self {
        FhirPath::new()
    }
}

impl fmt::Display for FhirPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len == 0 {
            f.write_str("-")?;
        }
        for i in 0..usize::from(self.len) {
            let Some(step) = self.names[i] else { continue };
            if i == Self::HEAD && self.skipped > 0 {
                f.write_str("...")?;
            } else if i > 0 {
                f.write_str(".")?;
            }
            f.write_str(step.name)?;
            let mut ty = step.choice_type.chars();
            if let Some(first) = ty.next() {
                write!(f, "{}{}", first.to_ascii_uppercase(), ty.as_str())?;
            }
            if self.indexes[i] != u32::MAX {
                write!(f, "[{}]", self.indexes[i])?;
            }
        }
        if let Some(o) = self.written_offset() {
            write!(f, "/offset:{o}")?;
        }
        if let Some(key) = self.invariant {
            write!(f, "/invariant:{key}")?;
        }
        Ok(())
    }
}

/// A profile a finding was made against: a number, whose canonical URL (conformance metadata,
/// never a value) `structure::profile_canonical` gives.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProfileId(pub u16);

/// One finding: code, severity, location. `Copy + 'static` by construction.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    /// What.
    pub code: Code,
    /// How bad.
    pub severity: Severity,
    /// Where.
    pub location: Location,
    /// The profile the finding was made against (FHIR profiles only).
    pub profile: Option<ProfileId>,
}

impl Diagnostic {
    /// A finding with the code's default severity.
    pub fn new(code: Code, location: Location) -> Self {
        Diagnostic { code, severity: code.default_severity(), location, profile: None }
    }

    /// The same finding, made against a profile.
    pub fn with_profile(self, profile: Option<ProfileId>) -> Self {
        Diagnostic { profile, ..self }
    }

    /// The same finding with another severity (for `--strict`).
    pub fn with_severity(self, severity: Severity) -> Self {
        Diagnostic { severity, ..self }
    }
}

/// Compile-time proof that a diagnostic cannot borrow or own a value.
const _: () = {
    const fn assert_copy_static<T: Copy + 'static>() {}
    assert_copy_static::<Diagnostic>();
    assert_copy_static::<Location>();
    assert_copy_static::<ProfileId>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hl7_location_grammar() {
        let p = Hl7Position::segment(Some("PID"), 1).field(5, 1).component(1, 0);
        assert_eq!(Location::Hl7(p).to_string(), "PID[1]-5[1].1");
        let p = Hl7Position::segment(None, 7).field(3, 0);
        assert_eq!(Location::Hl7(p).to_string(), "segment[7]-3");
        assert_eq!(Location::Path("ADT_A01.PATIENT", "PID").to_string(), "ADT_A01.PATIENT/PID");
        let p = Hl7Position::segment(Some("PID"), 1).field(8, 1);
        assert_eq!(Location::Convert(p, "Patient.gender").to_string(), "PID[1]-8[1]->Patient.gender");
    }

    #[test]
    fn astm_location_grammar() {
        let p = AstmPosition::record(Some("P"), 1).part(6, 1, 2);
        assert_eq!(Location::Astm(p).to_string(), "P[1]-6[1].2");
        assert_eq!(Location::Astm(AstmPosition::record(None, 7)).to_string(), "record[7]");
        assert_eq!(Location::Astm(AstmPosition::record(Some("L"), 1).part(3, 0, 0)).to_string(), "L[1]-3");
        let fr = AstmPosition::Frame { frame: 3, offset: 120 };
        assert_eq!(Location::Astm(fr).to_string(), "frame[3]/offset:120");
    }

    #[test]
    fn x12_location_grammar() {
        let isa = X12Position::envelope(X12Scope::Interchange, "ISA");
        assert_eq!(Location::X12(isa).to_string(), "ISA");
        assert_eq!(Location::X12(isa.element(13, 0)).to_string(), "ISA-13");
        let gs = X12Position::envelope(X12Scope::Group(1), "GS");
        assert_eq!(Location::X12(gs).to_string(), "GS[1]");
        assert_eq!(Location::X12(gs.element(6, 0)).to_string(), "GS[1]-06");
        let ge = X12Position::envelope(X12Scope::Group(2), "GE");
        assert_eq!(Location::X12(ge.element(1, 0)).to_string(), "GS[2]/GE-01");
        let nm1 = X12Position {
            scope: X12Scope::Set(3),
            path: "2000B/2010BA",
            segment: Some("NM1"),
            index: 1,
            ..Default::default()
        };
        assert_eq!(Location::X12(nm1.element(3, 0)).to_string(), "ST[3]/2000B/2010BA/NM1[1]-03");
        let clm = X12Position {
            scope: X12Scope::Set(1),
            path: "2000B/2300",
            segment: Some("CLM"),
            index: 1,
            ..Default::default()
        };
        assert_eq!(Location::X12(clm.element(5, 1)).to_string(), "ST[1]/2000B/2300/CLM[1]-05.1");
        let unknown = X12Position { scope: X12Scope::Set(1), segment: None, index: 7, ..Default::default() };
        assert_eq!(Location::X12(unknown).to_string(), "ST[1]/segment[7]");
        let se = X12Position::envelope(X12Scope::Set(1), "SE");
        assert_eq!(Location::X12(se.element(1, 0)).to_string(), "ST[1]/SE-01");
    }

    #[test]
    fn ccda_location_grammar() {
        use crate::formats::ccda::read::name_id;
        static MOOD: &str = "moodCode";
        static KEY: &str = "2.16.840.1.113883.10.20.22.4.30:2015-08-01";
        let mut p = CcdaPosition::new();
        assert_eq!(Location::Ccda(p).to_string(), "-");
        for (name, index) in [("ClinicalDocument", 0), ("component", 0), ("structuredBody", 0), ("component", 3)] {
            p.push(name_id(name.as_bytes()), index);
        }
        for (name, index) in [("section", 0), ("entry", 2), ("act", 0)] {
            p.push(name_id(name.as_bytes()), index);
        }
        assert_eq!(
            Location::Ccda(p).to_string(),
            "ClinicalDocument/component/structuredBody/component[3]/section/entry[2]/act"
        );
        p.attr = Some(&MOOD);
        p.rule = Some(&KEY);
        assert_eq!(
            Location::Ccda(p).to_string(),
            "ClinicalDocument/component/structuredBody/component[3]/section/entry[2]/act/@moodCode/template:2.16.840.1.113883.10.20.22.4.30:2015-08-01"
        );
        let mut deep = CcdaPosition::new();
        deep.push(name_id(b"ClinicalDocument"), 0);
        for i in 1..=14 {
            deep.push(name_id(b"entryRelationship"), i);
        }
        deep.push(u16::MAX, 0);
        assert!(deep.shortened());
        let text = Location::Ccda(deep).to_string();
        assert!(text.starts_with("ClinicalDocument/entryRelationship[1]/.../entryRelationship[6]/"), "{text}");
        assert!(text.ends_with("/entryRelationship[14]/*"), "{text}");
        assert!(std::mem::size_of::<Diagnostic>() <= 104, "{}", std::mem::size_of::<Diagnostic>());
    }

    #[test]
    fn dicom_location_grammar() {
        let mut p = DicomPosition::new(1234);
        p.push(0x0008_1140, 2);
        p.push(0x0008_1155, 0);
        assert_eq!(Location::Dicom(p).to_string(), "(0008,1140)[2].(0008,1155)/offset:1234");
        assert_eq!(Location::Dicom(DicomPosition::new(7)).to_string(), "offset:7");
        assert_eq!(Location::Dicom(DicomPosition::new(u64::MAX)).to_string(), "-");
        let mut deep = DicomPosition::new(u64::MAX);
        for i in 1..=7 {
            deep.push(0x0040_A730, i);
        }
        deep.push(0x0040_A160, 0);
        assert_eq!(
            Location::Dicom(deep).to_string(),
            "(0040,A730)[1].(0040,A730)[2]...(0040,A730)[6].(0040,A730)[7].(0040,A160)"
        );
        assert!(std::mem::size_of::<Diagnostic>() <= 104, "{}", std::mem::size_of::<Diagnostic>());
    }

    #[test]
    fn fhir_location_grammar() {
        static PATIENT: FhirName = FhirName { name: "Patient", choice_type: "" };
        static NAME: FhirName = FhirName { name: "name", choice_type: "" };
        static GIVEN: FhirName = FhirName { name: "given", choice_type: "" };
        static OBSERVATION: FhirName = FhirName { name: "Observation", choice_type: "" };
        static VALUE: FhirName = FhirName { name: "value", choice_type: "dateTime" };
        static ITEM: FhirName = FhirName { name: "item", choice_type: "" };
        static KEY: &str = "ele-1";
        let mut p = FhirPath::new();
        p.push(&PATIENT, None);
        p.push(&NAME, Some(0));
        p.push(&GIVEN, Some(1));
        assert_eq!(Location::Fhir(p).to_string(), "Patient.name[0].given[1]");
        let mut q = FhirPath::new();
        q.push(&OBSERVATION, None);
        q.push(&VALUE, None);
        q.invariant = Some(&KEY);
        assert_eq!(Location::Fhir(q).to_string(), "Observation.valueDateTime/invariant:ele-1");
        let mut deep = FhirPath::new();
        deep.push(&PATIENT, None);
        for i in 0..10 {
            deep.push(&ITEM, Some(i));
        }
        deep.offset = Some(77);
        assert_eq!(Location::Fhir(deep).to_string(), "Patient.item[0].item[1]...item[7].item[8].item[9]/offset:77");
        // `write_text` gives the same bytes as `Display`.
        for path in [p, q, deep, FhirPath::new()] {
            let mut text = Vec::new();
            path.write_text(&mut text);
            assert_eq!(text, path.to_string().into_bytes());
        }
        assert!(std::mem::size_of::<Diagnostic>() <= 104, "{}", std::mem::size_of::<Diagnostic>());
    }

    #[test]
    fn codes_are_screaming_snake_and_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for code in Code::ALL {
            let name = code.as_str();
            assert!(name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'));
            assert!(seen.insert(name));
            assert_eq!(Code::from_name(name), Some(*code));
        }
    }
}
