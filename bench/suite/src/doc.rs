//! Replaces the suite's own section of docs/PERFORMANCE.md, between its markers, leaving the rest.

pub const BEGIN: &str = "<!-- suite:begin -->";
pub const END: &str = "<!-- suite:end -->";

/// `doc` with the text between the markers replaced by `section` (appended with markers if absent).
pub fn replace_section(doc: &str, section: &str) -> String {
    let body = format!("{BEGIN}\n{}\n{END}", section.trim_end());
    match (doc.find(BEGIN), doc.find(END)) {
        (Some(b), Some(e)) if b < e => format!("{}{body}{}", &doc[..b], &doc[e + END.len()..]),
        _ => format!("{}\n\n{body}\n", doc.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_section_between_the_markers_changes() {
        let doc = format!("# P\n\nintro\n\n{BEGIN}\nold table\n{END}\n\n## Later\ntext\n");
        assert_eq!(
            replace_section(&doc, "new table\n"),
            format!("# P\n\nintro\n\n{BEGIN}\nnew table\n{END}\n\n## Later\ntext\n")
        );
    }

    #[test]
    fn the_section_is_appended_when_missing() {
        assert_eq!(
            replace_section("# P\n\nintro\n", "t"),
            format!("# P\n\nintro\n\n{BEGIN}\nt\n{END}\n")
        );
    }
}
