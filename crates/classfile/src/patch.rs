//! patch (in progress)
