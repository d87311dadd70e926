//! The report's facts (the run, the server, the clients), the measurement tables and the
//! `RATIOS` lines.

use std::time::Duration;

use zkr_benches::Deployment;
use zkr_benches::{
    filesystem_of, fmt_ms, fmt_rate, fmt_ratio, machine_facts, mntr_value, BenchOptions, Measurement, Table,
    WARMUP,
};
use zkr_testing::peers::CuratorTool;

use crate::library::{Library, Load};
use crate::scenarios::Bench;
use crate::{REQUEST_CYCLES, SESSION_TIMEOUT};

/// The title and the facts about the run: command, date, commit, machine, build.
pub fn print_run_facts(options: &BenchOptions) {
    println!("# Lock benchmark: zkr vs Apache Curator vs zookeeper-client\n");
    let mut command = String::from("cargo bench -p zkr-benches --bench lock");
    if !options.user_args.is_empty() {
        command.push_str(" -- ");
        command.push_str(&options.user_args.join(" "));
    }
    println!("- command: `{command}`");
    println!("- argv: `{}`", std::env::args().collect::<Vec<_>>().join(" "));
    if let Some(date) = command_output("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]) {
        println!("- date: {date}");
    }
    if let Some(commit) =
        command_output("git", &["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "--short", "HEAD"])
    {
        let dirty = command_output("git", &["-C", env!("CARGO_MANIFEST_DIR"), "status", "--porcelain"])
            .is_some_and(|s| !s.is_empty());
        println!("- git: {commit}{}", if dirty { " (with uncommitted changes)" } else { "" });
    }
    for (key, value) in machine_facts() {
        println!("- {key}: {value}");
    }
    if cfg!(debug_assertions) {
        println!("- build: DEBUG ASSERTIONS ON: not an optimized build, numbers are not representative");
    } else {
        println!("- build: optimized (cargo bench profile)");
    }
}

/// The facts about the server, Curator, the clients and the windows.
pub async fn print_setup(options: &BenchOptions, server: &Deployment, curator: &Result<CuratorTool, String>) {
    let mntr = server.mntrs().await.ok().and_then(|m| m.into_iter().next()).unwrap_or_default();
    // Debian's build reports `3.8.0-${mvngit.commit.id}, built on ...`: keep the version.
    let version = mntr_value(&mntr, "zk_version")
        .and_then(|v| v.split([',', '-']).next().map(str::to_string))
        .unwrap_or_else(|| "unknown version".to_string());
    let fs = filesystem_of(server.data_dir()).unwrap_or_else(|| "unknown file system".to_string());
    println!(
        "- server: ZooKeeper {version}, {}, zkr_testing defaults (forceSync=yes, tickTime 500 ms, \
         maxSessionTimeout 60 s); data dir on {fs}; server counters are summed over the servers",
        server.describe()
    );
    match curator {
        Ok(curator) => {
            let java = zkr_testing::Installation::detect()
                .ok()
                .and_then(|i| java_version(i.java()))
                .unwrap_or_else(|| "unknown".to_string());
            let release = match curator.release() {
                "debian" => "5.4 (Debian's jars)",
                release => release,
            };
            println!("- Curator: {release} (`ZKR_CURATOR_VERSION`), java: {java}");
        }
        Err(e) => println!("- Curator: UNAVAILABLE ({e}); its rows are skipped"),
    }
    println!(
        "- clients: every library asks for a {} s session; tokio multi-thread runtime with {} workers",
        SESSION_TIMEOUT.as_secs(),
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    println!(
        "- windows: {} s warm-up, then {} s measured per measurement; waiters: zkr N={} and N={}, \
         Curator and zookeeper-client N={}; requests: {} cycles",
        WARMUP.as_secs(),
        options.seconds,
        options.zkr_waiters(),
        options.peer_waiters(),
        options.peer_waiters(),
        REQUEST_CYCLES
    );
}

/// A measurement table's columns: cycles (whole cycles timed) or acquisitions (the waits in
/// `acquire` timed).
fn headers(load: Load) -> [&'static str; 5] {
    if load == Load::Cycles {
        ["library", "cycles/s", "p50 cycle", "p99 cycle", "cycles counted"]
    } else {
        ["library", "acquisitions/s", "p50 acquire wait", "p99 acquire wait", "acquisitions counted"]
    }
}

/// A table of measurements, one row per library: rate, p50, p99, count.
pub fn measurement_table(load: Load, results: &[(Library, Option<Measurement>)]) -> Table {
    library_table(&headers(load), results, |m| {
        vec![fmt_rate(m.per_second()), fmt_ms(m.p50), fmt_ms(m.p99), m.ops.to_string()]
    })
}

/// A table with a row per library: its label, then `cells` or "failed".
pub fn library_table<T>(
    headers: &[&str],
    results: &[(Library, Option<T>)],
    cells: impl Fn(&T) -> Vec<String>,
) -> Table {
    let mut table = Table::new(headers);
    for (library, result) in results {
        let mut row = vec![library.label().to_string()];
        row.extend(result.as_ref().map_or_else(|| vec!["failed (see above)".to_string()], &cells));
        table.row(row);
    }
    table
}

impl Bench {
    /// zkr's rate against every other library's, then its latency against every other lock's.
    pub fn measurement_ratios(
        &mut self,
        scenario: &str,
        load: Load,
        results: &[(Library, Option<Measurement>)],
    ) {
        let cycles = load == Load::Cycles;
        let (unit, time) = if cycles { ("cycles/s", "p50 cycle") } else { ("acquisitions/s", "p99 wait") };
        let percentile = |m: &Measurement| if cycles { m.p50 } else { m.p99 };
        let leads = [Library::Zkr, Library::ZkrDrop];
        let others: Vec<(Library, &Measurement)> = results
            .iter()
            .filter(|(library, _)| !leads.contains(library))
            .filter_map(|(library, m)| Some((*library, m.as_ref()?)))
            .collect();
        for lead in leads {
            let Some((_, Some(z))) = results.iter().find(|(library, _)| *library == lead) else { continue };
            for (library, o) in &others {
                self.rate_ratio(scenario, lead.ratio_name(), library.ratio_name(), unit, z, o);
            }
            if lead == Library::ZkrDrop {
                continue;
            }
            for (library, o) in others
                .iter()
                .filter(|(library, _)| !matches!(library, Library::Floor | Library::FloorPipelined))
            {
                let what = format!("{scenario} {time}");
                self.time_ratio(&what, library.ratio_name(), percentile(z), percentile(o));
            }
        }
    }

    fn rate_ratio(
        &mut self,
        scenario: &str,
        lead: &str,
        other: &str,
        unit: &str,
        zkr: &Measurement,
        o: &Measurement,
    ) {
        self.ratios.push(format!(
            "{scenario} {lead}/{other} {} ({unit}: {lead} {}, {other} {})",
            fmt_ratio(zkr.per_second(), o.per_second()),
            fmt_rate(zkr.per_second()),
            fmt_rate(o.per_second())
        ));
    }

    fn time_ratio(&mut self, what: &str, other: &str, zkr: Duration, o: Duration) {
        self.ratios.push(format!(
            "{what} zkr/{other} {} (zkr {}, {other} {})",
            fmt_ratio(zkr.as_secs_f64(), o.as_secs_f64()),
            fmt_ms(zkr),
            fmt_ms(o)
        ));
    }

    /// The `RATIOS` section.
    pub fn print_ratios(&self) {
        println!("\n## RATIOS\n");
        println!(
            "(zkr's value divided by the other's: above 1 is better for rates, below 1 for times, RSS, requests)\n"
        );
        println!("```");
        for line in &self.ratios {
            println!("{line}");
        }
        println!("```");
    }
}

/// The first line of a command's stdout, if it runs and succeeds.
fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let output = std::process::Command::new(program).args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&output.stdout).lines().next().unwrap_or("").trim().to_string())
}

/// The first line of `java -version` (which prints to stderr).
fn java_version(java: &std::path::Path) -> Option<String> {
    let output = std::process::Command::new(java).arg("-version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stderr);
    text.lines().next().map(|l| l.trim().to_string())
}
