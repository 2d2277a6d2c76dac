//! Report writers (being written).
