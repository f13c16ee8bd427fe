//! The `calculator` tool: exact evaluation of arithmetic expressions.

mod parser;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_core::{
    ModelOutput, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, async_trait,
};

const NAME: &str = "calculator";

const DESCRIPTION: &str = "Evaluate an arithmetic expression exactly as written and return the \
    number. Supports + - * / % ^ (power), parentheses, unary plus and minus, and the functions \
    sqrt, abs, round, floor, ceil, min, max, ln, log10, exp, sin, cos, tan; constants pi and e.";

// No doc comment on the struct: it would become the schema's top-level description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The arithmetic expression to evaluate, for example "(2 + 3) * 4" or "sqrt(2) / 2".
    expression: String,
}

/// The `calculator` tool: evaluates an arithmetic expression over `f64` with a hand-written
/// parser (no `eval`, no code execution) and returns the number.
///
/// - Input: `{"expression": "<expression>"}`.
/// - Output: the app value `{"expression": <as given>, "result": <number>}`; the model sees the
///   text `<expression> = <result>`, the result shown with up to 12 significant digits.
/// - Syntax: `+ - * / %`, `^` (power, right-associative, binding tighter than a unary minus on
///   its left: `-2^2 = -4`), parentheses, unary `+`/`-`, numbers such as `3`, `.5`, `2.5E-2`, the
///   functions `sqrt abs round floor ceil ln log10 exp sin cos tan` (one argument) and `min max`
///   (one or more), the constants `pi` and `e`. Names are case-sensitive.
/// - Errors: `INVALID_INPUT` for a malformed, empty, over-long (more than 10 000 characters) or
///   over-nested (deeper than 256) expression, naming the 1-based character position where it
///   applies; `MATH_ERROR` for a division by zero or a result that is not a finite number.
///
/// The tool has no side effect, so it is idempotent and may run concurrently.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::{ModelOutput, Tool, ToolContext};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let calculator = toolsmith_builtins::calculator();
/// let cx = ToolContext::for_test("calculator");
/// let out = calculator.call(json!({"expression": "1/3"}), &cx).await.unwrap();
/// assert_eq!(out.model, ModelOutput::text("1/3 = 0.333333333333"));
///
/// let err = calculator.call(json!({"expression": "1/0"}), &cx).await.unwrap_err();
/// assert_eq!((err.code(), err.message()), ("MATH_ERROR", "Division by zero"));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Calculator {
    spec: ToolSpec,
}

impl Calculator {
    /// The tool, named `calculator`.
    pub fn new() -> Self {
        Calculator {
            spec: ToolSpec::for_type::<Input>(NAME).with_description(DESCRIPTION),
        }
    }
}

impl Default for Calculator {
    fn default() -> Self {
        Self::new()
    }
}

/// The `calculator` tool (see [`Calculator`]).
pub fn calculator() -> Calculator {
    Calculator::new()
}

#[async_trait]
impl Tool for Calculator {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Input { expression } = serde_json::from_value(input)
            .map_err(|e| ToolError::invalid_input(format!("Invalid arguments: {e}")))?;
        let result = parser::evaluate(&expression)?;
        Ok(output(expression, result))
    }
}

/// Builds the tool's output from the expression as given and its finite result.
fn output(expression: String, result: f64) -> ToolOutput {
    // `-0` reads as a mistake to a model and equals `0` anyway.
    let result = if result == 0.0 { 0.0 } else { result };
    let text = format!("{} = {}", expression.trim(), format_number(result));
    ToolOutput::json(json!({"expression": expression, "result": number_value(result)}))
        .with_model_output(ModelOutput::text(text))
}

/// 2^53: every integer up to this magnitude is exact in an `f64` (and in JSON readers that use
/// doubles).
const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// The result as a JSON number: an integer when it is one exactly (so `4`, not `4.0`).
fn number_value(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() <= MAX_EXACT_INTEGER {
        Value::from(value as i64)
    } else {
        Value::from(value)
    }
}

/// Formats a finite number for the model: integers below 10^15 in full, anything else with up to
/// 12 significant digits, like C's `%.12g` (trailing zeros removed, exponent notation below
/// 10^-5 and from 10^12 on, written `1.5e-7`).
fn format_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        return format!("{}", value as i64);
    }
    let scientific = format!("{value:.11e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return value.to_string();
    };
    let Ok(exponent) = exponent.parse::<i32>() else {
        return value.to_string();
    };
    if (-5..12).contains(&exponent) {
        let decimals = usize::try_from(11 - exponent).unwrap_or(0);
        trim_fraction(&format!("{value:.decimals$}")).to_string()
    } else {
        format!("{}e{exponent}", trim_fraction(mantissa))
    }
}

/// Removes trailing zeros after a decimal point, and the point itself if nothing follows it.
fn trim_fraction(number: &str) -> &str {
    if number.contains('.') {
        number.trim_end_matches('0').trim_end_matches('.')
    } else {
        number
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_results() {
        let cases = [
            (4.0, "4"),
            (-4.0, "-4"),
            (0.0, "0"),
            (1.0 / 3.0, "0.333333333333"),
            (2.0 / 3.0, "0.666666666667"),
            (-0.5, "-0.5"),
            (0.1 + 0.2, "0.3"),
            (2.5, "2.5"),
            (0.025, "0.025"),
            (1e-5, "0.00001"),
            (1.5e-7, "1.5e-7"),
            (-1.5e-7, "-1.5e-7"),
            (std::f64::consts::PI, "3.14159265359"),
            (1_099_511_627_776.0, "1099511627776"),
            (999_999_999_999_999.0, "999999999999999"),
            (1e15, "1e15"),
            (2f64.powi(60), "1.15292150461e18"),
            (123_456_789.123_456_78, "123456789.123"),
            (999_999_999_999.9, "1e12"),
            (1e300, "1e300"),
            (12.000_000_000_01, "12"),
        ];
        for (value, expected) in cases {
            assert_eq!(format_number(value), expected, "{value:e}");
        }
    }

    #[test]
    fn json_results() {
        assert_eq!(number_value(4.0), json!(4));
        assert_eq!(
            number_value(-9_007_199_254_740_992.0),
            json!(-9_007_199_254_740_992_i64)
        );
        assert_eq!(number_value(0.5), json!(0.5));
        assert_eq!(number_value(1e300), json!(1e300));
    }

    #[test]
    fn output_shape() {
        let out = output(" 0 * -1 ".to_string(), -0.0);
        assert_eq!(out.value, json!({"expression": " 0 * -1 ", "result": 0}));
        assert_eq!(out.model, ModelOutput::text("0 * -1 = 0"));
    }

    #[test]
    fn spec_and_meta() {
        let tool = calculator();
        assert_eq!(tool.spec().name(), "calculator");
        assert_eq!(tool.spec().description(), DESCRIPTION);
        assert_eq!(
            **tool.spec().input_schema(),
            json!({
                "type": "object",
                "properties": {
                    "expression": {
                        "description": "The arithmetic expression to evaluate, for example \
                            \"(2 + 3) * 4\" or \"sqrt(2) / 2\".",
                        "type": "string"
                    }
                },
                "additionalProperties": false,
                "required": ["expression"]
            })
        );
        assert!(!tool.meta().side_effect);
        assert!(tool.meta().is_idempotent());
    }
}
