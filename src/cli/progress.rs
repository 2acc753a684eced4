//! Progress display for the command line: an indicatif bar on a terminal, plain periodic
//! lines otherwise (logs, CI), nothing with --quiet.

use crate::backend::Half;
use crate::run::{Observer, Progress, RunInfo, ScanInfo, Summary};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Shows a run's progress on stderr.
pub struct TerminalObserver {
    quiet: bool,
    bar: Option<ProgressBar>,
    last_line: Option<Instant>,
    /// What the progress reports count: "step", or "trace" in a scan.
    unit: &'static str,
}

impl TerminalObserver {
    /// A bar when stderr is a terminal, else plain lines every 10 s; silent when `quiet`.
    pub fn new(quiet: bool) -> Self {
        TerminalObserver {
            quiet,
            bar: None,
            last_line: None,
            unit: "step",
        }
    }

    /// A bar of `len` units starting at `pos`, when stderr is a terminal.
    fn start_bar(&mut self, pos: usize, len: usize) {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(len as u64);
            let template = format!(
                "{{bar:30}} {} {{pos}}/{{len}}  {{msg}}  ETA {{eta}}",
                self.unit
            );
            bar.set_style(
                ProgressStyle::with_template(&template).expect("a valid progress template"),
            );
            bar.set_position(pos as u64);
            bar.enable_steady_tick(Duration::from_millis(250));
            self.bar = Some(bar);
        }
    }
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
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
        self.start_bar(0, info.steps);
    }

    fn start_scan(&mut self, info: &RunInfo, scan: &ScanInfo) {
        if self.quiet {
            return;
        }
        self.unit = "trace";
        let how = if scan.at_once > 1 {
            format!("{}, {} at a time", scan.schedule, scan.at_once)
        } else {
            format!(
                "{}, {}, {}",
                scan.schedule,
                plural(info.slabs.len(), "slab"),
                plural(info.threads, "thread")
            )
        };
        let from = if scan.first > 0 {
            format!(", from trace {}", scan.first)
        } else {
            String::new()
        };
        eprintln!(
            "running {} of {} cells x {} on {} ({how}){from}",
            plural(scan.traces, "trace"),
            info.cells,
            plural(info.steps, "step"),
            info.backend,
        );
        self.start_bar(scan.first, scan.traces);
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
            eprintln!("{} {}/{}  {msg}", self.unit, p.step, p.steps);
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
        let (done, passes) = summary_lines(s);
        eprintln!("{done}");
        eprintln!("{passes}");
    }
}

/// The two lines a finished run ends with: how it ended, its rate and the share of each phase
/// of the wall time; then each pass's share.
fn summary_lines(s: &Summary) -> (String, String) {
    let total = s.wall.as_secs_f64().max(1e-9);
    let share = |d: Duration| 100.0 * d.as_secs_f64() / total;
    // On a GPU the host's time around a call is that of queueing it: the shares are the
    // device's own where the backend measured them, and the rest of the wall time the
    // device waited for the host (idle).
    let (p, whose) = match &s.device {
        Some(device) => (device, "GPU time: "),
        None => (&s.phases, ""),
    };
    let idle = s
        .device
        .map(|d| format!(", idle {:.0}%", (100.0 - share(d.total())).max(0.0)));
    let checkpoint = if s.device.is_some() {
        // Checkpoints are the host's time (the device waits through them: idle).
        format!("; checkpoint {:.0}%", share(s.phases.checkpoint))
    } else {
        format!(", checkpoint {:.0}%", share(p.checkpoint))
    };
    let done = format!(
        "{} {} cells x {} step{} in {:.2} s: {:.1} Mcells/s on {} ({whose}{}halos {:.0}%, monitors {:.0}%, checks {:.0}%{}{checkpoint}) -> {}",
        if s.complete { "done:" } else { "stopped:" },
        s.cells,
        s.steps_done,
        if s.steps_done == 1 { "" } else { "s" },
        s.wall.as_secs_f64(),
        s.mcells_per_s,
        s.backend,
        if p.fused.is_zero() {
            format!(
                "H {:.0}%, E {:.0}%, ",
                share(p.half(Half::H)),
                share(p.half(Half::E))
            )
        } else {
            format!("fused H+E {:.0}%, ", share(p.fused))
        },
        share(p.exchange),
        share(p.monitors),
        share(p.checks),
        idle.unwrap_or_default(),
        s.output.display()
    );
    // A fused step times its sweep as a whole (its passes run plane by plane within it).
    let fused = (!p.fused.is_zero()).then(|| format!("fused H+E sweep {:.0}%", share(p.fused)));
    let passes: Vec<String> = fused
        .into_iter()
        .chain(
            p.each_pass()
                .filter(|(_, _, d)| p.fused.is_zero() || !d.is_zero())
                .map(|(h, pass, d)| format!("{} {} {:.0}%", h.name(), pass.name(), share(d))),
        )
        .collect();
    let label = if s.device.is_some() {
        "passes (GPU time)"
    } else {
        "passes"
    };
    (done, format!("{label}: {}", passes.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Pass, PhaseTimes};
    use crate::run::Summary;

    fn summary(device: Option<PhaseTimes>) -> Summary {
        let ms = Duration::from_millis;
        let mut host = PhaseTimes::default();
        host.passes[Half::H.index()][Pass::CurlCpml.index()] = ms(10);
        host.passes[Half::E.index()][Pass::CurlCpml.index()] = ms(10);
        host.monitors = ms(800);
        host.checkpoint = ms(50);
        Summary {
            backend: "cuda".into(),
            cells: 1000,
            steps_done: 10,
            steps: 10,
            wall: ms(1000),
            mcells_per_s: 0.01,
            phases: host,
            device,
            output: "out.h5".into(),
            complete: true,
            sidecar_warning: None,
            first_step: 0,
            checkpoints: 1,
            checkpoint: None,
        }
    }

    #[test]
    fn a_gpu_run_reports_the_devices_shares_and_its_idle_time_not_the_hosts_waits() {
        let ms = Duration::from_millis;
        let mut gpu = PhaseTimes::default();
        gpu.passes[Half::H.index()][Pass::CurlCpml.index()] = ms(400);
        gpu.passes[Half::E.index()][Pass::CurlCpml.index()] = ms(350);
        gpu.passes[Half::E.index()][Pass::Sources.index()] = ms(50);
        gpu.monitors = ms(100);
        gpu.checks = ms(20);
        let (done, passes) = summary_lines(&summary(Some(gpu)));
        assert!(
            done.contains("(GPU time: H 40%, E 40%, halos 0%, monitors 10%, checks 2%, idle 8%; checkpoint 5%)"),
            "{done}"
        );
        assert!(
            passes.starts_with("passes (GPU time): H curl+cpml 40%, "),
            "{passes}"
        );
        assert!(passes.contains("E sources 5%"), "{passes}");
        // The host's view: where it waited for the device.
        let (done, passes) = summary_lines(&summary(None));
        assert!(
            done.contains("(H 1%, E 1%, halos 0%, monitors 80%, checks 0%, checkpoint 5%)"),
            "{done}"
        );
        assert!(passes.starts_with("passes: H curl+cpml 1%"), "{passes}");
    }
}
