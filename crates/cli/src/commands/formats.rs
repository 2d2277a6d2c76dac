//! The output formats as the command line shows them: help texts, `--format`'s values, all read
//! from the report crate's one table ([`ferrofluid_report::FORMATS`]).

use clap::builder::PossibleValue;
use ferrofluid_report::{Format, FORMATS};

/// `ferrofluid --help`'s line for `report`.
pub(crate) fn report_about() -> String {
    format!(
        "Convert a saved JSON profile to another format ({}), or serve it in the live web UI \
         (--ui)",
        Format::names()
    )
}

/// The help of `-o` for a command that writes its report `when`, then `more`.
pub(crate) fn output_help(when: &str, more: &str) -> String {
    format!(
        "Write the report here {when}, in the format the file's extension names (see Formats \
         below; `-`: text to the terminal). {more}"
    )
}

/// The list of formats shown after a command's own help.
pub(crate) fn formats_help() -> String {
    format!(
        "Formats, by the extension of the output file:\n{}\n  {:<26}the live web UI, while \
         profiling or of a saved profile (docs/ui.md)",
        Format::help_lines(),
        "--ui [ADDR]"
    )
}

/// A value of `--format`: a format of the table, by its name or an alias.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatArg(pub Format);

/// Every value of `--format`, in the table's order.
static FORMAT_ARGS: std::sync::LazyLock<Vec<FormatArg>> =
    std::sync::LazyLock::new(|| FORMATS.iter().map(|f| FormatArg(f.format)).collect());

impl clap::ValueEnum for FormatArg {
    fn value_variants<'a>() -> &'a [Self] {
        &FORMAT_ARGS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let info = self.0.info();
        Some(
            PossibleValue::new(info.name)
                .aliases(info.aliases.iter().copied())
                .help(info.about),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// `ferrofluid --help`, and `report --help`, name every format and the UI: from the table,
    /// so that no format can be missing from them.
    #[test]
    fn help_lists_every_format_and_the_ui() {
        let mut top = crate::cli::Opt::command();
        let help = top.render_help().to_string();
        let report_line = help
            .lines()
            .find(|l| l.trim_start().starts_with("report"))
            .unwrap();
        for f in FORMATS {
            assert!(report_line.contains(f.name), "{report_line}");
        }
        assert!(report_line.contains("web UI"), "{report_line}");
        assert_eq!(
            report_about(),
            "Convert a saved JSON profile to another format (txt, html, collapsed, json, pprof, \
             speedscope or jfr), or serve it in the live web UI (--ui)"
        );
        for command in ["report", "attach", "run"] {
            let sub = top.find_subcommand_mut(command).unwrap();
            let help = sub.render_long_help().to_string();
            for f in FORMATS {
                for e in f.extensions {
                    assert!(help.contains(&format!(".{e}")), "{command}: .{e}\n{help}");
                }
                assert!(help.contains(f.about), "{command}: {}\n{help}", f.about);
            }
            assert!(help.contains("--ui [ADDR]"), "{command}\n{help}");
        }
        let report = top.find_subcommand_mut("report").unwrap();
        let help = report.render_long_help().to_string();
        for f in FORMATS {
            assert!(
                help.contains(&format!("- {}:", f.name)),
                "{}\n{help}",
                f.name
            );
        }
    }
}
