//! FHIRPath (N1, as used by FHIR R4) lexer and parser: expression text to [`Expr`].
//!
//! Covers the grammar the core invariants use: literals (boolean, string, integer, decimal,
//! date/time, quantity with a quoted unit, `{}`), identifiers (also backtick-delimited),
//! `$this`/`$index`/`$total`, `%variables`, member access, indexers, function calls, unary
//! minus and plus, and every binary operator with the specification's precedence
//! (`. []`, unary, `* / div mod`, `+ - &`, `is as`, `|`, `< > <= >=`, `= ~ != !~`,
//! `in contains`, `and`, `or xor`, `implies`).
//!
//! A function is only accepted when the evaluator implements it: an expression that names
//! another function does not compile, and its invariant is reported as unchecked.
//!
//! What it does not do: evaluate (see `eval`), or accept the input of a message: expressions
//! come only from the core definitions.

use std::fmt;

/// A binary operator.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Mul,
    Div,
    IntDiv,
    Mod,
    Add,
    Sub,
    Concat,
    Union,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Equiv,
    Ne,
    NotEquiv,
    In,
    Contains,
    And,
    Or,
    Xor,
    Implies,
}

/// A parsed expression.
pub enum Expr {
    /// `{}`
    Empty,
    /// `true`/`false`
    Bool(bool),
    /// `'text'`
    Str(String),
    /// `12`
    Int(i64),
    /// `1.5` (source text kept)
    Dec(String),
    /// `@2020-01-01T10:00:00Z`, `@T10:00` (text after `@`)
    DateTime(String),
    /// `4 'mg'`
    Quantity(String, String),
    /// `$this`
    This,
    /// `$index`
    Index,
    /// `%name`
    Var(String),
    /// An identifier evaluated on the focus.
    Ident(String),
    /// `a.b`
    Member(Box<Expr>, String),
    /// `a.f(args)`, or `f(args)` on the focus when the target is `None`.
    Call(Option<Box<Expr>>, Func, Vec<Expr>),
    /// `a[i]`
    Indexer(Box<Expr>, Box<Expr>),
    /// `-a`
    Neg(Box<Expr>),
    /// `a op b`
    Binary(Op, Box<Expr>, Box<Expr>),
    /// `a is T`
    Is(Box<Expr>, String),
    /// `a as T`
    As(Box<Expr>, String),
}

impl fmt::Debug for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Expr")
    }
}

/// A function the evaluator implements.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Func {
    Empty,
    Exists,
    Not,
    Count,
    Where,
    All,
    Select,
    IsDistinct,
    Distinct,
    First,
    Last,
    Tail,
    Single,
    Skip,
    Take,
    StartsWith,
    EndsWith,
    ContainsStr,
    Matches,
    ReplaceMatches,
    Replace,
    Length,
    Upper,
    Lower,
    IndexOf,
    Substring,
    HasValue,
    Trace,
    Descendants,
    Children,
    ToInteger,
    ToStr,
    ToDecimal,
    Iif,
    HtmlChecks,
    As,
    Is,
    OfType,
    AllFalse,
    AllTrue,
    AnyTrue,
    AnyFalse,
    Combine,
    Union,
    Intersect,
    Exclude,
    Resolve,
    Extension,
    MemberOf,
}

impl Func {
    fn from_name(name: &str) -> Option<Func> {
        Some(match name {
            "empty" => Func::Empty,
            "exists" => Func::Exists,
            "not" => Func::Not,
            "count" => Func::Count,
            "where" => Func::Where,
            "all" => Func::All,
            "select" => Func::Select,
            "isDistinct" => Func::IsDistinct,
            "distinct" => Func::Distinct,
            "first" => Func::First,
            "last" => Func::Last,
            "tail" => Func::Tail,
            "single" => Func::Single,
            "skip" => Func::Skip,
            "take" => Func::Take,
            "startsWith" => Func::StartsWith,
            "endsWith" => Func::EndsWith,
            "contains" => Func::ContainsStr,
            "matches" => Func::Matches,
            "replaceMatches" => Func::ReplaceMatches,
            "replace" => Func::Replace,
            "length" => Func::Length,
            "upper" => Func::Upper,
            "lower" => Func::Lower,
            "indexOf" => Func::IndexOf,
            "substring" => Func::Substring,
            "hasValue" => Func::HasValue,
            "trace" => Func::Trace,
            "descendants" => Func::Descendants,
            "children" => Func::Children,
            "toInteger" => Func::ToInteger,
            "toString" => Func::ToStr,
            "toDecimal" => Func::ToDecimal,
            "iif" => Func::Iif,
            "htmlChecks" | "htmlchecks" => Func::HtmlChecks,
            "as" => Func::As,
            "is" => Func::Is,
            "ofType" => Func::OfType,
            "allFalse" => Func::AllFalse,
            "allTrue" => Func::AllTrue,
            "anyTrue" => Func::AnyTrue,
            "anyFalse" => Func::AnyFalse,
            "combine" => Func::Combine,
            "union" => Func::Union,
            "intersect" => Func::Intersect,
            "exclude" => Func::Exclude,
            "resolve" => Func::Resolve,
            "extension" => Func::Extension,
            "memberOf" => Func::MemberOf,
            _ => return None,
        })
    }
}

/// Why an expression does not compile (no text: expressions are schema data, but keep it small).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CompileError {
    /// Not in the grammar.
    Syntax,
    /// A function the evaluator does not implement.
    UnsupportedFunction,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Num(String),
    DateTime(String),
    Var(String),
    Dollar(String),
    Sym(&'static str),
}

fn lex(src: &str) -> Result<Vec<Tok>, CompileError> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(src[s..i].to_string()));
            continue;
        }
        if c == b'`' {
            let s = i + 1;
            i = s;
            while i < b.len() && b[i] != b'`' {
                i += 1;
            }
            if i >= b.len() {
                return Err(CompileError::Syntax);
            }
            out.push(Tok::Ident(src[s..i].to_string()));
            i += 1;
            continue;
        }
        if c == b'\'' {
            i += 1;
            let mut s = String::new();
            loop {
                let Some(&d) = b.get(i) else { return Err(CompileError::Syntax) };
                match d {
                    b'\'' => {
                        i += 1;
                        break;
                    }
                    b'\\' => {
                        let e = *b.get(i + 1).ok_or(CompileError::Syntax)?;
                        i += 2;
                        match e {
                            b'n' => s.push('\n'),
                            b'r' => s.push('\r'),
                            b't' => s.push('\t'),
                            b'f' => s.push('\u{c}'),
                            b'u' => {
                                let hex = src.get(i..i + 4).ok_or(CompileError::Syntax)?;
                                let cp = u32::from_str_radix(hex, 16).map_err(|_| CompileError::Syntax)?;
                                s.push(char::from_u32(cp).ok_or(CompileError::Syntax)?);
                                i += 4;
                            }
                            other => s.push(char::from(other)),
                        }
                    }
                    _ => {
                        let ch = src[i..].chars().next().ok_or(CompileError::Syntax)?;
                        s.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            out.push(Tok::Str(s));
            continue;
        }
        if c.is_ascii_digit() {
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            out.push(Tok::Num(src[s..i].to_string()));
            continue;
        }
        if c == b'@' {
            let s = i + 1;
            i = s;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'-' | b':' | b'.' | b'+')) {
                i += 1;
            }
            out.push(Tok::DateTime(src[s..i].to_string()));
            continue;
        }
        if c == b'%' || c == b'$' {
            let s = i + 1;
            i = s;
            if b.get(i) == Some(&b'`') || b.get(i) == Some(&b'\'') {
                let q = b[i];
                i += 1;
                let s2 = i;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
                let name = src.get(s2..i).ok_or(CompileError::Syntax)?.to_string();
                i += 1;
                out.push(if c == b'%' { Tok::Var(name) } else { Tok::Dollar(name) });
                continue;
            }
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'-') {
                i += 1;
            }
            let name = src[s..i].to_string();
            out.push(if c == b'%' { Tok::Var(name) } else { Tok::Dollar(name) });
            continue;
        }
        let two = src.get(i..i + 2).unwrap_or("");
        let sym: &'static str = match two {
            "<=" => "<=",
            ">=" => ">=",
            "!=" => "!=",
            "!~" => "!~",
            _ => match c {
                b'.' => ".",
                b'[' => "[",
                b']' => "]",
                b'(' => "(",
                b')' => ")",
                b'{' => "{",
                b'}' => "}",
                b',' => ",",
                b'+' => "+",
                b'-' => "-",
                b'*' => "*",
                b'/' => "/",
                b'|' => "|",
                b'&' => "&",
                b'=' => "=",
                b'~' => "~",
                b'<' => "<",
                b'>' => ">",
                _ => return Err(CompileError::Syntax),
            },
        };
        i += sym.len();
        out.push(Tok::Sym(sym));
    }
    Ok(out)
}

/// Compiles an expression.
pub fn compile(src: &str) -> Result<Expr, CompileError> {
    let toks = lex(src)?;
    let mut p = Parser { toks, i: 0, depth: 0 };
    let e = p.expr(0)?;
    if p.i != p.toks.len() {
        return Err(CompileError::Syntax);
    }
    Ok(e)
}

struct Parser {
    toks: Vec<Tok>,
    i: usize,
    depth: u32,
}

/// Binding power of an infix operator token (higher binds tighter).
fn infix(t: &Tok) -> Option<(u8, Option<Op>)> {
    Some(match t {
        Tok::Sym("*") => (9, Some(Op::Mul)),
        Tok::Sym("/") => (9, Some(Op::Div)),
        Tok::Ident(s) if s == "div" => (9, Some(Op::IntDiv)),
        Tok::Ident(s) if s == "mod" => (9, Some(Op::Mod)),
        Tok::Sym("+") => (8, Some(Op::Add)),
        Tok::Sym("-") => (8, Some(Op::Sub)),
        Tok::Sym("&") => (8, Some(Op::Concat)),
        Tok::Ident(s) if s == "is" || s == "as" => (7, None),
        Tok::Sym("|") => (6, Some(Op::Union)),
        Tok::Sym("<") => (5, Some(Op::Lt)),
        Tok::Sym(">") => (5, Some(Op::Gt)),
        Tok::Sym("<=") => (5, Some(Op::Le)),
        Tok::Sym(">=") => (5, Some(Op::Ge)),
        Tok::Sym("=") => (4, Some(Op::Eq)),
        Tok::Sym("~") => (4, Some(Op::Equiv)),
        Tok::Sym("!=") => (4, Some(Op::Ne)),
        Tok::Sym("!~") => (4, Some(Op::NotEquiv)),
        Tok::Ident(s) if s == "in" => (3, Some(Op::In)),
        Tok::Ident(s) if s == "contains" => (3, Some(Op::Contains)),
        Tok::Ident(s) if s == "and" => (2, Some(Op::And)),
        Tok::Ident(s) if s == "or" => (1, Some(Op::Or)),
        Tok::Ident(s) if s == "xor" => (1, Some(Op::Xor)),
        Tok::Ident(s) if s == "implies" => (0, Some(Op::Implies)),
        _ => return None,
    })
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i)
    }

    fn eat(&mut self, sym: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Sym(s)) if *s == sym) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, sym: &str) -> Result<(), CompileError> {
        if self.eat(sym) { Ok(()) } else { Err(CompileError::Syntax) }
    }

    fn expr(&mut self, min_bp: u8) -> Result<Expr, CompileError> {
        self.depth += 1;
        if self.depth > 200 {
            return Err(CompileError::Syntax);
        }
        let mut lhs = self.unary()?;
        while let Some(tok) = self.peek() {
            let Some((bp, op)) = infix(tok) else { break };
            if bp < min_bp {
                break;
            }
            let word = match tok {
                Tok::Ident(s) => s.clone(),
                _ => String::new(),
            };
            self.i += 1;
            lhs = match op {
                Some(op) => {
                    let rhs = self.expr(bp + 1)?;
                    Expr::Binary(op, Box::new(lhs), Box::new(rhs))
                }
                None => {
                    let ty = self.type_specifier()?;
                    if word == "is" { Expr::Is(Box::new(lhs), ty) } else { Expr::As(Box::new(lhs), ty) }
                }
            };
        }
        self.depth -= 1;
        Ok(lhs)
    }

    fn type_specifier(&mut self) -> Result<String, CompileError> {
        let mut name = match self.toks.get(self.i) {
            Some(Tok::Ident(s)) => s.clone(),
            _ => return Err(CompileError::Syntax),
        };
        self.i += 1;
        // `FHIR.Patient`, `System.Boolean`: keep the last part.
        while matches!(self.peek(), Some(Tok::Sym("."))) {
            if let Some(Tok::Ident(s)) = self.toks.get(self.i + 1) {
                name = s.clone();
                self.i += 2;
            } else {
                break;
            }
        }
        Ok(name)
    }

    fn unary(&mut self) -> Result<Expr, CompileError> {
        if self.eat("-") {
            let e = self.unary()?;
            return Ok(Expr::Neg(Box::new(e)));
        }
        if self.eat("+") {
            return self.unary();
        }
        let mut e = self.term()?;
        loop {
            if self.eat(".") {
                let name = match self.toks.get(self.i) {
                    Some(Tok::Ident(s)) => s.clone(),
                    _ => return Err(CompileError::Syntax),
                };
                self.i += 1;
                if self.eat("(") {
                    let (f, args) = self.call_args(&name)?;
                    e = Expr::Call(Some(Box::new(e)), f, args);
                } else {
                    e = Expr::Member(Box::new(e), name);
                }
            } else if self.eat("[") {
                let idx = self.expr(0)?;
                self.expect("]")?;
                e = Expr::Indexer(Box::new(e), Box::new(idx));
            } else {
                break;
            }
        }
        Ok(e)
    }

    fn call_args(&mut self, name: &str) -> Result<(Func, Vec<Expr>), CompileError> {
        let f = Func::from_name(name).ok_or(CompileError::UnsupportedFunction)?;
        let mut args = Vec::new();
        if !self.eat(")") {
            loop {
                // Type arguments (`ofType(Patient)`, `as(canonical)`) parse as identifiers.
                args.push(self.expr(0)?);
                if self.eat(")") {
                    break;
                }
                self.expect(",")?;
            }
        }
        Ok((f, args))
    }

    fn term(&mut self) -> Result<Expr, CompileError> {
        let Some(tok) = self.toks.get(self.i).cloned() else { return Err(CompileError::Syntax) };
        self.i += 1;
        Ok(match tok {
            Tok::Sym("(") => {
                let e = self.expr(0)?;
                self.expect(")")?;
                e
            }
            Tok::Sym("{") => {
                self.expect("}")?;
                Expr::Empty
            }
            Tok::Str(s) => Expr::Str(s),
            Tok::Num(n) => {
                // A quantity: number followed by a unit string or a calendar word.
                if let Some(Tok::Str(unit)) = self.peek().cloned() {
                    self.i += 1;
                    return Ok(Expr::Quantity(n, unit));
                }
                if n.contains('.') {
                    Expr::Dec(n)
                } else {
                    n.parse().map(Expr::Int).map_err(|_| CompileError::Syntax)?
                }
            }
            Tok::DateTime(d) => Expr::DateTime(d),
            Tok::Var(v) => Expr::Var(v),
            Tok::Dollar(d) => match d.as_str() {
                "this" => Expr::This,
                "index" => Expr::Index,
                // `$` alone names nothing: not in the grammar.
                "" => return Err(CompileError::Syntax),
                _ => return Err(CompileError::UnsupportedFunction),
            },
            Tok::Ident(name) => match name.as_str() {
                "true" => Expr::Bool(true),
                "false" => Expr::Bool(false),
                _ if self.eat("(") => {
                    let (f, args) = self.call_args(&name)?;
                    Expr::Call(None, f, args)
                }
                _ => Expr::Ident(name),
            },
            Tok::Sym(_) => return Err(CompileError::Syntax),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_the_core_shapes() {
        for src in [
            "hasValue() or (children().count() > id.count())",
            "contained.where((('#'+id in (%resource.descendants().reference | %resource.descendants().as(canonical))) or descendants().where(reference = '#').exists()).not()).trace('unmatched', id).empty()",
            "text.`div`.exists()",
            "name.matches('[A-Z]([A-Za-z0-9_]){0,254}')",
            "probability is decimal implies (probability as decimal) <= 100",
            "type = 'document' implies entry.first().resource.is(Composition)",
            "-1 < 2 and 4 'mg' = 4 'mg' and @2020-01-01 < @2021",
        ] {
            assert!(compile(src).is_ok(), "{src}");
        }
        assert_eq!(compile("a.conformsTo('x')").err(), Some(CompileError::UnsupportedFunction));
        assert!(compile("code.memberOf('http://example.org/ValueSet/x')").is_ok());
        assert_eq!(compile("a..b").err(), Some(CompileError::Syntax));
    }
}
