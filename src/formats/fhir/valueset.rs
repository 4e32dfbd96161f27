//! Rules on the `compose` of every ValueSet of a document (contained and Bundle entries
//! included) that can be checked without a terminology server:
//!
//! - **Parameterised value sets** (the FHIR tooling extensions the reference validator reads): a
//!   ValueSet declares a parameter with the extension
//!   `http://hl7.org/fhir/tools/StructureDefinition/valueset-parameter` (its `name` sub-extension,
//!   a code), and a filter takes its value from an expression with the extension
//!   `http://hl7.org/fhir/StructureDefinition/cqf-expression` on `filter.value`. The expression's
//!   `language` must be `text/fhirpath` (`VALUESET_EXPRESSION_LANGUAGE`); it must be FHIRPath
//!   by the grammar (`VALUESET_EXPRESSION_INVALID`; a function the engine does not evaluate is
//!   not a syntax error and is not reported); every `%name` it uses must be a parameter the
//!   ValueSet declares or an environment variable FHIRPath and FHIR define (`%context`,
//!   `%resource`, `%rootResource`, `%ucum`, `%sct`, `%loinc`, `%vs-*`, `%ext-*`):
//!   otherwise `VALUESET_PARAMETER_UNKNOWN`. A declared parameter that no expression of the
//!   ValueSet uses is `VALUESET_PARAMETER_UNUSED`, a warning.
//! - **Boolean filter values**: R4's `exists` operator takes `true` or `false` ("if the specified
//!   value is true ... if the specified value is false"), and so does `=` on the boolean concept
//!   properties every code system may carry (`http://hl7.org/fhir/concept-properties`:
//!   `inactive`, `notSelectable`): any other value is `VALUESET_FILTER_VALUE_TYPE`.
//! - **SNOMED CT constraints**: a filter of `http://snomed.info/sct` on property `constraint`
//!   holds an Expression Constraint Language expression; one that is not ECL 2.x by the grammar
//!   (see `ecl`) is `VALUESET_FILTER_ECL_INVALID`.
//!
//! Every finding is at the filter (or the expression's `value`, or the parameter's extension),
//! never with the filter's value or the expression's text.
//!
//! What it does not do: expand the value set, check that a filter's code exists in its code
//! system (SNOMED CT and LOINC are not bundled), check a property's type where a loaded code
//! system declares it, or evaluate an expression.

use crate::diag::{Code, Location};

use super::definitions as defs;
use super::fhirpath::parse::{self, CompileError, Expr};
use super::model::Document;
use super::validate::Findings;

const PARAMETER_URL: &[u8] = b"http://hl7.org/fhir/tools/StructureDefinition/valueset-parameter";
const EXPRESSION_URL: &[u8] = b"http://hl7.org/fhir/StructureDefinition/cqf-expression";
const SNOMED: &[u8] = b"http://snomed.info/sct";

/// The environment variables FHIRPath (§2.9) and FHIR (fhirpath.html, "FHIR specific
/// variables") define: always known.
const ENVIRONMENT: [&str; 6] = ["context", "resource", "rootResource", "ucum", "sct", "loinc"];

/// Runs the rules over every ValueSet of the document.
pub(super) fn check(doc: &Document, f: &mut Findings) {
    let Some(value_set) = defs::known_type!(b"ValueSet") else { return };
    for r in 0..doc.nodes().len() as u32 {
        let node = doc.node(r);
        if node.is_resource() && !node.is_unknown() && node.ty == Some(value_set) {
            check_value_set(doc, r, f);
        }
    }
}

/// The value of the first child `name` of node `i` that has one.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn value_of<'a>(doc: &'a Document, i: u32, name: &'a str) -> Option<(u32, &'a [u8])> {
    doc.named(i, name).find(|&c| doc.node(c).has_value() && !doc.node(c).is_unknown()).map(|c| (c, doc.value(c)))
}

/// The `extension`s of node `i` whose `url` is `url`.
fn extensions<'a>(doc: &'a Document, i: u32, url: &'a [u8]) -> impl Iterator<Item = u32> + 'a {
    doc.named(i, "extension").filter(move |&e| value_of(doc, e, "url").is_some_and(|(_, u)| u == url))
}

fn check_value_set(doc: &Document, r: u32, f: &mut Findings) {
    // (extension node, name) of each declared parameter.
    let parameters: Vec<(u32, &[u8])> = extensions(doc, r, PARAMETER_URL)
        .filter_map(|e| {
            let name = doc
                .named(e, "extension")
                .find(|&n| value_of(doc, n, "url").is_some_and(|(_, u)| u == b"name"))
                .and_then(|n| value_of(doc, n, "value"))?;
            Some((e, name.1))
        })
        .collect();
    let mut used = vec![false; parameters.len()];
    for compose in doc.named(r, "compose") {
        for part in doc.named(compose, "include").chain(doc.named(compose, "exclude")) {
            let system = value_of(doc, part, "system").map(|(_, v)| v);
            for filter in doc.named(part, "filter") {
                check_filter(doc, filter, system, f);
                for value in doc.named(filter, "value") {
                    for e in extensions(doc, value, EXPRESSION_URL) {
                        for x in doc.named(e, "value") {
                            check_expression(doc, x, &parameters, &mut used, f);
                        }
                    }
                }
            }
        }
    }
    for (&(e, _), used) in parameters.iter().zip(&used) {
        if !used {
            f.push(Code::VALUESET_PARAMETER_UNUSED, Location::Fhir(doc.path(e)));
        }
    }
}

fn check_filter(doc: &Document, filter: u32, system: Option<&[u8]>, f: &mut Findings) {
    let property = value_of(doc, filter, "property").map(|(_, v)| v);
    let op = value_of(doc, filter, "op").map(|(_, v)| v);
    let Some((_, value)) = value_of(doc, filter, "value") else { return };
    let boolean =
        op == Some(b"exists") || (op == Some(b"=") && matches!(property, Some(b"inactive" | b"notSelectable")));
    if boolean && value != b"true" && value != b"false" {
        f.push(Code::VALUESET_FILTER_VALUE_TYPE, Location::Fhir(doc.path(filter)));
    }
    if system == Some(SNOMED) && property == Some(b"constraint") && super::ecl::parse(value).is_err() {
        f.push(Code::VALUESET_FILTER_ECL_INVALID, Location::Fhir(doc.path(filter)));
    }
}

/// An Expression (`x`): its language, its grammar and the parameters it names.
fn check_expression(doc: &Document, x: u32, parameters: &[(u32, &[u8])], used: &mut [bool], f: &mut Findings) {
    let Some((_, text)) = value_of(doc, x, "expression") else { return };
    if value_of(doc, x, "language").is_some_and(|(_, l)| l != b"text/fhirpath") {
        f.push(Code::VALUESET_EXPRESSION_LANGUAGE, Location::Fhir(doc.path(x)));
        // Not read further: the parameters it names do not count as used (nor does the
        // reference validator count them).
        return;
    }
    let Ok(text) = std::str::from_utf8(text) else {
        f.push(Code::VALUESET_EXPRESSION_INVALID, Location::Fhir(doc.path(x)));
        return;
    };
    let expr = match parse::compile(text) {
        Ok(e) => e,
        Err(CompileError::Syntax) => {
            f.push(Code::VALUESET_EXPRESSION_INVALID, Location::Fhir(doc.path(x)));
            return;
        }
        Err(CompileError::UnsupportedFunction) => return,
    };
    let mut vars = Vec::new();
    variables(&expr, &mut vars);
    let mut unknown = false;
    for v in vars {
        if ENVIRONMENT.contains(&v) || v.starts_with("vs-") || v.starts_with("ext-") {
            continue;
        }
        match parameters.iter().position(|&(_, n)| n == v.as_bytes()) {
            Some(i) => used[i] = true,
            None => unknown = true,
        }
    }
    if unknown {
        f.push(Code::VALUESET_PARAMETER_UNKNOWN, Location::Fhir(doc.path(x)));
    }
}

/// The names of the `%variables` of an expression.
fn variables<'e>(e: &'e Expr, out: &mut Vec<&'e str>) {
    match e {
        Expr::Var(v) => out.push(v),
        Expr::Member(a, _) | Expr::Neg(a) | Expr::Is(a, _) | Expr::As(a, _) => variables(a, out),
        Expr::Indexer(a, b) | Expr::Binary(_, a, b) => {
            variables(a, out);
            variables(b, out);
        }
        Expr::Call(target, _, args) => {
            if let Some(t) = target {
                variables(t, out);
            }
            for a in args {
                variables(a, out);
            }
        }
        Expr::Empty
        | Expr::Bool(_)
        | Expr::Str(_)
        | Expr::Int(_)
        | Expr::Dec(_)
        | Expr::DateTime(_)
        | Expr::Quantity(..)
        | Expr::This
        | Expr::Index
        | Expr::Ident(_) => {}
    }
}
