//! The integration tests of `toolsmith-providers`, linked as one test binary: one module per
//! subject (a wire's requests, streams, fixtures, errors and agent loop; the HTTP contract every
//! wire keeps, `http_errors`; the schema dialects; the approval parts), with the helpers they share in [`common`]. Fixtures are read from the
//! crate's `fixtures/` directory, found through `CARGO_MANIFEST_DIR`; insta snapshots live in
//! `snapshots/` beside this file.

mod common;

mod anthropic_agent;
mod anthropic_errors;
mod anthropic_fixtures;
mod anthropic_request;
mod anthropic_stream_edges;
mod approval_parts;
mod dialect_properties;
mod dialects;
mod google_agent;
mod google_cassettes;
mod google_errors;
mod google_fixtures;
mod google_request;
mod google_stream;
mod http_errors;
mod openai_chat_agent;
mod openai_chat_compatible;
mod openai_chat_errors;
mod openai_chat_fixtures;
mod openai_chat_request;
mod openai_responses_agent;
mod openai_responses_cassettes;
mod openai_responses_errors;
mod openai_responses_fixtures;
mod openai_responses_request;
mod openai_responses_stream;
mod retry_delays;
