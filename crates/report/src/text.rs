//! Plain-text report: a hot-spots table and each thread's call tree with percentages; for a
//! CPU profile with its compensation marks and CPU columns, for the other tree modes with a
//! column per metric.

use std::io::Write;

use ferrofluid_profile::{
    Mode, NodeId, NodeKind, Profile, ProfileTotals, ThreadProfile, ThreadTimes,
};

use crate::view::{
    cpu_ms, cpu_note, hot_spots_title, idle_line, lost_notes, ms, ms_marked, percent, row_label,
    sorted_children, subtracted_note, thread_cpu_note, times_note, tree_label, uncertainty_note,
    waiting_note,
};
use crate::{Report, ReportError};

/// Options of the text report.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TextReport {
    /// Call-tree nodes whose total is below this fraction of their thread's total are
    /// folded into one "hidden" line per parent.
    pub cutoff: f64,
    /// Maximum number of hot-spot rows.
    pub max_hot_spots: usize,
    /// Rank the time of threads found blocked (idle) with the rest in the hot spots, instead
    /// of listing it apart.
    pub include_idle: bool,
    /// Virtual threads merged into one entry (the default) or one by one.
    pub virtual_threads: crate::VirtualThreads,
    /// The order of an allocation profile's class table.
    pub class_order: crate::alloc::ClassOrder,
}

impl Default for TextReport {
    fn default() -> Self {
        Self {
            cutoff: 0.005,
            max_hot_spots: 30,
            include_idle: false,
            virtual_threads: crate::VirtualThreads::Merged,
            class_order: crate::alloc::ClassOrder::default(),
        }
    }
}

impl TextReport {
    /// The same report, with idle time ranked in the hot spots when `include`.
    pub fn with_idle(self, include: bool) -> Self {
        Self {
            include_idle: include,
            ..self
        }
    }

    /// The same report, an allocation profile's classes in `order`.
    pub fn with_class_order(self, order: crate::alloc::ClassOrder) -> Self {
        Self {
            class_order: order,
            ..self
        }
    }

    /// The same report, showing virtual threads as `mode` says.
    pub fn with_virtual_threads(self, mode: crate::VirtualThreads) -> Self {
        Self {
            virtual_threads: mode,
            ..self
        }
    }
}

impl Report for TextReport {
    fn write(&self, profile: &Profile, out: &mut dyn Write) -> Result<(), ReportError> {
        let profile = &*crate::group_virtual_threads(profile, self.virtual_threads);
        match profile.mode {
            Mode::Region => {
                let regions = profile.regions.as_deref().unwrap_or_default();
                out.write_all(crate::region::text(profile, regions).as_bytes())?;
                return Ok(());
            }
            Mode::Cpu => {}
            _ => {
                if let Some(alloc) = &profile.alloc {
                    out.write_all(crate::alloc::text(alloc, self.class_order).as_bytes())?;
                }
                if profile.native.is_some() {
                    out.write_all(crate::native::text(profile).as_bytes())?;
                }
                out.write_all(
                    crate::metrics::text(profile, self.cutoff, self.max_hot_spots).as_bytes(),
                )?;
                return Ok(());
            }
        }
        writeln!(out, "ferrofluid CPU profile")?;
        writeln!(out, "methods: {}", crate::view::methods_note(profile))?;
        writeln!(out, "threads: {}", profile.threads.len())?;
        for note in crate::view::failed_notes(profile) {
            writeln!(out, "! {note}")?;
        }
        let lost: u64 = profile.threads.iter().map(|t| t.dropped_events).sum();
        if lost > 0 {
            writeln!(
                out,
                "! {lost} events were lost: the threads marked below have inexact counts and times"
            )?;
        }
        writeln!(out, "times: {}", times_note(profile))?;
        if let Some(note) = uncertainty_note(profile) {
            writeln!(out, "       {note}")?;
        }
        if let Some(note) = cpu_note(profile) {
            writeln!(out, "       {note}")?;
        }
        for note in crate::view::unreliable_notes(profile) {
            writeln!(out, "! {note}")?;
        }
        let totals = profile.totals(self.include_idle);
        self.write_hot_spots(profile, &totals, out)?;
        for (thread, times) in profile.threads.iter().zip(&totals.threads) {
            self.write_tree(profile, thread, times, out)?;
        }
        Ok(())
    }
}

impl TextReport {
    fn write_hot_spots(
        &self,
        profile: &Profile,
        totals: &ProfileTotals,
        out: &mut dyn Write,
    ) -> Result<(), ReportError> {
        let grand = totals.hot_ns();
        let spots = &totals.hot_spots;
        let cpu = profile.has_cpu();
        // The CPU columns, only for profiles with CPU times.
        let cpu_columns = |self_ns: &str, total_ns: &str| {
            if cpu {
                format!(" {self_ns:>12} {total_ns:>12}")
            } else {
                String::new()
            }
        };
        writeln!(out)?;
        writeln!(out, "{}", hot_spots_title(totals))?;
        writeln!(
            out,
            "{:>12} {:>7} {:>10} {:>12} {:>12}{}  method",
            "self ms",
            "self %",
            "calls",
            "avg self us",
            "total ms",
            cpu_columns("self CPU ms", "CPU ms")
        )?;
        for spot in spots.iter().take(self.max_hot_spots) {
            writeln!(
                out,
                "{:>12} {:>7} {:>10} {:>12.3} {:>12}{}  {}",
                ms_marked(spot.self_ns, spot.self_uncertain()),
                percent(spot.self_ns, grand),
                spot.calls,
                spot.avg_self_ns() / 1000.0,
                ms_marked(spot.total_ns, spot.total_uncertain()),
                cpu_columns(
                    &cpu_ms(
                        spot.cpu.map(|c| c.self_ns),
                        spot.cpu.is_some_and(|c| c.self_uncertain())
                    ),
                    &cpu_ms(
                        spot.cpu.map(|c| c.total_ns),
                        spot.cpu.is_some_and(|c| c.total_uncertain())
                    )
                ),
                row_label(profile, spot.kind, "")
            )?;
        }
        if spots.len() > self.max_hot_spots {
            writeln!(
                out,
                "{:>12}  [{} more methods not shown]",
                "",
                spots.len() - self.max_hot_spots
            )?;
        }
        if !totals.idle.is_empty() {
            writeln!(out)?;
            writeln!(
                out,
                "Idle: threads found blocked when the profile was taken ({}), by time waiting",
                if totals.idle_included {
                    "ranked in the hot spots above too"
                } else {
                    "left out of the hot spots above"
                }
            )?;
            for spot in &totals.idle {
                writeln!(
                    out,
                    "{:>12}  {}",
                    ms(spot.idle_ns),
                    idle_line(profile, spot)
                )?;
            }
        }
        Ok(())
    }

    fn write_tree(
        &self,
        profile: &Profile,
        thread: &ThreadProfile,
        thread_times: &ThreadTimes,
        out: &mut dyn Write,
    ) -> Result<(), ReportError> {
        let tree = &thread.tree;
        let times = &thread_times.times;
        let cpu = &thread_times.cpu;
        let has_cpu = profile.has_cpu();
        let whole = times[tree.root().index()].total_ns;
        Self::write_tree_heading(profile, thread, thread_times, out)?;
        // The CPU column (including callees), only for profiles with CPU times.
        let cpu_column = |v: &str| {
            if has_cpu {
                format!(" {v:>12}")
            } else {
                String::new()
            }
        };
        writeln!(
            out,
            "{:>7} {:>12} {:>12}{} {:>10}  method",
            "total %",
            "total ms",
            "self ms",
            cpu_column("CPU ms"),
            "calls"
        )?;
        let limit = (self.cutoff * whole as f64).ceil() as u64;
        // Explicit stack of (node, depth); an `Err` item is a "hidden" summary line.
        let mut stack: Vec<(Result<NodeId, Hidden>, usize)> = Vec::new();
        let push_children = |stack: &mut Vec<_>, id: NodeId, depth: usize| {
            let kids = sorted_children(profile, tree, id, times);
            let (shown, hidden): (Vec<NodeId>, Vec<NodeId>) = kids
                .into_iter()
                .partition(|c| times[c.index()].total_ns >= limit);
            if !hidden.is_empty() {
                let subtree_nodes = hidden.iter().map(|&h| count_nodes(tree, h)).sum();
                let total_ns = hidden.iter().map(|h| times[h.index()].total_ns).sum();
                stack.push((
                    Err(Hidden {
                        nodes: subtree_nodes,
                        total_ns,
                    }),
                    depth,
                ));
            }
            for &c in shown.iter().rev() {
                stack.push((Ok(c), depth));
            }
        };
        push_children(&mut stack, tree.root(), 0);
        while let Some((item, depth)) = stack.pop() {
            let indent = "  ".repeat(depth);
            match item {
                Err(h) => writeln!(
                    out,
                    "{:>7} {:>12} {:>12}{} {:>10}  {indent}[{} below {} hidden]",
                    percent(h.total_ns, whole),
                    ms(h.total_ns),
                    "",
                    cpu_column(""),
                    "",
                    plural(h.nodes, "node"),
                    percent_cutoff(self.cutoff)
                )?,
                Ok(id) => {
                    let node = tree.node(id);
                    let t = times[id.index()];
                    writeln!(
                        out,
                        "{:>7} {:>12} {:>12}{} {:>10}  {indent}{}",
                        percent(t.total_ns, whole),
                        ms_marked(t.total_ns, t.total_uncertain()),
                        ms_marked(t.self_ns, t.self_uncertain()),
                        cpu_column(&cpu_ms(
                            cpu[id.index()].map(|c| c.total_ns),
                            cpu[id.index()].is_some_and(|c| c.total_uncertain())
                        )),
                        node.calls,
                        tree_label(profile, thread, id)
                    )?;
                    if node.kind != NodeKind::Overflow {
                        push_children(&mut stack, id, depth + 1);
                    }
                }
            }
        }
        Ok(())
    }

    /// A thread's tree's heading: its total, CPU and compensation, and what the thread was
    /// doing or lost.
    fn write_tree_heading(
        profile: &Profile,
        thread: &ThreadProfile,
        thread_times: &ThreadTimes,
        out: &mut dyn Write,
    ) -> Result<(), ReportError> {
        let tree = &thread.tree;
        let times = &thread_times.times;
        let cpu = &thread_times.cpu;
        let whole = times[tree.root().index()].total_ns;
        writeln!(out)?;
        write!(
            out,
            "Call tree of thread {:?} (id {}): {} ms",
            thread.name,
            thread.id,
            ms(whole)
        )?;
        write!(out, "{}", thread_cpu_note(thread, cpu))?;
        write!(
            out,
            "{}",
            subtracted_note(
                profile,
                &times[tree.root().index()],
                tree.node(tree.root()).total_ns
            )
        )?;
        writeln!(out)?;
        if let Some(note) = waiting_note(thread) {
            writeln!(out, "  {note}")?;
        }
        for note in lost_notes(thread) {
            writeln!(out, "  ! {note}")?;
        }
        Ok(())
    }
}

struct Hidden {
    nodes: usize,
    total_ns: u64,
}

fn count_nodes(tree: &ferrofluid_profile::CallTree, id: NodeId) -> usize {
    let mut n = 0;
    let mut stack = vec![id];
    while let Some(c) = stack.pop() {
        n += 1;
        stack.extend_from_slice(tree.node(c).children());
    }
    n
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn percent_cutoff(cutoff: f64) -> String {
    format!("{}%", cutoff * 100.0)
}
