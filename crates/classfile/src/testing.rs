//! testing (in progress)
