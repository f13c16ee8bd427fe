//! Function calls and code execution of [`GeminiStreamDecoder`]: whole and streamed calls,
//! their ids, and the provider-executed `code_execution` calls with their results. Apart from
//! text and thoughts (in `stream.rs`) so that each file stays readable.

use std::sync::Arc;

use serde_json::{Value, json};
use toolsmith_core::{ModelError, ModelErrorKind, ModelPart, ModelToolCall, ProviderMetadata};

use super::super::args::{ArgsWriter, apply};
use super::super::fast::Call;
use super::{CODE_EXECUTION, GeminiStreamDecoder, OpenCall, PROVIDER};

impl GeminiStreamDecoder {
    pub(super) fn function_call(
        &mut self,
        call: Call<'_>,
        signature: Option<String>,
        out: &mut Vec<ModelPart>,
    ) -> Result<(), ModelError> {
        let terminator = call.is_empty();
        if let Some(name) = call
            .name
            .as_deref()
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
        {
            // A new call: the previous one (if its terminator is missing) is over.
            self.end_call(out);
            self.close_blocks(out);
            let wire_id = call
                .id
                .as_deref()
                .filter(|id| !id.is_empty())
                .map(str::to_owned);
            let id = self.call_id(wire_id.as_deref());
            out.push(ModelPart::ToolInputStart {
                id: id.clone(),
                tool_name: name.clone(),
                provider_executed: false,
            });
            self.call = Some(OpenCall {
                id,
                wire_id,
                name,
                signature: None,
                args: ArgsWriter::default(),
            });
        } else if self.call.is_none() {
            if terminator || (call.args.is_none() && call.partial_args.is_none()) {
                // A stray terminator or continuation marker.
                return Ok(());
            }
            self.abort(out);
            return Err(ModelError::new(
                ModelErrorKind::InvalidResponse,
                "The Gemini stream sent function-call arguments without a function name.",
            ));
        }
        let Some(open) = self.call.as_mut() else {
            return Ok(());
        };
        if open.signature.is_none() {
            open.signature = signature;
        }
        if let Some(args) = &call.args {
            open.args.whole(args);
        }
        for arg in call.partial_args.unwrap_or_default() {
            if let Err(error) = apply(&mut open.args, &arg) {
                self.abort(out);
                return Err(error);
            }
        }
        if let Some(delta) = open.args.take_delta() {
            out.push(ModelPart::ToolInputDelta {
                id: open.id.clone(),
                delta,
            });
        }
        if call.will_continue != Some(true) {
            self.end_call(out);
        }
        Ok(())
    }

    /// A call id: the wire's when it has a new one, else a generated one.
    fn call_id(&mut self, wire_id: Option<&str>) -> Arc<str> {
        let id = match wire_id {
            Some(id) if !id.is_empty() && !self.call_ids.contains(id) => id.into(),
            _ => {
                self.generated_ids += 1;
                format!("call_{}_{}", self.id_prefix, self.generated_ids).into()
            }
        };
        self.call_ids.insert(Arc::clone(&id));
        id
    }

    /// `executableCode`: a provider-executed `code_execution` call, input `{language, code}`.
    pub(super) fn executable_code(
        &mut self,
        mut code: Value,
        signature: Option<String>,
        out: &mut Vec<ModelPart>,
    ) {
        self.end_call(out);
        self.close_blocks(out);
        let wire_id = code
            .as_object_mut()
            .and_then(|c| c.shift_remove("id"))
            .and_then(|id| id.as_str().map(str::to_string));
        let id = self.call_id(wire_id.as_deref());
        let input = match code {
            Value::Object(_) => code.to_string(),
            _ => "{}".to_string(),
        };
        out.push(ModelPart::ToolInputStart {
            id: id.clone(),
            tool_name: CODE_EXECUTION.into(),
            provider_executed: true,
        });
        out.push(ModelPart::ToolInputDelta {
            id: id.clone(),
            delta: input.clone(),
        });
        out.push(ModelPart::ToolInputEnd { id: id.clone() });
        let mut call = ModelToolCall::new(&*id, CODE_EXECUTION, input);
        call.provider_executed = true;
        call.provider_metadata = google_metadata(signature, wire_id);
        out.push(ModelPart::ToolCall(call));
        self.code_runs += 1;
        self.pending_code = Some(id.to_string());
    }

    /// `codeExecutionResult`: the result of the last `executableCode`, an error unless its
    /// outcome is `OUTCOME_OK`.
    pub(super) fn code_result(
        &mut self,
        mut result: Value,
        signature: Option<String>,
        out: &mut Vec<ModelPart>,
    ) {
        self.end_call(out);
        self.close_blocks(out);
        let wire_id = result
            .as_object_mut()
            .and_then(|r| r.shift_remove("id"))
            .and_then(|id| id.as_str().map(str::to_string));
        let tool_call_id = match self.pending_code.take() {
            Some(id) => id,
            None => self.call_id(wire_id.as_deref()).to_string(),
        };
        let is_error = result.get("outcome").and_then(Value::as_str) != Some("OUTCOME_OK");
        out.push(ModelPart::ToolResult {
            tool_call_id,
            tool_name: CODE_EXECUTION.into(),
            result,
            is_error,
            provider_metadata: google_metadata(signature, wire_id),
        });
    }

    /// Completes the open call, if any: closes its arguments, ends its input, emits the call.
    pub(super) fn end_call(&mut self, out: &mut Vec<ModelPart>) {
        if let Some(call) = &mut self.call {
            call.args.close();
        }
        self.emit_call(out);
    }

    /// Emits the open call, if any, with its arguments as they are (possibly unclosed JSON).
    pub(super) fn end_cut_call(&mut self, out: &mut Vec<ModelPart>) {
        self.emit_call(out);
    }

    fn emit_call(&mut self, out: &mut Vec<ModelPart>) {
        let Some(mut call) = self.call.take() else {
            return;
        };
        if let Some(delta) = call.args.take_delta() {
            out.push(ModelPart::ToolInputDelta {
                id: call.id.clone(),
                delta,
            });
        }
        out.push(ModelPart::ToolInputEnd {
            id: call.id.clone(),
        });
        let mut tool_call = ModelToolCall::new(&*call.id, call.name, call.args.text().to_string());
        tool_call.provider_metadata = google_metadata(call.signature, call.wire_id);
        self.calls += 1;
        out.push(ModelPart::ToolCall(tool_call));
    }
}

/// `{"google": {"thoughtSignature": …, "id": …}}` with what is known, or nothing.
fn google_metadata(signature: Option<String>, wire_id: Option<String>) -> ProviderMetadata {
    let mut google = serde_json::Map::new();
    if let Some(signature) = signature {
        google.insert("thoughtSignature".into(), json!(signature));
    }
    if let Some(wire_id) = wire_id {
        google.insert("id".into(), json!(wire_id));
    }
    let mut metadata = ProviderMetadata::default();
    if !google.is_empty() {
        metadata.insert(PROVIDER, Value::Object(google));
    }
    metadata
}
