//! A request body whose tool declarations are spliced in as bytes, serialised once per toolset.
//!
//! Every wire renders a toolset once (`ToolDeclarations::rendered`, one cache entry per
//! dialect), but each request used to put a deep copy of the rendered `Value`s into its body
//! map, serialise it and free it: on the Chat Completions wire the copy alone was 78 % of
//! building a body, and each declared tool cost a request about 26 000 instructions (its copy,
//! a hash table per object under `preserve_order`, its serialisation and its frees; measured
//! with callgrind on the agent loop against a mock model, `bench/peers`). A [`Body`] keeps the
//! other members in a `serde_json` map, as the wires build them, and the rendered `tools` array
//! as the JSON text the wire serialised when it rendered the toolset ([`tools_json`]):
//! [`Body::to_bytes`] writes the members in order, the tools' bytes copied where their member
//! stands, so a declared tool costs a request the copy of its bytes (about 400 instructions).
//!
//! [`Body::into_value`] gives the same body as a `Value` (the spliced text parsed back) for
//! [`request_body`](crate::OpenAiChat::request_body) and the tests: `to_bytes` is exactly the
//! compact serialisation of that value, keys in the same order.

use bytes::Bytes;
use serde_json::{Map, Value};

/// The compact JSON text of `tools`, for [`Body::splice`]: what `serde_json::to_vec` writes.
pub(crate) fn tools_json(tools: &[Value]) -> Bytes {
    // A `Value` always serialises: its map keys are strings.
    serde_json::to_vec(tools).unwrap_or_default().into()
}

/// A JSON object body: members in insertion order, one of them possibly spliced in as bytes.
#[derive(Debug, Default)]
pub(crate) struct Body {
    /// The members; the spliced one holds `null` here, in its place.
    map: Map<String, Value>,
    /// The spliced member's key and JSON text.
    spliced: Option<(&'static str, Bytes)>,
}

impl Body {
    /// An empty body.
    pub(crate) fn new() -> Self {
        Body::default()
    }

    /// Sets `key` to `value` (in place when it is already there). Setting the spliced member
    /// (a provider option naming it, say) replaces the spliced text, as it would a value.
    pub(crate) fn insert(&mut self, key: impl Into<String>, value: Value) {
        let key = key.into();
        if self.spliced.as_ref().is_some_and(|(k, _)| *k == key) {
            self.spliced = None;
        }
        self.map.insert(key, value);
    }

    /// Sets `key` to the JSON text `json` (one valid JSON value), written as is.
    pub(crate) fn splice(&mut self, key: &'static str, json: Bytes) {
        self.map.insert(key.to_owned(), Value::Null);
        self.spliced = Some((key, json));
    }

    /// Removes `key` (with `serde_json`'s `Map::remove`, as the value body did).
    pub(crate) fn remove(&mut self, key: &str) -> Option<Value> {
        if self.spliced.as_ref().is_some_and(|(k, _)| *k == key) {
            let (_, json) = self.spliced.take()?;
            self.map.remove(key);
            return serde_json::from_slice(&json).ok();
        }
        self.map.remove(key)
    }

    /// The members, to read or change in place. The spliced member reads as `null` here: its
    /// bytes are written by [`to_bytes`](Self::to_bytes).
    pub(crate) fn map_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.map
    }

    /// Stops splicing `key` (when it is the spliced member): its value is parsed into the map,
    /// to be changed like any other member.
    pub(crate) fn unsplice(&mut self, key: &str) {
        if self.spliced.as_ref().is_some_and(|(k, _)| *k == key)
            && let Some((key, json)) = self.spliced.take()
        {
            let value = serde_json::from_slice(&json).unwrap_or(Value::Null);
            self.map.insert(key.to_owned(), value);
        }
    }

    /// The body serialised: compact JSON, members in order, the spliced text copied in place.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let spliced_len = self.spliced.as_ref().map_or(0, |(_, json)| json.len());
        let mut out = Vec::with_capacity(spliced_len + 512);
        out.push(b'{');
        for (i, (key, value)) in self.map.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_json(&mut out, key);
            out.push(b':');
            match &self.spliced {
                Some((spliced, json)) if spliced == key => out.extend_from_slice(json),
                _ => write_json(&mut out, value),
            }
        }
        out.push(b'}');
        out
    }

    /// The body as a value: the spliced text parsed in its place.
    pub(crate) fn into_value(mut self) -> Value {
        if let Some((key, _)) = &self.spliced {
            let key = *key;
            self.unsplice(key);
        }
        Value::Object(self.map)
    }
}

/// Appends the compact JSON of `value`. A string or a `Value` always serialises (its map keys
/// are strings), and writing to a `Vec` cannot fail.
fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(out, value);
}

#[cfg(test)]
mod tests;
