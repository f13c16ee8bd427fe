//! The web console in a real browser: `tests/console-browser/e2e.mjs` drives Debian's headless
//! Chromium through playwright-core against a running service — sign in, start a run, approve
//! its tool call from the keyboard, see it finish, watch a 1 000-part run drawn whole.
//!
//! Needs Chromium at `/usr/bin/chromium` (Debian's `chromium` package; `TOOLSMITH_CHROMIUM`
//! names another), `node` on the PATH (`TOOLSMITH_NODE` names another) and `npm ci` in
//! `tests/console-browser`; `scripts/test.sh` installs them. With
//! `TOOLSMITH_CONSOLE_SCREENSHOTS=<dir>` the script also saves the views as PNGs there
//! (`scripts/console-screenshots.sh`).

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use toolsmith_server::ServiceOptions;

use crate::common::{self, call, config, last, mock_model, text};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/console-browser");

/// How many text deltas the long run's model streams (the script expects as many).
const WORDS: usize = 1000;

/// A streamed answer of `WORDS` chunks, `w0001 ` to `w1000 `, each its own delta.
fn words() -> Vec<Value> {
    let mut chunks: Vec<Value> = (1..=WORDS)
        .map(|n| {
            json!({"id": "c1", "model": "mock", "choices": [{"index": 0,
                   "delta": {"role": "assistant", "content": format!("w{n:04} ")}}]})
        })
        .collect();
    chunks.push(json!({"id": "c1", "model": "mock",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": WORDS, "total_tokens": WORDS + 12}}));
    chunks
}

/// What the test needs that cargo does not build: the node binary to run the script with.
fn prerequisites() -> String {
    let chromium =
        std::env::var("TOOLSMITH_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        std::path::Path::new(&chromium).exists(),
        "Chromium is not installed at {chromium}: run `scripts/system-packages.sh chromium` \
         (or `apt-get install chromium`; scripts/test.sh does)"
    );
    assert!(
        std::path::Path::new(&format!("{DIR}/node_modules/playwright-core")).exists(),
        "playwright-core is not installed: run `npm ci` in {DIR} (scripts/test.sh does)"
    );
    let node = std::env::var("TOOLSMITH_NODE").unwrap_or_else(|_| "node".into());
    // playwright-core needs Node.js 20 or later (`v20.20.2`).
    let major = Command::new(&node)
        .arg("--version")
        .output()
        .ok()
        .filter(|v| v.status.success())
        .and_then(|v| {
            let version = String::from_utf8_lossy(&v.stdout).trim().to_string();
            version
                .strip_prefix('v')?
                .split('.')
                .next()?
                .parse::<u32>()
                .ok()
        });
    assert!(
        major.is_some_and(|m| m >= 20),
        "`{node}` is not Node.js 20 or later (it is {major:?}), which playwright-core needs: \
         install it, or name one in TOOLSMITH_NODE"
    );
    node
}

#[tokio::test]
async fn the_console_runs_and_approves_in_a_real_browser() {
    let node = prerequisites();
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;

    let calc = mock_model(|body| match last(body) {
        (role, result) if role == "tool" => text(&format!("The answer is {result}.")),
        _ => call("call_1", "calculator", json!({"expression": "6 * 7"})),
    });
    let tools = json!({"calculator": {"needsApproval": true}});
    service.agent("acme", "calc", config(&calc, tools)).await;
    // The pause lets the page, which opens the run's live stream as soon as the run is
    // accepted, watch every one of the deltas (with room to spare on a busy machine).
    let chatty = mock_model(|_| {
        std::thread::sleep(Duration::from_millis(2500));
        words()
    });
    service
        .agent("acme", "chatty", config(&chatty, json!({})))
        .await;

    let url = service.url.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(node)
            .arg(format!("{DIR}/e2e.mjs"))
            .args([url.as_str(), secret.as_str()])
            .current_dir(DIR)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let summary: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON summary from the script:\n{stdout}\n{stderr}"));
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(summary["longRun"]["words"], WORDS, "{summary}");
    assert!(
        summary["longRun"]["liveParts"].as_u64() >= Some(WORDS as u64),
        "{summary}"
    );
    // The figures, for `cargo test -- --nocapture`.
    println!("console in Chromium: {summary}");
}
