//! `PROVIDER:MODEL` strings.

use std::sync::Arc;

use toolsmith_core::{LanguageModel, ModelError, ModelErrorKind};

use crate::ScriptedModel;

/// The providers this build knows, in the order error messages list them.
const PROVIDERS: &[&str] = &["scripted"];

/// Settings that come from flags rather than the model string.
#[derive(Debug, Clone, Default)]
pub struct ProviderOptions {
    /// Overrides the provider's base URL.
    pub base_url: Option<String>,
    /// Overrides the provider's API key.
    pub api_key: Option<String>,
}

/// Builds the model named by a `PROVIDER:MODEL` string.
///
/// - `scripted:PATH` plays back the scripted conversation in the JSON file at `PATH` (see
///   [`ScriptedModel::from_file`]).
///
/// # Errors
///
/// `Config` errors naming the problem: a string without `:`, an unknown provider (listing the
/// known ones), or a model that cannot be loaded.
///
/// ```
/// let err = toolsmith_providers::resolve("nope:x", &Default::default()).err().unwrap();
/// assert_eq!(err.to_string(), "Unknown provider \"nope\" in model \"nope:x\". Known providers: scripted.");
/// ```
pub fn resolve(
    model: &str,
    options: &ProviderOptions,
) -> Result<Arc<dyn LanguageModel>, ModelError> {
    let _ = options;
    let Some((provider, name)) = model.split_once(':') else {
        return Err(ModelError::new(
            ModelErrorKind::Config,
            format!(
                "Model \"{model}\" must have the form PROVIDER:MODEL, for example scripted:demo.json."
            ),
        ));
    };
    match provider {
        "scripted" => Ok(Arc::new(ScriptedModel::from_file(name)?)),
        _ => Err(ModelError::new(
            ModelErrorKind::Config,
            format!(
                "Unknown provider \"{provider}\" in model \"{model}\". Known providers: {}.",
                PROVIDERS.join(", ")
            ),
        )),
    }
}
