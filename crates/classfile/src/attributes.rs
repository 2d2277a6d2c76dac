//! attributes (in progress)
