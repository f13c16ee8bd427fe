//! The `#[tool]` attribute macro of toolsmith: a typed tool from a plain function.
//!
//! Use it through the `toolsmith` facade (`toolsmith::tool`). It keeps the function as written
//! (still callable directly) and adds a unit struct named after it in PascalCase that implements
//! `Tool`:
//!
//! ```rust,ignore
//! use toolsmith::{tool, Tool, ToolContext, ToolError, Toolset};
//!
//! /// Add two integers.
//! #[tool]
//! async fn add(
//!     #[arg(description = "The first addend.")] a: i64,
//!     #[arg(description = "The second addend.")] b: i64,
//! ) -> Result<i64, ToolError> {
//!     Ok(a + b)
//! }
//!
//! /// Send an email.
//! #[tool(side_effect, timeout_ms = 10_000)]
//! async fn send_email(to: String, body: String, cx: &ToolContext) -> Result<String, ToolError> {
//!     let _key = cx.idempotency_key(); // the same on every retry of this call
//!     Ok(format!("sent {} bytes to {to}", body.len()))
//! }
//!
//! let tools = Toolset::new().with(Add).with(SendEmail);
//! assert_eq!(Add.spec().name(), "add");
//! assert_eq!(Add.spec().description(), "Add two integers.");
//! assert!(!SendEmail.meta().is_idempotent());
//! ```
//!
//! # What is generated
//!
//! For `fn get_weather(..)` (visibility `vis`):
//!
//! - the function itself, with its `#[arg]` attributes removed;
//! - `vis struct GetWeather;` (the name split on `_`, each piece's first character upper-cased,
//!   the rest kept as written), documented, deriving `Debug`, `Clone`, `Copy` and `Default`;
//! - a hidden arguments struct with one field per parameter, in parameter order, deriving
//!   `Deserialize` and `JsonSchema`: its schema is the tool's input schema. `Option<T>`
//!   parameters are optional;
//! - `impl Tool for GetWeather`: the spec (and meta, when meta options are given) is built once;
//!   `call` deserialises the input into the arguments (failing with `INVALID_INPUT` and the
//!   message `Invalid arguments: ...`), calls the function (awaiting it when it is `async`) and
//!   converts what it returns: `Result<T, E>` gives `T: IntoToolOutput` or the error
//!   `E: Into<ToolError>`, any other `T` goes through `IntoToolOutput`, and no return type is the
//!   text `ok`.
//!
//! A parameter whose type is `&ToolContext` or `ToolContext` (recognised by the last path
//! segment) is not part of the schema: it receives the call's context.
//!
//! # Options
//!
//! | Option | Effect |
//! |---|---|
//! | `name = "..."` | The tool's name (default: the function's name). |
//! | `description = "..."` | The description (default: the doc comment; without one, the name). |
//! | `side_effect`, `side_effect = bool` | `ToolMeta::side_effect` (and so not idempotent). |
//! | `idempotent`, `idempotent = bool` | `ToolMeta::idempotent`. |
//! | `timeout_ms = N` | `ToolMeta::timeout` of `N` milliseconds. |
//! | `exclusive`, `exclusive = bool` | `Concurrency::Exclusive`. |
//! | `strict`, `strict = bool` | `ToolSpec::with_strict(true)`. |
//! | `crate = path` | Where the toolsmith items live (default `::toolsmith`). |
//!
//! Parameters take `#[arg(description = "...")]`, which becomes the property's description in the
//! input schema.
//!
//! Methods (`self`), generic functions, `unsafe` functions, borrowed parameters (`&str`),
//! patterns in parameter position and unknown options are compile errors that point at the
//! offending tokens.

mod args;
mod expand;
#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Turns a function into a tool: keeps the function and adds a unit struct, named after it in
/// PascalCase (`get_weather` → `GetWeather`), that implements `Tool`.
///
/// See the [crate documentation](crate) for the generated code, the options
/// (`name`, `description`, `side_effect`, `idempotent`, `timeout_ms`, `exclusive`, `strict`,
/// `crate`) and the `#[arg(description = "...")]` parameter attribute.
///
/// ```rust,ignore
/// use toolsmith::{tool, ToolError};
///
/// /// Look the weather up.
/// #[tool(timeout_ms = 5000)]
/// async fn get_weather(
///     #[arg(description = "The city's name.")] city: String,
///     unit: Option<String>,
/// ) -> Result<String, ToolError> {
///     Ok(format!("sunny in {city}"))
/// }
/// ```
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(attr.into(), item.into()).into()
}
