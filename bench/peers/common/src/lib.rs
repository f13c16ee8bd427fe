//! What every client of the peers bench shares: its command line, the tool it declares, the
//! prompt, the answer it must end with, and the clock (`getrusage`, user + system CPU of the
//! whole process, so time spent in the HTTP client's own threads counts too).
//!
//! Every client is run as `CLIENT URL TOOLS RUNS [WARMUP]`: against the mock at `URL` (ending in
//! `/v1`), with `TOOLS` tools declared (`noop_0` … `noop_{TOOLS-1}`, all alike), it does `WARMUP`
//! runs (default 20), then `RUNS` measured ones, and prints one line:
//!
//! ```text
//! CLIENT tools=8 runs=2000 cpu_us_per_run=123.4 wall_us_per_run=234.5
//! ```
//!
//! With `AT_ONCE=K` in the environment (default 1), the runs go K at a time, joined on the
//! client's one thread: what a service running many runs sees, where one run's wake-up finds the
//! code the others just ran still in the caches.

use std::time::{Duration, Instant};

/// The user's message.
pub const PROMPT: &str = "Call noop_0 with x = 1, then say what it returned.";

/// The tool's description, the same for every tool.
pub const DESCRIPTION: &str = "Does nothing, quickly.";

/// The tools' input schema: an integer and an optional string (what the step-overhead bench's
/// `NoopArgs` derives to, once rendered for OpenAI).
pub const SCHEMA: &str = r#"{"type":"object","properties":{"x":{"type":"integer","format":"int64","description":"A number."},"label":{"type":["string","null"],"description":"An optional label."}},"required":["x"]}"#;

/// What the tool returns.
pub const RESULT: &str = "ok";

/// The model's last text, which every run must end with.
pub const ANSWER: &str = "The tool said ok.";

/// The name of tool `i`.
pub fn tool_name(i: usize) -> String {
    format!("noop_{i}")
}

/// A client's command line.
#[derive(Debug, Clone)]
pub struct Args {
    /// The mock's base URL, `http://127.0.0.1:PORT/v1`.
    pub url: String,
    /// Tools declared.
    pub tools: usize,
    /// Measured runs.
    pub runs: u32,
    /// Runs before the measured ones.
    pub warmup: u32,
}

impl Args {
    /// Reads `URL TOOLS RUNS [WARMUP]`, exiting with a usage line when they are not there.
    pub fn parse() -> Args {
        let args: Vec<String> = std::env::args().collect();
        let usage = || -> ! {
            eprintln!("usage: {} URL TOOLS RUNS [WARMUP]", args[0]);
            std::process::exit(2)
        };
        if args.len() < 4 {
            usage();
        }
        Args {
            url: args[1].clone(),
            tools: args[2].parse().unwrap_or_else(|_| usage()),
            runs: args[3].parse().unwrap_or_else(|_| usage()),
            warmup: args
                .get(4)
                .map_or(20, |w| w.parse().unwrap_or_else(|_| usage())),
        }
    }
}

/// User + system CPU time of this process so far.
pub fn cpu_time() -> Duration {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Runs `run` `warmup` times, then `runs` times measured (`AT_ONCE` at a time, rounded down to
/// whole batches), checking every answer, and prints the result line for `client`.
pub async fn measure<F, Fut>(client: &str, args: &Args, mut run: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = String>,
{
    let at_once: u32 = match std::env::var("AT_ONCE") {
        Ok(k) => k.parse().ok().filter(|&k| k > 0).unwrap_or_else(|| {
            eprintln!("AT_ONCE is a number of runs above 0, not {k:?}");
            std::process::exit(2)
        }),
        Err(_) => 1,
    };
    let mut batch = async |runs: u32| {
        for _ in 0..runs / at_once {
            let answers = futures::future::join_all((0..at_once).map(|_| run())).await;
            answers.iter().for_each(|answer| check(client, answer));
        }
        runs / at_once * at_once
    };
    batch(args.warmup).await;
    let (cpu, wall) = (cpu_time(), Instant::now());
    let runs = batch(args.runs).await;
    let (cpu, wall) = (cpu_time() - cpu, wall.elapsed());
    let per_run = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(runs.max(1));
    println!(
        "{client} tools={} runs={} cpu_us_per_run={:.1} wall_us_per_run={:.1}",
        args.tools,
        runs,
        per_run(cpu),
        per_run(wall)
    );
}

fn check(client: &str, answer: &str) {
    if answer.trim() != ANSWER {
        eprintln!("{client}: the run ended with {answer:?}, not {ANSWER:?}");
        std::process::exit(1);
    }
}
