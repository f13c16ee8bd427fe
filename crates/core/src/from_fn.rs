//! Typed tools from async closures: [`from_fn`].

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Tool, ToolContext, ToolError, ToolKind, ToolMeta, ToolOutput, ToolSpec};

/// A tool from an async closure over typed arguments: the input schema is derived from `Args`,
/// the model's input is validated against it and deserialised into `Args`, and the closure's
/// result becomes the [`ToolOutput`].
///
/// The closure takes the arguments and the call's [`ToolContext`] (cheap to clone) and returns
/// `Result<Out, E>` where `Out:` [`IntoToolOutput`] and `E: Into<ToolError>`.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use std::time::Duration;
/// use toolsmith_core::{from_fn, ToolError, ToolMeta};
///
/// /// Arguments of `send_email`.
/// #[derive(Deserialize, JsonSchema)]
/// struct Email {
///     /// The recipient's address.
///     to: String,
///     body: String,
/// }
///
/// let send = from_fn("send_email", "Send an email.", |email: Email, cx| async move {
///     // The key is the same on every retry of this call: pass it to the mail API.
///     let _key = cx.idempotency_key();
///     Ok::<_, ToolError>(format!("sent to {}", email.to))
/// })
/// .with_meta(ToolMeta::new().side_effect(true).timeout(Duration::from_secs(10)));
/// # let _ = send;
/// ```
pub fn from_fn<Args, F, Fut, Out, E>(
    name: impl Into<Arc<str>>,
    description: impl Into<String>,
    f: F,
) -> FnTool<Args, F>
where
    Args: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(Args, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, E>> + Send + 'static,
    Out: IntoToolOutput,
    E: Into<ToolError>,
{
    FnTool {
        spec: ToolSpec::for_type::<Args>(name).with_description(description),
        meta: ToolMeta::default(),
        kind: ToolKind::Function,
        f,
        _args: PhantomData,
    }
}

/// The tool [`from_fn`] builds.
pub struct FnTool<Args, F> {
    spec: ToolSpec,
    meta: ToolMeta,
    kind: ToolKind,
    f: F,
    _args: PhantomData<fn(Args)>,
}

impl<Args, F> FnTool<Args, F> {
    /// Sets the runtime metadata.
    pub fn with_meta(mut self, meta: ToolMeta) -> Self {
        self.meta = meta;
        self
    }

    /// Sets the kind (for example [`ToolKind::Client`] for a tool the caller answers).
    pub fn with_kind(mut self, kind: ToolKind) -> Self {
        self.kind = kind;
        self
    }

    /// Changes the spec (strict mode, input examples, output schema…).
    pub fn map_spec(mut self, f: impl FnOnce(ToolSpec) -> ToolSpec) -> Self {
        self.spec = f(self.spec);
        self
    }
}

impl<Args, F> fmt::Debug for FnTool<Args, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("spec", &self.spec)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl<Args, F, Fut, Out, E> Tool for FnTool<Args, F>
where
    Args: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(Args, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, E>> + Send + 'static,
    Out: IntoToolOutput,
    E: Into<ToolError>,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn kind(&self) -> &ToolKind {
        &self.kind
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = serde_json::from_value(input)
            .map_err(|e| ToolError::invalid_input(format!("Invalid arguments: {e}")))?;
        match (self.f)(args, cx.clone()).await {
            Ok(out) => out.into_tool_output(),
            Err(e) => Err(e.into()),
        }
    }
}

/// Values a typed tool may return.
///
/// Implemented for [`ToolOutput`], strings (shown to the model as text), [`Value`], numbers,
/// booleans, `()` (the text `ok`) and [`Json<T>`] for any serialisable `T`.
pub trait IntoToolOutput: Send + 'static {
    /// Converts into a tool output.
    ///
    /// # Errors
    ///
    /// `TOOL_OUTPUT_INVALID` when a value cannot be serialised.
    fn into_tool_output(self) -> Result<ToolOutput, ToolError>;
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(self)
    }
}

impl IntoToolOutput for String {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self))
    }
}

impl IntoToolOutput for &'static str {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self))
    }
}

impl IntoToolOutput for Value {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::json(self))
    }
}

impl IntoToolOutput for () {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

macro_rules! scalar_outputs {
    ($($t:ty),*) => {$(
        impl IntoToolOutput for $t {
            fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
                Ok(ToolOutput::json(Value::from(self)))
            }
        }
    )*};
}
scalar_outputs!(
    bool, i8, i16, i32, i64, u8, u16, u32, u64, usize, isize, f32, f64
);

/// Wraps any serialisable value as a JSON tool output.
///
/// ```
/// use serde::Serialize;
/// use toolsmith_core::{IntoToolOutput, Json};
///
/// #[derive(Serialize)]
/// struct Weather { celsius: f32 }
///
/// let out = Json(Weather { celsius: 21.5 }).into_tool_output().unwrap();
/// assert_eq!(out.value["celsius"], 21.5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize + Send + 'static> IntoToolOutput for Json<T> {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::json(serde_json::to_value(self.0)?))
    }
}

impl From<std::io::Error> for ToolError {
    fn from(error: std::io::Error) -> Self {
        ToolError::new("TOOL_IO_ERROR", error.to_string())
    }
}
