//! Replaces the suite's own sections of docs/PERFORMANCE.md, between their markers, leaving the
//! rest.

pub const BEGIN: &str = "<!-- suite:begin -->";
pub const END: &str = "<!-- suite:end -->";
/// The markers of the side-by-side comparison of two builds (`run --reference`).
pub const COMPARE_BEGIN: &str = "<!-- compare:begin -->";
pub const COMPARE_END: &str = "<!-- compare:end -->";

/// `doc` with the text between the suite's markers replaced by `section` (appended with markers
/// if absent).
pub fn replace_section(doc: &str, section: &str) -> String {
    replace_between(doc, BEGIN, END, section)
}

/// `doc` with the text between `begin` and `end` replaced by `section` (appended with the markers
/// if absent).
pub fn replace_between(doc: &str, begin: &str, end: &str, section: &str) -> String {
    let body = format!("{begin}\n{}\n{end}", section.trim_end());
    match (doc.find(begin), doc.find(end)) {
        (Some(b), Some(e)) if b < e => format!("{}{body}{}", &doc[..b], &doc[e + end.len()..]),
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
    fn each_pair_of_markers_has_its_own_section() {
        let doc = format!("{BEGIN}\nt\n{END}\n{COMPARE_BEGIN}\n{COMPARE_END}\nend\n");
        assert_eq!(
            replace_between(&doc, COMPARE_BEGIN, COMPARE_END, "c\n"),
            format!("{BEGIN}\nt\n{END}\n{COMPARE_BEGIN}\nc\n{COMPARE_END}\nend\n")
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
