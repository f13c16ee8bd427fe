//! `tools/call` round trips against three MCP servers, in the same run: toolsmith's server,
//! the official TypeScript SDK's (`@modelcontextprotocol/server-everything`, its `echo`) and
//! FastMCP's (Python); then toolsmith's client against a bare `rmcp` client on the same server.
//!
//!     scripts/mcp-peers.sh
//!     cargo bench -p toolsmith-mcp --bench round_trips [-- CALLS]
//!
//! Every server answers `echo {"message"}` with the text `Echo: <message>`. Two clients, each
//! one for all servers:
//! - `rmcp`'s, with nothing around it, on one connection, over stdio and streamable HTTP:
//!   first each call waits for the one before (latency), then 16 are in flight at once
//!   (throughput); CALLS calls (2 000) after a tenth as many to warm up;
//! - over stdio, a load generator with no MCP library (requests written beforehand, answers
//!   read by one thread), so that the figures are the servers' and not the client's: `rmcp`'s
//!   client tops out near 10 000 round trips a second here, and hides the difference between
//!   servers faster than that. Ten times CALLS calls (FastMCP: CALLS), after CALLS to warm up
//!   (the TypeScript server's JIT needs them: it is 2–3× faster warm than cold).
//!
//! Round trips per second, p50 and p99 of the calls; each server measured three times, in
//! turns, and the median of the three printed. The client overhead is toolsmith's
//! `McpTool::call` (validation, the mapping of results) against `Peer::call_tool`, in
//! alternating blocks on toolsmith's stdio server.
//!
//! toolsmith's server is this binary itself, run again with `--serve-echo stdio|http PORT`;
//! so is the floor, `--serve-canned`: a canned answer to every line, with no MCP library and
//! writes gathered as toolsmith's server gathers them — what the client and the pipes allow.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ServiceExt, transport::StreamableHttpClientTransport};
use serde_json::{Map, Value, json};
use toolsmith_core::{ToolContext, ToolError, Toolset, from_fn};

const ROUNDS: usize = 3;

fn peers() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers"))
}

fn node_path() -> String {
    format!(
        "{}:{}",
        peers().join("node_modules/.bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The echo tool, as toolsmith serves it.
fn echo_tools() -> Toolset {
    Toolset::new().with(from_fn(
        "echo",
        "Echoes back the input string.",
        |input: Map<String, Value>, _cx| async move {
            let message = input.get("message").and_then(Value::as_str).unwrap_or("");
            Ok::<_, ToolError>(format!("Echo: {message}"))
        },
    ))
}

async fn serve_echo(mode: &str, port: Option<u16>) {
    let server = toolsmith_mcp::server::McpServer::new(echo_tools());
    match (mode, port) {
        ("http", Some(port)) => {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                .await
                .unwrap();
            let config = toolsmith_mcp::server::HttpConfig::new();
            toolsmith_mcp::server::serve_http(listener, &server, config)
                .await
                .unwrap();
        }
        _ => toolsmith_mcp::server::serve_stdio(&server).await.unwrap(),
    }
}

/// How to start one server.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Server {
    Toolsmith,
    TypeScript,
    FastMcp,
    /// A canned answer to every line, synchronously, with no MCP library: what the client
    /// itself allows (stdio only).
    Canned,
}

impl Server {
    fn name(self) -> &'static str {
        match self {
            Server::Toolsmith => "toolsmith",
            Server::TypeScript => "TypeScript SDK (server-everything)",
            Server::FastMcp => "FastMCP (Python)",
            Server::Canned => "canned answers, no MCP library (the floor)",
        }
    }

    fn command(self, http_port: Option<u16>) -> tokio::process::Command {
        let mut command = tokio::process::Command::from(self.std_command(http_port));
        command.kill_on_drop(true);
        command
    }

    fn std_command(self, http_port: Option<u16>) -> std::process::Command {
        let mut command = match self {
            Server::Canned => {
                let mut c = std::process::Command::new(std::env::current_exe().unwrap());
                c.arg("--serve-canned");
                c
            }
            Server::Toolsmith => {
                let mut c = std::process::Command::new(std::env::current_exe().unwrap());
                c.arg("--serve-echo");
                c.arg(if http_port.is_some() { "http" } else { "stdio" });
                c
            }
            Server::TypeScript => {
                let mut c = std::process::Command::new(
                    peers().join("node_modules/.bin/mcp-server-everything"),
                );
                c.env("PATH", node_path());
                if http_port.is_some() {
                    c.arg("streamableHttp");
                }
                c
            }
            Server::FastMcp => {
                let mut c = std::process::Command::new(peers().join(".venv/bin/python"));
                c.arg(peers().join("servers/fastmcp_echo.py"));
                c.arg(if http_port.is_some() { "http" } else { "stdio" });
                c
            }
        };
        if let Some(port) = http_port {
            command.arg(port.to_string()).env("PORT", port.to_string());
        }
        command.stderr(Stdio::null());
        command
    }
}

/// A connected bare client, and the server process it keeps alive.
struct Connected {
    client: RunningService<RoleClient, ()>,
    _process: tokio::process::Child,
}

async fn connect(server: Server, http: bool) -> Connected {
    if http {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let process = server
            .command(Some(port))
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}/mcp");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let transport = StreamableHttpClientTransport::from_uri(url.as_str());
            match ().serve(transport).await {
                Ok(client) => {
                    return Connected {
                        client,
                        _process: process,
                    };
                }
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(e) => panic!("{} over HTTP: {e}", server.name()),
            }
        }
    }
    let mut process = server
        .command(None)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let transport = (
        process.stdout.take().unwrap(),
        process.stdin.take().unwrap(),
    );
    let client = ().serve(transport).await.unwrap();
    Connected {
        client,
        _process: process,
    }
}

fn echo_params() -> CallToolRequestParams {
    let Value::Object(arguments) = json!({"message": "hello"}) else {
        unreachable!()
    };
    CallToolRequestParams::new("echo").with_arguments(arguments)
}

/// `n` calls, `parallel` in flight at once: each call's duration, and the whole time.
async fn calls(connected: &Connected, n: usize, parallel: usize) -> (Vec<Duration>, Duration) {
    use futures::StreamExt;
    let peer = connected.client.peer();
    let started = Instant::now();
    let times: Vec<Duration> = futures::stream::iter(0..n)
        .map(|_| async move {
            let started = Instant::now();
            let result = peer.call_tool(echo_params()).await.unwrap();
            assert!(!result.is_error.unwrap_or(false));
            started.elapsed()
        })
        .buffer_unordered(parallel)
        .collect()
        .await;
    (times, started.elapsed())
}

#[derive(Debug, Clone, Copy)]
struct Figures {
    per_second: f64,
    p50: Duration,
    p99: Duration,
}

/// The figures of calls that took `total` in all.
fn figures(mut times: Vec<Duration>, total: Duration) -> Figures {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    Figures {
        per_second: times.len() as f64 / total.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
    }
}

fn median(mut runs: Vec<Figures>) -> Figures {
    runs.sort_by(|a, b| a.per_second.total_cmp(&b.per_second));
    runs[runs.len() / 2]
}

fn micros(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

async fn client_overhead(n: usize) -> (Duration, Duration) {
    use toolsmith_config::{McpSelection, McpServers, ToolNames};
    let exe = std::env::current_exe().unwrap();
    let servers = McpServers::from_json(
        &json!({"mcpServers": {"echo": {"command": exe, "args": ["--serve-echo", "stdio"],
                                        "readOnly": true}}})
        .to_string(),
    )
    .unwrap();
    let toolsmith = toolsmith_mcp::client::McpClient::connect(&servers.entries()[0])
        .await
        .unwrap();
    let entry = toolsmith.tools(&McpSelection {
        server: "echo".into(),
        only: None,
        needs_approval: ToolNames::None,
    });
    let tools = entry
        .prepare_tools()
        .unwrap()
        .prepare(&entry, Toolset::new().with(entry.clone()));
    let tool = tools.get("echo__echo").unwrap().clone();
    let bare = connect(Server::Toolsmith, false).await;
    let cx = ToolContext::for_test("echo__echo");
    let input = json!({"message": "hello"});
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let block = 200;
    for _ in 0..(n / block).max(20) {
        let started = Instant::now();
        for _ in 0..block {
            // What the loop does for a call: validate, then call.
            tool.spec().validate(&input).unwrap();
            tool.call(input.clone(), &cx).await.unwrap();
        }
        ours.push(started.elapsed() / block as u32);
        let started = Instant::now();
        for _ in 0..block {
            bare.client.peer().call_tool(echo_params()).await.unwrap();
        }
        theirs.push(started.elapsed() / block as u32);
    }
    ours.sort();
    theirs.sort();
    (ours[ours.len() / 2], theirs[theirs.len() / 2])
}

/// A load generator for stdio with no MCP library: one thread writes pre-serialised request
/// lines and reads the answers, `parallel` in flight, so that the figures are the server's
/// and not the client's (`rmcp`'s client tops out near 10 000 round trips a second here).
fn pipe_calls(server: Server, n: usize, parallel: usize) -> (Vec<Duration>, Duration) {
    use std::io::{BufRead, BufReader, Write};
    let mut process = server
        .std_command(None)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = process.stdin.take().unwrap();
    let mut output = BufReader::new(process.stdout.take().unwrap());
    let mut line = String::new();
    // The answer to request `id`, skipping notifications.
    let answer = |output: &mut BufReader<_>, line: &mut String| loop {
        line.clear();
        assert!(
            output.read_line(line).unwrap() > 0,
            "{} closed stdout",
            server.name()
        );
        let message: Value = serde_json::from_str(line).unwrap();
        if message.get("id").is_some() {
            return message;
        }
    };
    writeln!(
        input,
        "{}",
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}})
    )
    .unwrap();
    answer(&mut output, &mut line);
    writeln!(
        input,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    let request = |id: usize| {
        format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"message": "hello"}}})
        )
    };
    let mut measure = |n: usize, first: usize| {
        let requests: Vec<String> = (first..first + n).map(request).collect();
        let mut sent = vec![Instant::now(); n];
        let mut times = Vec::with_capacity(n);
        let started = Instant::now();
        let mut next = 0;
        while next < n.min(parallel) {
            sent[next] = Instant::now();
            input.write_all(requests[next].as_bytes()).unwrap();
            next += 1;
        }
        for _ in 0..n {
            let message = answer(&mut output, &mut line);
            let id = message["id"].as_u64().unwrap() as usize - first;
            times.push(sent[id].elapsed());
            assert_eq!(
                message["result"]["content"][0]["text"], "Echo: hello",
                "{message}"
            );
            if next < n {
                sent[next] = Instant::now();
                input.write_all(requests[next].as_bytes()).unwrap();
                next += 1;
            }
        }
        (times, started.elapsed())
    };
    measure(n / 10, 1); // warm up
    let result = measure(n, n + 1);
    drop(input);
    let _ = process.kill();
    let _ = process.wait();
    result
}

/// Prints the figures of every server over stdio with the load generator, `parallel` calls in
/// flight: `n` calls each (FastMCP, at ~500 a second, `n / 10`).
fn pipe_table(n: usize, parallel: usize) {
    println!("| server | calls/s | p50 | p99 | toolsmith ÷ server |");
    println!("|---|---|---|---|---|");
    let servers = [
        Server::Toolsmith,
        Server::TypeScript,
        Server::FastMcp,
        Server::Canned,
    ];
    let mut runs: Vec<Vec<Figures>> = vec![Vec::new(); servers.len()];
    for _ in 0..ROUNDS {
        for (i, server) in servers.iter().enumerate() {
            let calls = if *server == Server::FastMcp {
                n / 10
            } else {
                n
            };
            let (times, total) = pipe_calls(*server, calls, parallel);
            runs[i].push(figures(times, total));
        }
    }
    let results: Vec<Figures> = runs.into_iter().map(median).collect();
    for (server, result) in servers.iter().zip(&results) {
        println!(
            "| {} | {:.0} | {} | {} | {:.2}× |",
            server.name(),
            result.per_second,
            micros(result.p50),
            micros(result.p99),
            results[0].per_second / result.per_second,
        );
    }
}

/// Prints the figures of every server over both transports, `parallel` calls in flight.
async fn table(n: usize, parallel: usize) {
    println!("| transport | server | calls/s | p50 | p99 | toolsmith ÷ server |");
    println!("|---|---|---|---|---|---|");
    for http in [false, true] {
        let mut servers = vec![Server::Toolsmith, Server::TypeScript, Server::FastMcp];
        if !http {
            servers.push(Server::Canned);
        }
        let mut runs: Vec<Vec<Figures>> = vec![Vec::new(); servers.len()];
        for _ in 0..ROUNDS {
            for (i, server) in servers.iter().enumerate() {
                let connected = connect(*server, http).await;
                calls(&connected, n / 10, parallel).await; // warm up
                let (times, total) = calls(&connected, n, parallel).await;
                runs[i].push(figures(times, total));
            }
        }
        let results: Vec<Figures> = runs.into_iter().map(median).collect();
        for (server, result) in servers.iter().zip(&results) {
            println!(
                "| {} | {} | {:.0} | {} | {} | {:.1}× |",
                if http { "streamable HTTP" } else { "stdio" },
                server.name(),
                result.per_second,
                micros(result.p50),
                micros(result.p99),
                results[0].per_second / result.per_second,
            );
        }
    }
}

/// A canned answer to every request line, written when no more input waits (so that one
/// write carries every answer due, as toolsmith's server writes them): no MCP library, no tool.
fn serve_canned() {
    use std::io::{BufRead, Write};
    let mut input = std::io::BufReader::with_capacity(64 * 1024, std::io::stdin());
    let mut out = std::io::stdout().lock();
    let mut answers = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line).unwrap() == 0 {
            return;
        }
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if let Some(id) = message.get("id") {
            let result = match message["method"].as_str() {
                Some("initialize") => json!({"protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "canned", "version": "1"}}),
                _ => json!({"content": [{"type": "text", "text": "Echo: hello"}]}),
            };
            serde_json::to_writer(
                &mut answers,
                &json!({"jsonrpc": "2.0", "id": id, "result": result}),
            )
            .unwrap();
            answers.push(b'\n');
        }
        if input.buffer().is_empty() {
            out.write_all(&answers).unwrap();
            out.flush().unwrap();
            answers.clear();
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if args.iter().any(|a| a == "--serve-canned") {
        serve_canned();
        return;
    }
    if let Some(at) = args.iter().position(|a| a == "--serve-echo") {
        let mode = args.get(at + 1).map_or("stdio", String::as_str);
        let port = args.get(at + 2).and_then(|p| p.parse().ok());
        runtime.block_on(serve_echo(mode, port));
        return;
    }
    // `cargo bench` passes `--bench`; a number is the calls per measurement.
    let n: usize = args
        .iter()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2000);
    if !peers()
        .join("node_modules/.bin/mcp-server-everything")
        .exists()
    {
        eprintln!("the MCP peers are not installed: run scripts/mcp-peers.sh");
        std::process::exit(1);
    }
    runtime.block_on(async {
        println!(
            "tools/call round trips, one rmcp client, {n} calls one after another, median of \
             {ROUNDS} runs\n"
        );
        table(n, 1).await;
        let parallel = 16;
        println!(
            "\nthe same, {parallel} calls in flight at once (throughput; p50 and p99 under load)\n"
        );
        table(n, parallel).await;
        for parallel in [1, parallel] {
            println!(
                "\nthe servers over stdio, driven by a load generator with no MCP library \
                 (pre-written requests, {parallel} in flight), {} calls after {} to warm up, \
                 median of {ROUNDS} runs\n",
                n * 10,
                n
            );
            pipe_table(n * 10, parallel);
        }
        let (ours, bare) = client_overhead(n).await;
        println!(
            "\nclient per call on toolsmith's stdio server: toolsmith {} , bare rmcp {}: {:.2}×",
            micros(ours),
            micros(bare),
            ours.as_secs_f64() / bare.as_secs_f64()
        );
    });
}
