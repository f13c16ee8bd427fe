//! Gemini requests compared with pydantic-ai's recorded ones
//! (`pydantic-ai-cassettes/test_tool_choice_matrix[*-google].yaml`): the same contents,
//! `toolConfig` for each tool choice, declarations, and the follow-up turn's shape; the recorded
//! responses decode to calls carrying their signatures.

use std::sync::Arc;

use serde_json::{Value, json};
use toolsmith_core::{
    Message, ModelOutput, ModelPart, ModelRequest, Part, ProviderMetadata, Role, ToolCallPart,
    ToolChoice, ToolDeclaration, ToolDeclarations, ToolKind, ToolResultPart,
};
use toolsmith_providers::google::{self, GoogleGemini};

fn body(request: &ModelRequest) -> (Value, Vec<String>) {
    GoogleGemini::new(
        "gemini-2.5-flash",
        Some("AIza-test"),
        Some("http://127.0.0.1:1/v1beta"),
    )
    .unwrap()
    .request_body(request)
}

/// A YAML reader for the subset vcrpy writes (block maps and lists, plain and single-quoted
/// scalars, folded plain lines), enough to read the cassettes' `parsed_body`s.
mod yaml {
    use serde_json::{Map, Value, json};

    struct Line {
        indent: usize,
        text: String,
    }

    pub fn parse(source: &str) -> Value {
        let mut lines: Vec<Line> = source
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|l| Line {
                indent: l.len() - l.trim_start().len(),
                text: l.trim().to_string(),
            })
            .collect();
        let mut i = 0;
        block(&mut lines, &mut i, 0)
    }

    fn is_item(text: &str) -> bool {
        text == "-" || text.starts_with("- ")
    }

    fn block(lines: &mut Vec<Line>, i: &mut usize, indent: usize) -> Value {
        if *i < lines.len() && is_item(&lines[*i].text) {
            let mut items = Vec::new();
            while *i < lines.len() && lines[*i].indent == indent && is_item(&lines[*i].text) {
                let rest = lines[*i].text[1..].trim_start().to_string();
                if rest.is_empty() {
                    *i += 1;
                    let inner = lines.get(*i).map_or(indent + 2, |l| l.indent);
                    items.push(block(lines, i, inner));
                } else {
                    // The item's first line, as if it stood on its own, indented.
                    lines[*i] = Line {
                        indent: indent + 2,
                        text: rest,
                    };
                    items.push(block(lines, i, indent + 2));
                }
            }
            return Value::Array(items);
        }
        let first = &lines[*i].text;
        if !first.contains(": ") && !first.ends_with(':') {
            let value = scalar_with_folds(lines, i, indent);
            return value;
        }
        let mut map = Map::new();
        while *i < lines.len() && lines[*i].indent == indent && !is_item(&lines[*i].text) {
            let text = lines[*i].text.clone();
            let (key, value) = match text.split_once(": ") {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (text.trim_end_matches(':').to_string(), String::new()),
            };
            let key = key.trim_matches('\'').to_string();
            *i += 1;
            let value = if !value.is_empty() {
                let mut text = value;
                while *i < lines.len() && lines[*i].indent > indent {
                    text.push(' ');
                    text.push_str(&lines[*i].text);
                    *i += 1;
                }
                scalar(&text)
            } else if *i < lines.len()
                && (lines[*i].indent > indent
                    || (lines[*i].indent == indent && is_item(&lines[*i].text)))
            {
                let inner = lines[*i].indent;
                block(lines, i, inner)
            } else {
                Value::Null
            };
            map.insert(key, value);
        }
        Value::Object(map)
    }

    fn scalar_with_folds(lines: &[Line], i: &mut usize, indent: usize) -> Value {
        let mut text = lines[*i].text.clone();
        *i += 1;
        while *i < lines.len() && lines[*i].indent > indent {
            text.push(' ');
            text.push_str(&lines[*i].text);
            *i += 1;
        }
        scalar(&text)
    }

    fn scalar(text: &str) -> Value {
        if let Some(inner) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
            return json!(inner.replace("''", "'"));
        }
        match text {
            "true" => return json!(true),
            "false" => return json!(false),
            "null" | "~" => return Value::Null,
            _ => {}
        }
        if let Ok(n) = text.parse::<i64>() {
            return json!(n);
        }
        if let Ok(n) = text.parse::<f64>() {
            return json!(n);
        }
        json!(text)
    }
}

fn cassette(name: &str) -> Vec<(Value, Value)> {
    let path = crate::common::fixtures_dir()
        .join("pydantic-ai-cassettes")
        .join(format!("test_tool_choice_matrix[{name}-google].yaml"));
    let doc = yaml::parse(&std::fs::read_to_string(&path).unwrap());
    doc["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["request"]["parsed_body"].clone(),
                i["response"]["parsed_body"].clone(),
            )
        })
        .collect()
}

/// The cassette's tools as declarations (their `parameters_json_schema` is plain JSON Schema).
fn cassette_tools(request: &Value) -> Arc<ToolDeclarations> {
    let declarations = request["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| ToolDeclaration {
            name: d["name"].as_str().unwrap().into(),
            description: d["description"].as_str().unwrap().into(),
            input_schema: Arc::new(d["parameters_json_schema"].clone()),
            strict: false,
            kind: ToolKind::Function,
        })
        .collect();
    Arc::new(ToolDeclarations::new(declarations))
}

#[test]
fn the_pydantic_ai_cassettes_request_the_same_shapes() {
    for (name, choice) in [
        ("auto", ToolChoice::Auto),
        ("required", ToolChoice::Required),
        (
            "list_single",
            ToolChoice::Tool {
                tool_name: "get_weather".into(),
            },
        ),
    ] {
        let interactions = cassette(name);
        let (recorded, response) = &interactions[0];
        let tools = cassette_tools(recorded);
        let prompt = recorded["contents"][0]["parts"][0]["text"]
            .as_str()
            .unwrap();
        let mut request = ModelRequest {
            messages: vec![Message::user(prompt)],
            tools,
            tool_choice: choice,
            ..Default::default()
        };
        let (ours, _) = body(&request);
        assert_eq!(ours["contents"], recorded["contents"], "{name}");
        assert_eq!(ours["toolConfig"], recorded["toolConfig"], "{name}");
        let declared = |body: &Value, key: &str| -> Vec<(Value, Value, Value)> {
            body["tools"][0]["functionDeclarations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| (d["name"].clone(), d["description"].clone(), d[key].clone()))
                .collect()
        };
        // Same declarations; the schema in the Gemini dialect (`additionalProperties` dropped).
        let mut theirs = declared(recorded, "parameters_json_schema");
        for (_, _, schema) in &mut theirs {
            schema
                .as_object_mut()
                .unwrap()
                .remove("additionalProperties");
        }
        assert_eq!(declared(&ours, "parameters"), theirs, "{name}");

        // The recorded (non-streamed) response decodes to a call carrying its signature.
        let parts = google::decode_response(response).unwrap();
        let call = parts
            .iter()
            .find_map(|p| match p {
                ModelPart::ToolCall(call) => Some(call.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(call.tool_name, "get_weather");
        assert_eq!(call.input, r#"{"city":"Paris"}"#);
        let signature =
            response["candidates"][0]["content"]["parts"][0]["thoughtSignature"].clone();
        assert_eq!(
            call.provider_metadata.get("google").unwrap()["thoughtSignature"],
            signature
        );

        // The follow-up request (auto's second interaction) has the same shape, with our own
        // signature (pydantic re-encodes it as URL-safe base64; we echo it byte for byte) and
        // the documented `output` key instead of pydantic's `return_value`.
        if let Some((second, _)) = interactions.get(1) {
            request.messages.push(Message::new(
                Role::Assistant,
                vec![Part::ToolCall(ToolCallPart {
                    tool_call_id: call.tool_call_id.clone(),
                    tool_name: call.tool_name.clone(),
                    input: serde_json::from_str(&call.input).unwrap(),
                    provider_executed: false,
                    provider_metadata: call.provider_metadata.clone(),
                })],
            ));
            let output =
                second["contents"][2]["parts"][0]["functionResponse"]["response"]["return_value"]
                    .as_str()
                    .unwrap();
            request
                .messages
                .push(Message::tool_results(vec![ToolResultPart {
                    tool_call_id: call.tool_call_id.clone(),
                    tool_name: call.tool_name.clone(),
                    output: ModelOutput::text(output),
                    provider_executed: false,
                    provider_metadata: ProviderMetadata::default(),
                }]));
            let (ours, _) = body(&request);
            let roles = |b: &Value| -> Vec<Value> {
                b["contents"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["role"].clone())
                    .collect()
            };
            assert_eq!(roles(&ours), roles(second));
            let our_call = &ours["contents"][1]["parts"][0];
            let their_call = &second["contents"][1]["parts"][0];
            assert_eq!(
                our_call["functionCall"]["name"],
                their_call["functionCall"]["name"]
            );
            assert_eq!(
                our_call["functionCall"]["args"],
                their_call["functionCall"]["args"]
            );
            assert_eq!(our_call["thoughtSignature"], signature);
            let ours_response = &ours["contents"][2]["parts"][0]["functionResponse"];
            let their_response = &second["contents"][2]["parts"][0]["functionResponse"];
            assert_eq!(ours_response["name"], their_response["name"]);
            assert_eq!(ours_response["response"], json!({"output": output}));
        }
    }
}
