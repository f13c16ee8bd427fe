//! What a well-formed sequence of model parts is, as everything above the wire relies on it.

use std::collections::HashSet;
use std::sync::Arc;

use toolsmith_core::ModelPart;

/// The blocks open at some point of a part sequence.
#[derive(Debug, Default)]
pub(crate) struct Blocks {
    text: HashSet<Arc<str>>,
    reasoning: HashSet<Arc<str>>,
    tool_input: HashSet<Arc<str>>,
    finished: bool,
    /// Every tool input and call id so far, when they must be unique ([`Blocks::unique_calls`]).
    calls: Option<(HashSet<Arc<str>>, HashSet<String>)>,
}

impl Blocks {
    /// Checks a response from a wire: besides the rest, each tool input is started once and each
    /// call id is another call's (everything keyed by a call id, its result, approval and
    /// journal entry, relies on it). A scripted model's calls have the ids its file gives.
    pub(crate) fn unique_calls() -> Self {
        Blocks {
            calls: Some(Default::default()),
            ..Blocks::default()
        }
    }

    /// Checks `part` against the parts before it: a block's deltas and end come after its start
    /// and before its end, an id is not started twice while open, nothing follows `Finish`,
    /// which finds every block closed. Every part re-serialises, and reads back as itself.
    pub(crate) fn check(&mut self, part: &ModelPart) {
        if let Some((inputs, calls)) = &mut self.calls {
            match part {
                ModelPart::ToolInputStart { id, .. } => {
                    assert!(inputs.insert(id.clone()), "tool input {id} started again");
                }
                ModelPart::ToolCall(call) => assert!(
                    calls.insert(call.tool_call_id.clone()),
                    "two calls {}",
                    call.tool_call_id
                ),
                _ => {}
            }
        }
        assert!(!self.finished, "a part after the finish: {part:?}");
        let text = serde_json::to_string(part).expect("a part serialises");
        let back: ModelPart = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("a part's JSON does not read back ({e}): {text}"));
        assert_eq!(
            &back, part,
            "a part's JSON reads back as another part: {text}"
        );
        match part {
            ModelPart::TextStart { id } => open(&mut self.text, id, "text"),
            ModelPart::TextDelta { id, .. } => is_open(&self.text, id, "text delta"),
            ModelPart::TextEnd { id, .. } => close(&mut self.text, id, "text"),
            ModelPart::ReasoningStart { id } => open(&mut self.reasoning, id, "reasoning"),
            ModelPart::ReasoningDelta { id, .. } => {
                is_open(&self.reasoning, id, "reasoning delta");
            }
            ModelPart::ReasoningEnd { id, .. } => close(&mut self.reasoning, id, "reasoning"),
            ModelPart::ToolInputStart { id, .. } => open(&mut self.tool_input, id, "tool input"),
            ModelPart::ToolInputDelta { id, .. } => {
                is_open(&self.tool_input, id, "tool input delta");
            }
            ModelPart::ToolInputEnd { id } => close(&mut self.tool_input, id, "tool input"),
            ModelPart::StreamStart { .. } => panic!("a stream start inside the stream"),
            ModelPart::Finish { .. } => {
                self.finished = true;
                self.all_closed("the finish");
            }
            _ => {}
        }
    }

    /// Checks every part of `parts`.
    pub(crate) fn check_all<'a>(&mut self, parts: impl IntoIterator<Item = &'a ModelPart>) {
        for part in parts {
            self.check(part);
        }
    }

    /// Whether a `Finish` was seen.
    pub(crate) fn finished(&self) -> bool {
        self.finished
    }

    /// Fails unless every block is closed (`at` names the point, for the message).
    pub(crate) fn all_closed(&self, at: &str) {
        assert!(
            self.text.is_empty() && self.reasoning.is_empty() && self.tool_input.is_empty(),
            "blocks still open at {at}: {self:?}"
        );
    }
}

fn open(set: &mut HashSet<Arc<str>>, id: &Arc<str>, what: &str) {
    assert!(set.insert(id.clone()), "{what} {id} started twice");
}

fn is_open(set: &HashSet<Arc<str>>, id: &Arc<str>, what: &str) {
    assert!(set.contains(id), "{what} for {id}, which is not open");
}

fn close(set: &mut HashSet<Arc<str>>, id: &Arc<str>, what: &str) {
    assert!(set.remove(id), "{what} {id} ended but not open");
}
