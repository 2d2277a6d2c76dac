//! Typed errors: malformed patterns and unreadable classes.

use thiserror::Error;

/// A pattern that could not be parsed: the text as given and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid pattern `{pattern}`: {kind}")]
pub struct PatternError {
    /// The pattern as given.
    pub pattern: String,
    /// What is wrong.
    pub kind: PatternErrorKind,
}

impl PatternError {
    pub(crate) fn new(pattern: &str, kind: PatternErrorKind) -> Self {
        PatternError {
            pattern: pattern.to_owned(),
            kind,
        }
    }
}

/// What is wrong with a pattern. Positions are character offsets within the class or
/// method part.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PatternErrorKind {
    /// Nothing given.
    #[error("the pattern is empty")]
    Empty,
    /// No `::` between class and method.
    #[error("expected CLASS::METHOD (e.g. com.acme.Report::render)")]
    MissingMethodSeparator,
    /// Nothing before `::`.
    #[error("the class part is empty (use `*` for any class)")]
    EmptyClass,
    /// Nothing after `::`.
    #[error("the method part is empty (use `*` for any method)")]
    EmptyMethod,
    /// Two separators in a row, or one at either end.
    #[error("empty package or class name between separators")]
    EmptySegment,
    /// Both `.` and `/` in one class name.
    #[error("use either dots (com.acme.Report) or slashes (com/acme/Report), not both")]
    MixedSeparators,
    /// `***` or longer.
    #[error("at most two `*` in a row (`*` one package level, `**` any depth)")]
    TooManyStars,
    /// A character that cannot be in a class name.
    #[error("character {ch:?} at {position} cannot appear in a class name")]
    BadClassChar {
        /// The character.
        ch: char,
        /// Its position in the class part.
        position: usize,
    },
    /// A character that cannot be in a method name.
    #[error("character {ch:?} at {position} cannot appear in a method name (only <init> and <clinit> use < >)")]
    BadMethodChar {
        /// The character.
        ch: char,
        /// Its position in the method part.
        position: usize,
    },
    /// Not a JVM method descriptor.
    #[error("`{0}` is not a method descriptor such as (ILjava/lang/String;)V")]
    BadDescriptor(String),
}

/// Why the planner could not take a class or a request.
#[derive(Debug, Error)]
pub enum SubgraphError {
    /// The class bytes could not be read.
    #[error("cannot read class: {0}")]
    Class(#[from] ferrofluid_classfile::ClassError),
    /// A method named by the agent is not in any loaded class.
    #[error("no loaded method {class}.{name}{descriptor}")]
    UnknownMethod {
        /// Internal class name.
        class: String,
        /// Method name.
        name: String,
        /// Method descriptor.
        descriptor: String,
    },
    /// A method id the planner never handed out.
    #[error("unknown method id {0}")]
    UnknownId(u32),
    /// A receiver-site id the planner never handed out.
    #[error("unknown receiver site {0}")]
    UnknownSite(u32),
}
