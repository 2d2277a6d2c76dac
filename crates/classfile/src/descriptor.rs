//! descriptor (in progress)
