//! Per-provider JSON-Schema dialects for tool declarations.
//!
//! Tool input schemas are derived once, as JSON Schema draft 2020-12
//! ([`toolsmith_core::schema::schema_for`]), but every provider accepts a different dialect of
//! it: OpenAI's strict mode wants closed, all-required objects; Gemini accepts only a subset of
//! OpenAPI 3.0 (no `$ref`, no `additionalProperties`, string-only `enum`…); Anthropic takes
//! draft 2020-12 almost as is but requires an object at the root. A [`SchemaDialect`] turns the
//! canonical schema into what one provider accepts, so a provider's request builder applies
//! its dialect through its profile instead of `if provider == …` in the agent loop.
//!
//! Every transform is a pure function of its input, idempotent (`t(t(s)) == t(s)`), walks
//! only schema positions (a property *named* `title`, `default` or `$ref` is never taken for a
//! keyword) and preserves the order of properties.
//!
//! ```
//! use serde_json::json;
//! use toolsmith_providers::dialect::{Gemini, SchemaDialect};
//!
//! let schema = json!({
//!     "type": "object",
//!     "properties": {"limit": {"type": ["integer", "null"], "format": "uint32", "minimum": 0}},
//!     "additionalProperties": false
//! });
//! assert_eq!(
//!     Gemini.transform(&schema, false),
//!     json!({
//!         "type": "object",
//!         "properties": {"limit": {"type": "integer", "minimum": 0, "nullable": true}}
//!     })
//! );
//! ```

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

pub mod anthropic;
pub mod gemini;
pub mod openai;

pub use anthropic::Anthropic;
pub use gemini::Gemini;
pub use openai::OpenAi;

/// A provider's JSON-Schema dialect: how a tool's canonical input schema (JSON Schema draft
/// 2020-12, as [`schema_for`](toolsmith_core::schema::schema_for) derives it) must be rewritten
/// before that provider accepts it.
///
/// Implementations are stateless unit structs ([`OpenAi`], [`Gemini`], [`Anthropic`]), so a
/// provider profile can hold a `&'static dyn SchemaDialect`.
pub trait SchemaDialect: Send + Sync {
    /// A stable name for the dialect, used as the cache key of rendered declarations
    /// ([`ToolDeclarations::rendered`](toolsmith_core::ToolDeclarations::rendered)).
    fn name(&self) -> &'static str;

    /// The schema rewritten for this provider.
    ///
    /// `strict` is the tool's strict-mode request
    /// ([`ToolDeclaration::strict`](toolsmith_core::ToolDeclaration::strict)); a dialect without
    /// a strict mode ignores it.
    /// The transform must be a pure function of its arguments, idempotent, never fail (what a
    /// provider cannot express is relaxed, not rejected) and keep property order.
    fn transform(&self, schema: &Value, strict: bool) -> Value;
}

// The subschema keyword lists are core's, so every schema walk agrees on where subschemas are.
use toolsmith_core::schema::{
    ARRAY_SUBSCHEMAS as ARRAYS, MAP_SUBSCHEMAS as MAPS, SINGLE_SUBSCHEMA as SINGLE,
};

/// The definition containers a local `$ref` usually points into.
pub(crate) use toolsmith_core::schema::DEFINITIONS as DEF_CONTAINERS;

/// Calls `f` on every direct subschema of `schema`, definition containers excluded.
fn for_each_subschema<'a>(schema: &'a Value, f: &mut dyn FnMut(&'a Value)) {
    let Value::Object(map) = schema else { return };
    for (key, value) in map {
        let key = key.as_str();
        match value {
            Value::Object(children) if MAPS.contains(&key) => children.values().for_each(&mut *f),
            Value::Array(children) if ARRAYS.contains(&key) => children.iter().for_each(&mut *f),
            Value::Object(_) if SINGLE.contains(&key) => f(value),
            _ => {}
        }
    }
}

/// The local `$ref` (one starting with `#`) of a schema, if it has one.
fn local_ref(schema: &Value) -> Option<&str> {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .filter(|r| r.starts_with('#'))
}

/// Resolves a local reference (`#`, `#/$defs/Name`, any JSON pointer) against the root.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    root.pointer(reference.strip_prefix('#')?)
}

/// Every local reference in `schema` and its subschemas (references are not followed).
fn refs_in<'a>(schema: &'a Value, out: &mut Vec<&'a str>) {
    if let Some(r) = local_ref(schema) {
        out.push(r);
    }
    for_each_subschema(schema, &mut |child| refs_in(child, out));
}

/// The local references that can reach themselves: recursive types.
fn recursive_refs(root: &Value) -> HashSet<String> {
    let mut edges: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut queue = Vec::new();
    refs_in(root, &mut queue);
    while let Some(r) = queue.pop() {
        if edges.contains_key(r) {
            continue;
        }
        let mut next = Vec::new();
        if let Some(target) = resolve(root, r) {
            refs_in(target, &mut next);
        }
        queue.extend(next.iter().copied());
        edges.insert(r, next);
    }
    let reaches = |from: &str, to: &str| {
        let mut seen = HashSet::new();
        let mut stack = edges.get(from).cloned().unwrap_or_default();
        while let Some(r) = stack.pop() {
            if r == to {
                return true;
            }
            if seen.insert(r) {
                stack.extend(edges.get(r).into_iter().flatten().copied());
            }
        }
        false
    };
    edges
        .keys()
        .filter(|r| reaches(r, r))
        .map(|r| (*r).to_owned())
        .collect()
}

/// How many references may be expanded inside one another before any further recursive one is
/// cut ([`Recursion::Unroll`]): bounds the output of mutually recursive definitions.
const MAX_STACK: usize = 8;

/// What [`inline_refs`] does with a reference to a recursive type.
#[derive(Clone, Copy)]
pub(crate) enum Recursion {
    /// Keep the `$ref` and the definition it points to (OpenAI, which accepts `$defs`).
    Keep,
    /// Expand it at most this many times along any path (and not at all once [`MAX_STACK`]
    /// references are being expanded), then cut it to a permissive schema of the definition's
    /// `type` (`{"type": "object"}` when it has none) (Gemini).
    Unroll(usize),
}

/// Inlines local `$ref`s: each reference is replaced by a copy of its target, with the
/// reference's sibling keywords (a `description`, say) laid over it. References to recursive
/// types follow `recursion`:
///
/// - [`Recursion::Keep`]: the definitions still referenced are kept (in their original container,
///   order and place) and the others dropped; unresolvable and non-local (`https://…`) references
///   are left as they are.
/// - [`Recursion::Unroll`]: all definition containers are dropped, and unresolvable or non-local
///   references are cut like recursive ones.
pub(crate) fn inline_refs(root: &Value, recursion: Recursion) -> Value {
    let mut inliner = Inliner {
        root,
        recursive: recursive_refs(root),
        recursion,
        stack: vec!["#".to_owned()],
        kept: Vec::new(),
    };
    let mut out = inliner.inline(root);
    if let (Recursion::Keep, Value::Object(map)) = (recursion, &mut out) {
        // A kept definition's body may keep further definitions: run to a fixpoint.
        let mut bodies: HashMap<String, Value> = HashMap::new();
        let mut done = 0;
        while done < inliner.kept.len() {
            let r = inliner.kept[done].clone();
            done += 1;
            if let Some(target) = resolve(root, &r) {
                inliner.stack = vec![r.clone()];
                let body = inliner.inline(target);
                bodies.insert(r, body);
            }
        }
        for container in DEF_CONTAINERS {
            let Some(Value::Object(defs)) = root.get(*container) else {
                continue;
            };
            let kept: Map<String, Value> = defs
                .keys()
                .filter_map(|name| {
                    let r = format!("#/{container}/{}", escape_pointer(name));
                    bodies.remove(&r).map(|body| (name.clone(), body))
                })
                .collect();
            if !kept.is_empty() {
                // Where the container was, so a second pass puts it back at the same place.
                let at = root
                    .as_object()
                    .into_iter()
                    .flat_map(|m| m.keys())
                    .take_while(|k| k != container)
                    .filter(|k| !DEF_CONTAINERS.contains(&k.as_str()))
                    .count()
                    .min(map.len());
                map.shift_insert(at, (*container).to_owned(), Value::Object(kept));
            }
        }
    }
    out
}

fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

struct Inliner<'a> {
    root: &'a Value,
    recursive: HashSet<String>,
    recursion: Recursion,
    /// The references being expanded, outermost first (`#` for the root itself).
    stack: Vec<String>,
    /// Recursive references kept as `$ref` ([`Recursion::Keep`]), in discovery order.
    kept: Vec<String>,
}

impl Inliner<'_> {
    fn inline(&mut self, schema: &Value) -> Value {
        let Value::Object(map) = schema else {
            return schema.clone();
        };
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) if r.starts_with('#') => return self.expand(r, map),
            Some(r) if matches!(self.recursion, Recursion::Unroll(_)) => {
                return self.expand(r, map);
            }
            _ => {}
        }
        let mut out = Map::with_capacity(map.len());
        for (key, value) in map {
            let key_str = key.as_str();
            if DEF_CONTAINERS.contains(&key_str) {
                continue;
            }
            let value = match value {
                Value::Object(children) if MAPS.contains(&key_str) => Value::Object(
                    children
                        .iter()
                        .map(|(name, child)| (name.clone(), self.inline(child)))
                        .collect(),
                ),
                Value::Array(children) if ARRAYS.contains(&key_str) => {
                    Value::Array(children.iter().map(|child| self.inline(child)).collect())
                }
                Value::Object(_) if SINGLE.contains(&key_str) => self.inline(value),
                _ => value.clone(),
            };
            out.insert(key.clone(), value);
        }
        Value::Object(out)
    }

    fn expand(&mut self, r: &str, map: &Map<String, Value>) -> Value {
        let target = if r.starts_with('#') {
            resolve(self.root, r)
        } else {
            None
        };
        let siblings: Map<String, Value> = map
            .iter()
            .filter(|(k, _)| *k != "$ref")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match self.recursion {
            Recursion::Keep if target.is_none() || self.recursive.contains(r) => {
                if target.is_some() && !self.kept.iter().any(|k| k == r) && r != "#" {
                    self.kept.push(r.to_owned());
                }
                return Value::Object(map.clone());
            }
            Recursion::Unroll(max) => {
                let depth = self.stack.iter().filter(|s| *s == r).count();
                let deep = depth >= max || self.stack.len() >= MAX_STACK;
                if target.is_none() || (self.recursive.contains(r) && deep) {
                    let mut cut = Map::new();
                    let kind = target
                        .and_then(|t| t.get("type"))
                        .filter(|t| t.is_string())
                        .cloned()
                        .unwrap_or_else(|| "object".into());
                    cut.insert("type".into(), kind);
                    let Value::Object(siblings) = self.inline(&Value::Object(siblings)) else {
                        unreachable!("an object inlines to an object")
                    };
                    cut.extend(siblings);
                    return Value::Object(cut);
                }
            }
            Recursion::Keep => {}
        }
        let target = target.expect("unresolved references were handled above");
        self.stack.push(r.to_owned());
        let mut out = self.inline(target);
        self.stack.pop();
        if siblings.is_empty() {
            return out;
        }
        let siblings = self.inline(&Value::Object(siblings));
        match (&mut out, siblings) {
            (Value::Object(out), Value::Object(siblings)) => out.extend(siblings),
            (_, siblings) => out = siblings,
        }
        out
    }
}

/// Removes `keys` from every schema level, keeping the order of the remaining keywords.
pub(crate) fn strip_keywords(schema: &mut Value, keys: &[&str]) {
    if let Value::Object(map) = schema {
        for key in keys {
            map.shift_remove(*key);
        }
    }
    toolsmith_core::schema::for_each_subschema_mut(schema, &mut |child| {
        strip_keywords(child, keys)
    });
}
