//! Where profiles go: the report format an output path names, the check that it can be written
//! before anything is profiled, the one line saying why a profile is empty, and the writing.

use std::path::Path;

use ferrofluid_profile::Profile;
use ferrofluid_report::Format;

/// The report format of `path` (`-`: text).
pub(crate) fn report_format(path: &Path) -> Result<Format, String> {
    if path == Path::new("-") {
        return Ok(Format::Text);
    }
    Format::from_path(path).ok_or_else(|| {
        format!(
            "cannot tell the report format from {}; name {}",
            path.display(),
            Format::file_names()
        )
    })
}

/// Fails if `path` cannot be written, leaving it as it was: a report that cannot be written is
/// found before profiling, not after it.
pub(crate) fn check_writable(path: &Path) -> Result<(), String> {
    if path == Path::new("-") {
        return Ok(());
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| format!("cannot write the report to {}: {e}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// What the command knows of the patterns asked for, beyond the profile.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Asked<'a> {
    /// `--root` or `--region` patterns that never matched a loaded method while profiling;
    /// `None` where nobody could tell (the agent wrote the profile by itself).
    pub never_matched: Option<&'a [String]>,
}

/// `n` and the noun, singular or plural.
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

const PATTERN_HELP: &str = "CLASS::METHOD, e.g. com.acme.Report::render; `*` within a package, \
                            `**` across";

/// Why a profile is empty, said in one line, so an empty report is never a silent one.
pub(crate) fn emptiness_warning(profile: &Profile, asked: Asked<'_>) -> Option<String> {
    let never_matched = asked.never_matched.unwrap_or_default();
    let (flag, empty) = match &profile.regions {
        Some(regions) => ("--region", regions.iter().all(|r| r.count == 0)),
        None => ("--root", profile.threads.is_empty()),
    };
    if !empty {
        return None;
    }
    // Whole-program sampling has no roots to blame: nothing ran on the clock sampled.
    if let Some(sampling) = profile
        .sampling
        .as_ref()
        .filter(|s| profile.mode == ferrofluid_profile::Mode::Sample && !s.roots)
    {
        return Some(format!(
            "no sample with a Java stack was taken ({} on the {} clock): no thread ran Java code \
             while sampling{}",
            count(sampling.samples, "sample", "samples"),
            sampling.clock,
            if sampling.clock == "cpu" {
                "; `--wall` samples waiting threads too"
            } else {
                ""
            }
        ));
    }
    if !never_matched.is_empty() {
        return Some(format!(
            "no loaded class has a method matching {flag} {}, so nothing was {}; check the \
             pattern ({PATTERN_HELP}) and that the class is loaded in the JVM while profiling \
             (`ferrofluid attach PID` lists the patterns with no match yet)",
            never_matched.join(", "),
            if flag == "--region" {
                "measured"
            } else {
                "profiled"
            }
        ));
    }
    if profile.instrumented == 0 {
        return Some(if flag == "--region" {
            format!("no method matched the region, so nothing was measured; check --region ({PATTERN_HELP})")
        } else {
            format!("no method matched the roots, so nothing was profiled; check --root ({PATTERN_HELP})")
        });
    }
    let probed = count(profile.instrumented, "method carried", "methods carried");
    Some(match (flag, asked.never_matched) {
        ("--region", Some(_)) => {
            format!("no region invocation completed while measuring ({probed} probes)")
        }
        ("--region", None) => format!(
            "no region invocation completed while measuring ({probed} probes); if --region \
             matched no loaded method, check the pattern ({PATTERN_HELP})"
        ),
        (_, Some(_)) => format!("no root ran while profiling ({probed} probes)"),
        (_, None) => format!(
            "no root ran while profiling ({probed} probes); if --root matched no loaded \
             method, check the pattern ({PATTERN_HELP})"
        ),
    })
}

/// Writes `profile` to `path` in the format its extension names (`-`: text to stdout).
pub(crate) fn write_report(
    profile: &Profile,
    path: &Path,
    asked: Asked<'_>,
) -> Result<(), Box<dyn std::error::Error>> {
    use std::io::Write;
    if let Some(warning) = emptiness_warning(profile, asked) {
        eprintln!("ferrofluid: warning: {warning}");
    }
    for note in ferrofluid_report::failed_class_notes(profile) {
        eprintln!("ferrofluid: warning: {note}");
    }
    let writer = report_format(path)?.writer();
    let mut buf = Vec::new();
    let writing = crate::progress::spinner("writing the report");
    writer.write(profile, &mut buf).map_err(|e| match e {
        ferrofluid_report::ReportError::Io(io) => io,
    })?;
    drop(writing);
    if path == Path::new("-") {
        out(&String::from_utf8_lossy(&buf))?;
    } else {
        std::fs::File::create(path)
            .and_then(|mut f| f.write_all(&buf))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!("ferrofluid: report written to {}", path.display());
    }
    Ok(())
}

/// Writes to stdout; a closed pipe (`ferrofluid attach 1 | head -1`) is not an error.
pub(crate) fn out(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_profiles_say_why() {
        let known = Asked {
            never_matched: Some(&[]),
        };
        let mut p = Profile::default();
        assert!(emptiness_warning(&p, known)
            .unwrap()
            .starts_with("no method matched the roots"));
        p.instrumented = 3;
        assert_eq!(
            emptiness_warning(&p, known).unwrap(),
            "no root ran while profiling (3 methods carried probes)"
        );
        let idle = Profile {
            mode: ferrofluid_profile::Mode::Sample,
            sampling: Some(ferrofluid_profile::Sampling {
                clock: "cpu".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            emptiness_warning(&idle, known).unwrap(),
            "no sample with a Java stack was taken (0 samples on the cpu clock): no thread ran \
             Java code while sampling; `--wall` samples waiting threads too"
        );
        let mut r = Profile {
            regions: Some(vec![]),
            ..Default::default()
        };
        assert!(emptiness_warning(&r, known)
            .unwrap()
            .starts_with("no method matched the region, so nothing was measured; check --region"));
        r.instrumented = 1;
        r.regions = Some(vec![ferrofluid_profile::RegionStats::default()]);
        assert_eq!(
            emptiness_warning(&r, known).unwrap(),
            "no region invocation completed while measuring (1 method carried probes)"
        );
        r.regions.as_mut().unwrap()[0].count = 1;
        assert_eq!(emptiness_warning(&r, known), None);
    }

    /// Methods the agent probes for itself (reflection, allocation helpers) are no sign that a
    /// root matched: a root that matched nothing is named as such.
    #[test]
    fn a_root_that_matched_nothing_is_named_whatever_else_carried_probes() {
        let p = Profile {
            instrumented: 6,
            ..Default::default()
        };
        let unmatched = ["com.acme.Nope::run".to_owned()];
        let said = emptiness_warning(
            &p,
            Asked {
                never_matched: Some(&unmatched),
            },
        )
        .unwrap();
        assert_eq!(
            said,
            "no loaded class has a method matching --root com.acme.Nope::run, so nothing was \
             profiled; check the pattern (CLASS::METHOD, e.g. com.acme.Report::render; `*` \
             within a package, `**` across) and that the class is loaded in the JVM while \
             profiling (`ferrofluid attach PID` lists the patterns with no match yet)"
        );
        assert!(!said.contains("instrumented"));
        // Not knowing which patterns matched (the agent wrote the profile), it says both.
        assert_eq!(
            emptiness_warning(&p, Asked::default()).unwrap(),
            "no root ran while profiling (6 methods carried probes); if --root matched no \
             loaded method, check the pattern (CLASS::METHOD, e.g. com.acme.Report::render; \
             `*` within a package, `**` across)"
        );
    }

    #[test]
    fn report_format_comes_from_the_extension() {
        assert_eq!(report_format(Path::new("-")), Ok(Format::Text));
        assert_eq!(report_format(Path::new("p.html")), Ok(Format::Html));
        assert_eq!(report_format(Path::new("a/p.json")), Ok(Format::Json));
        assert_eq!(
            report_format(Path::new("p.svg")),
            Err("cannot tell the report format from p.svg; name a .txt, .html, .collapsed, .json, .pb.gz, .pprof, .speedscope.json or .jfr file".into())
        );
    }
}
