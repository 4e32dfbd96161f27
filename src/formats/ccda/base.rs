//! The types of the generated tables ([`super::tables`]): the CDA R2.0 classes and data types
//! flattened from the logical models, and the C-CDA templates with the constraints phiward
//! checks.
//!
//! What it does not do: hold any table (see `tables.rs`, generated).

/// The kind of an attribute's value (the logical models' primitive types).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Prim {
    /// `code`: no leading or trailing white space, not empty.
    Code,
    /// `string`.
    Str,
    /// `boolean`: `true` or `false`.
    Bool,
    /// `dateTime`: a TS, `YYYY[MM[DD[HH[MM[SS[.U+]]]]]][+|-ZZzz]`.
    Ts,
    /// `decimal`.
    Decimal,
    /// `integer`.
    Int,
    /// `id` (an XML ID).
    Id,
    /// `base64Binary`.
    Base64,
}

/// An attribute of a class.
#[derive(Debug)]
pub struct Attr {
    /// Local name.
    pub name: &'static str,
    /// In the SDTC namespace.
    pub sdtc: bool,
    /// 1 when required.
    pub min: u8,
    /// 0: prohibited; 1: one; 2: a list.
    pub max: u8,
    /// The value's kind.
    pub kind: Prim,
    /// A fixed value.
    pub fixed: Option<&'static str>,
}

/// An element of a class.
#[derive(Debug)]
pub struct Elem {
    /// Local name.
    pub name: &'static str,
    /// In the SDTC namespace.
    pub sdtc: bool,
    /// Fewest occurrences.
    pub min: u32,
    /// Most occurrences (`u32::MAX`: unbounded).
    pub max: u32,
    /// The types it may have (indexes of [`super::tables::CLASSES`]); the first is the declared
    /// one, the others are chosen by `xsi:type`. Empty for the narrative block.
    pub types: &'static [u16],
    /// `xsi:type` names its type.
    pub xsi: bool,
    /// The narrative block (`section/text`): markup kept as a value.
    pub narrative: bool,
}

/// A class or data type, flattened (its base's attributes and elements first).
#[derive(Debug)]
pub struct Class {
    /// Its name (`Observation`, `IVL_TS`; an element's nested constraints: `Section.component`).
    pub name: &'static str,
    /// Text content allowed (ST, ED, names and addresses).
    pub text: bool,
    /// Elements may come in any order (the parts of a name or address).
    pub unordered: bool,
    /// Attributes.
    pub attrs: &'static [Attr],
    /// Elements, in schema order.
    pub elems: &'static [Elem],
}

/// A constraint of a template, at a path of element names from the template's element (`""`:
/// the element itself).
#[derive(Debug)]
pub enum Rule {
    /// Attribute `name` of the element(s) at `path` is required and is `value`.
    Attr {
        /// Element names joined by `/`.
        path: &'static str,
        /// The attribute.
        name: &'static str,
        /// The value.
        value: &'static str,
    },
    /// Attribute `name` of the element(s) at `path`, when present, is `value`.
    Fixed {
        /// Element names joined by `/`.
        path: &'static str,
        /// The attribute.
        name: &'static str,
        /// The value.
        value: &'static str,
    },
    /// Element `path` (a child) is required (beyond the base's cardinality).
    Required {
        /// The child's name.
        path: &'static str,
        /// Unused.
        name: &'static str,
        /// Unused.
        value: &'static str,
    },
    /// The coded element(s) at `path` (their `code`, with `codeSystem`), or their attribute
    /// `attr` (a code or a list of codes), are bound to value set `value_set` (an index of
    /// [`super::vs_tables::VALUE_SETS`]).
    Bind {
        /// Element names joined by `/`.
        path: &'static str,
        /// The attribute bound (`""`: the element's code).
        attr: &'static str,
        /// The binding's strength.
        strength: Strength,
        /// The value set.
        value_set: u16,
    },
    /// Among the elements at `path`, one has a child `name` that declares template `value`
    /// (a templateId root): a required section or entry.
    Contains {
        /// Element names joined by `/`.
        path: &'static str,
        /// The child that carries the template (`section`, `act`, `observation`...).
        name: &'static str,
        /// The template's root.
        value: &'static str,
    },
}

/// A C-CDA template.
#[derive(Debug)]
pub struct Template {
    /// `root:extension`: what a finding names.
    pub key: &'static str,
    /// templateId root.
    pub root: &'static str,
    /// templateId extension (`""`: none).
    pub extension: &'static str,
    /// The title of its definition.
    pub title: &'static str,
    /// The CDA class it constrains.
    pub class: &'static str,
    /// Its fixed code (`""`: none) and code system.
    pub code: &'static str,
    /// The code's system.
    pub code_system: &'static str,
    /// Its constraints.
    pub rules: &'static [Rule],
}

/// A C-CDA R2.1 template: the error-level (SHALL) assertions of HL7's R2.1 schematron for one
/// templateId (root and that version's extension, `""` for a templateId without one) on one
/// element name, translated into [`X`] where their XPath is of the subset evaluated here.
#[derive(Debug)]
pub struct R21Template {
    /// templateId root.
    pub root: &'static str,
    /// templateId extension (`""`: none).
    pub extension: &'static str,
    /// The element that declares it (`act`, `section`, `ClinicalDocument`...).
    pub element: &'static str,
    /// Its assertions.
    pub asserts: &'static [Assert],
}

/// One schematron assertion of an R2.1 template.
#[derive(Debug)]
pub struct Assert {
    /// `root:extension/CONF:NNNN-NNNN`: the template and the CONF number a finding names.
    pub key: &'static str,
    /// The elements it is evaluated on, from the template's element (`[]`: that element; a
    /// branch rule's `participant[@typeCode='IND']`...).
    pub context: &'static [Step],
    /// The finding's code.
    pub kind: AssertKind,
    /// The test: true when the constraint holds.
    pub test: X,
}

/// The finding an assertion gives when its test is false.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AssertKind {
    /// An element's count, a co-constraint: `CCDA_TEMPLATE_ELEMENT_MISSING`.
    Element,
    /// A templated child (a section, an entry): `CCDA_TEMPLATE_CONTENT_MISSING`.
    Content,
    /// An attribute fixed or required: `CCDA_TEMPLATE_VALUE_MISMATCH`.
    Value,
    /// An `xsi:type`: `CCDA_DATATYPE_INVALID`.
    Datatype,
}

/// A comparison of a count with a number.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `=`.
    Eq,
    /// `!=`.
    Ne,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
}

/// An attribute's namespace in a test.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AttrNs {
    /// No namespace (`@code`).
    None,
    /// `@sdtc:...`.
    Sdtc,
    /// `@xsi:type`.
    Xsi,
}

/// A child step of a path: an element of the CDA (or SDTC) namespace by its local name, kept
/// when every predicate holds on it.
#[derive(Debug)]
pub struct Step {
    /// In the SDTC namespace.
    pub sdtc: bool,
    /// Local name.
    pub name: &'static str,
    /// Predicates.
    pub preds: &'static [X],
}

/// The XPath 1.0 subset a translated assertion is made of, with XPath's meaning.
#[derive(Debug)]
pub enum X {
    /// `a or b or ...`.
    Or(&'static [X]),
    /// `a and b and ...`.
    And(&'static [X]),
    /// `not(a)`.
    Not(&'static X),
    /// `count(path) op n` (a path alone: `count(path) > 0`).
    Count {
        /// Child steps.
        path: &'static [Step],
        /// The comparison.
        op: Op,
        /// The number.
        n: u32,
    },
    /// `@name` (present) or `@name='value'`.
    Attr {
        /// The attribute's namespace.
        ns: AttrNs,
        /// Its local name.
        name: &'static str,
        /// The value it equals (`None`: present).
        value: Option<&'static str>,
    },
}

/// A binding's strength: required (a code outside the value set is an error) or extensible (a
/// warning). Preferred and example bindings are not in the tables: nothing is checked.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Strength {
    /// `required`.
    Required,
    /// `extensible`.
    Extensible,
}

/// A value set a binding names.
#[derive(Debug)]
pub struct ValueSet {
    /// Its canonical url.
    pub url: &'static str,
    /// Expanded from the bundled definitions (else `codes` is empty and nothing is checked).
    pub bundled: bool,
    /// All of UCUM (`v3-UnitsOfMeasureCaseSensitive`): a grammar, not a list; a unit is checked
    /// by the PQ rule (`CCDA_PQ_INVALID`), so the binding adds no finding of its own.
    pub ucum: bool,
    /// The expansion: (code system OID, code), sorted by code (an OID `""`: a system without
    /// one, matched by code alone).
    pub codes: &'static [(&'static str, &'static str)],
}

/// A binding of the CDA base: an attribute or coded element of a class.
#[derive(Debug)]
pub struct BaseBinding {
    /// The class (an index of `CLASSES`).
    pub class: u16,
    /// The attribute's (of the class's `attrs`) or the element's (of its `elems`) index.
    pub index: u16,
    /// An attribute (else a coded element).
    pub attr: bool,
    /// The binding's strength.
    pub strength: Strength,
    /// The value set (an index of `VALUE_SETS`).
    pub value_set: u16,
}
