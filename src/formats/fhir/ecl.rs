//! A syntax checker for SNOMED CT's Expression Constraint Language 2.x (the ECL specification's
//! ABNF, "brief" and "long" syntax): expression constraints with the constraint operators
//! (`<`, `<<`, `<!`, `<<!`, `>`, `>>`, `>!`, `>>!`, `!!>`, `!!<` and their long names such as
//! `descendantOrSelfOf`), member-of (`^`, with a refset field set `^ [...]`), the wildcard `*`,
//! concept references (an SCTID of 6 to 18 digits with an optional `|term|`), alternate
//! identifiers (`scheme#code`), nested expressions in parentheses, conjunction (`AND`, `,`),
//! disjunction (`OR`) and exclusion (`MINUS`: one operand each side), dotted attributes (`.`),
//! refinements (`:`) with attribute sets and groups (`{ }`), cardinalities (`[0..*]`), the reverse
//! flag (`R`), expression, numeric (`#12.5`), string (`"x"`) and boolean concrete values, and
//! comments (`/* */`). Conjunction and disjunction do not mix without parentheses, as the
//! grammar says.
//!
//! What it does not do: look anything up (a concept id is checked for its digits, not for its
//! Verhoeff check digit or its existence), or read the inside of a filter or history supplement
//! (`{{ ... }}`): only that its quotes and brackets close. An expression that takes more steps
//! than [`FUEL`] is not judged ([`Error::Limit`]).

/// Why an expression is not accepted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// Not ECL by the grammar.
    Syntax,
    /// Too long or too deeply nested to judge.
    Limit,
}

/// Steps a check may take (each grammar rule entered costs one).
pub const FUEL: u32 = 100_000;
const MAX_DEPTH: u32 = 64;

/// Checks that `src` is an ECL 2.x expression constraint.
pub fn parse(src: &[u8]) -> Result<(), Error> {
    let mut p = P { s: src, i: 0, fuel: FUEL, depth: 0 };
    p.expression()?;
    p.ws()?;
    if p.i == p.s.len() { Ok(()) } else { Err(Error::Syntax) }
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
    fuel: u32,
    depth: u32,
}

/// The long names of the constraint operators (ECL 2.0), matched without case.
const LONG_OPERATORS: [&[u8]; 8] = [
    b"descendantorselfof",
    b"descendantof",
    b"childorselfof",
    b"childof",
    b"ancestororselfof",
    b"ancestorof",
    b"parentorselfof",
    b"parentof",
];

#[derive(Copy, Clone, PartialEq, Eq)]
enum Join {
    And,
    Or,
    Minus,
}

type R = Result<(), Error>;

impl P<'_> {
    fn step(&mut self) -> R {
        self.fuel = self.fuel.checked_sub(1).ok_or(Error::Limit)?;
        Ok(())
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn at(&self, t: &[u8]) -> bool {
        self.s.get(self.i..self.i + t.len()) == Some(t)
    }

    fn eat(&mut self, t: &[u8]) -> bool {
        let ok = self.at(t);
        if ok {
            self.i += t.len();
        }
        ok
    }

    fn expect(&mut self, t: &[u8]) -> R {
        if self.eat(t) { Ok(()) } else { Err(Error::Syntax) }
    }

    /// Whitespace and comments; an unclosed comment is an error.
    fn ws(&mut self) -> R {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\r' | b'\n') => self.i += 1,
                Some(b'/') if self.at(b"/*") => {
                    let end = memchr::memmem::find(&self.s[self.i + 2..], b"*/").ok_or(Error::Syntax)?;
                    self.i += 2 + end + 2;
                }
                _ => return Ok(()),
            }
        }
    }

    /// A word matched without case, not followed by a letter or digit.
    fn at_word(&self, w: &[u8]) -> bool {
        self.s.get(self.i..self.i + w.len()).is_some_and(|t| t.eq_ignore_ascii_case(w))
            && !self.s.get(self.i + w.len()).is_some_and(|c| c.is_ascii_alphanumeric())
    }

    /// The join word or comma at the cursor, without consuming it.
    fn join(&self) -> Option<(Join, usize)> {
        if self.at(b",") {
            Some((Join::And, 1))
        } else if self.at_word(b"and") {
            Some((Join::And, 3))
        } else if self.at_word(b"or") {
            Some((Join::Or, 2))
        } else if self.at_word(b"minus") {
            Some((Join::Minus, 5))
        } else {
            None
        }
    }

    fn nest<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, Error>) -> Result<T, Error> {
        self.step()?;
        if self.depth >= MAX_DEPTH {
            return Err(Error::Limit);
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    /// expressionConstraint: refined, compound, dotted or a sub-expression.
    fn expression(&mut self) -> R {
        self.nest(|p| {
            p.ws()?;
            p.sub_expression()?;
            p.ws()?;
            if p.eat(b":") {
                p.ws()?;
                return p.refinement();
            }
            if p.at(b".") && !p.at(b"..") {
                while p.at(b".") && !p.at(b"..") {
                    p.i += 1;
                    p.ws()?;
                    p.sub_expression()?;
                    p.ws()?;
                }
                return Ok(());
            }
            let Some((first, _)) = p.join() else { return Ok(()) };
            loop {
                let Some((j, n)) = p.join() else { return Ok(()) };
                if j != first {
                    return Err(Error::Syntax);
                }
                p.i += n;
                p.ws()?;
                p.sub_expression()?;
                p.ws()?;
                if first == Join::Minus {
                    // Exclusion takes one operand each side.
                    return if p.join().is_some() { Err(Error::Syntax) } else { Ok(()) };
                }
            }
        })
    }

    /// subExpressionConstraint: [operator] [memberOf] focus, then filters.
    fn sub_expression(&mut self) -> R {
        self.nest(|p| {
            p.constraint_operator()?;
            if p.eat(b"^") {
                p.ws()?;
                if p.eat(b"[") {
                    p.bracketed_names()?;
                    p.ws()?;
                }
            }
            p.focus()?;
            loop {
                let save = p.i;
                p.ws()?;
                if p.at(b"{{") {
                    p.filter()?;
                } else {
                    p.i = save;
                    return Ok(());
                }
            }
        })
    }

    fn constraint_operator(&mut self) -> R {
        for op in [&b"<<!"[..], b"<<", b"<!", b"<", b">>!", b">>", b">!", b"!!>", b"!!<", b">"] {
            if self.eat(op) {
                return self.ws();
            }
        }
        for w in LONG_OPERATORS {
            if self.at_word(w) {
                self.i += w.len();
                return self.ws();
            }
        }
        Ok(())
    }

    /// eclFocusConcept or a parenthesised expression.
    fn focus(&mut self) -> R {
        match self.peek() {
            Some(b'*') => {
                self.i += 1;
                Ok(())
            }
            Some(b'(') => {
                self.i += 1;
                self.expression()?;
                self.ws()?;
                self.expect(b")")
            }
            Some(b'1'..=b'9') => self.concept_reference(),
            Some(b'"') => {
                self.string()?;
                Ok(())
            }
            Some(c) if c.is_ascii_alphabetic() => self.alternate_identifier(),
            _ => Err(Error::Syntax),
        }
    }

    /// conceptId [ws "|" term "|"].
    fn concept_reference(&mut self) -> R {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        if !(6..=18).contains(&(self.i - start)) {
            return Err(Error::Syntax);
        }
        let save = self.i;
        self.ws()?;
        if self.eat(b"|") {
            let end = memchr::memchr(b'|', &self.s[self.i..]).ok_or(Error::Syntax)?;
            if self.s[self.i..self.i + end].iter().all(|c| c.is_ascii_whitespace()) {
                return Err(Error::Syntax);
            }
            self.i += end + 1;
        } else {
            self.i = save;
        }
        Ok(())
    }

    /// altIdentifier without quotes: scheme alias `#` code.
    fn alternate_identifier(&mut self) -> R {
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'-') {
            self.i += 1;
        }
        self.expect(b"#")?;
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_')) {
            self.i += 1;
        }
        if self.i == start { Err(Error::Syntax) } else { Ok(()) }
    }

    /// A quoted string with backslash escapes.
    fn string(&mut self) -> R {
        self.expect(b"\"")?;
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                b'\\' => self.i += 1,
                b'"' => return Ok(()),
                _ => {}
            }
        }
        Err(Error::Syntax)
    }

    /// `{{ ... }}`: quotes and brackets inside must close.
    fn filter(&mut self) -> R {
        self.expect(b"{{")?;
        let mut open: Vec<u8> = Vec::new();
        loop {
            self.step()?;
            match self.peek() {
                None => return Err(Error::Syntax),
                Some(b'"') => self.string()?,
                Some(b'}') if open.is_empty() && self.at(b"}}") => {
                    self.i += 2;
                    return Ok(());
                }
                Some(c @ (b'(' | b'[' | b'{')) => {
                    open.push(c);
                    self.i += 1;
                }
                Some(c @ (b')' | b']' | b'}')) => {
                    let want = match c {
                        b')' => b'(',
                        b']' => b'[',
                        _ => b'{',
                    };
                    if open.pop() != Some(want) {
                        return Err(Error::Syntax);
                    }
                    self.i += 1;
                }
                Some(_) => self.i += 1,
            }
        }
    }

    /// A refset field name set after `^ [`, through its `]`: `*` or names separated by commas.
    fn bracketed_names(&mut self) -> R {
        self.ws()?;
        if !self.eat(b"*") {
            loop {
                let start = self.i;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
                    self.i += 1;
                }
                if self.i == start {
                    return Err(Error::Syntax);
                }
                self.ws()?;
                if !self.eat(b",") {
                    break;
                }
                self.ws()?;
            }
        }
        self.ws()?;
        self.expect(b"]")
    }

    /// eclRefinement: sub-refinements joined by one kind of join.
    fn refinement(&mut self) -> R {
        self.nest(|p| p.joined(Self::sub_refinement))
    }

    /// `item *(join item)` with one kind of join (AND/`,` or OR).
    fn joined(&mut self, item: fn(&mut Self) -> R) -> R {
        item(self)?;
        let mut first = None;
        loop {
            let save = self.i;
            self.ws()?;
            match self.join() {
                Some((Join::Minus, _)) | None => {
                    self.i = save;
                    return Ok(());
                }
                Some((j, n)) => {
                    if first.is_some_and(|f| f != j) {
                        return Err(Error::Syntax);
                    }
                    first = Some(j);
                    self.i += n;
                    self.ws()?;
                    item(self)?;
                }
            }
        }
    }

    /// `( inner )` at the cursor: true when it is there and read whole; false (the cursor put
    /// back) when the cursor is not at `(` or what follows is not `inner` then `)`, so that the
    /// caller tries its other alternative; a limit is an error.
    fn parenthesized(&mut self, inner: fn(&mut Self) -> R) -> Result<bool, Error> {
        if !self.at(b"(") {
            return Ok(false);
        }
        let save = self.i;
        self.i += 1;
        match inner(self).and_then(|()| {
            self.ws()?;
            self.expect(b")")
        }) {
            Ok(()) => Ok(true),
            Err(Error::Limit) => Err(Error::Limit),
            Err(Error::Syntax) => {
                self.i = save;
                Ok(false)
            }
        }
    }

    /// subRefinement: an attribute set, a group, or a refinement in parentheses.
    fn sub_refinement(&mut self) -> R {
        self.nest(|p| {
            if p.parenthesized(Self::refinement)? {
                return Ok(());
            }
            p.attribute_or_group()
        })
    }

    /// An attribute, or an attribute group with its optional cardinality.
    fn attribute_or_group(&mut self) -> R {
        self.cardinality()?;
        if self.eat(b"{") {
            self.ws()?;
            self.attribute_set()?;
            self.ws()?;
            return self.expect(b"}");
        }
        self.attribute_after_cardinality()
    }

    /// eclAttributeSet: sub-attribute sets joined by one kind of join.
    fn attribute_set(&mut self) -> R {
        self.nest(|p| p.joined(Self::sub_attribute_set))
    }

    fn sub_attribute_set(&mut self) -> R {
        self.nest(|p| {
            if p.parenthesized(Self::attribute_set)? {
                return Ok(());
            }
            p.cardinality()?;
            p.attribute_after_cardinality()
        })
    }

    /// `[min..max]` and the whitespace after it, when present.
    fn cardinality(&mut self) -> R {
        if !self.eat(b"[") {
            return Ok(());
        }
        self.ws()?;
        self.digits()?;
        self.expect(b"..")?;
        if !self.eat(b"*") {
            self.digits()?;
        }
        self.ws()?;
        self.expect(b"]")?;
        self.ws()
    }

    fn digits(&mut self) -> R {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        if self.i == start { Err(Error::Syntax) } else { Ok(()) }
    }

    /// [R] name comparison value.
    fn attribute_after_cardinality(&mut self) -> R {
        if self.at(b"R") && !self.s.get(self.i + 1).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'#') {
            self.i += 1;
            self.ws()?;
        }
        self.sub_expression()?;
        self.ws()?;
        let expression_op = if self.eat(b"!=") || self.eat(b"=") {
            true
        } else if self.eat(b"<=") || self.eat(b">=") || self.eat(b"<") || self.eat(b">") {
            false
        } else {
            return Err(Error::Syntax);
        };
        self.ws()?;
        match self.peek() {
            Some(b'#') => {
                self.i += 1;
                if matches!(self.peek(), Some(b'-' | b'+')) {
                    self.i += 1;
                }
                self.digits()?;
                if self.eat(b".") {
                    self.digits()?;
                }
                Ok(())
            }
            _ if !expression_op => Err(Error::Syntax),
            Some(b'"') => self.string(),
            _ if self.at_word(b"true") => {
                self.i += 4;
                Ok(())
            }
            _ if self.at_word(b"false") => {
                self.i += 5;
                Ok(())
            }
            _ => self.sub_expression(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Examples of the ECL 2.x specification (brief and long syntax), and of packages.
    const VALID: &[&str] = &[
        "404684003 |Clinical finding|",
        "< 404684003 |Clinical finding|",
        "<< 73211009 |Diabetes mellitus|",
        "<! 404684003 |Clinical finding|",
        "<<! 404684003 |Clinical finding|",
        "> 40541001 |Acute pulmonary edema|",
        ">> 40541001 |Acute pulmonary edema|",
        ">! 40541001 |Acute pulmonary edema|",
        ">>! 40541001",
        "!!> (<< 73211009)",
        "!!< (<< 73211009)",
        "^ 700043003 |Example problem list concepts reference set|",
        "^ [referencedComponentId, mapTarget] 447562003",
        "^ [*] 447562003",
        "*",
        "descendantOrSelfOf 73211009",
        "childOf 404684003 |Clinical finding|",
        "< 19829001 |Disorder of lung| : 116676008 |Associated morphology| = 79654002 |Edema|",
        "< 19829001 : 116676008 = << 79654002",
        "< 404684003 : 363698007 |Finding site| = << 39057004 |Pulmonary valve structure|, 116676008 = << 415582006",
        "< 404684003 : { 363698007 = << 39057004, 116676008 = << 415582006 }",
        "< 373873005 : [1..3] 127489000 |Has active ingredient| = < 105590001",
        "< 373873005 : [0..*] 127489000 = *",
        "< 404684003 : [1..1] { 363698007 = *, 116676008 = * }",
        "< 91723000 : R 363698007 |Finding site| = < 125605004",
        "< 404684003 : 363698007 = << 39057004 OR 116676008 = << 415582006",
        "< 404684003 : (363698007 = << 39057004 AND 116676008 = << 415582006) OR 246075003 = *",
        "< 27658006 : 411116001 |Has dose form| = ( << 385045001 OR << 421720008 )",
        "<< 19829001 AND << 301867009",
        "<< 19829001 , << 301867009",
        "<< 19829001 OR << 301867009",
        "<< 19829001 MINUS << 301867009",
        "(<< 19829001 OR << 301867009) AND ^ 700043003",
        "<< 125605004 . 363698007 |Finding site|",
        "<< 125605004 . 363698007 . 272741003",
        "< 27658006 : 1142135004 |Has presentation strength numerator value| >= #250",
        "< 27658006 : 1142135004 = #0.5, 1142136003 < #-2",
        "< 27658006 : 3264475007 |CD| = \"PANADOL\"",
        "< 27658006 : 859999999102 = true",
        "<< 404684003 {{ term = \"heart att\" }}",
        "<< 404684003 {{ D term = \"hjärt\", language = sv }}",
        "<< 404684003 {{ c definitionStatus = primitive }}",
        "^ 447562003 {{ M mapTarget = \"J45.9\" }}",
        "<< 195967001 {{ +HISTORY-MIN }}",
        "/* comment */ << 404684003 /* another */",
        "(<< 404684003)",
        "<< (404684003 OR 272379006)",
        "< 404684003 : < 47429007 = *",
        "<<  763158003 : 732943007 = ( << 387517004 MINUS 387458008 )",
        "< 763158003: 411116001 = 385219001",
    ];

    const INVALID: &[&str] = &[
        "234234 << 234234",
        "",
        "<<",
        "12345",
        "<< 404684003 AND << 301867009 OR << 1234567",
        "<< 404684003 MINUS << 301867009 MINUS << 1234567",
        "!!< << 73211009",
        "< 404684003 : 363698007 = * MINUS << 72704001",
        "< 404684003 :",
        "< 404684003 : 363698007",
        "< 404684003 : 363698007 = ",
        "(<< 404684003",
        "<< 404684003 |",
        "<< 404684003 /* open",
        "< 404684003 : [1..] 363698007 = *",
        "< 404684003 : { 363698007 = *",
        "<< 404684003 {{ term = \"x }}",
        "< 27658006 : 1142135004 < 385045001",
    ];

    #[test]
    fn the_specifications_examples_are_ecl() {
        for e in VALID {
            assert_eq!(parse(e.as_bytes()), Ok(()), "{e}"); // value-free: a test constant of the ECL specification, not a message value
        }
    }

    #[test]
    fn broken_expressions_are_not() {
        for e in INVALID {
            assert_eq!(parse(e.as_bytes()), Err(Error::Syntax), "{e}"); // value-free: a test constant, not a message value
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}404684003{}", "(".repeat(10_000), ")".repeat(10_000));
        assert_eq!(parse(deep.as_bytes()), Err(Error::Limit));
    }
}
