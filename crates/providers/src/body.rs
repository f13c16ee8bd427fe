//! A request body whose tool declarations (and, on Chat Completions, messages) are spliced in as
//! JSON text instead of being built as `Value`s.
//!
//! Every wire renders a toolset once (`ToolDeclarations::rendered`, one cache entry per
//! dialect), but each request used to put a deep copy of the rendered `Value`s into its body
//! map, serialise it and free it: on the Chat Completions wire the copy alone was 78 % of
//! building a body, and each declared tool cost a request about 26 000 instructions (its copy,
//! a hash table per object under `preserve_order`, its serialisation and its frees; measured
//! with callgrind on the agent loop against a mock model, `bench/peers`). A [`Body`] holds the
//! rendered `tools` array as the JSON text the wire serialised when it rendered the toolset
//! ([`tools_json`]): [`Body::to_bytes`] copies those bytes where the member stands, so a
//! declared tool costs a request the copy of its bytes (about 400 instructions).
//!
//! The members are a short list with `'static` keys rather than a `serde_json::Map`: the map
//! allocated every key and a hash table for a dozen members that are only ever written in
//! order. Setting a member that is there replaces it in place, and removing one moves the last
//! member into its place, exactly as the map did (`Map::remove` is `swap_remove` under
//! `preserve_order`), so the bytes are the ones the map would have serialised.
//!
//! [`Body::into_value`] gives the same body as a `Value` (the spliced text parsed back) for
//! [`request_body`](crate::OpenAiChat::request_body) and the tests: `to_bytes` is exactly the
//! compact serialisation of that value, keys in the same order.

use std::borrow::Cow;

use bytes::Bytes;
use serde_json::{Map, Value};

/// The compact JSON text of `tools`, for [`Body::splice`]: what `serde_json::to_vec` writes.
pub(crate) fn tools_json(tools: &[Value]) -> Bytes {
    // A `Value` always serialises: its map keys are strings.
    serde_json::to_vec(tools).unwrap_or_default().into()
}

/// One member's value.
#[derive(Debug)]
enum Member {
    Value(Value),
    /// JSON text, written as is.
    Raw(Bytes),
}

impl Member {
    fn into_value(self) -> Value {
        match self {
            Member::Value(value) => value,
            // The text was serialised from a value (or written to the same grammar).
            Member::Raw(json) => serde_json::from_slice(&json).unwrap_or(Value::Null),
        }
    }
}

/// A JSON object body: members in insertion order, some of them JSON text spliced in.
#[derive(Debug, Default)]
pub(crate) struct Body {
    members: Vec<(Cow<'static, str>, Member)>,
}

impl Body {
    /// An empty body.
    pub(crate) fn new() -> Self {
        Body {
            members: Vec::with_capacity(12),
        }
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.members.iter().position(|(k, _)| k == key)
    }

    fn set(&mut self, key: Cow<'static, str>, member: Member) {
        match self.position(&key) {
            Some(at) => self.members[at].1 = member,
            None => self.members.push((key, member)),
        }
    }

    /// Sets `key` to `value`, in place when it is already there (a provider option naming a
    /// spliced member replaces it like any other).
    pub(crate) fn insert(&mut self, key: impl Into<Cow<'static, str>>, value: Value) {
        self.set(key.into(), Member::Value(value));
    }

    /// Sets `key` to the JSON text `json` (one valid JSON value), written as is.
    pub(crate) fn splice(&mut self, key: &'static str, json: impl Into<Bytes>) {
        self.set(Cow::Borrowed(key), Member::Raw(json.into()));
    }

    /// Removes `key` as `serde_json`'s `Map::remove` does under `preserve_order`: the last
    /// member takes its place.
    pub(crate) fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.position(key)?;
        Some(self.members.swap_remove(at).1.into_value())
    }

    /// The value of `key`, to change in place (a spliced member is parsed into a value first).
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        let at = self.position(key)?;
        let member = &mut self.members[at].1;
        if let Member::Raw(json) = member {
            let value = serde_json::from_slice(json).unwrap_or(Value::Null);
            *member = Member::Value(value);
        }
        match member {
            Member::Value(value) => Some(value),
            Member::Raw(_) => None,
        }
    }

    /// The body serialised: compact JSON, members in order, spliced text copied in place.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let raw: usize = self
            .members
            .iter()
            .map(|(_, member)| match member {
                Member::Raw(json) => json.len(),
                Member::Value(_) => 0,
            })
            .sum();
        let mut out = Vec::with_capacity(raw + 256);
        out.push(b'{');
        for (i, (key, member)) in self.members.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_json(&mut out, &**key);
            out.push(b':');
            match member {
                Member::Raw(json) => out.extend_from_slice(json),
                Member::Value(value) => write_json(&mut out, value),
            }
        }
        out.push(b'}');
        out
    }

    /// The body as a value: spliced text parsed in its place.
    pub(crate) fn into_value(self) -> Value {
        let map: Map<String, Value> = self
            .members
            .into_iter()
            .map(|(key, member)| (key.into_owned(), member.into_value()))
            .collect();
        Value::Object(map)
    }
}

/// Appends the compact JSON of `value`. A string or a `Value` always serialises (its map keys
/// are strings), and writing to a `Vec` cannot fail.
fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(out, value);
}

#[cfg(test)]
mod tests;
