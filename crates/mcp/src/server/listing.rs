//! `tools/list`: a tool's MCP declaration, and the list cut into pages.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{ListToolsResult, Tool as McpTool, ToolAnnotations};
use serde_json::{Map, Value};
use toolsmith_core::{RunScope, Tool};

use super::{Inner, PAGE_SIZE};

/// The declaration of `tool`: its name, the description the model would see, its schemas
/// exactly as declared and the annotations its metadata implies.
pub(crate) fn declare(tool: &dyn Tool) -> McpTool {
    let spec = tool.spec();
    let meta = tool.meta();
    let input = match spec.input_schema().as_ref() {
        Value::Object(schema) => schema.clone(),
        // A boolean schema: `true` accepts any object, and MCP wants an object schema.
        _ => Map::from_iter([("type".to_string(), Value::from("object"))]),
    };
    let mut annotations = ToolAnnotations::new()
        .read_only(!meta.side_effect)
        .idempotent(meta.is_idempotent());
    if meta.side_effect {
        annotations = annotations.destructive(true);
    }
    let mut declared = McpTool::new(
        spec.name().to_string(),
        spec.model_description().into_owned(),
        Arc::new(input),
    )
    .with_annotations(annotations);
    if let Some(Value::Object(output)) = spec.output_schema().map(|s| s.as_ref()) {
        declared = declared.with_raw_output_schema(Arc::new(output.clone()));
    }
    declared
}

/// The page of the tools `scope` offers that starts at `cursor` (the first page without one).
///
/// # Errors
///
/// A cursor this server did not hand out: invalid params.
pub(crate) fn page(
    inner: &Inner,
    scope: &RunScope,
    cursor: Option<&str>,
) -> Result<ListToolsResult, ErrorData> {
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .ok()
            .filter(|&start| start > 0)
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!("\"{cursor}\" is not a cursor of tools/list"),
                    None,
                )
            })?,
    };
    let mut offered = inner
        .tools
        .iter()
        .zip(&inner.listed)
        .filter(|(tool, _)| tool.offered(scope))
        .map(|(_, declared)| declared)
        .skip(start);
    let tools: Vec<McpTool> = offered.by_ref().take(PAGE_SIZE).cloned().collect();
    let mut result = ListToolsResult::with_all_items(tools);
    if offered.next().is_some() {
        result.next_cursor = Some((start + PAGE_SIZE).to_string());
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolsmith_core::{
        ToolContext, ToolError, ToolMeta, ToolOutput, ToolSpec, Toolset, async_trait,
    };

    use super::*;
    use crate::server::McpServer;

    struct Plain(ToolSpec, ToolMeta);

    #[async_trait]
    impl Tool for Plain {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn meta(&self) -> &ToolMeta {
            &self.1
        }
        async fn call(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(""))
        }
    }

    #[test]
    fn annotations_follow_the_metadata() {
        let schema =
            json!({"type": "object", "properties": {"p": {"type": "string"}}, "x-keep": 1});
        let spec = ToolSpec::new("w", schema.clone())
            .with_description("Writes.")
            .with_input_examples([json!({"p": "a"})])
            .with_output_schema(json!({"type": "object"}));
        let wire =
            serde_json::to_value(declare(&Plain(spec, ToolMeta::new().side_effect(true)))).unwrap();
        assert_eq!(wire["inputSchema"], schema);
        assert_eq!(wire["outputSchema"], json!({"type": "object"}));
        assert!(
            wire["description"]
                .as_str()
                .unwrap()
                .starts_with("Writes.\n\nExamples:")
        );
        assert_eq!(
            wire["annotations"],
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false})
        );
        let read = declare(&Plain(
            ToolSpec::new("r", json!({"type": "object"})),
            ToolMeta::new(),
        ));
        let wire = serde_json::to_value(read).unwrap();
        assert_eq!(
            wire["annotations"],
            json!({"readOnlyHint": true, "idempotentHint": true})
        );
        assert!(wire.get("outputSchema").is_none());
    }

    #[test]
    fn pages_of_page_size_with_an_opaque_cursor() {
        let mut tools = Toolset::new();
        for i in 0..PAGE_SIZE + 5 {
            tools.add(Plain(
                ToolSpec::new(format!("t{i}"), json!({"type": "object"})),
                ToolMeta::new(),
            ));
        }
        let server = McpServer::new(tools);
        let scope = RunScope::default();
        let first = page(&server.inner, &scope, None).unwrap();
        assert_eq!(first.tools.len(), PAGE_SIZE);
        let cursor = first.next_cursor.unwrap();
        let second = page(&server.inner, &scope, Some(&cursor)).unwrap();
        assert_eq!(second.tools.len(), 5);
        assert_eq!(second.tools[0].name, format!("t{PAGE_SIZE}"));
        assert!(second.next_cursor.is_none());
        let bad = page(&server.inner, &scope, Some("x")).unwrap_err();
        assert_eq!(bad.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    }
}
