//! The redaction manifest: what a policy did, value-free.
//!
//! Policy name and SHA-256 digest, records, counts per rule (with the rule's line and action),
//! values removed by the fail-closed default (no rule matched), free text removed, and the
//! residual risks the policy leaves (free text kept, years kept, date shifts, keyed actions).
//!
//! What it does not do: name a value, a segment id seen in the input, or an element the
//! definitions do not know.

use super::{Action, Policy};

/// Counters kept while redacting.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Records redacted.
    pub records: u64,
    /// Per rule: values it decided (HL7 v2 rules first, then FHIR, X12, ASTM and DICOM rules).
    pub per_rule: Vec<u64>,
    /// Values (fields, parts, elements, segments) removed because no rule matched.
    pub fail_closed: u64,
    /// Free-text values removed because no rule kept them as free text.
    pub free_text_removed: u64,
    /// Identifiers rewritten so that references keep resolving (FHIR ids, fullUrls, references).
    pub ids_rewritten: u64,
    /// Values a `keep` selected and could not prove safe (a code not valid for its system, a
    /// number that is not one, a variant value of a type the rule does not list): removed.
    pub unproven: u64,
    /// DICOM files written whose pixel data may show burned-in text (the policy accepts the
    /// residual risk).
    pub burned_in_accepted: u64,
    /// DICOM values a `clean` rule kept (every word known not to identify).
    pub cleaned: u64,
    /// DICOM values a `clean` rule could not keep: its fallback written (a dummy, empty or
    /// removed).
    pub clean_fallback: u64,
}

impl Counts {
    /// Zero counts for a policy.
    pub fn new(policy: &Policy) -> Self {
        Counts {
            per_rule: vec![
                0;
                policy.hl7v2.len()
                    + policy.fhir.len()
                    + policy.x12.len()
                    + policy.astm.len()
                    + policy.dicom.len()
                    + policy.ncpdp.len()
                    + policy.ccda.len()
                    + policy.ncpdp_script.len()
            ],
            ..Counts::default()
        }
    }

    /// One value decided by rule `i`.
    pub fn rule(&mut self, i: usize) {
        if let Some(c) = self.per_rule.get_mut(i) {
            *c += 1;
        }
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Counts) {
        self.records += other.records;
        if self.per_rule.len() < other.per_rule.len() {
            self.per_rule.resize(other.per_rule.len(), 0);
        }
        for (a, b) in self.per_rule.iter_mut().zip(&other.per_rule) {
            *a += b;
        }
        self.fail_closed += other.fail_closed;
        self.free_text_removed += other.free_text_removed;
        self.ids_rewritten += other.ids_rewritten;
        self.unproven += other.unproven;
        self.burned_in_accepted += other.burned_in_accepted;
        self.cleaned += other.cleaned;
        self.clean_fallback += other.clean_fallback;
    }
}

/// The manifest as JSON (one object, compact, with a final newline).
pub fn json(policy: &Policy, counts: &Counts, keyed: bool) -> Vec<u8> {
    use crate::json::string;
    let mut out = Vec::new();
    out.extend_from_slice(b"{\"policy\":{\"name\":");
    string(&mut out, &policy.name);
    out.extend_from_slice(b",\"sha256\":");
    string(&mut out, &policy.digest);
    out.extend_from_slice(b"},\"records\":");
    out.extend_from_slice(counts.records.to_string().as_bytes());
    out.extend_from_slice(b",\"rules\":[");
    let rules = policy
        .hl7v2
        .iter()
        .map(|r| ("hl7v2", r.at, r.action.name()))
        .chain(policy.fhir.iter().map(|r| ("fhir", r.at, r.action.name())))
        .chain(policy.x12.iter().map(|r| ("x12", r.at, r.action.name())))
        .chain(policy.astm.iter().map(|r| ("astm", r.at, r.action.name())))
        .chain(policy.dicom.iter().map(|r| ("dicom", r.at, r.action_name())))
        .chain(policy.ncpdp.iter().map(|r| ("ncpdp", r.at, r.action.name())))
        .chain(policy.ccda.iter().map(|r| ("ccda", r.at, r.action.name())))
        .chain(policy.ncpdp_script.iter().map(|r| ("ncpdp-script", r.at, r.action.name())));
    let mut actions: std::collections::BTreeMap<&'static str, u64> = std::collections::BTreeMap::new();
    for (i, (list, at, action)) in rules.enumerate() {
        let n = counts.per_rule.get(i).copied().unwrap_or(0);
        if i > 0 {
            out.push(b',');
        }
        *actions.entry(action).or_default() += n;
        out.extend_from_slice(format!("{{\"list\":\"{list}\",\"line\":{},\"action\":", at.0).as_bytes());
        string(&mut out, action);
        out.extend_from_slice(format!(",\"count\":{n}}}").as_bytes());
    }
    out.extend_from_slice(b"],\"actions\":{");
    for (i, (name, n)) in actions.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(&mut out, name);
        out.extend_from_slice(format!(":{n}").as_bytes());
    }
    out.extend_from_slice(b"}");
    // DICOM `clean` (PS3.15 E.1's C), under a policy that has such a rule: values kept as known
    // not to identify, and values that fell back to the rule's Basic Profile action.
    if policy.dicom.iter().any(|r| r.clean) {
        out.extend_from_slice(
            format!(",\"dicomClean\":{{\"kept\":{},\"fellBack\":{}}}", counts.cleaned, counts.clean_fallback)
                .as_bytes(),
        );
    }
    out.extend_from_slice(
        format!(
            ",\"failClosedRemovals\":{},\"freeTextRemoved\":{},\"unprovenRemovals\":{},\"idsRewritten\":{},\"burnedInAnnotationAccepted\":{},\"keyed\":{keyed},\"residualRisks\":[",
            counts.fail_closed,
            counts.free_text_removed,
            counts.unproven,
            counts.ids_rewritten,
            counts.burned_in_accepted
        )
        .as_bytes(),
    );
    let all = || {
        policy
            .hl7v2
            .iter()
            .map(|r| &r.action)
            .chain(policy.fhir.iter().map(|r| &r.action))
            .chain(policy.x12.iter().map(|r| &r.action))
            .chain(policy.astm.iter().map(|r| &r.action))
            .chain(policy.dicom.iter().map(|r| &r.action))
            .chain(policy.ncpdp.iter().map(|r| &r.action))
            .chain(policy.ccda.iter().map(|r| &r.action))
            .chain(policy.ncpdp_script.iter().map(|r| &r.action))
    };
    let mut risks: Vec<&str> = Vec::new();
    if counts.burned_in_accepted > 0 {
        risks.push(
            "DICOM pixel data kept as it is where it may show burned-in text (burned-in annotation YES, or unstated on a modality that burns text in): the policy accepts that residual risk",
        );
    }
    if policy.keeps_free_text() {
        risks.push("free text kept by a rule (may name people)");
    }
    if policy.dicom.iter().any(|r| r.clean) {
        risks.push(
            "DICOM text kept where every word is the standard's vocabulary or a short number (clean): words are judged one by one, not what they say together",
        );
    }
    if all().any(|a| *a == Action::GeneralizeBirthDate) {
        risks.push(
            "birth years kept when the record's reference year is less than 90 years later (the record's dates are the clock: a reader who knows today's date can still tell an age over 89)",
        );
    } else if all().any(|a| *a == Action::GeneralizeDate) {
        risks.push("years kept: a birth year can reveal an age over 89 (no clock is read to tell)");
    }
    if all().any(|a| matches!(a, Action::DateShift(_))) {
        risks.push("dates shifted, not removed: intervals are kept; date_shift is not idempotent");
    }
    if all().any(|a| matches!(a, Action::Keep)) {
        risks.push(
            "kept codes are checked by syntax and bundled tables, not against the full code systems; kept numbers are clinical values, not inspected",
        );
    }
    if all().any(|a| matches!(a, Action::Hash | Action::Pseudonym)) {
        risks.push("hashes and pseudonyms link records for anyone holding the key");
    }
    for (i, r) in risks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(&mut out, r);
    }
    out.extend_from_slice(b"]}\n");
    out
}
