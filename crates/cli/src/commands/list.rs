//! `ferrofluid list`: the running JVMs this user may attach to, read from their hsperfdata (like `jps -lv`).

use std::process::ExitCode;

use ferrofluid_attach::JvmInfo;

/// Arguments of `ferrofluid list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print a JSON array (pid, nspid, uid, main, args, vm_version, spec_version, hsperfdata) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `ferrofluid list`.
pub fn run(args: ListArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    // Leftovers of JVMs killed outright, which could not clean up after themselves.
    crate::stale::sweep(std::path::Path::new("/tmp"));
    let jvms = ferrofluid_attach::list_jvms();
    let text = if args.json {
        serde_json::to_string_pretty(&jvms)? + "\n"
    } else {
        table(&jvms)
    };
    super::output::out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// A left-aligned table with a header, columns as wide as their widest cell; ARGS last so long argument
/// lists do not push the other columns.
fn table(jvms: &[JvmInfo]) -> String {
    let rows: Vec<[String; 4]> = jvms
        .iter()
        .map(|j| {
            [
                j.pid.to_string(),
                j.main.clone(),
                j.vm_version.clone(),
                j.args.clone(),
            ]
        })
        .collect();
    let header = ["PID", "MAIN", "JVM", "ARGS"].map(String::from);
    let mut widths = [0; 3];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let line = format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jvm(pid: u32, main: &str, args: &str) -> JvmInfo {
        JvmInfo {
            pid,
            nspid: pid,
            uid: 0,
            main: main.into(),
            args: args.into(),
            vm_version: "17.0.15+6".into(),
            spec_version: "17".into(),
            hsperfdata: format!("/tmp/hsperfdata_root/{pid}").into(),
        }
    }

    #[test]
    fn aligns_columns() {
        let text = table(&[
            jvm(7, "com.acme.Main", "--port 80"),
            jvm(12345, "app.jar", ""),
        ]);
        assert_eq!(
            text,
            "PID    MAIN           JVM        ARGS\n\
             7      com.acme.Main  17.0.15+6  --port 80\n\
             12345  app.jar        17.0.15+6\n"
        );
        assert_eq!(table(&[]), "PID  MAIN  JVM  ARGS\n");
    }
}
