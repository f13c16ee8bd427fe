//! The harness service's integration tests, linked as one binary: real HTTP against a running
//! service, a loopback model speaking OpenAI's Chat Completions stream.

mod async_tools;
mod chat;
mod common;
mod console;
mod console_browser;
mod load;
mod mcp;
mod replicas;
mod result_cache;
mod runs;
mod shutdown;
mod variables;
mod webhooks;
mod worker_faults;
