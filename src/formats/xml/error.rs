//! The reader's one error type: a [`Kind`] (unit variants), the diagnostic [`Code`] it maps to,
//! and a position (byte offset, line, column). Errors of the underlying tokenizer (`quick-xml`)
//! are translated here, by their kind and position only: their messages quote the input
//! (`MismatchedEndTag { expected, found }` holds the names it saw) and are never displayed.
//!
//! What it does not do: carry any byte of the input, or a length of a value.

use crate::diag::Code;

/// What went wrong, by kind. Each maps to one stable [`Code`] (see [`Kind::code`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// The input is not UTF-8.
    NotUtf8,
    /// The XML declaration names an encoding other than UTF-8 (or US-ASCII).
    EncodingNotUtf8,
    /// The XML declaration names US-ASCII, and a byte is not ASCII.
    NotAscii,
    /// A document type declaration, or another markup declaration (`<!ENTITY`, `<!ELEMENT`...).
    Dtd,
    /// The input exceeds a limit: size, depth, element count, value size, attributes on one
    /// element, namespace declarations in scope.
    TooLarge,
    /// Markup (a tag, comment, CDATA section, processing instruction) that the input ends in.
    UnclosedMarkup,
    /// An element or attribute name that is not an XML name, or a qualified name with an
    /// empty part or two colons.
    InvalidName,
    /// An attribute without `=`, without quotes, or not separated from the previous one.
    AttributeSyntax,
    /// The same attribute twice on one element (by qualified or by expanded name).
    DuplicateAttribute,
    /// `<` inside an attribute value.
    LessThanInAttribute,
    /// `&` without a `;`.
    UnclosedReference,
    /// An entity reference other than the five predefined ones.
    UndefinedEntity,
    /// A character reference that is not a number, or not an XML character.
    InvalidCharacterReference,
    /// A character outside XML's `Char` production (a C0 control, U+FFFE, U+FFFF).
    InvalidCharacter,
    /// A prefix with no namespace declaration in scope.
    UndeclaredPrefix,
    /// An end tag whose name is not the open element's.
    MismatchedEndTag,
    /// An end tag with no open element.
    UnmatchedEndTag,
    /// The input ends inside an element.
    UnclosedElement,
    /// Text, a reference or a CDATA section outside the root element.
    TextOutsideRoot,
    /// A second root element.
    SecondRoot,
    /// No root element.
    NoRoot,
    /// `]]>` in character data.
    CdataEndInText,
    /// `--` inside a comment.
    DoubleHyphenInComment,
    /// An XML declaration that is not the first thing in the document, or without a version.
    MisplacedDeclaration,
}

impl Kind {
    /// The diagnostic code of this kind.
    pub fn code(self) -> Code {
        match self {
            Kind::NotUtf8 | Kind::EncodingNotUtf8 | Kind::NotAscii => Code::CHARSET_INVALID_BYTES,
            Kind::Dtd => Code::XML_DTD_FORBIDDEN,
            Kind::TooLarge => Code::CLI_INPUT_TOO_LARGE,
            _ => Code::MALFORMED_XML,
        }
    }
}

/// A fatal error: the kind and where it was found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: Kind,
    offset: u64,
    line: u64,
    column: u64,
}

impl Error {
    /// An error of `kind` at byte `offset` of `input` (the line and column are counted here).
    pub(super) fn at(kind: Kind, offset: usize, input: &[u8]) -> Error {
        let (line, column) = super::position(input, offset);
        Error { kind, offset: offset as u64, line, column }
    }

    /// The kind.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The diagnostic code.
    pub fn code(&self) -> Code {
        self.kind.code()
    }

    /// Byte offset in the input (0-based).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Line (1-based).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Column (1-based, in characters).
    pub fn column(&self) -> u64 {
        self.column
    }
}

/// The kind of a `quick-xml` error; `at` is the input at its error position (to tell a markup
/// declaration from a broken comment or CDATA section). The error's text is not read.
pub(super) fn foreign(e: &quick_xml::Error, at: &[u8]) -> Kind {
    use quick_xml::errors::{IllFormedError as I, SyntaxError as S};
    match e {
        quick_xml::Error::Syntax(S::UnclosedDoctype) => Kind::Dtd,
        quick_xml::Error::Syntax(S::InvalidBangMarkup) if is_declaration(at) => Kind::Dtd,
        quick_xml::Error::Syntax(_) => Kind::UnclosedMarkup,
        quick_xml::Error::IllFormed(I::MissingDoctypeName) => Kind::Dtd,
        quick_xml::Error::IllFormed(I::MissingDeclVersion(_) | I::UnknownVersion) => Kind::MisplacedDeclaration,
        quick_xml::Error::IllFormed(I::DoubleHyphenInComment) => Kind::DoubleHyphenInComment,
        quick_xml::Error::IllFormed(I::UnclosedReference) => Kind::UnclosedReference,
        quick_xml::Error::IllFormed(I::MismatchedEndTag { .. }) => Kind::MismatchedEndTag,
        quick_xml::Error::IllFormed(I::UnmatchedEndTag(_) | I::MissingEndTag(_)) => Kind::UnmatchedEndTag,
        quick_xml::Error::Encoding(_) => Kind::NotUtf8,
        _ => Kind::UnclosedMarkup,
    }
}

/// `<!` that opens neither a comment nor a CDATA section: a markup declaration.
pub(super) fn is_declaration(at: &[u8]) -> bool {
    at.starts_with(b"<!") && !at.starts_with(b"<!--") && !at.starts_with(b"<![CDATA[")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_registered_codes() {
        assert_eq!(Kind::Dtd.code(), Code::XML_DTD_FORBIDDEN);
        assert_eq!(Kind::NotUtf8.code(), Code::CHARSET_INVALID_BYTES);
        assert_eq!(Kind::TooLarge.code(), Code::CLI_INPUT_TOO_LARGE);
        assert_eq!(Kind::UndefinedEntity.code(), Code::MALFORMED_XML);
    }

    #[test]
    fn position_counts_lines_and_characters() {
        let input = "<a>\n  <é/>\r\n<b/>".as_bytes();
        let e = Error::at(Kind::InvalidName, 9, input);
        assert_eq!((e.offset(), e.line(), e.column()), (9, 2, 5));
        let e = Error::at(Kind::InvalidName, 0, input);
        assert_eq!((e.line(), e.column()), (1, 1));
    }
}
