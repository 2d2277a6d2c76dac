//! Root-method patterns (`com.acme.Report::render(I)V`) and class filters
//! (`--include com.acme.**`, `--exclude java.*`). The grammar is in `docs/subgraph.md`.
//!
//! Class names are stored and matched in internal form (`com/acme/Report`); both Java
//! (`com.acme.Report`) and internal spellings are accepted, `Display` prints the Java one.
//! In class patterns `*` matches within one package level and `**` across levels;
//! a pattern that is only `*` or `**` matches every class.

use std::fmt;
use std::str::FromStr;

use crate::error::{PatternError, PatternErrorKind};

/// One piece of a glob.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Piece {
    Text(String),
    /// `*`: any run of characters except `/`.
    Star,
    /// `**`: any run of characters.
    AnyStar,
}

/// A compiled glob over internal names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Glob {
    pieces: Vec<Piece>,
}

impl Glob {
    fn compile(text: &str) -> Result<Self, PatternErrorKind> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let stars = rest.len() - rest.trim_start_matches('*').len();
            match stars {
                0 => {
                    let end = rest.find('*').unwrap_or(rest.len());
                    pieces.push(Piece::Text(rest[..end].to_owned()));
                    rest = &rest[end..];
                }
                1 => {
                    pieces.push(Piece::Star);
                    rest = &rest[1..];
                }
                2 => {
                    pieces.push(Piece::AnyStar);
                    rest = &rest[2..];
                }
                _ => return Err(PatternErrorKind::TooManyStars),
            }
        }
        Ok(Glob { pieces })
    }

    fn is_literal(&self) -> bool {
        self.pieces.iter().all(|p| matches!(p, Piece::Text(_)))
    }

    fn matches(&self, s: &str) -> bool {
        match_pieces(&self.pieces, s)
    }
}

fn match_pieces(pieces: &[Piece], s: &str) -> bool {
    match pieces.split_first() {
        None => s.is_empty(),
        Some((Piece::Text(t), rest)) => s
            .strip_prefix(t.as_str())
            .is_some_and(|tail| match_pieces(rest, tail)),
        Some((star, rest)) => {
            // Try every split point; `*` stops at the first `/`.
            let limit = match star {
                Piece::Star => s.find('/').unwrap_or(s.len()),
                _ => s.len(),
            };
            (0..=limit)
                .filter(|&i| s.is_char_boundary(i))
                .any(|i| match_pieces(rest, &s[i..]))
        }
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.pieces {
            match p {
                Piece::Text(t) => f.write_str(t)?,
                Piece::Star => f.write_str("*")?,
                Piece::AnyStar => f.write_str("**")?,
            }
        }
        Ok(())
    }
}

/// A pattern over class names: `com.acme.Report`, `com.acme.*`, `com.acme.**`, `*`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClassPattern {
    /// In internal form; `None` for "every class".
    glob: Option<Glob>,
}

impl ClassPattern {
    /// The pattern that matches every class.
    pub fn any() -> Self {
        ClassPattern { glob: None }
    }

    /// Whether the class with internal name `internal_name` (`com/acme/Report`) matches.
    pub fn matches(&self, internal_name: &str) -> bool {
        self.glob.as_ref().is_none_or(|g| g.matches(internal_name))
    }

    /// The one class this pattern names, in internal form, if it has no wildcard.
    pub fn exact(&self) -> Option<String> {
        let g = self.glob.as_ref()?;
        g.is_literal().then(|| g.to_string())
    }

    fn parse(text: &str) -> Result<Self, PatternErrorKind> {
        if text.is_empty() {
            return Err(PatternErrorKind::EmptyClass);
        }
        if text == "*" || text == "**" {
            return Ok(ClassPattern::any());
        }
        if text.contains('.') && text.contains('/') {
            return Err(PatternErrorKind::MixedSeparators);
        }
        if let Some((position, ch)) = text
            .char_indices()
            .find(|&(_, c)| !(is_java_ident_char(c) || matches!(c, '.' | '/' | '*')))
        {
            return Err(PatternErrorKind::BadClassChar { ch, position });
        }
        let internal = text.replace('.', "/");
        if internal.split('/').any(str::is_empty) {
            return Err(PatternErrorKind::EmptySegment);
        }
        Ok(ClassPattern {
            glob: Some(Glob::compile(&internal)?),
        })
    }
}

impl FromStr for ClassPattern {
    type Err = PatternError;

    fn from_str(s: &str) -> Result<Self, PatternError> {
        ClassPattern::parse(s.trim()).map_err(|kind| PatternError::new(s, kind))
    }
}

impl fmt::Display for ClassPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.glob {
            None => f.write_str("*"),
            Some(g) => f.write_str(&g.to_string().replace('/', ".")),
        }
    }
}

/// A root-method pattern: `CLASS::METHOD` with an optional descriptor,
/// e.g. `com.acme.Report::render(I)V`, `com.acme.*::handle*`, `*::main`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MethodPattern {
    class: ClassPattern,
    method: Glob,
    /// In internal form.
    descriptor: Option<String>,
}

impl MethodPattern {
    /// The class part.
    pub fn class(&self) -> &ClassPattern {
        &self.class
    }

    /// The descriptor, if the pattern names one.
    pub fn descriptor(&self) -> Option<&str> {
        self.descriptor.as_deref()
    }

    /// The method name, if it has no wildcard.
    pub fn method_literal(&self) -> Option<String> {
        self.method.is_literal().then(|| self.method.to_string())
    }

    /// Whether the method name part matches `name` (class and descriptor aside).
    pub fn method_matches(&self, name: &str) -> bool {
        self.method.matches(name)
    }

    /// Whether method `name` with `descriptor` of the class `internal_class` matches.
    pub fn matches(&self, internal_class: &str, name: &str, descriptor: &str) -> bool {
        self.method.matches(name)
            && self.descriptor.as_deref().is_none_or(|d| d == descriptor)
            && self.class.matches(internal_class)
    }
}

impl FromStr for MethodPattern {
    type Err = PatternError;

    fn from_str(s: &str) -> Result<Self, PatternError> {
        parse_method_pattern(s.trim()).map_err(|kind| PatternError::new(s, kind))
    }
}

fn parse_method_pattern(s: &str) -> Result<MethodPattern, PatternErrorKind> {
    if s.is_empty() {
        return Err(PatternErrorKind::Empty);
    }
    let (class, rest) = s
        .split_once("::")
        .ok_or(PatternErrorKind::MissingMethodSeparator)?;
    let class = ClassPattern::parse(class)?;
    let (method, descriptor) = match rest.find('(') {
        Some(i) => (&rest[..i], Some(&rest[i..])),
        None => (rest, None),
    };
    if method.is_empty() {
        return Err(PatternErrorKind::EmptyMethod);
    }
    let special = method == "<init>" || method == "<clinit>";
    if !special {
        if let Some((position, ch)) = method
            .char_indices()
            .find(|&(_, c)| !(is_java_ident_char(c) || c == '*'))
        {
            return Err(PatternErrorKind::BadMethodChar { ch, position });
        }
    }
    let descriptor = descriptor
        .map(|d| {
            let internal = d.replace('.', "/");
            check_method_descriptor(&internal)
                .map(|()| internal)
                .ok_or_else(|| PatternErrorKind::BadDescriptor(d.to_owned()))
        })
        .transpose()?;
    Ok(MethodPattern {
        class,
        method: Glob::compile(method)?,
        descriptor,
    })
}

impl fmt::Display for MethodPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}::{}{}",
            self.class,
            self.method,
            self.descriptor.as_deref().unwrap_or("")
        )
    }
}

fn is_java_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// `Some(())` when `d` is a well-formed method descriptor (JVMS 4.3.3).
fn check_method_descriptor(d: &str) -> Option<()> {
    let mut rest = d.strip_prefix('(')?;
    while !rest.starts_with(')') {
        rest = field_type(rest)?;
    }
    let ret = &rest[1..];
    if ret == "V" || field_type(ret) == Some("") {
        Some(())
    } else {
        None
    }
}

/// Consumes one field type, returning the rest.
fn field_type(s: &str) -> Option<&str> {
    let first = s.chars().next()?;
    match first {
        'B' | 'C' | 'D' | 'F' | 'I' | 'J' | 'S' | 'Z' => Some(&s[1..]),
        '[' => field_type(&s[1..]),
        'L' => {
            let end = s.find(';')?;
            let name = &s[1..end];
            let ok = !name.is_empty()
                && name
                    .split('/')
                    .all(|seg| !seg.is_empty() && seg.chars().all(is_java_ident_char));
            ok.then(|| &s[end + 1..])
        }
        _ => None,
    }
}

/// `--include`/`--exclude` class filters. A class passes when it matches no exclude and,
/// if any include is given, at least one include. With no filter every class passes,
/// JDK classes included.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassFilter {
    /// Classes to keep (empty: all).
    pub include: Vec<ClassPattern>,
    /// Classes to drop; wins over `include`.
    pub exclude: Vec<ClassPattern>,
}

impl ClassFilter {
    /// Whether the class with internal name `internal_name` passes.
    pub fn allows(&self, internal_name: &str) -> bool {
        !self.exclude.iter().any(|p| p.matches(internal_name))
            && (self.include.is_empty() || self.include.iter().any(|p| p.matches(internal_name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> MethodPattern {
        s.parse().unwrap()
    }

    fn c(s: &str) -> ClassPattern {
        s.parse().unwrap()
    }

    #[test]
    fn exact_method_with_and_without_descriptor() {
        let p = m("com.acme.Report::render");
        assert!(p.matches("com/acme/Report", "render", "()V"));
        assert!(p.matches("com/acme/Report", "render", "(I)V"));
        assert!(!p.matches("com/acme/Report", "renderAll", "()V"));
        assert!(!p.matches("com/acme/Reports", "render", "()V"));
        let p = m("com.acme.Report::render(I)V");
        assert!(p.matches("com/acme/Report", "render", "(I)V"));
        assert!(!p.matches("com/acme/Report", "render", "()V"));
        assert_eq!(p.descriptor(), Some("(I)V"));
        assert_eq!(p.class().exact().as_deref(), Some("com/acme/Report"));
    }

    #[test]
    fn internal_names_and_dotted_descriptors_are_accepted() {
        let p = m("com/acme/Report::render(Ljava.lang.String;)V");
        assert!(p.matches("com/acme/Report", "render", "(Ljava/lang/String;)V"));
        assert_eq!(
            p.to_string(),
            "com.acme.Report::render(Ljava/lang/String;)V"
        );
    }

    #[test]
    fn wildcards() {
        let p = m("com.acme.*::handle*");
        assert!(p.matches("com/acme/Server", "handle", "()V"));
        assert!(p.matches("com/acme/Server", "handleGet", "()V"));
        assert!(!p.matches("com/acme/Server", "onHandle", "()V"));
        assert!(!p.matches("com/acme/web/Server", "handle", "()V"));
        let p = m("*::main");
        assert!(p.matches("Main", "main", "([Ljava/lang/String;)V"));
        assert!(p.matches("com/acme/deep/App", "main", "([Ljava/lang/String;)V"));
        assert!(p.class().exact().is_none());
    }

    #[test]
    fn single_star_is_one_level_double_star_is_any_depth() {
        let one = c("com.acme.*");
        let any = c("com.acme.**");
        for (class, in_one, in_any) in [
            ("com/acme/Report", true, true),
            ("com/acme/Outer$Inner", true, true),
            ("com/acme/web/Server", false, true),
            ("com/acme/web/deep/X", false, true),
            ("com/acmeco/X", false, false),
            ("com/Acme", false, false),
        ] {
            assert_eq!(one.matches(class), in_one, "{class} vs com.acme.*");
            assert_eq!(any.matches(class), in_any, "{class} vs com.acme.**");
        }
        let prefix = c("com.acme.Report*");
        assert!(prefix.matches("com/acme/ReportTest"));
        assert!(!prefix.matches("com/acme/Report/X"));
        let middle = c("com.**.Main");
        assert!(middle.matches("com/a/b/Main"));
        assert!(!middle.matches("org/a/Main"));
        assert!(c("*").matches("a/b/C") && c("**").matches("C"));
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "com.acme.Report::render",
            "com.acme.Report::render(I)V",
            "com.acme.*::handle*",
            "*::main",
            "com.acme.**::<init>",
            "a.B$C::<clinit>()V",
            "p.Q::m([[Ljava/lang/String;J)[I",
        ] {
            let p = m(s);
            assert_eq!(p.to_string(), s);
            assert_eq!(m(&p.to_string()), p);
        }
        assert_eq!(c("com/acme/**").to_string(), "com.acme.**");
    }

    #[test]
    fn malformed_patterns_name_the_problem() {
        use PatternErrorKind as K;
        let cases: &[(&str, PatternErrorKind)] = &[
            ("", K::Empty),
            ("com.acme.Report", K::MissingMethodSeparator),
            ("::run", K::EmptyClass),
            ("com.acme.Report::", K::EmptyMethod),
            ("com.acme.Report::(I)V", K::EmptyMethod),
            ("com..Report::run", K::EmptySegment),
            ("com.acme.::run", K::EmptySegment),
            ("com.acme/Report::run", K::MixedSeparators),
            ("com.acme.***::run", K::TooManyStars),
            (
                "com.acme.Re port::run",
                K::BadClassChar {
                    ch: ' ',
                    position: 11,
                },
            ),
            (
                "com.acme.Report::ru-n",
                K::BadMethodChar {
                    ch: '-',
                    position: 2,
                },
            ),
            (
                "com.acme.Report::<foo>",
                K::BadMethodChar {
                    ch: '<',
                    position: 0,
                },
            ),
            ("com.acme.Report::run(I", K::BadDescriptor("(I".into())),
            ("com.acme.Report::run(Q)V", K::BadDescriptor("(Q)V".into())),
            ("com.acme.Report::run()", K::BadDescriptor("()".into())),
            (
                "com.acme.Report::run(L;)V",
                K::BadDescriptor("(L;)V".into()),
            ),
            ("com.acme.Report::run()VV", K::BadDescriptor("()VV".into())),
        ];
        for (text, kind) in cases {
            let err = text.parse::<MethodPattern>().unwrap_err();
            assert_eq!(&err.kind, kind, "{text:?}");
            assert_eq!(err.pattern, *text);
        }
        let err = "com.acme.Report".parse::<MethodPattern>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid pattern `com.acme.Report`: expected CLASS::METHOD (e.g. com.acme.Report::render)"
        );
    }

    #[test]
    fn filters() {
        let none = ClassFilter::default();
        assert!(none.allows("java/util/ArrayList"));
        let f = ClassFilter {
            include: vec![c("com.acme.**"), c("java.util.*")],
            exclude: vec![c("com.acme.generated.**")],
        };
        assert!(f.allows("com/acme/Report"));
        assert!(f.allows("java/util/ArrayList"));
        assert!(!f.allows("java/util/concurrent/ConcurrentHashMap"));
        assert!(!f.allows("com/acme/generated/Stub"));
        assert!(!f.allows("org/other/X"));
        let only_exclude = ClassFilter {
            include: vec![],
            exclude: vec![c("java.**")],
        };
        assert!(only_exclude.allows("javax/swing/JFrame"));
        assert!(!only_exclude.allows("java/lang/String"));
    }
}
