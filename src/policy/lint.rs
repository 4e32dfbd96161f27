//! `phiward policy check`: findings about a policy that loaded.
//!
//! `POLICY_RULE_SHADOWED` at a rule whose selector selects nothing an earlier rule of the same
//! list does not already select (so it can never apply). A `keep` with `free_text = true` after
//! a broader rule without it is not shadowed for free text, and is reported only when the earlier
//! rule also keeps free text or does something else to every value.
//!
//! What it does not do: reason about types across versions (a type selector is compared with
//! type selectors only), or find rules that match no message in practice.

use crate::diag::{Code, Diagnostic, Location};

use super::{Action, Policy};

/// The findings for a policy.
pub fn lint(policy: &Policy) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let shadow =
        |at: (u32, u32)| Diagnostic::new(Code::POLICY_RULE_SHADOWED, Location::Policy { line: at.0, column: at.1 });
    for (i, later) in policy.hl7v2.iter().enumerate() {
        let hit = policy.hl7v2[..i].iter().any(|early| {
            early.select.covers(&later.select) && !(later.free_text && early.action == Action::Keep && !early.free_text)
        });
        if hit {
            out.push(shadow(later.at));
        }
    }
    for (i, later) in policy.fhir.iter().enumerate() {
        let hit = policy.fhir[..i].iter().any(|early| {
            early.select.covers(&later.select) && !(later.free_text && early.action == Action::Keep && !early.free_text)
        });
        if hit {
            out.push(shadow(later.at));
        }
    }
    for (i, later) in policy.x12.iter().enumerate() {
        let hit = policy.x12[..i]
            .iter()
            .any(|early| early.covers(later) && !(later.free_text && early.action == Action::Keep && !early.free_text));
        if hit {
            out.push(shadow(later.at));
        }
    }
    for (i, later) in policy.astm.iter().enumerate() {
        let hit = policy.astm[..i]
            .iter()
            .any(|early| early.covers(later) && !(later.free_text && early.action == Action::Keep && !early.free_text));
        if hit {
            out.push(shadow(later.at));
        }
    }
    for (i, later) in policy.dicom.iter().enumerate() {
        let hit = policy.dicom[..i]
            .iter()
            .any(|early| early.covers(later) && !(later.free_text && early.action == Action::Keep && !early.free_text));
        if hit {
            out.push(shadow(later.at));
        }
    }
    for (i, later) in policy.ncpdp.iter().enumerate() {
        let hit = policy.ncpdp[..i]
            .iter()
            .any(|early| early.covers(later) && !(later.free_text && early.action == Action::Keep && !early.free_text));
        if hit {
            out.push(shadow(later.at));
        }
    }
    for (i, later) in policy.ccda.iter().enumerate() {
        let hit = policy.ccda[..i]
            .iter()
            .any(|early| early.covers(later) && !(later.free_text && early.action == Action::Keep && !early.free_text));
        if hit {
            out.push(shadow(later.at));
        }
    }
    for (i, later) in policy.ncpdp_script.iter().enumerate() {
        let hit = policy.ncpdp_script[..i]
            .iter()
            .any(|early| early.covers(later) && !(later.free_text && early.action == Action::Keep && !early.free_text));
        if hit {
            out.push(shadow(later.at));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_shadowed_rules() {
        let text = "[policy]\nname = \"t\"\n[[hl7v2]]\nselect = \"PID\"\naction = \"remove\"\n[[hl7v2]]\nselect = \"PID-5\"\naction = \"keep\"\n[[fhir]]\nselect = \"Patient.name\"\naction = \"remove\"\n[[fhir]]\nselect = \"Patient.name.given\"\naction = \"keep\"\n";
        let p = super::super::load(text.as_bytes()).unwrap_or_else(|_| panic!("loads"));
        let f: Vec<String> = lint(&p).iter().map(|d| d.location.to_string()).collect();
        assert_eq!(f, ["policy:7:10", "policy:13:10"]);
        for t in [super::super::SAFE_HARBOR, super::super::LIMITED_DATA_SET, super::super::AGENT] {
            let p = super::super::load(t.as_bytes()).unwrap_or_else(|_| panic!("loads"));
            let f: Vec<String> = lint(&p).iter().map(|d| d.location.to_string()).collect();
            assert!(f.is_empty(), "shipped policy has shadowed rules: {f:?}");
        }
    }
}
