//! The hardened XML reader shared by the XML formats: FHIR XML today, C-CDA and NCPDP SCRIPT
//! next. One tokenizer for the crate.
//!
//! [`parse`] reads one UTF-8 XML 1.0 document (with Namespaces in XML 1.0) into a [`Tree`]:
//! elements in pre-order with their namespace (resolved from prefix to URI, [`NsId`]), local and
//! qualified names, attributes, text runs (references decoded, line ends normalized) and byte
//! offsets; [`position`] turns an offset into a line and column. Decoded values live in one
//! zeroizing buffer behind a [`Phi`](crate::phi::Phi), read as [`PhiBytes`](crate::phi::PhiBytes).
//!
//! The boundary: no document type declaration (so no DTD, no declared entity, no external
//! entity, no entity expansion), no reference but the five predefined entities and numeric
//! character references, nothing fetched, explicit limits on size, depth, element count, value
//! size, attributes per element and namespace declarations in scope ([`read`] lists them).
//! Errors are an [`Error`]: a [`Kind`], the diagnostic code it maps to (`MALFORMED_XML`,
//! `XML_DTD_FORBIDDEN`, `CHARSET_INVALID_BYTES`, `CLI_INPUT_TOO_LARGE`) and a position; never
//! a byte of the input.
//!
//! Markup is found by `quick-xml` (kept well, fuzzed upstream, and measured faster than the
//! hand-written tokenizer it replaced: see the commit that introduced it); the checks that make
//! this a well-formedness checker, and the limits, are ours ([`read`]).
//!
//! What it does not do: other encodings than UTF-8 (the input is refused, not transcoded),
//! DTD validation or default attributes, schema validation, XInclude or any other linking,
//! keeping comments, processing instructions or white-space-only text.

mod chars;
mod error;
pub mod read;
mod tree;

pub use error::{Error, Kind};
pub use read::{Fragment, parse, parse_fragment};
pub use tree::{Attr, Element, NsId, Span, Text, Tree, XML_NAMESPACE};

/// The line (1-based, counting `\n`) and column (1-based, in characters) of byte `offset` of
/// `input`. An offset past the end counts to the end.
pub fn position(input: &[u8], offset: usize) -> (u64, u64) {
    let before = input.get(..offset).unwrap_or(input);
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |p| p + 1);
    let line = memchr::memchr_iter(b'\n', before).count() as u64 + 1;
    // Characters: bytes that do not continue a UTF-8 sequence.
    let column = before[line_start..].iter().filter(|&&b| (b & 0xC0) != 0x80).count() as u64 + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Code;
    use crate::limits::Limits;

    fn p(s: &str) -> Result<Tree, Error> {
        parse(s.as_bytes(), &Limits::default())
    }

    fn kind(s: &str) -> Option<Kind> {
        p(s).err().map(|e| e.kind())
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    fn value(t: &Tree, s: Span) -> Vec<u8> {
        t.value(s).raw().to_vec()
    }

    #[test]
    fn namespaces_resolve_by_scope() {
        let t = p(r#"<?xml version="1.0" encoding="UTF-8"?>
<ClinicalDocument xmlns="urn:hl7-org:v3" xmlns:sdtc="urn:hl7-org:sdtc" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <sdtc:raceCode code="1" xsi:type="CD"/>
  <x xmlns=""><y xml:lang="en"/></x>
  <z xmlns="urn:other" xmlns:sdtc="urn:hl7-org:v3"><sdtc:w/></z>
  <after/>
</ClinicalDocument>"#)
        .expect("well-formed");
        let e = t.elements();
        assert!(t.namespace_is(e[0].ns, b"urn:hl7-org:v3"));
        assert!(t.namespace_is(e[1].ns, b"urn:hl7-org:sdtc"));
        let attrs = t.attrs_of(1);
        assert_eq!(attrs.len(), 2, "namespace declarations are not attributes");
        assert_eq!(attrs[0].ns, NsId::NONE);
        assert!(t.namespace_is(attrs[1].ns, b"http://www.w3.org/2001/XMLSchema-instance"));
        assert_eq!(e[2].ns, NsId::NONE, "xmlns=\"\" undeclares the default");
        assert_eq!(t.attrs_of(3)[0].ns, NsId::XML);
        assert!(t.namespace_is(e[4].ns, b"urn:other"));
        assert!(t.namespace_is(e[5].ns, b"urn:hl7-org:v3"), "a prefix rebound in scope");
        assert!(t.namespace_is(e[6].ns, b"urn:hl7-org:v3"), "scope ends with the element");
        assert_eq!(t.children(0).collect::<Vec<_>>(), vec![1, 2, 4, 6]);
    }

    #[test]
    fn a_fragment_is_read_with_implied_namespaces_and_several_roots() {
        let implied: &[(&[u8], &[u8])] = &[(b"", b"urn:d"), (b"p", b"urn:p")];
        let fragment = Fragment { implied, several_roots: true };
        let input = "<!-- c --><a p:x='1'><p:b/><c xmlns='urn:e'/><d xmlns=''/></a>\n<a/>";
        let t = parse_fragment(input.as_bytes(), &Limits::default(), &fragment).expect("a fragment");
        assert!(t.implied());
        let e = t.elements();
        assert!(t.namespace_is(e[0].ns, b"urn:d"));
        assert!(t.namespace_is(t.attrs_of(0)[0].ns, b"urn:p"));
        assert!(t.namespace_is(e[1].ns, b"urn:p"));
        assert!(t.namespace_is(e[2].ns, b"urn:e"), "a declaration wins");
        assert_eq!(e[3].ns, NsId::NONE, "xmlns=\"\" undeclares the implied default");
        assert_eq!(t.roots().collect::<Vec<_>>(), vec![0, 4]);
        // Declared: nothing implied. Other prefixes, text between roots: still errors.
        let t = parse_fragment(b"<a xmlns='urn:d'/>", &Limits::default(), &fragment).expect("declared");
        assert!(!t.implied());
        let kind = |s: &str| parse_fragment(s.as_bytes(), &Limits::default(), &fragment).err().map(|e| e.kind());
        assert_eq!(kind("<a q:x='1'/>"), Some(Kind::UndeclaredPrefix));
        assert_eq!(kind("<a/>x<a/>"), Some(Kind::TextOutsideRoot));
        // Without the options: a document.
        assert_eq!(p("<a/><a/>").err().map(|e| e.kind()), Some(Kind::SecondRoot));
        assert_eq!(p("<a p:x='1'/>").err().map(|e| e.kind()), Some(Kind::UndeclaredPrefix));
        assert_eq!(p("<a/>").map(|t| (t.implied(), t.roots().count())).ok(), Some((false, 1)));
    }

    #[test]
    fn text_runs_with_references_cdata_and_mixed_content() {
        let input = "<text>Pulse &lt; 60 <content>ok</content>\r\n <![CDATA[a<b]]>&#x41;<!-- c --> tail </text>";
        let t = parse(input.as_bytes(), &Limits::default()).expect("well-formed");
        let texts: Vec<_> = t.texts_of(0).collect();
        assert_eq!(texts.len(), 3);
        assert_eq!(value(&t, texts[0].value), b"Pulse < 60 ");
        assert_eq!(texts[0].offset, 6);
        assert_eq!(texts[0].before, 1);
        assert_eq!(value(&t, texts[1].value), b"\n a<bA", "CR LF is one LF; white space before a CDATA is kept");
        assert_eq!(texts[1].offset as usize, input.find("<![CDATA[").expect("cdata"));
        assert_eq!(value(&t, texts[2].value), b" tail ");
        let inner: Vec<_> = t.texts_of(1).collect();
        assert_eq!(value(&t, inner[0].value), b"ok");
        // White space alone is not text; a reference to a space is.
        let t = p("<a>\n  <b/>\n</a>").expect("well-formed");
        assert_eq!(t.texts().len(), 0);
        let t = p("<a>&#32;</a>").expect("well-formed");
        assert_eq!(value(&t, t.texts()[0].value), b" ");
    }

    #[test]
    fn attributes_decoded_and_positions_kept() {
        let input = "<a\n  x='1 &amp; 2'\ty=\"&#x3C;\r\n\"/>";
        let t = p(input).expect("well-formed");
        let attrs = t.attrs_of(0);
        assert_eq!(value(&t, attrs[0].value), b"1 & 2");
        assert_eq!(value(&t, attrs[1].value), b"< ", "CR LF in a value is one space");
        assert_eq!(attrs[1].offset as usize, input.find("y=").expect("y"));
        let e = t.root();
        assert_eq!((e.offset, e.end_offset as usize), (0, input.len()));
        assert_eq!(position(input.as_bytes(), attrs[0].offset as usize), (2, 3));
    }

    #[test]
    fn element_spans() {
        let input = "<r><a>x<b/></a><c/></r>";
        let t = p(input).expect("well-formed");
        let e = t.elements();
        assert_eq!(e.len(), 4);
        assert_eq!((e[1].offset, e[1].end_offset, e[1].end), (3, 15, 3));
        assert_eq!(e[1].content.of(input.as_bytes()), b"x<b/>");
        assert_eq!(e[2].depth, 2);
        assert!(e[3].content.is_empty());
    }

    #[test]
    fn refuses_dtds_entities_and_external_references() {
        let xxe = r#"<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><a>&e;</a>"#;
        let e = p(xxe).expect_err("refused");
        assert_eq!((e.code(), e.offset()), (Code::XML_DTD_FORBIDDEN, 21));
        assert_eq!(kind("<!DOCTYPE a><a/>"), Some(Kind::Dtd));
        assert_eq!(kind("<!doctype a><a/>"), Some(Kind::Dtd));
        assert_eq!(kind("<!ENTITY e 'x'><a/>"), Some(Kind::Dtd));
        assert_eq!(kind("<a><!ENTITY e 'x'></a>"), Some(Kind::Dtd));
        assert_eq!(kind("<!DOCTYPE a [<!ENTITY"), Some(Kind::Dtd));
        assert_eq!(kind("<a>&e;</a>"), Some(Kind::UndefinedEntity));
        assert_eq!(kind("<a x='&e;'/>"), Some(Kind::UndefinedEntity));
        assert_eq!(kind("<a>&nbsp;</a>"), Some(Kind::UndefinedEntity));
        assert_eq!(kind("<a>&#0;</a>"), Some(Kind::InvalidCharacterReference));
        assert_eq!(kind("<a>& b</a>"), Some(Kind::UnclosedReference));
    }

    #[test]
    fn well_formedness() {
        let cases: &[(&str, Kind, u64)] = &[
            ("<a><b></a>", Kind::MismatchedEndTag, 8),
            ("<a></a></b>", Kind::UnmatchedEndTag, 7),
            ("<a><b>", Kind::UnclosedElement, 6),
            ("", Kind::NoRoot, 0),
            ("  <!-- c -->  ", Kind::NoRoot, 14),
            ("x<a/>", Kind::TextOutsideRoot, 0),
            ("<a/> x", Kind::TextOutsideRoot, 5),
            ("<a/><b/>", Kind::SecondRoot, 4),
            ("<a x='1' x='2'/>", Kind::DuplicateAttribute, 9),
            ("<a xmlns:p='u' xmlns:q='u' p:x='1' q:x='2'/>", Kind::DuplicateAttribute, 35),
            ("<a xmlns='u' xmlns='v'/>", Kind::DuplicateAttribute, 13),
            ("<a x='1'y='2'/>", Kind::AttributeSyntax, 8),
            ("<a x/>", Kind::AttributeSyntax, 4),
            ("<a x=1/>", Kind::AttributeSyntax, 5),
            ("<a x='<'/>", Kind::LessThanInAttribute, 6),
            ("<1a/>", Kind::InvalidName, 1),
            ("<a=b/>", Kind::InvalidName, 2),
            ("<a:b:c/>", Kind::InvalidName, 1),
            ("<p:a/>", Kind::UndeclaredPrefix, 1),
            ("<a p:x='1'/>", Kind::UndeclaredPrefix, 3),
            ("<a>]]></a>", Kind::CdataEndInText, 3),
            ("<a>\u{1}</a>", Kind::InvalidCharacter, 3),
            ("<a x='\u{1}'/>", Kind::InvalidCharacter, 6),
            ("<a><!-- a -- b --></a>", Kind::DoubleHyphenInComment, 10),
            ("<a><!-- a ---></a>", Kind::DoubleHyphenInComment, 10),
            ("<a><!-- a </a>", Kind::UnclosedMarkup, 3),
            ("<a><![CDATA[x</a>", Kind::UnclosedMarkup, 3),
            ("<a x='1", Kind::UnclosedMarkup, 0),
            ("<a/><?xml version='1.0'?>", Kind::MisplacedDeclaration, 4),
            ("<?xml encoding='UTF-8'?><a/>", Kind::MisplacedDeclaration, 0),
            ("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a/>", Kind::EncodingNotUtf8, 20),
        ];
        for (input, want, offset) in cases {
            let e = p(input).err().unwrap_or_else(|| panic!("accepted: {input}"));
            assert_eq!((e.kind(), e.offset()), (*want, *offset), "{input}");
        }
        assert_eq!(
            parse(b"<a>\xff</a>", &Limits::default()).err().map(|e| (e.kind(), e.offset())),
            Some((Kind::NotUtf8, 3))
        );
        // A declaration after white space (a byte order mark blanked by a caller) is accepted.
        assert!(p("   <?xml version='1.0' encoding='utf-8'?><a/>").is_ok());
        assert!(parse(b"\xEF\xBB\xBF<a>x</a>", &Limits::default()).is_ok_and(|t| t.texts()[0].offset == 6));
    }

    #[test]
    fn limits_hold() {
        let deep = "<a>".repeat(1000);
        assert_eq!(kind(&deep), Some(Kind::TooLarge));
        let limits = Limits { max_segments: 3, ..Limits::default() };
        let e = parse(b"<a><b/><c/><d/></a>", &limits).err().map(|e| (e.kind(), e.offset()));
        assert_eq!(e, Some((Kind::TooLarge, 11)));
        let limits = Limits { max_field_bytes: 4, ..Limits::default() };
        assert!(parse(b"<a x='1234'>1234</a>", &limits).is_ok());
        assert_eq!(parse(b"<a x='12345'/>", &limits).err().map(|e| e.kind()), Some(Kind::TooLarge));
        assert_eq!(parse(b"<a>12&#x33;45</a>", &limits).err().map(|e| e.kind()), Some(Kind::TooLarge));
        let many: String = (0..=MAX).map(|i| format!(" a{i}='1'")).collect();
        assert_eq!(kind(&format!("<a{many}/>")), Some(Kind::TooLarge));
        let ok: String = (0..MAX).map(|i| format!(" a{i}='1'")).collect();
        assert!(p(&format!("<a{ok}/>")).is_ok());
        let half = read::MAX_NAMESPACES_IN_SCOPE / 2 + 1;
        let decls = |p: &str| (0..half).map(|i| format!(" xmlns:{p}{i}='u'")).collect::<String>();
        let (outer, inner) = (decls("p"), decls("q"));
        assert_eq!(kind(&format!("<e{outer}><f{inner}/></e>")), Some(Kind::TooLarge));
        assert!(p(&format!("<e{outer}/>")).is_ok());
        assert_eq!(
            parse(b"<a/>", &Limits { max_input_bytes: 3, ..Limits::default() }).err().map(|e| e.kind()),
            Some(Kind::TooLarge)
        );
    }

    const MAX: usize = read::MAX_ATTRIBUTES;

    /// Token soup (a fixed-seed generator over XML's delimiters and a few names): the reader never
    /// panics, every error position lies inside the input, and every span of a tree does too.
    #[test]
    fn token_soup_never_panics_and_positions_stay_inside() {
        const TOKENS: &[&str] = &[
            "<",
            ">",
            "/",
            "</",
            "/>",
            "=",
            "\"",
            "'",
            " ",
            "\r\n",
            "a",
            "p:b",
            "xmlns",
            "xmlns:p",
            "xml:lang",
            "&amp;",
            "&#x41;",
            "&",
            ";",
            "<!--",
            "-->",
            "<![CDATA[",
            "]]>",
            "<?",
            "?>",
            "<?xml version='1.0'?>",
            "<!DOCTYPE",
            "u",
            "\u{1}",
            "é",
            "\u{FFFF}",
            "<a>",
            "</a>",
            "<a x='1'>",
            ":",
        ];
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let limits = Limits { max_depth: 8, ..Limits::default() };
        let mut trees = 0;
        // Every other input is a root around content drawn mostly from well-formed pieces.
        const CONTENT: &[&str] = &[
            "<b/>",
            "<c x='1' p:y=\"2\" xmlns:p='u'/>",
            "text",
            " ",
            "&amp;",
            "&#233;",
            "<![CDATA[<x>]]>",
            "<!-- c -->",
            "<?pi x?>",
            "<d>",
            "</d>",
            "\r\n",
            "<e xmlns='v'>",
            "</e>",
            "<",
            "&",
            "]]>",
        ];
        for round in 0..20_000 {
            let n = 1 + next() % 24;
            let input: String = if round % 2 == 0 {
                (0..n).map(|_| TOKENS[(next() % TOKENS.len() as u64) as usize]).collect()
            } else {
                let inner: String = (0..n).map(|_| CONTENT[(next() % CONTENT.len() as u64) as usize]).collect();
                format!("<r>{inner}</r>")
            };
            let bytes = input.as_bytes();
            match parse(bytes, &limits) {
                Err(e) => assert!(e.offset() <= bytes.len() as u64, "{input:?}"),
                Ok(t) => {
                    trees += 1;
                    for e in t.elements() {
                        assert!(e.offset < e.end_offset && e.end_offset as usize <= bytes.len(), "{input:?}");
                        assert!(e.qname.end <= e.content.start && e.content.end <= e.end_offset, "{input:?}");
                    }
                    for a in t.attributes() {
                        assert!((a.local.end as usize) <= bytes.len(), "{input:?}");
                    }
                    for x in t.texts() {
                        assert!(x.raw.start <= x.offset && (x.raw.end as usize) <= bytes.len(), "{input:?}");
                    }
                }
            }
        }
        assert!(trees > 100, "the soup reaches the tree builder ({trees} trees)");
    }

    /// Regression (the hand-written tokenizer): a CR LF inside an attribute value became two
    /// spaces; XML's end-of-line handling makes it one line feed, so one space.
    #[test]
    fn crlf_inside_an_attribute_value_is_one_space() {
        let t = p("<a v='x\r\ny'/>").expect("well-formed");
        assert_eq!(value(&t, t.attrs_of(0)[0].value), b"x y");
    }

    /// Regression (the hand-written tokenizer): a document declared US-ASCII (as the HL7 CDA
    /// schemas are) was refused although ASCII is read exactly as UTF-8 is.
    #[test]
    fn ascii_declaration_of_an_ascii_document_is_accepted() {
        assert!(p("<?xml version=\"1.0\" encoding=\"ASCII\"?><a/>").is_ok());
        assert!(p("<?xml version='1.0' encoding='us-ascii'?><a/>").is_ok());
        let e = p("<?xml version='1.0' encoding='US-ASCII'?><a>é</a>").expect_err("not ASCII");
        assert_eq!((e.kind(), e.code(), e.offset()), (Kind::NotAscii, Code::CHARSET_INVALID_BYTES, 44));
    }

    /// Regression (the hand-written tokenizer): an XML declaration after leading white space was
    /// skipped as a processing instruction, so its encoding was not checked.
    #[test]
    fn declaration_after_white_space_is_checked() {
        assert_eq!(kind(" <?xml version='1.0' encoding='ISO-8859-1'?><a/>"), Some(Kind::EncodingNotUtf8));
    }

    #[test]
    fn errors_and_trees_show_no_value() {
        let secret = "SMITHJOHN";
        let t = p(&format!("<a x='{secret}'>{secret}<{secret}/></a>")).expect("well-formed");
        assert!(!format!("{t:?}").contains(secret));
        for bad in [format!("<a><{secret}></a>"), format!("<a>&{secret};</a>"), format!("<a {secret}/>")] {
            let e = p(&bad).expect_err("refused");
            assert!(!format!("{e:?}").contains(secret));
        }
    }
}
