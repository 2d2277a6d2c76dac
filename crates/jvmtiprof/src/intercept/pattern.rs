//! Method patterns: `Class::method` with `*` wildcards, and an optional descriptor.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// Which methods to intercept.
///
/// - `com.acme.Service::handle`: one method name in one class (every overload);
/// - `com.acme.Service::handle(Ljava/lang/String;)V`: one overload;
/// - `com.acme.*::handle*`: wildcards; `*` matches any run of characters, package separators
///   included;
/// - `com.acme.Service`: every method of the class (constructors and static initialisers only
///   when named: `com.acme.Service::<init>`).
///
/// Class names are accepted in Java form (`java.util.HashMap$Node`) or internal form
/// (`java/util/HashMap$Node`).
///
/// ```
/// use jvmtiprof::intercept::MethodPattern;
/// let p: MethodPattern = "java.util.*Map::get".parse().unwrap();
/// assert!(p.matches("java/util/HashMap", "get", "(Ljava/lang/Object;)Ljava/lang/Object;"));
/// assert!(!p.matches("java/util/HashMap", "put", "(Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;"));
/// assert!(p.matches_class("java/util/TreeMap"));
/// let all: MethodPattern = "a.B".parse().unwrap();
/// assert!(all.matches("a/B", "run", "()V") && !all.matches("a/B", "<init>", "()V"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodPattern {
    text: String,
    /// Internal-form class glob.
    class: String,
    method: String,
    descriptor: Option<String>,
}

impl MethodPattern {
    /// Whether the class (internal name) may hold matching methods.
    pub fn matches_class(&self, class: &str) -> bool {
        glob(&self.class, class)
    }

    /// Whether method `name` with `descriptor` of `class` (internal name) matches.
    pub fn matches(&self, class: &str, name: &str, descriptor: &str) -> bool {
        if !self.matches_class(class) {
            return false;
        }
        if name.starts_with('<') && self.method != name {
            return false;
        }
        glob(&self.method, name) && self.descriptor.as_deref().is_none_or(|d| d == descriptor)
    }
}

impl FromStr for MethodPattern {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let bad = |reason: &str| Error::Pattern {
            pattern: text.to_owned(),
            reason: reason.to_owned(),
        };
        let text_trimmed = text.trim();
        if text_trimmed.is_empty() {
            return Err(bad("empty"));
        }
        let (class, member) = match text_trimmed.split_once("::") {
            Some((c, m)) => (c, m),
            None => (text_trimmed, "*"),
        };
        if class.is_empty() {
            return Err(bad("no class (write Class::method, or *::method)"));
        }
        if class.contains(['(', ')', ';', ' ', ':']) {
            return Err(bad(
                "the class part holds a character class names cannot have",
            ));
        }
        let (method, descriptor) = match member.find('(') {
            Some(i) => (&member[..i], Some(&member[i..])),
            None => (member, None),
        };
        if method.is_empty() {
            return Err(bad("no method name after '::'"));
        }
        if method.contains(['.', ';', '[', '/', ' ', ')']) {
            return Err(bad(
                "the method name holds a character method names cannot have",
            ));
        }
        if let Some(d) = descriptor {
            if !d.contains(')') || d.contains('*') {
                return Err(bad(
                    "the descriptor must be complete, e.g. (ILjava/lang/String;)V",
                ));
            }
        }
        Ok(MethodPattern {
            text: text_trimmed.to_owned(),
            class: class.replace('.', "/"),
            method: method.to_owned(),
            descriptor: descriptor.map(str::to_owned),
        })
    }
}

impl fmt::Display for MethodPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `*`-only glob matching, iterative (no backtracking blow-up).
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("*", ""));
        assert!(glob("a*c", "abbbc"));
        assert!(glob("a*c*", "abbbcd"));
        assert!(!glob("a*c", "abbbd"));
        assert!(glob("*Map", "java/util/HashMap"));
        assert!(!glob("java/util/*Map", "java/util/HashMapX"));
    }

    #[test]
    fn patterns() {
        let p: MethodPattern = "a.b.C::run(I)V".parse().unwrap();
        assert!(p.matches("a/b/C", "run", "(I)V"));
        assert!(!p.matches("a/b/C", "run", "()V"));
        let p: MethodPattern = "a/b/C::<init>".parse().unwrap();
        assert!(p.matches("a/b/C", "<init>", "()V"));
        assert!(!p.matches("a/b/C", "<clinit>", "()V"));
        let p: MethodPattern = "*::*".parse().unwrap();
        assert!(p.matches("x/Y", "z", "()V"));
        assert!(!p.matches("x/Y", "<clinit>", "()V"));
        for bad in [
            "",
            "::run",
            "a.B::",
            "a.B::run(",
            "a.B::r.un",
            "a B::run",
            "a.B::run(*)V",
        ] {
            assert!(bad.parse::<MethodPattern>().is_err(), "{bad}");
        }
        assert_eq!(
            "a.B::".parse::<MethodPattern>().unwrap_err().to_string(),
            "invalid method pattern 'a.B::': no method name after '::'"
        );
    }
}
