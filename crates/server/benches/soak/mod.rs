//! `-- soak [SECONDS] [CLIENTS]`: the service under many concurrent streamed runs for a long
//! span (see the bench's docs). Reports every [`WINDOW`] and at the end; never panics on a
//! failed run, which is counted and shown.

use std::sync::Mutex;

use super::*;

/// How often the service is looked at.
const WINDOW: Duration = Duration::from_secs(30);
/// The longest a run may take before it counts as an error.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// How many failures are shown (all are counted).
const SHOWN: usize = 5;

/// What the clients report: latencies of the current window and of the whole span, failures.
#[derive(Default)]
struct Tally {
    window: Vec<Duration>,
    all: Vec<Duration>,
    errors: usize,
    shown: Vec<String>,
}

/// The `p` quantile of `latencies` (sorted here), in milliseconds; 0 when there are none.
fn quantile_ms(latencies: &mut [Duration], p: f64) -> f64 {
    quantile(latencies, p).as_secs_f64() * 1000.0
}

/// How many descriptors process `pid` has open.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

pub(crate) async fn soak(span: Duration, clients: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (_, secret, mut service, url) = setup(dir.path(), json!({})).await;
    let pid = service.id();
    let url = format!("{url}/agents/calc/chat");
    let client = reqwest::Client::new();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let started = Instant::now();
    let deadline = started + span;
    println!(
        "soak: {clients} clients streaming chat runs for {} s on SQLite; the service's RSS idle {:.0} MiB",
        span.as_secs(),
        rss_kib(pid) as f64 / 1024.0
    );
    let tasks: Vec<_> = (0..clients as u64)
        .map(|c| {
            let (client, url, secret, tally) =
                (client.clone(), url.clone(), secret.clone(), tally.clone());
            tokio::spawn(async move {
                let mut n = c * 1_000_000;
                while Instant::now() < deadline {
                    let request = client.post(&url).timeout(RUN_TIMEOUT);
                    let outcome = try_run(request, &secret, n).await;
                    let mut tally = tally.lock().unwrap();
                    match outcome {
                        Ok(latency) => {
                            tally.window.push(latency);
                            tally.all.push(latency);
                        }
                        Err(e) => {
                            tally.errors += 1;
                            if tally.shown.len() < SHOWN {
                                tally.shown.push(e.chars().take(300).collect());
                            }
                        }
                    }
                    n += 1;
                }
            })
        })
        .collect();

    println!("| at | runs/s | p50 | p99 | errors | RSS | open fds |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut rss = Vec::new();
    let mut at = started;
    while at < deadline {
        let from = at;
        at = (at + WINDOW).min(deadline);
        tokio::time::sleep_until(at.into()).await;
        let (mut window, errors) = {
            let mut tally = tally.lock().unwrap();
            (std::mem::take(&mut tally.window), tally.errors)
        };
        let now = rss_kib(pid);
        rss.push(now);
        println!(
            "| {:.0} s | {:.0} | {:.1} ms | {:.1} ms | {errors} | {:.0} MiB | {} |",
            at.duration_since(started).as_secs_f64(),
            window.len() as f64 / at.duration_since(from).as_secs_f64(),
            quantile_ms(&mut window, 0.5),
            quantile_ms(&mut window, 0.99),
            now as f64 / 1024.0,
            open_fds(pid),
        );
    }
    // Every client stops at the deadline; the runs in flight then have RUN_TIMEOUT to end.
    for task in tasks {
        let _ = tokio::time::timeout(RUN_TIMEOUT + Duration::from_secs(5), task).await;
    }
    let ended = started.elapsed();
    let _ = service.kill();
    let _ = service.wait();
    let mut tally = std::mem::take(&mut *tally.lock().unwrap());
    let runs = tally.all.len();
    let database: u64 = std::fs::read_dir(dir.path())
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    println!();
    println!(
        "{runs} runs in {:.0} s ({:.0} a second), {} errors; latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        ended.as_secs_f64(),
        runs as f64 / ended.as_secs_f64(),
        tally.errors,
        quantile_ms(&mut tally.all, 0.5),
        quantile_ms(&mut tally.all, 0.99),
        quantile_ms(&mut tally.all, 1.0),
    );
    if let (Some(first), Some(last), Some(max)) = (rss.first(), rss.last(), rss.iter().max()) {
        println!(
            "the service's RSS: {:.0} MiB after the first window, {:.0} MiB at the end ({:+.1} %), {:.0} MiB at most; the database {:.0} MiB",
            *first as f64 / 1024.0,
            *last as f64 / 1024.0,
            (*last as f64 / *first as f64 - 1.0) * 100.0,
            *max as f64 / 1024.0,
            database as f64 / 1_048_576.0,
        );
    }
    for shown in &tally.shown {
        println!("error: {shown}");
    }
}
