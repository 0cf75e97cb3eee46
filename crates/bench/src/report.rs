//! `results.json` (every sample plus medians, ratios and targets) and
//! `results.md` (the tables `docs/performance.md` quotes).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::bench::{LatencySample, Plan, Sample};
use crate::child::Contender;
use crate::concurrent::ConcurrentReport;
use crate::workload::Kind;

/// Everything one `run` measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Results {
    /// What was run.
    pub plan: Plan,
    /// Where.
    pub machine: Machine,
    /// Every throughput sample, in run order.
    pub samples: Vec<Sample>,
    /// Medians per workload and contender, with ratios.
    pub summary: Vec<Summary>,
    /// Latency per workload kind and contender.
    pub latency: Vec<LatencySample>,
    /// Single-run and concurrent reports, in run order.
    pub concurrency: Vec<ConcurrentReport>,
    /// Median CPU per event, 256 at once / one at a time.
    pub concurrency_ratio: Option<f64>,
    /// The flat-RSS runs.
    pub big: Vec<Sample>,
    /// The targets, judged.
    pub targets: Vec<Target>,
}

/// The machine the figures come from.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Machine {
    /// `model name` of `/proc/cpuinfo`.
    pub cpu: String,
    /// Online CPUs.
    pub cpus: usize,
    /// `MemTotal`, GiB.
    pub memory_gib: f64,
    /// The kernel release.
    pub kernel: String,
    /// `/proc/loadavg` before the run.
    pub load_before: String,
    /// `/proc/loadavg` after the run.
    pub load_after: String,
    /// `node --version`.
    pub node: String,
    /// The installed SDK versions.
    pub sdks: BTreeMap<String, String>,
    /// Unix time of the start, s.
    pub started_unix: u64,
}

impl Machine {
    fn probe() -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
            .unwrap_or_default();
        let memory_gib = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|l| l.split_whitespace().next()?.parse::<f64>().ok())
            .map_or(0.0, |kib| kib / (1u64 << 20) as f64);
        let node = std::process::Command::new("node")
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        Machine {
            cpu,
            cpus: std::thread::available_parallelism().map_or(0, usize::from),
            memory_gib,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_owned(),
            load_before: read("/proc/loadavg").trim().to_owned(),
            load_after: String::new(),
            node,
            sdks: BTreeMap::new(),
            started_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }
}

/// The versions of the SDK packages installed under `node_dir`.
pub fn sdk_versions(node_dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for pkg in ["@anthropic-ai/claude-agent-sdk", "@openai/codex-sdk"] {
        let manifest = node_dir.join("node_modules").join(pkg).join("package.json");
        let version = std::fs::read_to_string(manifest)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("version")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| "not installed".to_owned());
        out.insert(pkg.to_owned(), version);
    }
    out
}

/// Medians of one contender on one workload.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    /// The workload's protocol.
    pub kind: Kind,
    /// Workload lines.
    pub lines: u64,
    /// Workload bytes.
    pub bytes: u64,
    /// Who.
    pub contender: Contender,
    /// Successful runs (medians are over these).
    pub runs: u64,
    /// Failed runs.
    pub failed: u64,
    /// Median wall time, s.
    pub wall_s: f64,
    /// Median consumer CPU (user + system), s.
    pub cpu_s: f64,
    /// Median CPU of consumer + fake CLI, s.
    pub tree_cpu_s: f64,
    /// Median consumer peak RSS, MiB.
    pub rss_mib: f64,
    /// Median events delivered (`None` for `run()`).
    pub events: Option<u64>,
    /// Most events dropped in one run.
    pub dropped_max: u64,
    /// Workload lines per wall second.
    pub lines_per_s: f64,
    /// Workload MB per wall second.
    pub mb_per_s: f64,
    /// wall / the limit's wall.
    pub wall_ratio: f64,
    /// CPU / the limit's CPU.
    pub cpu_ratio: f64,
    /// Peak RSS / the limit's peak RSS.
    pub rss_ratio: f64,
    /// Peak RSS / the SDK's peak RSS.
    pub rss_vs_sdk: Option<f64>,
}

/// One of the targets.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Target {
    /// What.
    pub name: String,
    /// The bound.
    pub target: String,
    /// The figure.
    pub measured: String,
    /// Met?
    pub met: bool,
}

/// The median (upper median for an even count); NaN when empty.
pub fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

impl Results {
    /// Empty results for `plan`, with the machine probed now.
    pub fn new(plan: &Plan) -> Results {
        Results {
            plan: plan.clone(),
            machine: Machine::probe(),
            samples: Vec::new(),
            summary: Vec::new(),
            latency: Vec::new(),
            concurrency: Vec::new(),
            concurrency_ratio: None,
            big: Vec::new(),
            targets: Vec::new(),
        }
    }

    /// Computes the summaries, the concurrency ratio and the targets.
    pub fn finish(&mut self) {
        self.machine.load_after = std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
            .to_owned();
        self.summarize();
        let per_event = |runs_at_once: bool| {
            median(
                self.concurrency
                    .iter()
                    .filter(|r| (r.runs > 1) == runs_at_once && r.failed == 0)
                    .map(|r| r.cpu_us_per_event)
                    .collect(),
            )
        };
        let ratio = per_event(true) / per_event(false);
        self.concurrency_ratio = ratio.is_finite().then_some(ratio);
        self.judge();
    }

    fn summarize(&mut self) {
        let mut keys: Vec<(Kind, u64, Contender)> = Vec::new();
        for s in &self.samples {
            let key = (s.kind, s.workload.lines, s.contender);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let mut out: Vec<Summary> = Vec::new();
        for (kind, lines, contender) in keys {
            let all: Vec<&Sample> = self
                .samples
                .iter()
                .filter(|s| s.kind == kind && s.workload.lines == lines && s.contender == contender)
                .collect();
            let ok: Vec<&Sample> = all.iter().copied().filter(|s| s.report.ok).collect();
            let m = |f: &dyn Fn(&Sample) -> f64| median(ok.iter().map(|s| f(s)).collect());
            let wall_s = m(&|s| s.wall_s);
            let bytes = all.first().map_or(0, |s| s.workload.bytes);
            let events = ok
                .iter()
                .filter_map(|s| s.report.events)
                .map(|e| e as f64)
                .collect::<Vec<_>>();
            out.push(Summary {
                kind,
                lines,
                bytes,
                contender,
                runs: ok.len() as u64,
                failed: (all.len() - ok.len()) as u64,
                wall_s,
                cpu_s: m(&|s| s.report.usage.cpu_s()),
                tree_cpu_s: m(&|s| s.tree_cpu_s),
                rss_mib: m(&|s| s.report.usage.maxrss_kib as f64 / 1024.0),
                events: (!events.is_empty()).then(|| median(events) as u64),
                dropped_max: ok.iter().map(|s| s.report.dropped).max().unwrap_or(0),
                lines_per_s: lines as f64 / wall_s,
                mb_per_s: bytes as f64 / 1e6 / wall_s,
                wall_ratio: f64::NAN,
                cpu_ratio: f64::NAN,
                rss_ratio: f64::NAN,
                rss_vs_sdk: None,
            });
        }
        let snapshot = out.clone();
        for s in &mut out {
            let find = |c: Contender| {
                snapshot
                    .iter()
                    .find(|o| o.kind == s.kind && o.lines == s.lines && o.contender == c)
            };
            if let Some(limit) = find(Contender::Limit) {
                s.wall_ratio = s.wall_s / limit.wall_s;
                s.cpu_ratio = s.cpu_s / limit.cpu_s;
                s.rss_ratio = s.rss_mib / limit.rss_mib;
            }
            s.rss_vs_sdk = find(Contender::Sdk).map(|sdk| s.rss_mib / sdk.rss_mib);
        }
        self.summary = out;
    }

    /// The summary of the largest workload of `kind` for `contender`.
    pub fn largest(&self, kind: Kind, contender: Contender) -> Option<&Summary> {
        self.summary
            .iter()
            .filter(|s| s.kind == kind && s.contender == contender)
            .max_by_key(|s| s.lines)
    }

    /// The wall ratio `contender` / `reference` of each round on the
    /// largest workload of `kind` (both runs of a round are neighbours in
    /// time, so a round's ratio holds while the machine's speed drifts).
    pub fn round_ratios(&self, kind: Kind, contender: Contender, reference: Contender) -> Vec<f64> {
        let Some(top) = self.largest(kind, contender).map(|s| s.lines) else {
            return Vec::new();
        };
        let wall = |c: Contender, rep: u64| {
            self.samples
                .iter()
                .find(|s| {
                    s.kind == kind
                        && s.workload.lines == top
                        && s.contender == c
                        && s.rep == rep
                        && s.report.ok
                })
                .map(|s| s.wall_s)
        };
        let mut ratios: Vec<f64> = (0..self.plan.reps)
            .filter_map(|rep| Some(wall(contender, rep)? / wall(reference, rep)?))
            .collect();
        ratios.sort_by(f64::total_cmp);
        ratios
    }

    /// A wall-time target: the median of `contender` over the median of
    /// `reference` on the largest workload of `kind`, with the spread of
    /// the per-round ratios.
    fn wall_target(
        &self,
        kind: Kind,
        contender: Contender,
        reference: Contender,
        bound: f64,
    ) -> Option<Target> {
        let s = self.largest(kind, contender)?;
        let r = self.largest(kind, reference)?;
        let ratio = s.wall_s / r.wall_s;
        let rounds = self.round_ratios(kind, contender, reference);
        let spread = match (rounds.first(), rounds.last()) {
            (Some(lo), Some(hi)) => format!(" (rounds {lo:.2}–{hi:.2}x)"),
            _ => String::new(),
        };
        Some(Target {
            name: format!(
                "{} {} wall vs {} ({} lines)",
                kind.as_str(),
                contender.as_str(),
                reference.as_str(),
                s.lines
            ),
            target: format!("≤ {bound:.2}x"),
            measured: format!("{ratio:.2}x{spread}"),
            met: ratio <= bound,
        })
    }

    fn judge(&mut self) {
        let mut targets = Vec::new();
        for kind in [Kind::Claude, Kind::Codex] {
            // `run()` against the limit, `stream()` against the limit that
            // hands its parsed lines to another thread too, `run --json`
            // (a process more, and every event written as JSON) against
            // the limit.
            let pairs = [
                (Contender::AaRun, Contender::Limit, 1.3),
                (Contender::AaRunBlocking, Contender::Limit, 1.3),
                (Contender::AaStream, Contender::LimitStream, 1.3),
                (Contender::AaCliJson, Contender::Limit, 2.0),
            ];
            for (contender, reference, bound) in pairs {
                targets.extend(self.wall_target(kind, contender, reference, bound));
            }
            if let Some(s) = self.largest(kind, Contender::AaRun)
                && let Some(r) = s.rss_vs_sdk
            {
                targets.push(Target {
                    name: format!("{} aa-run peak RSS vs the SDK's", kind.as_str()),
                    target: "≤ 0.33x".into(),
                    measured: format!("{r:.2}x"),
                    met: r <= 1.0 / 3.0,
                });
            }
            if let Some(l) = self
                .latency
                .iter()
                .find(|l| l.kind == kind && l.contender == Contender::AaStream)
            {
                targets.push(Target {
                    name: format!("{} aa-stream p99 added latency", kind.as_str()),
                    target: "< 1000 µs".into(),
                    measured: format!("{:.0} µs", l.p99_us),
                    met: l.p99_us < 1000.0,
                });
            }
        }
        for s in &self.big {
            if s.contender == Contender::Limit {
                continue;
            }
            let mib = s.report.usage.maxrss_kib as f64 / 1024.0;
            targets.push(Target {
                name: format!(
                    "{} peak RSS on a {:.2} GiB stream",
                    s.contender.as_str(),
                    s.workload.bytes as f64 / (1u64 << 30) as f64
                ),
                target: "< 64 MiB".into(),
                measured: format!("{mib:.1} MiB"),
                met: s.report.ok && mib < 64.0,
            });
        }
        if let Some(r) = self.concurrency_ratio {
            targets.push(Target {
                name: format!(
                    "{} concurrent runs: CPU per event vs a single run",
                    self.plan.concurrent_runs
                ),
                target: "≤ 1.20x".into(),
                measured: format!("{r:.2}x"),
                met: r <= 1.2,
            });
        }
        self.targets = targets;
    }
}

fn fmt_opt(v: Option<u64>) -> String {
    v.map_or("—".to_owned(), |v| v.to_string())
}

/// The tables of `results.md`.
pub fn markdown(r: &Results) -> String {
    let mut md = String::new();
    let m = &r.machine;
    let _ = writeln!(
        md,
        "Machine: {} × {}, {:.1} GiB RAM, Linux {}, node {}; load average before {}, after {}.\n",
        m.cpus, m.cpu, m.memory_gib, m.kernel, m.node, m.load_before, m.load_after
    );
    let _ = writeln!(md, "SDKs: {:?}\n", m.sdks);
    for kind in [Kind::Claude, Kind::Codex] {
        let Some(top) = r
            .summary
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| s.lines)
            .max()
        else {
            continue;
        };
        let rows: Vec<&Summary> = r
            .summary
            .iter()
            .filter(|s| s.kind == kind && s.lines == top)
            .collect();
        let bytes = rows.first().map_or(0, |s| s.bytes);
        let _ = writeln!(
            md,
            "### {} — {} lines, {:.1} MB (medians of {} interleaved runs)\n",
            kind.as_str(),
            top,
            bytes as f64 / 1e6,
            r.plan.reps
        );
        md.push_str("| contender | wall s | wall × limit | CPU s | CPU × limit | peak RSS MiB | RSS × limit | RSS × SDK | events | dropped | MB/s |\n");
        md.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for s in rows {
            let _ = writeln!(
                md,
                "| {} | {:.3} | {:.2} | {:.3} | {:.2} | {:.1} | {:.2} | {} | {} | {} | {:.0} |",
                s.contender.as_str(),
                s.wall_s,
                s.wall_ratio,
                s.cpu_s,
                s.cpu_ratio,
                s.rss_mib,
                s.rss_ratio,
                s.rss_vs_sdk.map_or("—".into(), |v| format!("{v:.2}")),
                fmt_opt(s.events),
                s.dropped_max,
                s.mb_per_s
            );
        }
        md.push('\n');
    }
    md.push_str("### Every size (medians)\n\n| workload | lines | MB | contender | wall s | CPU s | CPU+fake s | peak RSS MiB | lines/s |\n|---|---:|---:|---|---:|---:|---:|---:|---:|\n");
    for s in &r.summary {
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} | {} | {:.3} | {:.3} | {:.3} | {:.1} | {:.0} |",
            s.kind.as_str(),
            s.lines,
            s.bytes as f64 / 1e6,
            s.contender.as_str(),
            s.wall_s,
            s.cpu_s,
            s.tree_cpu_s,
            s.rss_mib,
            s.lines_per_s
        );
    }
    md.push_str("\n### Latency: line written → event received\n\n| workload | contender | samples | p50 µs | p99 µs | max µs |\n|---|---|---:|---:|---:|---:|\n");
    for l in &r.latency {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.0} | {:.0} | {:.0} |",
            l.kind.as_str(),
            l.contender.as_str(),
            l.count,
            l.p50_us,
            l.p99_us,
            l.max_us
        );
    }
    md.push_str("\n### Concurrency (claude, aa-stream, default mode)\n\n| runs at once | rounds | events | CPU s | µs CPU / event | wall s | dropped | failed |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for c in &r.concurrency {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.3} | {:.2} | {:.2} | {} | {} |",
            c.runs,
            c.rounds,
            c.events,
            c.cpu.cpu_s(),
            c.cpu_us_per_event,
            c.wall_s,
            c.dropped,
            c.failed
        );
    }
    if let Some(ratio) = r.concurrency_ratio {
        let _ = writeln!(
            md,
            "\nMedian CPU per event, at once / one at a time: {ratio:.2}x"
        );
    }
    md.push_str("\n### Flat RSS\n\n| contender | lines | GiB | wall s | CPU s | peak RSS MiB | raw stdout kept | raw in memory |\n|---|---:|---:|---:|---:|---:|---:|---|\n");
    for s in &r.big {
        let _ = writeln!(
            md,
            "| {} | {} | {:.2} | {:.2} | {:.2} | {:.1} | {} | {} |",
            s.contender.as_str(),
            s.workload.lines,
            s.workload.bytes as f64 / (1u64 << 30) as f64,
            s.wall_s,
            s.report.usage.cpu_s(),
            s.report.usage.maxrss_kib as f64 / 1024.0,
            fmt_opt(s.report.raw_stdout_bytes),
            s.report
                .raw_in_memory
                .map_or("—".into(), |m| if m { "yes" } else { "no (spilled)" }
                    .to_owned())
        );
    }
    md.push_str("\n### Targets\n\n| target | bound | measured | met |\n|---|---|---|---|\n");
    for t in &r.targets {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            t.name,
            t.target,
            t.measured,
            if t.met { "yes" } else { "**no**" }
        );
    }
    md
}
