//! What the planner is told: the roots and filters, the revelation scheme, and how a class's
//! static initialiser is chosen.

use std::fmt;
use std::str::FromStr;

use crate::pattern::{ClassFilter, MethodPattern};
#[cfg(doc)]
use crate::Planner;

/// Package of the agent's own classes (the hook class `ferrofluid/Hooks` among them),
/// never instrumented.
pub const AGENT_PACKAGE: &str = "ferrofluid/";

/// A class whose methods are never chosen, whatever the filters say. `java.lang.Object`: HotSpot
/// 17's C2 crashes compiling a retransformed `Object.<init>` that carries an exception handler
/// (SIGSEGV in `SystemDictionary::find_instance_klass` from `ciExceptionHandler::catch_klass`,
/// seen on every workload of the overhead suite), and probing the constructor every object
/// runs would cost two hook calls per allocation anyway. Calls to its methods are charged to
/// their callers.
pub const NEVER_INSTRUMENTED: &str = "java/lang/Object";

/// JFluid's revelation schemes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Scheme B: a method's direct callees are instrumented at its first invocation.
    #[default]
    Lazy,
    /// Scheme A: the transitive closure over loaded classes, instrumented up front.
    Eager,
    /// Every method of every class that passes the filters.
    Total,
}

impl Scheme {
    /// The scheme's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Lazy => "lazy",
            Scheme::Eager => "eager",
            Scheme::Total => "total",
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown scheme name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scheme `{0}` (expected lazy, eager or total)")]
pub struct UnknownScheme(pub String);

impl FromStr for Scheme {
    type Err = UnknownScheme;

    fn from_str(s: &str) -> Result<Self, UnknownScheme> {
        [Scheme::Lazy, Scheme::Eager, Scheme::Total]
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownScheme(s.to_owned()))
    }
}

/// What to profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanConfig {
    /// Root methods. Empty: the whole program, i.e. [`Scheme::Total`] whatever `scheme` says.
    pub roots: Vec<MethodPattern>,
    /// How the subgraph under the roots is revealed.
    pub scheme: Scheme,
    /// Classes that may be instrumented (roots included).
    pub filter: ClassFilter,
    /// Leave trivial methods ([`crate::model::is_trivial`]) uninstrumented, roots excepted:
    /// their few nanoseconds count in their callers' self time, where no probe cost has to be
    /// subtracted, and they are not counted. Off by default: every call is counted.
    pub skip_trivial: bool,
    /// Remove the probes of methods that turn out, as the program runs, to be called often and
    /// to take less time than their own probes ([`Planner::drop_probes`]; the agent decides
    /// which). Off by default: every call is counted.
    pub adaptive: bool,
}

impl PlanConfig {
    /// The scheme in effect: `total` when there is no root.
    pub fn effective_scheme(&self) -> Scheme {
        if self.roots.is_empty() {
            Scheme::Total
        } else {
            self.scheme
        }
    }
}

/// When the static initialiser of a class not initialised yet is chosen
/// ([`Planner::class_not_initialized`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Initialization {
    /// At once: the class was just loaded (the agent: by a thread inside a root), and its first
    /// active use (which runs the initialiser) usually follows at once, whatever triggers it (a
    /// static call or field, `new`, reflection). Instrumenting it in its own class-load hook
    /// costs no retransformation.
    Now,
    /// When a followed call (a static method or a constructor of the class or of a subtype,
    /// revealed or through a call site) or a static field access of a method whose calls are
    /// followed (a `getstatic` or `putstatic` naming the class or a subtype) would initialise
    /// it: for classes loaded before the planner, or outside every root, and not initialised,
    /// many of which never are (classes the JVM preloads from its archive, or a verifier
    /// loaded). Reflection that initialises such a class by name is reported with
    /// [`Planner::initializing_by_name`]. Report it before the class is planned
    /// ([`Planner::plan`]), which may follow calls and field accesses that initialise it.
    OnCall,
}
