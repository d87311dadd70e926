//! The soak's resident process: `zkr-soak-resident CONNECT ROOT` runs
//! [`zkr_integration_tests::soak::resident::Resident`] under ROOT and prints, flushed:
//! `session <id>` for each session, `ready` once every workload runs, `sample ...` every 10 s
//! (its memory, live heap, open files, sockets and tasks: [`Sample::to_line`]) with `ops <n>`
//! (the workloads' operations so far), and when its stdin closes, the resident's report
//! (`tally ...`, `left ...`), then, once the client is closed, `after <tasks> <sockets>` and
//! `baseline <tasks> <sockets>`: what is left, against what the process had before it
//! connected, and `end`.

use std::io::Write as _;
use std::time::Duration;

use zkr_integration_tests::soak::resident::Resident;
use zkr_integration_tests::soak::sample::{self, Sample};

/// Counts the bytes allocated and freed: the live heap, which a leak grows and the allocator's
/// fragmentation does not.
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, connect, root] = args.as_slice() else {
        eprintln!("usage: zkr-soak-resident CONNECT ROOT");
        std::process::exit(2);
    };
    // `ZKR_RESIDENT_LOG` (a `tracing` filter) logs what the resident's recipes and client do.
    if let Ok(filter) = std::env::var("ZKR_RESIDENT_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .init();
    }
    let baseline = Sample::of_this_process(0);
    // Stdin is read on a thread of its own (not a task: the tasks are counted).
    let (closed_tx, closed) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = closed_tx.send(());
    });
    let resident = match Resident::start(connect, root).await {
        Ok(resident) => std::sync::Arc::new(resident),
        Err(e) => {
            eprintln!("zkr-soak-resident: {e}");
            std::process::exit(1);
        }
    };
    say("ready");
    let started = std::time::Instant::now();
    let sampler = {
        let resident = resident.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(10));
            loop {
                every.tick().await;
                let sample = Sample {
                    heap_kib: sample::heap_kib(),
                    ..Sample::of_this_process(started.elapsed().as_secs())
                };
                say(&format!("{} ops {}", sample.to_line(), resident.operations()));
            }
        })
    };
    let _ = closed.await;
    sampler.abort();
    let _ = sampler.await;
    let resident = std::sync::Arc::into_inner(resident).expect("the sampler is gone");
    for line in resident.stop().await {
        say(&line);
    }
    // Every task and socket of the client goes once it is closed: wait for it, 15 s at most.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut now = Sample::of_this_process(0);
    while (now.tasks > baseline.tasks || now.sockets > baseline.sockets)
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
        now = Sample::of_this_process(0);
    }
    let tasks = |s: &Sample| s.tasks.unwrap_or_default();
    say(&format!("after {} {}", tasks(&now), now.sockets));
    say(&format!("baseline {} {}", tasks(&baseline), baseline.sockets));
    say("end");
}
