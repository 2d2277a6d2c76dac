//! What ferrofluid and its agent say to each other.
//!
//! - [`AgentOptions`]: the one grammar of the agent's option string, as given to
//!   `-agentpath:libferrofluid_agent.so=OPTIONS` or to an attach `load` command
//!   (`root=com.acme.Foo::bar,scheme=lazy,file=out.json`). The CLI only builds values of this type and
//!   prints them with `Display`; an `instrument` request carries the same struct, and it says
//!   which options each [`Mode`] takes ([`mode_options`]). Documented in `docs/agent-options.md`.
//! - [`OPTIONS`]: every option declared once (key, how the command line takes it, help): the
//!   grammar's keys and the CLI's `--KEY` flags are made from it.
//! - [`control`]: the versioned request/response messages of the control socket and their
//!   length-prefixed JSON framing.
//! - [`socket_path`]: binding and reaching that socket at a path of any length.

pub mod control;
mod duration;
mod option_table;
mod options;
pub mod push;
mod serde_str;
pub mod socket_path;

pub use duration::{format_duration, parse_duration};
pub use ferrofluid_subgraph::PatternError;
pub use option_table::{AgentOption, Takes, OPTIONS};
pub use options::{
    at_load_only, mode_options, mode_unavailable, AgentOptions, AllocClassPattern, Blocks,
    ClassFilter, ClassPattern, MethodPattern, Mode, OptionsError, Record, Reveal, Scheme, Timing,
    AGENT_MODES, COMMON_KEYS, DEFAULT_REGION_LAST, DEFAULT_SAMPLE_INTERVAL, KEYS, MAX_REGION_LAST,
    MAX_SAMPLE_INTERVAL, MIN_SAMPLE_INTERVAL,
};
