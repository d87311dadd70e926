//! The driver: a server, each row's children under callgrind, the table.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context};
use zkr_benches::Table;

use crate::rows::{REQUESTS, ROWS};

struct Options {
    rows: Vec<String>,
    ops: u64,
    save_baseline: bool,
}

fn options(args: &[String]) -> anyhow::Result<Options> {
    let mut options =
        Options { rows: ROWS.iter().map(|r| r.to_string()).collect(), ops: 1000, save_baseline: false };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => {}
            "--rows" => {
                options.rows = args.next().context("--rows A,B")?.split(',').map(str::to_string).collect()
            }
            "--ops" => options.ops = args.next().context("--ops N")?.parse().context("--ops N")?,
            "--save-baseline" => options.save_baseline = true,
            other => bail!(
                "unknown argument {other}; usage: zkr-instructions [--rows {}] [--ops N] [--save-baseline]",
                ROWS.join(",")
            ),
        }
    }
    for row in &options.rows {
        ensure!(ROWS.contains(&row.as_str()), "unknown row {row}: one of {}", ROWS.join(", "));
    }
    ensure!(options.ops > 0, "--ops must be at least 1");
    Ok(options)
}

/// Runs every row on both sides and prints the table.
pub fn drive(args: &[String]) -> anyhow::Result<()> {
    let options = options(args)?;
    let version = Command::new("valgrind").arg("--version").output();
    let Ok(version) = version else {
        bail!(
            "valgrind is not installed: sudo apt-get install valgrind (make bench-instructions installs it)"
        );
    };
    let valgrind = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let exe = std::env::current_exe().context("this program's path")?;
    let runtime = tokio::runtime::Runtime::new()?;
    let server = runtime.block_on(zkr_testing::TestingServer::start())?;
    let cs = server.connect_string();
    let scratch = tempfile_dir()?;
    let baseline = read_baseline(Path::new(crate::BASELINE));
    let mut table = Table::new(&[
        "row",
        "zkr instructions/op",
        "raw instructions/op",
        "zkr / raw",
        "zkr against the baseline",
    ]);
    let mut saved = String::new();
    for row in &options.rows {
        let mut per_op = [0.0f64; 2];
        for (slot, side) in ["zkr", "raw"].iter().enumerate() {
            eprintln!(
                "[instructions] {row} on {side}: {} and {} operations under callgrind",
                options.ops,
                2 * options.ops
            );
            let one = count(&exe, &scratch, row, side, options.ops, &cs)?;
            let two = count(&exe, &scratch, row, side, 2 * options.ops, &cs)?;
            per_op[slot] = two.saturating_sub(one) as f64 / options.ops as f64;
        }
        let [zkr, raw] = per_op;
        let against = match baseline.iter().find(|(r, _)| r == row) {
            Some((_, before)) => {
                let change = (zkr / before - 1.0) * 100.0;
                let mark = if change > 5.0 { " REGRESSION" } else { "" };
                format!("{change:+.1}% (was {before:.0}){mark}")
            }
            None => "no baseline".to_string(),
        };
        table.row(vec![
            row.clone(),
            format!("{zkr:.0}"),
            format!("{raw:.0}"),
            format!("{:.2}x", zkr / raw),
            against,
        ]);
        saved.push_str(&format!("{row} {zkr:.0} {raw:.0}\n"));
    }
    println!("Instructions per operation (callgrind, the measured thread; {valgrind}; ZooKeeper {}; {} operations)\n", server.release().version(), options.ops);
    println!("{}", table.render());
    println!("What each row is, and the requests both sides send:\n");
    for (row, what, requests) in REQUESTS.iter().filter(|(r, _, _)| options.rows.iter().any(|o| o == r)) {
        println!("- {row}: {what}; {requests}");
    }
    if options.save_baseline {
        std::fs::write(crate::BASELINE, saved).with_context(|| format!("writing {}", crate::BASELINE))?;
        eprintln!("[instructions] baseline written to {}", crate::BASELINE);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

/// The measured thread's instructions for `ops` operations of `row` on `side`.
fn count(exe: &Path, scratch: &Path, row: &str, side: &str, ops: u64, cs: &str) -> anyhow::Result<u64> {
    let dir = scratch.join(format!("{row}-{side}-{ops}"));
    std::fs::create_dir_all(&dir)?;
    let root = format!("/zkr-instructions-{row}-{side}-{ops}-{}", std::process::id());
    let output = Command::new("valgrind")
        .args(["--tool=callgrind", "--separate-threads=yes", "--dump-line=no"])
        .arg(format!("--callgrind-out-file={}", dir.join("cg.out").display()))
        .arg(exe)
        .args(["measure", row, side, &ops.to_string(), cs, &root])
        .output()
        .context("running valgrind")?;
    ensure!(
        output.status.success(),
        "{row} on {side} failed under callgrind ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
            .lines()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    );
    let main_thread = std::fs::read_dir(&dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with("-01"))
        .with_context(|| format!("no callgrind output for the main thread in {}", dir.display()))?;
    totals(&main_thread)
}

/// The `totals:` (or `summary:`) line of a callgrind output file: instructions executed.
fn totals(file: &Path) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("totals:").or_else(|| l.strip_prefix("summary:")))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .with_context(|| format!("no totals in {}", file.display()))
}

fn read_baseline(file: &Path) -> Vec<(String, f64)> {
    let Ok(text) = std::fs::read_to_string(file) else { return Vec::new() };
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut fields = l.split_whitespace();
            Some((fields.next()?.to_string(), fields.next()?.parse().ok()?))
        })
        .collect()
}

fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("zkr-instructions-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
