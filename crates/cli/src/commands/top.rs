//! `ferrofluid top PID`: a live terminal table of the hottest methods of a running JVM (py-spy's
//! `top`), refreshed every second from snapshots taken without stopping the program. On exit the
//! probes are removed and the agent detached: the JVM is left as it was.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ferrofluid_protocol::control::{Client, Request, Response};
use ferrofluid_protocol::AgentOptions;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::Frame;
use serde_json::Value;

use super::agent_flags::{AgentFlags, FlagsError};
use crate::interrupt::{Interrupts, Mode};

/// Arguments of `ferrofluid top`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Keys: s, t, c sort by self, total, calls; r resets the counts; q or Esc quits.\n\n\
    Examples:\n  ferrofluid top 4242\n  ferrofluid top 4242 --root com.acme.Report::render --include 'com.acme.**'"
)]
pub struct TopArgs {
    /// Process id of the JVM (see `ferrofluid list`).
    #[arg(value_parser = super::attach::parse_pid, allow_negative_numbers = true)]
    pub pid: u32,
    #[command(flatten)]
    pub flags: AgentFlags,
    /// Seconds to wait for the JVM's attach listener.
    #[arg(long, default_value_t = 10, value_name = "SECS",
          value_parser = super::attach::parse_seconds, allow_hyphen_values = true)]
    pub timeout: u64,
}

/// How the table is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    SelfValue,
    Total,
    Calls,
}

/// One method of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Line0 {
    /// `Class.method` with the package left out.
    pub name: String,
    /// Own value of the weight metric, summed over the method's calling contexts.
    pub own: f64,
    /// Value including callees, over its outermost frames only (recursion counted once).
    pub total: f64,
    /// Invocations, when the mode counts them.
    pub calls: u64,
}

/// What `top` shows: the methods of a snapshot, ranked.
#[derive(Debug, Clone, PartialEq)]
pub struct Table0 {
    /// The weight metric (`time`, `bytes`, `bytecodes`...) and its unit.
    pub metric: String,
    pub unit: String,
    pub has_calls: bool,
    /// The weight of everything, for percentages.
    pub all: f64,
    pub threads: usize,
    pub methods: Vec<Line0>,
}

impl Table0 {
    /// The table of a profile in the UI's view form (`crate::ui::view`): any mode, weighted by
    /// its time, else its first metric other than calls.
    pub fn from_view(doc: &Value) -> Table0 {
        let metrics: Vec<(String, String)> = doc["metrics"]
            .as_array()
            .map(|ms| {
                ms.iter()
                    .map(|m| {
                        (
                            m["name"].as_str().unwrap_or_default().to_owned(),
                            m["unit"].as_str().unwrap_or_default().to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let weight = metrics
            .iter()
            .find(|(n, _)| n == "time")
            .or_else(|| metrics.iter().find(|(n, _)| n != "calls"))
            .or(metrics.first())
            .cloned()
            .unwrap_or_default();
        let has_calls = metrics.iter().any(|(n, _)| n == "calls");
        let mut by: Vec<Line0> = Vec::new();
        let mut index = std::collections::HashMap::new();
        let mut all = 0.0;
        let threads = doc["threads"].as_array().map_or(&[][..], Vec::as_slice);
        for t in threads {
            let mut path = Vec::new();
            all += walk(&t["root"], &weight.0, &mut by, &mut index, &mut path);
        }
        let mut table = Table0 {
            metric: weight.0,
            unit: weight.1,
            has_calls,
            all,
            threads: threads.len(),
            methods: by,
        };
        table.sort(Sort::SelfValue);
        table
    }

    /// Orders the methods by `sort`, largest first (ties by name).
    pub fn sort(&mut self, sort: Sort) {
        let key = |l: &Line0| match sort {
            Sort::SelfValue => l.own,
            Sort::Total => l.total,
            Sort::Calls => l.calls as f64,
        };
        self.methods
            .sort_by(|a, b| key(b).total_cmp(&key(a)).then_with(|| a.name.cmp(&b.name)));
    }
}

/// The node's own value of `metric` (as the document keeps it).
fn own(node: &Value, metric: &str) -> f64 {
    let n = |k: &str| node[k].as_f64().unwrap_or(0.0);
    match metric {
        "time" => n("self_ns"),
        "calls" => n("calls"),
        "cpu_time" => n("cpu_self_ns"),
        other => n(other),
    }
}

/// Adds `node`'s subtree into the method lines; returns its total of `metric`. `path` holds the
/// methods of the frames above, so that a recursive method's total counts its outermost frame.
fn walk(
    node: &Value,
    metric: &str,
    by: &mut Vec<Line0>,
    index: &mut std::collections::HashMap<String, usize>,
    path: &mut Vec<String>,
) -> f64 {
    let method = node["kind"].is_null();
    let key = if method {
        format!(
            "{}.{}{}",
            node["class"].as_str().unwrap_or_default(),
            node["method"].as_str().unwrap_or_default(),
            node["descriptor"].as_str().unwrap_or_default()
        )
    } else {
        String::new()
    };
    let mine = own(node, metric);
    let outermost = method && !path.contains(&key);
    if method {
        path.push(key.clone());
    }
    let mut total = mine;
    for c in node["children"].as_array().map_or(&[][..], Vec::as_slice) {
        total += walk(c, metric, by, index, path);
    }
    if method {
        path.pop();
        let class = node["class"].as_str().unwrap_or_default();
        let simple = class.rsplit('.').next().unwrap_or(class);
        let i = *index.entry(key).or_insert_with(|| {
            by.push(Line0 {
                name: format!("{simple}.{}", node["method"].as_str().unwrap_or_default()),
                own: 0.0,
                total: 0.0,
                calls: 0,
            });
            by.len() - 1
        });
        let line = &mut by[i];
        line.own += mine;
        line.calls += node["calls"].as_u64().unwrap_or(0);
        if outermost {
            line.total += total;
        }
    }
    total
}

/// `v` in `unit` for a narrow column.
fn short(v: f64, unit: &str) -> String {
    match unit {
        "nanoseconds" if v >= 1e9 => format!("{:.2}s", v / 1e9),
        "nanoseconds" if v >= 1e6 => format!("{:.1}ms", v / 1e6),
        "nanoseconds" if v >= 1e3 => format!("{:.1}us", v / 1e3),
        "nanoseconds" => format!("{v:.0}ns"),
        "bytes" if v >= 1048576.0 => format!("{:.1}MiB", v / 1048576.0),
        "bytes" if v >= 1024.0 => format!("{:.1}KiB", v / 1024.0),
        "bytes" => format!("{v:.0}B"),
        _ if v >= 1e9 => format!("{:.2}G", v / 1e9),
        _ if v >= 1e6 => format!("{:.2}M", v / 1e6),
        _ if v >= 1e4 => format!("{:.1}k", v / 1e3),
        _ => format!("{v:.0}"),
    }
}

/// Draws the table: a title line of `title`, then the methods that fit.
pub fn draw(frame: &mut Frame, table: &Table0, sort: Sort, title: &str) {
    let [head, body] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(0)]).areas(frame.area());
    let by = match sort {
        Sort::SelfValue => "self",
        Sort::Total => "total",
        Sort::Calls => "calls",
    };
    frame.render_widget(
        Paragraph::new(vec![
            Line::from(title.to_owned()),
            Line::from(format!(
                "{} threads, weight {}; sorted by {by} (s/t/c sort, r reset, q quit)",
                table.threads, table.metric
            )),
        ]),
        head,
    );
    let pct = |v: f64| {
        if table.all > 0.0 {
            format!("{:.1}%", 100.0 * v / table.all)
        } else {
            "0.0%".to_owned()
        }
    };
    let mut header = vec!["%SELF", "SELF", "%TOTAL", "TOTAL"];
    if table.has_calls {
        header.push("CALLS");
    }
    header.push("METHOD");
    let rows = table.methods.iter().map(|l| {
        let mut cells = vec![
            Cell::from(pct(l.own)),
            Cell::from(short(l.own, &table.unit)),
            Cell::from(pct(l.total)),
            Cell::from(short(l.total, &table.unit)),
        ];
        if table.has_calls {
            cells.push(Cell::from(short(l.calls as f64, "count")));
        }
        cells.push(Cell::from(l.name.clone()));
        Row::new(cells)
    });
    let mut widths = vec![
        Constraint::Length(7),
        Constraint::Length(9),
        Constraint::Length(7),
        Constraint::Length(9),
    ];
    if table.has_calls {
        widths.push(Constraint::Length(9));
    }
    widths.push(Constraint::Min(10));
    frame.render_widget(
        Table::new(rows, widths)
            .header(Row::new(header).style(Style::default().add_modifier(Modifier::REVERSED))),
        body,
    );
}

/// Why `top` could not run.
#[derive(Debug, thiserror::Error)]
pub enum TopError {
    #[error(transparent)]
    Flags(#[from] FlagsError),
    #[error("ferrofluid top needs a terminal (use `ferrofluid attach PID --duration D -o -` when piped)")]
    NoTerminal,
    #[error("agent: {0}")]
    Agent(String),
}

/// Runs `ferrofluid top`.
pub fn run(args: TopArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let options = args.flags.options()?;
    if !std::io::stdout().is_terminal() {
        return Err(TopError::NoTerminal.into());
    }
    let mut client = connect(&args, &options)?;
    let result = session(&mut client, &options, &args);
    // Whatever happened, the probes go and the agent goes dormant.
    let _ = client.request(&Request::Stop);
    let _ = client.request(&Request::Deinstrument);
    let _ = client.request(&Request::Detach);
    result?;
    eprintln!(
        "ferrofluid: detached; the agent in JVM {} removed its probes and is dormant",
        args.pid
    );
    Ok(ExitCode::SUCCESS)
}

/// The agent's control connection in JVM `args.pid`, loading the agent if it is not there.
fn connect(args: &TopArgs, options: &AgentOptions) -> Result<Client, Box<dyn std::error::Error>> {
    // Loaded with where to log and listen only; the session's options come with `instrument`.
    let plain = AgentOptions {
        log: options.log.clone(),
        socket: options.socket.clone(),
        ..AgentOptions::default()
    };
    let socket = super::connect::socket_path(args.pid, options.socket.as_deref())?;
    let timeout = Duration::from_secs(args.timeout);
    let (mut client, reached) =
        super::connect::connect(args.pid, &socket, &args.flags, &plain, timeout)?;
    if reached == super::connect::Reached::Reconnected {
        super::connect::refuse_if_owned(&mut client, args.pid, true)?;
    }
    Ok(client)
}

fn ok(client: &mut Client, request: &Request) -> Result<(), TopError> {
    match client.request(request) {
        Ok(Response::Ok) => Ok(()),
        Ok(Response::Error { message }) => Err(TopError::Agent(message)),
        Ok(other) => Err(TopError::Agent(format!("unexpected reply {other:?}"))),
        Err(e) => Err(TopError::Agent(e.to_string())),
    }
}

fn snapshot(client: &mut Client) -> Result<Table0, Box<dyn std::error::Error>> {
    let raw = match client.request(&Request::Snapshot)? {
        Response::Snapshot { profile } => profile,
        Response::Error { message } => return Err(TopError::Agent(message).into()),
        other => return Err(TopError::Agent(format!("unexpected reply {other:?}")).into()),
    };
    let profile = ferrofluid_profile::Profile::from_json_slice(&serde_json::to_vec(&raw)?)?;
    Ok(Table0::from_view(&crate::ui::view(&profile)))
}

/// Instruments, starts and shows the table until q, Esc, Ctrl-C or a signal.
fn session(
    client: &mut Client,
    options: &ferrofluid_protocol::AgentOptions,
    args: &TopArgs,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut session = options.clone();
    // A live program keeps running while its code is revealed.
    if ferrofluid_protocol::mode_options(session.mode()).contains(&"reveal") {
        session.reveal = args
            .flags
            .reveal
            .unwrap_or(ferrofluid_protocol::Reveal::Async);
    }
    match client.request(&Request::Instrument(session))? {
        Response::Ok => {}
        Response::Error { message } if ferrofluid_protocol::control::is_refusal(&message) => {
            return Err(message.into())
        }
        // Classes that could not be patched: the rest is profiled.
        Response::Error { .. } => {}
        other => return Err(format!("unexpected agent reply {other:?}").into()),
    }
    ok(client, &Request::Start)?;
    let interrupts = Interrupts::catch(Mode::Stop {
        again: "interrupted again: quitting; the agent removes its probes by itself".into(),
    })?;
    let title = format!("ferrofluid top: JVM {} (mode {})", args.pid, options.mode());
    let mut terminal = ratatui::init();
    let result = (|| -> Result<(), Box<dyn std::error::Error>> {
        let mut sort = Sort::SelfValue;
        let mut table = snapshot(client)?;
        let mut next = Instant::now() + Duration::from_secs(1);
        loop {
            table.sort(sort);
            terminal.draw(|f| draw(f, &table, sort, &title))?;
            if interrupts.received().is_some() {
                return Ok(());
            }
            let wait = next.saturating_duration_since(Instant::now());
            if event::poll(wait.min(Duration::from_millis(200)))? {
                if let Event::Key(key) = event::read()? {
                    if key.kind != KeyEventKind::Press {
                        continue;
                    }
                    match key.code {
                        KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                            return Ok(())
                        }
                        KeyCode::Char('s') => sort = Sort::SelfValue,
                        KeyCode::Char('t') => sort = Sort::Total,
                        KeyCode::Char('c') => sort = Sort::Calls,
                        KeyCode::Char('r') => {
                            ok(client, &Request::Reset)?;
                            table = snapshot(client)?;
                        }
                        _ => {}
                    }
                }
            }
            if Instant::now() >= next {
                table = snapshot(client)?;
                next = Instant::now() + Duration::from_secs(1);
            }
        }
    })();
    ratatui::restore();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use serde_json::json;

    fn node(class: &str, method: &str, calls: u64, self_ns: u64, kids: Vec<Value>) -> Value {
        json!({"class": class, "method": method, "descriptor": "()V", "calls": calls,
               "self_ns": self_ns, "children": kids})
    }

    fn doc() -> Value {
        // main -> work (x3) -> step (x30); work recursive once.
        let step = node("demo.Work", "step", 30, 600, vec![]);
        let inner = node("demo.Work", "work", 1, 100, vec![]);
        let work = node("demo.Work", "work", 3, 300, vec![step, inner]);
        let main = node("demo.Main", "main", 1, 1000, vec![work]);
        json!({
            "format": "ferrofluid", "version": 1, "mode": "cpu",
            "metrics": [{"name": "calls", "unit": "count"}, {"name": "time", "unit": "nanoseconds"}],
            "methods": {"instrumented": 3, "called": 3},
            "threads": [{"name": "main", "id": 1, "root": {"kind": "thread", "class": "", "method": "<thread>",
                "descriptor": "", "calls": 0, "self_ns": 0, "children": [main]}}]
        })
    }

    #[test]
    fn the_table_adds_contexts_and_counts_recursion_once() {
        let t = Table0::from_view(&doc());
        assert_eq!(t.metric, "time");
        assert_eq!(t.all, 2000.0);
        let lines: Vec<(&str, f64, f64, u64)> = t
            .methods
            .iter()
            .map(|l| (l.name.as_str(), l.own, l.total, l.calls))
            .collect();
        assert_eq!(
            lines,
            [
                ("Main.main", 1000.0, 2000.0, 1),
                ("Work.step", 600.0, 600.0, 30),
                ("Work.work", 400.0, 1000.0, 4),
            ]
        );
        let mut by_calls = t.clone();
        by_calls.sort(Sort::Calls);
        assert_eq!(by_calls.methods[0].name, "Work.step");
        let mut by_total = t;
        by_total.sort(Sort::Total);
        assert_eq!(by_total.methods[1].name, "Work.work");
    }

    #[test]
    fn a_mode_without_time_weighs_by_its_metric() {
        let mut d = doc();
        d["mode"] = json!("alloc");
        d["metrics"] =
            json!([{"name": "objects", "unit": "count"}, {"name": "bytes", "unit": "bytes"}]);
        d["threads"][0]["root"]["children"][0]["bytes"] = json!(4096);
        let t = Table0::from_view(&d);
        assert_eq!(
            (t.metric.as_str(), t.unit.as_str(), t.has_calls),
            ("objects", "count", false)
        );
        let t = {
            let mut d = d.clone();
            d["metrics"] = json!([{"name": "bytes", "unit": "bytes"}]);
            Table0::from_view(&d)
        };
        assert_eq!(t.all, 4096.0);
        assert_eq!(t.methods[0].name, "Main.main");
    }

    #[test]
    fn the_terminal_shows_numbers_before_names() {
        let t = Table0::from_view(&doc());
        let mut terminal = Terminal::new(TestBackend::new(64, 7)).unwrap();
        terminal
            .draw(|f| draw(f, &t, Sort::SelfValue, "ferrofluid top: JVM 7 (mode cpu)"))
            .unwrap();
        let buffer = terminal.backend().buffer();
        let lines: Vec<String> = (0..buffer.area.height)
            .map(|y| {
                (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect()
            })
            .collect();
        assert_eq!(
            lines,
            [
                "ferrofluid top: JVM 7 (mode cpu)                                ",
                "1 threads, weight time; sorted by self (s/t/c sort, r reset, q q",
                "%SELF   SELF      %TOTAL  TOTAL     CALLS     METHOD            ",
                "50.0%   1.0us     100.0%  2.0us     1         Main.main         ",
                "30.0%   600ns     30.0%   600ns     30        Work.step         ",
                "20.0%   400ns     50.0%   1.0us     4         Work.work         ",
                "                                                                ",
            ]
        );
        // The header row is drawn reversed.
        assert_eq!(buffer[(0, 2)].modifier, Modifier::REVERSED);
    }
}
