//! Progress display for the command line: an indicatif bar on a terminal, plain periodic
//! lines otherwise (logs, CI), nothing with --quiet.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};
use yee::backend::Half;
use yee::run::{Observer, Progress, RunInfo, Summary};

/// Shows a run's progress on stderr.
pub struct TerminalObserver {
    quiet: bool,
    bar: Option<ProgressBar>,
    last_line: Option<Instant>,
}

impl TerminalObserver {
    /// A bar when stderr is a terminal, else plain lines every 10 s; silent when `quiet`.
    pub fn new(quiet: bool) -> Self {
        TerminalObserver {
            quiet,
            bar: None,
            last_line: None,
        }
    }
}

/// Decimal units, as `yee plan` prints them.
fn bytes(n: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

impl Observer for TerminalObserver {
    fn start(&mut self, info: &RunInfo) {
        if self.quiet {
            return;
        }
        let flat = if info.dims < 3 {
            format!(
                " (a {}-D grid: dt is {:.3} of the {}-D stability limit)",
                info.dims, info.courant, info.dims
            )
        } else {
            String::new()
        };
        eprintln!(
            "running {} cells for {} step{}{flat} on {} ({} slab{}, {} thread{}, {} allocated)",
            info.cells,
            info.steps,
            if info.steps == 1 { "" } else { "s" },
            info.backend,
            info.slabs.len(),
            if info.slabs.len() == 1 { "" } else { "s" },
            info.threads,
            if info.threads == 1 { "" } else { "s" },
            bytes(info.allocation.total())
        );
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(info.steps as u64);
            bar.set_style(
                ProgressStyle::with_template("{bar:30} step {pos}/{len}  {msg}  ETA {eta}")
                    .expect("a valid progress template"),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            self.bar = Some(bar);
        }
    }

    fn progress(&mut self, p: &Progress) {
        if self.quiet {
            return;
        }
        let msg = format!("t = {:.4e} s  {:.1} Mcells/s", p.time, p.mcells_per_s);
        if let Some(bar) = &self.bar {
            bar.set_position(p.step as u64);
            bar.set_message(msg);
        } else if self
            .last_line
            .is_none_or(|t| t.elapsed() > Duration::from_secs(10))
        {
            self.last_line = Some(Instant::now());
            eprintln!("step {}/{}  {msg}", p.step, p.steps);
        }
    }

    fn message(&mut self, m: &str) {
        if !self.quiet {
            eprintln!("{m}");
        }
    }

    fn finish(&mut self, s: &Summary) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if self.quiet {
            return;
        }
        let p = &s.phases;
        let total = s.wall.as_secs_f64().max(1e-9);
        let share = |d: Duration| 100.0 * d.as_secs_f64() / total;
        eprintln!(
            "{} {} cells x {} step{} in {:.2} s: {:.1} Mcells/s on {} (H {:.0}%, E {:.0}%, halos {:.0}%, monitors {:.0}%, checks {:.0}%) -> {}",
            if s.complete { "done:" } else { "stopped:" },
            s.cells,
            s.steps_done,
            if s.steps_done == 1 { "" } else { "s" },
            s.wall.as_secs_f64(),
            s.mcells_per_s,
            s.backend,
            share(p.half(Half::H)),
            share(p.half(Half::E)),
            share(p.exchange),
            share(p.monitors),
            share(p.checks),
            s.output.display()
        );
        let passes: Vec<String> = p
            .each_pass()
            .map(|(h, pass, d)| format!("{} {} {:.0}%", h.name(), pass.name(), share(d)))
            .collect();
        eprintln!("passes: {}", passes.join(", "));
    }
}
