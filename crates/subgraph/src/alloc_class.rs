//! Patterns over allocated classes (`--alloc-class`): which allocation sites of the `alloc`
//! mode get probes, by the class they allocate. A pattern is a class pattern
//! ([`ClassPattern`]: `com.acme.Cache$Entry`, `com.acme.**`) followed by one `[]` per array
//! dimension, as Java writes array types: `byte[]`, `com.acme.Entry[]`, `java.lang.**[][]`.
//! A pattern matches arrays of exactly its dimension: `com.acme.**` no array, `*[]` every
//! one-dimensional array (of primitives too), `int[][]` two-dimensional `int` arrays alone;
//! `*` (or `**`) alone matches every allocated class, arrays included.

use std::fmt;
use std::str::FromStr;

use crate::error::{PatternError, PatternErrorKind};
use crate::pattern::ClassPattern;

/// A pattern over allocated classes: an element class pattern and an array dimension.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AllocClassPattern {
    element: ClassPattern,
    dims: usize,
}

/// Element names of primitive arrays, by descriptor character.
const PRIMITIVES: [(u8, &str); 8] = [
    (b'Z', "boolean"),
    (b'B', "byte"),
    (b'C', "char"),
    (b'S', "short"),
    (b'I', "int"),
    (b'J', "long"),
    (b'F', "float"),
    (b'D', "double"),
];

impl AllocClassPattern {
    /// Whether an allocation of `type_name` matches: an internal class name
    /// (`com/acme/Entry`, what `new` allocates) or an array descriptor (`[B`,
    /// `[Lcom/acme/Entry;`, `[[I`, what the array instructions allocate).
    pub fn matches(&self, type_name: &str) -> bool {
        if self.is_every_class() {
            return true;
        }
        let dims = type_name.bytes().take_while(|&b| b == b'[').count();
        if dims != self.dims {
            return false;
        }
        let element = &type_name[dims..];
        if dims == 0 {
            return self.element.matches(element);
        }
        match element.strip_prefix('L').and_then(|e| e.strip_suffix(';')) {
            Some(class) => self.element.matches(class),
            None => PRIMITIVES
                .iter()
                .find(|(c, _)| element.as_bytes() == [*c])
                .is_some_and(|(_, name)| self.element.matches(name)),
        }
    }

    /// Whether this is `*` (or `**`): every allocated class, arrays included.
    pub fn is_every_class(&self) -> bool {
        self.dims == 0 && self.element == ClassPattern::any()
    }

    /// Whether any of `patterns` matches `type_name`; true when there is none (no selection:
    /// every allocated class).
    pub fn any_matches(patterns: &[AllocClassPattern], type_name: &str) -> bool {
        patterns.is_empty() || patterns.iter().any(|p| p.matches(type_name))
    }
}

impl FromStr for AllocClassPattern {
    type Err = PatternError;

    fn from_str(s: &str) -> Result<Self, PatternError> {
        let text = s.trim();
        let mut element = text;
        let mut dims = 0;
        while let Some(e) = element.strip_suffix("[]") {
            element = e;
            dims += 1;
        }
        if element.is_empty() {
            return Err(PatternError::new(s, PatternErrorKind::EmptyClass));
        }
        let element: ClassPattern = element.parse().map_err(|e: PatternError| {
            // A stray bracket (`byte[`, `[B`) is named as the class pattern's error would.
            PatternError::new(s, e.kind)
        })?;
        Ok(AllocClassPattern { element, dims })
    }
}

impl fmt::Display for AllocClassPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.element, "[]".repeat(self.dims))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> AllocClassPattern {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn classes_and_arrays_match_as_java_writes_them() {
        let cases: &[(&str, &str, bool)] = &[
            ("com.acme.Cache$Entry", "com/acme/Cache$Entry", true),
            ("com.acme.Cache$Entry", "com/acme/Cache", false),
            ("com.acme.Cache$Entry", "[Lcom/acme/Cache$Entry;", false),
            ("com.acme.Cache$Entry[]", "[Lcom/acme/Cache$Entry;", true),
            ("com.acme.Cache$Entry[]", "com/acme/Cache$Entry", false),
            ("com.acme.Cache$Entry[]", "[[Lcom/acme/Cache$Entry;", false),
            ("com.acme.**", "com/acme/a/B", true),
            ("com.acme.**", "[Lcom/acme/a/B;", false),
            ("com.acme.*", "com/acme/a/B", false),
            ("byte[]", "[B", true),
            ("byte[]", "[Z", false),
            ("byte[]", "byte", false),
            ("long[]", "[J", true),
            ("int[][]", "[[I", true),
            ("int[][]", "[I", false),
            ("*[]", "[D", true),
            ("*[]", "[Ljava/lang/String;", true),
            ("*[]", "[Ljava/lang/a/B;", true),
            ("java.lang.*[]", "[Ljava/lang/a/B;", false),
            ("java.lang.**[]", "[Ljava/lang/a/B;", true),
            ("*", "Entry", true),
            ("*", "[I", true),
            ("**", "[[Ljava/lang/String;", true),
            ("*[]", "[[I", false),
            ("java/lang/String[][]", "[[Ljava/lang/String;", true),
        ];
        for &(pattern, type_name, expected) in cases {
            assert_eq!(
                p(pattern).matches(type_name),
                expected,
                "{pattern} {type_name}"
            );
        }
    }

    #[test]
    fn no_pattern_selects_every_class() {
        assert!(AllocClassPattern::any_matches(&[], "[B"));
        let some = [p("a.B"), p("char[]")];
        assert!(AllocClassPattern::any_matches(&some, "[C"));
        assert!(AllocClassPattern::any_matches(&some, "a/B"));
        assert!(!AllocClassPattern::any_matches(&some, "a/C"));
        assert!(p("**").is_every_class() && p("*").is_every_class());
        assert!(!p("*[]").is_every_class() && !p("a.*").is_every_class());
    }

    #[test]
    fn prints_as_parsed_and_refuses_malformed_ones() {
        for s in ["com.acme.Cache$Entry", "byte[]", "com.acme.**[][]", "*"] {
            assert_eq!(p(s).to_string(), s);
        }
        assert_eq!(p("com/acme/E[]").to_string(), "com.acme.E[]");
        let error = |s: &str| s.parse::<AllocClassPattern>().unwrap_err().to_string();
        assert_eq!(
            error("[]"),
            "invalid pattern `[]`: the class part is empty (use `*` for any class)"
        );
        assert_eq!(
            error("byte["),
            "invalid pattern `byte[`: character '[' at 4 cannot appear in a class name"
        );
    }
}
