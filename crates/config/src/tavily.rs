//! `tavilySearch` and `tavilyExtract`: web search and page extraction through Tavily, with the
//! agent harness's options, defaults and checks.
//!
//! - `tavilySearch` (input `{query}`) sends `searchDepth: "advanced"`, `includeAnswer: true`,
//!   `maxResults: 5`, `topic: "general"` unless the entry says otherwise; `searchDepth` is
//!   `basic` | `advanced`, `topic` `general` | `news` | `finance`, `maxResults` an integer
//!   from 1 to 20. Other options go to Tavily as given.
//! - `tavilyExtract` (input `{urls}`) sends `extractDepth: "advanced"`, `format: "markdown"`
//!   unless told otherwise; `extractDepth` is `basic` | `advanced`, `format` `markdown` |
//!   `text`.
//! - The API key is the entry's `apiKey`, else `TAVILY_API_KEY`, else the error
//!   `config.tools.<name>.apiKey or TAVILY_API_KEY is required.` The API's address is
//!   `TAVILY_BASE_URL` (default `https://api.tavily.com`), set by whoever runs toolsmith,
//!   never by a config: a key from the environment goes nowhere a config names.
//!
//! Options are sent in Tavily's REST spelling (`search_depth`, `max_results`…).

use std::time::Duration;

use serde_json::{Map, Value, json};
use toolsmith_core::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use crate::http_call::{Caller, post_json};
use crate::{ConfigError, error};

/// The variable holding Tavily's API key when an entry gives none.
pub const TAVILY_API_KEY_VAR: &str = "TAVILY_API_KEY";
/// The variable overriding Tavily's address (tests use a loopback server).
pub const TAVILY_BASE_URL_VAR: &str = "TAVILY_BASE_URL";

const DEFAULT_BASE_URL: &str = "https://api.tavily.com";
const TIMEOUT: Duration = Duration::from_secs(60);

/// The two tools' names.
pub const TAVILY_TOOLS: &[&str] = &["tavilySearch", "tavilyExtract"];

/// A checked `tavilySearch` or `tavilyExtract` entry: its options with the defaults applied,
/// the API key not among them.
#[derive(Clone, PartialEq)]
pub(crate) struct TavilyEntry {
    search: bool,
    options: Map<String, Value>,
    api_key: Option<String>,
}

impl std::fmt::Debug for TavilyEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TavilyEntry")
            .field("search", &self.search)
            .field("options", &self.options)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .finish()
    }
}

fn one_of(
    options: &Map<String, Value>,
    at: &str,
    key: &str,
    allowed: &[&str],
) -> Result<(), ConfigError> {
    match options.get(key) {
        None => Ok(()),
        Some(Value::String(v)) if allowed.contains(&v.as_str()) => Ok(()),
        Some(_) => Err(error(format!(
            "{at}.{key} must be {}",
            match allowed {
                [a, b] => format!("{a} or {b}"),
                [a, b, c] => format!("{a}, {b} or {c}"),
                _ => allowed.join(", "),
            }
        ))),
    }
}

impl TavilyEntry {
    /// Checks an entry's options (the control keys already removed).
    pub(crate) fn parse(name: &str, mut options: Map<String, Value>) -> Result<Self, ConfigError> {
        let at = format!("config.tools.{name}");
        let api_key = match options.remove("apiKey") {
            None | Some(Value::Null) => None,
            Some(Value::String(key)) if !key.is_empty() => Some(key),
            Some(_) => return Err(error(format!("{at}.apiKey must be a non-empty string"))),
        };
        let search = name == "tavilySearch";
        let defaults = if search {
            json!({"searchDepth": "advanced", "includeAnswer": true, "maxResults": 5, "topic": "general"})
        } else {
            json!({"extractDepth": "advanced", "format": "markdown"})
        };
        if search {
            one_of(&options, &at, "searchDepth", &["basic", "advanced"])?;
            one_of(&options, &at, "topic", &["general", "news", "finance"])?;
            if let Some(n) = options.get("maxResults")
                && !n.as_u64().is_some_and(|n| (1..=20).contains(&n))
            {
                return Err(error(format!(
                    "{at}.maxResults must be an integer from 1 to 20"
                )));
            }
        } else {
            one_of(&options, &at, "extractDepth", &["basic", "advanced"])?;
            one_of(&options, &at, "format", &["markdown", "text"])?;
        }
        let mut merged = match defaults {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        merged.extend(options);
        Ok(TavilyEntry {
            search,
            options: merged,
            api_key,
        })
    }

    /// The tool, its key resolved: the entry's, else `TAVILY_API_KEY`; at `TAVILY_BASE_URL`.
    pub(crate) fn tool(&self, name: &str) -> Result<TavilyTool, ConfigError> {
        let env_key = std::env::var(TAVILY_API_KEY_VAR)
            .ok()
            .filter(|k| !k.is_empty());
        let base = std::env::var(TAVILY_BASE_URL_VAR).unwrap_or_else(|_| DEFAULT_BASE_URL.into());
        self.tool_at(name, &base, env_key)
    }

    /// [`tool`](Self::tool) with the environment's values given.
    fn tool_at(
        &self,
        name: &str,
        base: &str,
        env_key: Option<String>,
    ) -> Result<TavilyTool, ConfigError> {
        let api_key = self.api_key.clone().or(env_key).ok_or_else(|| {
            error(format!(
                "config.tools.{name}.apiKey or {TAVILY_API_KEY_VAR} is required."
            ))
        })?;
        let path = if self.search { "search" } else { "extract" };
        let url = reqwest::Url::parse(&format!("{}/{path}", base.trim_end_matches('/')))
            .map_err(|e| error(format!("{TAVILY_BASE_URL_VAR}: {e}")))?;
        let spec = if self.search {
            ToolSpec::new(
                name,
                json!({"type": "object", "properties": {"query": {"type": "string", "minLength": 1,
                        "description": "What to search the web for."}},
                       "required": ["query"], "additionalProperties": false}),
            )
            .with_description(
                "Search the web (Tavily) and return the most relevant results with an answer.",
            )
        } else {
            ToolSpec::new(
                name,
                json!({"type": "object", "properties": {"urls": {"type": "array", "minItems": 1, "maxItems": 20,
                        "items": {"type": "string"}, "description": "The pages to extract."}},
                       "required": ["urls"], "additionalProperties": false}),
            )
            .with_description("Extract the content of web pages (Tavily).")
        };
        let client = reqwest::Client::builder()
            .build()
            .map_err(|e| error(format!("config.tools.{name}: {e}")))?;
        Ok(TavilyTool {
            spec,
            url,
            headers: vec![("authorization".into(), format!("Bearer {api_key}"))],
            options: self.options.clone(),
            client,
        })
    }
}

/// A Tavily tool (see the [module docs](self)).
pub struct TavilyTool {
    spec: ToolSpec,
    url: reqwest::Url,
    headers: Vec<(String, String)>,
    options: Map<String, Value>,
    client: reqwest::Client,
}

impl std::fmt::Debug for TavilyTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TavilyTool")
            .field("name", &self.spec.name())
            .field("url", &self.url.as_str())
            .finish_non_exhaustive()
    }
}

/// `camelCase` → `snake_case`.
fn snake(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[async_trait::async_trait]
impl Tool for TavilyTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut body = Map::new();
        for (key, value) in &self.options {
            body.insert(snake(key), value.clone());
        }
        if let Value::Object(input) = input {
            body.extend(input);
        }
        let caller = Caller {
            code: "TAVILY",
            noun: "Tavily",
        };
        post_json(
            &self.client,
            &self.url,
            &self.headers,
            &Value::Object(body),
            TIMEOUT,
            &caller,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, options: Value) -> Result<TavilyEntry, String> {
        TavilyEntry::parse(name, options.as_object().unwrap().clone()).map_err(|e| e.to_string())
    }

    #[test]
    fn options_are_checked_with_the_harness_texts() {
        assert_eq!(
            parse("tavilySearch", json!({"maxResults": 21})).unwrap_err(),
            "config.tools.tavilySearch.maxResults must be an integer from 1 to 20"
        );
        assert_eq!(
            parse("tavilySearch", json!({"searchDepth": "deep"})).unwrap_err(),
            "config.tools.tavilySearch.searchDepth must be basic or advanced"
        );
        assert_eq!(
            parse("tavilySearch", json!({"topic": "sports"})).unwrap_err(),
            "config.tools.tavilySearch.topic must be general, news or finance"
        );
        assert_eq!(
            parse("tavilyExtract", json!({"format": "html"})).unwrap_err(),
            "config.tools.tavilyExtract.format must be markdown or text"
        );
        let entry = parse("tavilySearch", json!({"maxResults": 3, "apiKey": "k"})).unwrap();
        assert_eq!(entry.options["maxResults"], 3);
        assert_eq!(entry.options["searchDepth"], "advanced");
        assert!(
            !entry.options.contains_key("apiKey"),
            "the key is not an option"
        );
    }

    #[test]
    fn a_key_is_required() {
        let entry = parse("tavilySearch", json!({})).unwrap();
        let err = entry
            .tool_at("tavilySearch", DEFAULT_BASE_URL, None)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "config.tools.tavilySearch.apiKey or TAVILY_API_KEY is required."
        );
        assert!(
            entry
                .tool_at("tavilySearch", DEFAULT_BASE_URL, Some("k".into()))
                .is_ok()
        );
    }

    #[tokio::test]
    async fn a_search_posts_the_options_and_the_key_to_tavily() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !String::from_utf8_lossy(&request).contains("\"query\"") {
                let n = socket.read(&mut buf).await.unwrap();
                request.extend_from_slice(&buf[..n]);
            }
            let answer = r#"{"answer":"42","results":[]}"#;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                answer.len()
            );
            socket.write_all(head.as_bytes()).await.unwrap();
            socket.write_all(answer.as_bytes()).await.unwrap();
            String::from_utf8(request).unwrap()
        });
        let entry = parse(
            "tavilySearch",
            json!({"maxResults": 3, "apiKey": "tvly-secret"}),
        )
        .unwrap();
        let tool = entry.tool_at("tavilySearch", &base, None).unwrap();
        let out = tool
            .call(
                json!({"query": "meaning of life"}),
                &ToolContext::for_test("tavilySearch"),
            )
            .await
            .unwrap();
        assert_eq!(out.value, json!({"answer": "42", "results": []}));
        let request = server.await.unwrap();
        assert!(request.starts_with("POST /search "), "{request}");
        assert!(
            request
                .to_lowercase()
                .contains("authorization: bearer tvly-secret"),
            "{request}"
        );
        let body: Value = serde_json::from_str(request.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(
            body,
            json!({"search_depth": "advanced", "include_answer": true, "max_results": 3,
                   "topic": "general", "query": "meaning of life"})
        );
    }

    #[test]
    fn options_are_sent_in_rest_spelling() {
        assert_eq!(snake("maxResults"), "max_results");
        assert_eq!(snake("includeAnswer"), "include_answer");
        assert_eq!(snake("topic"), "topic");
    }
}
