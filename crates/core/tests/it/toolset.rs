//! Toolsets: order, composition, mutation, declarations.

use std::sync::Arc;

use serde_json::{Value, json};
use toolsmith_core::{
    ToolContext, ToolError, ToolKind, ToolOutput, ToolSpec, Toolset, async_trait, from_fn,
};

struct Named(ToolSpec);

#[async_trait]
impl toolsmith_core::Tool for Named {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, _: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!(
            "{} as {}",
            self.0.name(),
            cx.tool_name()
        )))
    }
}

fn tool(name: &str) -> Named {
    Named(
        ToolSpec::new(name, json!({"type": "object"}))
            .with_description(format!("The {name} tool.")),
    )
}

fn names(set: &Toolset) -> Vec<&str> {
    set.names().collect()
}

#[test]
fn keeps_insertion_order_and_replaces_in_place() {
    let mut set = Toolset::new()
        .with(tool("b"))
        .with(tool("a"))
        .with(tool("c"));
    assert_eq!(names(&set), ["b", "a", "c"]);
    let old = set.add(Named(
        ToolSpec::new("a", json!({"type": "object"})).with_description("new"),
    ));
    assert!(old.is_some());
    assert_eq!(names(&set), ["b", "a", "c"]);
    assert_eq!(set.get("a").unwrap().spec().description(), "new");
}

#[test]
fn remove_and_replace_report_whether_the_tool_existed() {
    let mut set = Toolset::new().with(tool("a")).with(tool("b"));
    assert!(set.remove("a"));
    assert!(!set.remove("a"));
    assert!(set.replace(tool("b")));
    assert!(!set.replace(tool("zzz")));
    assert_eq!(names(&set), ["b"]);
    assert_eq!(set.list().len(), 1);
}

#[test]
fn merge_keeps_the_first_tool_of_a_name() {
    let first = Toolset::new().with(Named(
        ToolSpec::new("x", json!({})).with_description("first"),
    ));
    let second = Toolset::new()
        .with(Named(
            ToolSpec::new("x", json!({})).with_description("second"),
        ))
        .with(tool("y"));
    let merged = first.merge(second);
    assert_eq!(names(&merged), ["x", "y"]);
    assert_eq!(merged.get("x").unwrap().spec().description(), "first");
}

#[test]
fn resolved_tools_never_shadow_static_ones() {
    let static_set = Toolset::new().with(Named(
        ToolSpec::new("x", json!({})).with_description("static"),
    ));
    let resolved = Toolset::new()
        .with(Named(
            ToolSpec::new("x", json!({})).with_description("dynamic"),
        ))
        .with(tool("extra"));
    let set = static_set.with_resolved(resolved);
    assert_eq!(names(&set), ["x", "extra"]);
    assert_eq!(set.get("x").unwrap().spec().description(), "static");
}

#[tokio::test]
async fn prefix_and_rename_change_the_name_the_model_calls() {
    let set = Toolset::new()
        .with(tool("read"))
        .with(tool("write"))
        .prefix("fs_");
    assert_eq!(names(&set), ["fs_read", "fs_write"]);
    let set = set.rename("fs_write", "save");
    assert_eq!(names(&set), ["fs_read", "save"]);
    let renamed = set.get("save").unwrap();
    assert_eq!(renamed.spec().name(), "save");
    assert_eq!(renamed.spec().description(), "The write tool.");
    let out = renamed
        .call(json!({}), &ToolContext::for_test("save"))
        .await
        .unwrap();
    assert_eq!(out.value, json!("write as save"));
    // Unknown names and no-op renames leave the set unchanged.
    assert_eq!(names(&set.clone().rename("nope", "x")), ["fs_read", "save"]);
    assert_eq!(names(&set.rename("save", "fs_read")), ["fs_read"]);
}

#[test]
fn filter_keeps_matching_tools_in_order() {
    let set = Toolset::new()
        .with(tool("a"))
        .with(tool("bb"))
        .with(tool("c"));
    let set = set.filter(|t| t.spec().name().len() == 1);
    assert_eq!(names(&set), ["a", "c"]);
}

#[test]
fn declarations_are_built_once_and_rebuilt_after_a_change() {
    let mut set = Toolset::new().with(tool("a"));
    let first = set.declarations();
    assert!(Arc::ptr_eq(&first, &set.declarations()));
    assert!(Arc::ptr_eq(&first, &set.clone().declarations()));
    set.add(tool("b"));
    let second = set.declarations();
    assert!(!Arc::ptr_eq(&first, &second));
    assert_eq!(
        second
            .entries()
            .iter()
            .map(|d| &*d.name)
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    // The old snapshot is untouched.
    assert_eq!(first.len(), 1);
}

#[test]
fn declarations_carry_examples_strictness_and_kind() {
    let client = from_fn(
        "ask",
        "Ask the user.",
        |_: serde_json::Map<String, Value>, _| async { Ok::<_, ToolError>("unused") },
    )
    .with_kind(ToolKind::Client)
    .map_spec(|s| {
        s.with_strict(true)
            .with_input_examples([json!({"q": "why?"})])
    });
    let set = Toolset::new().with(client);
    let decls = set.declarations();
    let decl = &decls.entries()[0];
    assert_eq!(
        decl.description,
        "Ask the user.\n\nExamples:\n1. {\"q\":\"why?\"}"
    );
    assert!(decl.strict);
    assert_eq!(decl.kind, ToolKind::Client);
}

#[test]
fn a_toolset_collects_from_an_iterator() {
    let set: Toolset = ["x", "y", "x"].into_iter().map(tool).collect();
    assert_eq!(names(&set), ["x", "y"]);
}
