//! `zkr-soak --minutes N` (`make soak MINUTES=60`): every checker with random seeds, one after
//! another, on one partitionable 3-server ensemble (`ZKR_ZK_VERSION` picks its release) for N
//! minutes, beside the resident process ([`zkr_integration_tests::soak`]), with samples every
//! 10 s written to `target/soak/<release>-<unix time>.csv` and judged at the end.
//! `zkr-soak --check NAME --seed S` runs one check with one seed (what a failure prints to
//! replay it). `ZKR_SOAK_LOG` (a `tracing` filter such as `zkr_recipes=debug`) logs what the
//! checks run in this process do, `ZKR_WORKER_LOG` what their worker processes do,
//! `ZKR_RESIDENT_LOG` what the resident does, to stderr. Exit status 0 when everything held, 1
//! when something did not, 2 for bad arguments.

use std::fmt::Write as _;
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::seq::SliceRandom as _;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::time::Instant;
use zkr_integration_tests::checker::bin_next_to_current_exe;
use zkr_integration_tests::soak::sample::{growth, open_files, rss_kib, Sample};
use zkr_integration_tests::soak::{self, resident, CHECKS};
use zkr_testing::{ServerOptions, TestingCluster};

/// The warm-up before the memory is judged (runs shorter than twice this report it only, over
/// their second half).
const WARM_UP: Duration = Duration::from_secs(300);
/// The most the resident's memory (its RSS, and its live heap) may grow after the warm-up, of
/// its value at the warm-up's end.
const FLAT: f64 = 0.05;
/// The longest a resident workload may go without a success.
const STALL: Duration = Duration::from_secs(60);

enum Plan {
    Minutes(u64),
    One(String, u64),
}

fn plan(args: &[String]) -> Option<Plan> {
    match args {
        [flag, n] if flag == "--minutes" => n.parse().ok().filter(|n| *n > 0).map(Plan::Minutes),
        [c, name, s, seed] if c == "--check" && s == "--seed" => CHECKS
            .contains(&name.as_str())
            .then(|| seed.parse().ok().map(|seed| Plan::One(name.clone(), seed)))?,
        _ => None,
    }
}

/// What the resident process has said.
#[derive(Default)]
struct Heard {
    session: Option<i64>,
    tasks: Option<u64>,
    heap_kib: Option<u64>,
    ops: u64,
    report: Vec<String>,
    ended: bool,
}

/// One row of the CSV: the resident (memory and files read from /proc, tasks and operations as
/// it reported), the soak process, and the ensemble's node and ephemeral counts.
struct Row {
    resident: Sample,
    ops: u64,
    soak: Sample,
    tree: Option<(u64, u64)>,
}

/// Counts the bytes allocated and freed, for the soak's own live heap beside its RSS
/// ([`zkr_integration_tests::soak::sample::heap_kib`]).
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `ZKR_SOAK_LOG` (a `tracing` filter) logs the checks run in this process to stderr.
    if let Ok(filter) = std::env::var("ZKR_SOAK_LOG") {
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    }
    let Some(plan) = plan(&args) else {
        eprintln!("usage: zkr-soak --minutes N | --check {{{}}} --seed S", CHECKS.join(","));
        return ExitCode::from(2);
    };
    match run(plan).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("zkr-soak: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(plan: Plan) -> Result<bool, String> {
    let resident_bin =
        bin_next_to_current_exe("zkr-soak-resident").ok_or("build the package's binaries first")?;
    let options = ServerOptions::default().network_namespaces(true);
    let cluster = Arc::new(TestingCluster::with_options(3, options).await.map_err(|e| e.to_string())?);
    let release = cluster.release().version();
    let started = Instant::now();
    let (mut child, heard) = spawn_resident(&resident_bin, &cluster.connect_string()).await?;
    let pid = child.id().ok_or("the resident has no pid")?.to_string();
    let rows = Arc::new(Mutex::new(Vec::<Row>::new()));
    let sampler = tokio::spawn(sample_every_10s(cluster.clone(), pid, heard.clone(), rows.clone(), started));

    let mut findings = Vec::new();
    let (mut runs, mut operations, mut faults) = (0, 0, 0);
    let mut next_checks = Vec::new();
    let (deadline, single) = match &plan {
        Plan::Minutes(m) => (started + Duration::from_secs(m * 60), None),
        Plan::One(name, seed) => (started, Some((name.clone(), *seed))),
    };
    loop {
        let (name, seed) = match &single {
            Some(one) if runs == 0 => one.clone(),
            Some(_) => break,
            None if Instant::now() >= deadline => break,
            None => {
                if next_checks.is_empty() {
                    next_checks = CHECKS.to_vec();
                    next_checks.shuffle(&mut rand::rng());
                }
                (next_checks.pop().unwrap_or("mutex").to_owned(), rand::random::<u64>())
            }
        };
        runs += 1;
        let at = started.elapsed().as_secs();
        match soak::run_check(&cluster, &name, seed).await {
            Ok(summary) => {
                operations += summary.operations;
                faults += summary.faults;
                println!(
                    "[soak {at:>5} s] {name} seed {seed}: {}",
                    summary.line.lines().next().unwrap_or_default()
                );
            }
            Err(e) => {
                println!("[soak {at:>5} s] {name} seed {seed}: FAILED: {e}");
                findings.push(format!(
                    "{name} seed {seed} failed: {e}\n  replay: {}",
                    soak::replay(&cluster, &name, seed)
                ));
                soak::recover(&cluster).await;
            }
        }
        // One fault aimed at the resident's client, drawn from the same seed.
        let session = heard.lock().unwrap().session.unwrap_or_default();
        let fault = soak::resident_fault(seed);
        let at = started.elapsed().as_secs();
        let mut what = String::new();
        let injected = fault.inject(&cluster, session, resident::SESSION, |w| what = w).await;
        println!("[soak {at:>5} s] the resident's fault: {what}");
        faults += 1;
        if let Err(e) = injected {
            findings.push(format!("the resident's fault {fault:?} after {name} seed {seed}: {e}"));
            soak::recover(&cluster).await;
        }
    }
    // The resident stops, reports and closes; then nothing of its may be left anywhere.
    drop(child.stdin.take());
    let ended = tokio::time::timeout(Duration::from_secs(120), child.wait()).await;
    sampler.abort();
    if !matches!(ended, Ok(Ok(status)) if status.success()) || !heard.lock().unwrap().ended {
        findings.push(format!("the resident did not stop and report: {ended:?}"));
    }
    let ephemerals = ephemerals_gone(&cluster).await;
    let rows = std::mem::take(&mut *rows.lock().unwrap());
    let report = std::mem::take(&mut heard.lock().unwrap().report);
    judge(&report, &rows, ephemerals, &mut findings);
    let csv = write_csv(&release, &rows)?;
    let minutes = started.elapsed().as_secs_f64() / 60.0;
    println!(
        "\nZooKeeper {release}: {minutes:.1} min, {runs} checks ({operations} operations, {faults} faults), \
         resident {} operations; samples in {csv}",
        rows.last().map_or(0, |r| r.ops)
    );
    println!("{}", summary(&report, &rows));
    for finding in &findings {
        println!("FINDING: {finding}");
    }
    println!("{} finding(s)", findings.len());
    Ok(findings.is_empty())
}

async fn spawn_resident(
    binary: &std::path::Path,
    cs: &str,
) -> Result<(tokio::process::Child, Arc<Mutex<Heard>>), String> {
    let root = zkr_integration_tests::unique_root("soak-resident");
    let mut child = tokio::process::Command::new(binary)
        .args([cs, root.as_str()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", binary.display()))?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let heard = Arc::new(Mutex::new(Heard::default()));
    let (sink, (first_tx, first)) = (heard.clone(), tokio::sync::oneshot::channel());
    tokio::spawn(async move {
        let mut first_tx = Some(first_tx);
        while let Ok(Some(line)) = lines.next_line().await {
            let mut heard = sink.lock().unwrap();
            if let Some(id) = line.strip_prefix("session ") {
                heard.session = id.parse().ok();
            } else if line == "ready" {
                first_tx.take().map(|tx| tx.send(()));
            } else if let Some(sample) = Sample::from_line(&line) {
                (heard.tasks, heard.heap_kib) = (sample.tasks, sample.heap_kib);
                heard.ops = line.rsplit_once(" ops ").and_then(|(_, n)| n.parse().ok()).unwrap_or(heard.ops);
            } else if line == "end" {
                heard.ended = true;
            } else {
                heard.report.push(line);
            }
        }
    });
    // The checks start once every workload runs (their faults would fail its setup).
    let ready = tokio::time::timeout(Duration::from_secs(120), first).await;
    ready
        .map_err(|_| "the resident was not ready within 120 s")?
        .map_err(|_| "the resident ended before it was ready")?;
    Ok((child, heard))
}

async fn sample_every_10s(
    cluster: Arc<TestingCluster>,
    pid: String,
    heard: Arc<Mutex<Heard>>,
    rows: Arc<Mutex<Vec<Row>>>,
    started: Instant,
) {
    let mut every = tokio::time::interval(Duration::from_secs(10));
    loop {
        every.tick().await;
        let at = started.elapsed().as_secs();
        let (fds, sockets) = open_files(&pid);
        let (tasks, heap_kib, ops) = {
            let heard = heard.lock().unwrap();
            (heard.tasks, heard.heap_kib, heard.ops)
        };
        let resident = Sample { at, rss_kib: rss_kib(&pid), fds, sockets, tasks, heap_kib };
        let tree = soak::tree_counts(&cluster).await;
        rows.lock().unwrap().push(Row { resident, ops, soak: Sample::of_this_process(at), tree });
    }
}

/// Waits (30 s at most: past every session timeout of the soak) until the ensemble holds no
/// ephemeral node; the count left.
async fn ephemerals_gone(cluster: &TestingCluster) -> Option<u64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = soak::tree_counts(cluster).await.map(|(_, e)| e);
        if left == Some(0) || Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn judge(report: &[String], rows: &[Row], ephemerals: Option<u64>, findings: &mut Vec<String>) {
    for line in report {
        let fields: Vec<&str> = line.split(' ').collect();
        match fields.as_slice() {
            ["tally", name, ops, _errors, violations, gap, ..] => {
                let gap_ms: u64 = gap.parse().unwrap_or(u64::MAX);
                if *violations != "0" {
                    findings.push(format!("resident {name}: {violations} violation(s): {line}"));
                }
                if *name != "config-watcher" && (*ops == "0" || gap_ms > STALL.as_millis() as u64) {
                    findings.push(format!(
                        "resident {name} stalled (longest without a success {gap_ms} ms): {line}"
                    ));
                }
            }
            ["left", n, ..] if *n != "0" => {
                findings.push(format!("the resident's live session still owned nodes: {line}"))
            }
            ["after", tasks, sockets] => {
                let baseline = report.iter().find_map(|l| l.strip_prefix("baseline ")).unwrap_or("? ?");
                if format!("{tasks} {sockets}") != baseline {
                    findings.push(format!("after close the resident has {tasks} tasks and {sockets} sockets, against {baseline} before it connected"));
                }
            }
            _ => {}
        }
    }
    if ephemerals != Some(0) {
        findings.push(format!("ephemeral nodes left in the ensemble 30 s after the end: {ephemerals:?}"));
    }
    // Memory is judged on runs of at least twice the warm-up (a replay of one check is not:
    // its first minute is all warm-up); shorter ones only report it.
    let span = Duration::from_secs(rows.last().map_or(0, |r| r.resident.at));
    if span < 2 * WARM_UP {
        return;
    }
    for (what, series) in resident_memory(rows) {
        match growth(&series, warm_up(rows)) {
            Some(g) if !g.is_flat(FLAT) => {
                findings.push(format!("the resident's {what} grew after the warm-up: {g:?}"))
            }
            _ => {}
        }
    }
}

fn warm_up(rows: &[Row]) -> Duration {
    let span = rows.last().map_or(0, |r| r.resident.at);
    WARM_UP.min(Duration::from_secs(span / 2))
}

/// The resident's RSS and live heap, as `(at, KiB)` series.
fn resident_memory(rows: &[Row]) -> [(&'static str, Vec<(u64, u64)>); 2] {
    let rss = rows.iter().map(|r| (r.resident.at, r.resident.rss_kib)).collect();
    let heap = rows.iter().filter_map(|r| Some((r.resident.at, r.resident.heap_kib?))).collect();
    [("RSS", rss), ("live heap", heap)]
}

fn summary(report: &[String], rows: &[Row]) -> String {
    let mut out = String::new();
    let warm = warm_up(rows);
    let soak_rss = ("soak RSS", rows.iter().map(|r| (r.soak.at, r.soak.rss_kib)).collect());
    let soak_heap =
        ("soak live heap", rows.iter().filter_map(|r| Some((r.soak.at, r.soak.heap_kib?))).collect());
    for (what, series) in resident_memory(rows).into_iter().chain([soak_rss, soak_heap]) {
        let Some(g) = growth(&series, warm) else { continue };
        let most = series.iter().map(|p| p.1).max().unwrap_or(0);
        let _ = writeln!(
            out,
            "{what}: {} KiB at {} s, {} KiB at {} s, at most {most} KiB; fitted slope {:.1} KiB/min, rise {:.0} KiB ({:.2}% of the first)",
            g.at_warm, g.from, g.at_end, g.to, g.slope_kib_per_min, g.fitted_rise_kib,
            100.0 * g.fitted_rise_kib / g.at_warm.max(1) as f64
        );
    }
    for (who, samples) in [
        ("resident", rows.iter().map(|r| r.resident).collect::<Vec<_>>()),
        ("soak", rows.iter().map(|r| r.soak).collect()),
    ] {
        let max = |f: fn(&Sample) -> u64| samples.iter().map(f).max().unwrap_or(0);
        let _ = writeln!(
            out,
            "{who}: at most {} fds, {} sockets, {} tasks",
            max(|s| s.fds),
            max(|s| s.sockets),
            max(|s| s.tasks.unwrap_or(0))
        );
    }
    let nodes = rows.iter().filter_map(|r| r.tree.map(|t| t.0)).collect::<Vec<_>>();
    let _ = writeln!(out, "znodes: {:?} first, {:?} last", nodes.first(), nodes.last());
    out.push_str(&report.join("\n"));
    out
}

fn write_csv(release: &str, rows: &[Row]) -> Result<String, String> {
    let dir = std::path::Path::new("target/soak");
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let path = dir.join(format!("{release}-{unix}.csv"));
    let mut csv = "at_s,resident_rss_kib,resident_heap_kib,resident_fds,resident_sockets,resident_tasks,resident_ops,soak_rss_kib,soak_fds,soak_sockets,soak_tasks,znodes,ephemerals\n".to_owned();
    for r in rows {
        let (a, s) = (r.resident, r.soak);
        let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{},{},{},{},{}",
            a.at,
            a.rss_kib,
            opt(a.heap_kib),
            a.fds,
            a.sockets,
            opt(a.tasks),
            r.ops,
            s.rss_kib,
            s.fds,
            s.sockets,
            opt(s.tasks),
            opt(r.tree.map(|t| t.0)),
            opt(r.tree.map(|t| t.1))
        );
    }
    std::fs::write(&path, csv).map_err(|e| e.to_string())?;
    Ok(path.display().to_string())
}
