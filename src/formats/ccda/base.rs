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
