//! The `calculator` tool through the public [`Tool`] interface.

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Value, json};
use toolsmith_core::{ModelOutput, Tool, ToolContext, ToolError, ToolOutput};

async fn calc(input: Value) -> Result<ToolOutput, ToolError> {
    toolsmith_builtins::calculator()
        .call(input, &ToolContext::for_test("calculator"))
        .await
}

fn calc_blocking(expression: &str) -> Result<ToolOutput, ToolError> {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(calc(json!({ "expression": expression })))
}

#[tokio::test]
async fn call_returns_value_and_model_text() {
    let out = calc(json!({"expression": "2 + 2"})).await.unwrap();
    assert_eq!(out.value, json!({"expression": "2 + 2", "result": 4}));
    assert_eq!(out.model, ModelOutput::text("2 + 2 = 4"));
    assert!(out.artifacts.is_empty());

    let out = calc(json!({"expression": "1/3"})).await.unwrap();
    assert_eq!(out.value, json!({"expression": "1/3", "result": 1.0 / 3.0}));
    assert_eq!(out.model, ModelOutput::text("1/3 = 0.333333333333"));

    let out = calc(json!({"expression": "max(2, 3) ^ 2 - sqrt(16) * -2"}))
        .await
        .unwrap();
    assert_eq!(out.value["result"], json!(17));
    assert_eq!(
        out.model,
        ModelOutput::text("max(2, 3) ^ 2 - sqrt(16) * -2 = 17")
    );
}

#[tokio::test]
async fn call_errors() {
    let cases = [
        (
            json!({"expression": "1 + $"}),
            "INVALID_INPUT",
            "Unexpected character '$' at position 5",
        ),
        (
            json!({"expression": "   "}),
            "INVALID_INPUT",
            "The expression is empty",
        ),
        (
            json!({"expression": "foo(2)"}),
            "INVALID_INPUT",
            "Unknown function 'foo' at position 1",
        ),
        (
            json!({"expression": "5 % 0"}),
            "MATH_ERROR",
            "Division by zero",
        ),
        (
            json!({"expression": "sqrt(-4)"}),
            "MATH_ERROR",
            "The result is not a finite number",
        ),
        (
            json!({}),
            "INVALID_INPUT",
            "Invalid arguments: missing field `expression`",
        ),
    ];
    for (input, code, message) in cases {
        let err = calc(input.clone()).await.expect_err(&input.to_string());
        assert_eq!((err.code(), err.message()), (code, message), "{input}");
        assert!(!err.is_fatal());
    }
}

#[test]
fn all_holds_the_calculator() {
    let dir = tempfile::tempdir().unwrap();
    let workspace =
        toolsmith_builtins::Workspace::new(toolsmith_sandbox::SandboxPolicy::new(dir.path()))
            .unwrap();
    let tools = toolsmith_builtins::all(&workspace);
    assert!(tools.contains("calculator"));
    let spec = tools.get("calculator").unwrap().spec().clone();
    assert!(spec.validate(&json!({"expression": "1"})).is_ok());
    assert!(spec.validate(&json!({"expression": 1})).is_err());
}

/// Deep but allowed nesting fits in a small stack (the guard keeps hostile input from overflowing
/// it at all).
#[test]
fn deep_nesting_fits_a_small_stack() {
    let worst = format!("{}1{}", "sqrt(-(".repeat(85), "))".repeat(85));
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            let nested = format!("{}1{}", "(".repeat(256), ")".repeat(256));
            let ok = calc_blocking(&nested).map(|out| out.value["result"].clone());
            let too_deep = calc_blocking(&"(".repeat(9_000)).map(|_| ());
            let worst = calc_blocking(&worst).map(|out| out.value["result"].clone());
            (ok, too_deep, worst)
        })
        .unwrap();
    let (ok, too_deep, worst) = handle.join().unwrap();
    assert_eq!(ok.unwrap(), json!(1));
    assert_eq!(
        too_deep.unwrap_err().message(),
        "The expression is nested too deeply"
    );
    assert_eq!(worst.unwrap_err().code(), "MATH_ERROR"); // sqrt of -1
}

/// 2^53: beyond it, `f64` arithmetic on integers is no longer exact.
const EXACT: i64 = 1 << 53;

fn exact(value: Option<i64>) -> Option<i64> {
    value.filter(|v| v.abs() <= EXACT)
}

/// Integer expressions over `+ - *` with their value, computed independently while generating
/// them. The generator follows the grammar (sums of products of signed factors), so the text
/// needs no parentheses beyond those it chooses, and the value folds left to right like the
/// parser. `None` marks an intermediate value that `f64` could not hold exactly.
fn integer_expression() -> impl Strategy<Value = (String, Option<i64>)> {
    let space = prop_oneof![Just(""), Just(" "), Just("  ")];
    let leaf = (0i64..=9).prop_map(|n| (n.to_string(), Some(n)));
    leaf.prop_recursive(3, 64, 6, move |expression| {
        let factor = prop_oneof![
            3 => (0i64..=99).prop_map(|n| (n.to_string(), Some(n))),
            1 => (expression, space.clone())
                .prop_map(|((text, value), s)| (format!("({s}{text}{s})"), value)),
        ];
        let signed = (0usize..=2, factor).prop_map(|(minuses, (text, value))| {
            let value = if minuses % 2 == 1 {
                value.map(|v| -v)
            } else {
                value
            };
            (format!("{}{text}", "-".repeat(minuses)), value)
        });
        let term = vec((space.clone(), signed), 1..=3).prop_map(|factors| {
            let mut factors = factors.into_iter();
            let (_, (mut text, mut value)) = factors.next().unwrap();
            for (s, (factor, v)) in factors {
                text = format!("{text}{s}*{s}{factor}");
                value = exact(value.zip(v).and_then(|(a, b)| a.checked_mul(b)));
            }
            (text, value)
        });
        vec((any::<bool>(), space.clone(), term), 1..=3).prop_map(|terms| {
            let mut terms = terms.into_iter();
            let (_, _, (mut text, mut value)) = terms.next().unwrap();
            for (plus, s, (term, v)) in terms {
                let op = if plus { '+' } else { '-' };
                text = format!("{text}{s}{op}{s}{term}");
                value = exact(value.zip(v).and_then(|(a, b)| {
                    if plus {
                        a.checked_add(b)
                    } else {
                        a.checked_sub(b)
                    }
                }));
            }
            (text, value)
        })
    })
}

proptest! {
    #[test]
    fn integer_expressions_evaluate_exactly(
        (expression, expected) in integer_expression()
            .prop_filter_map("not exact in f64", |(text, value)| value.map(|v| (text, v)))
    ) {
        let out = calc_blocking(&expression).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&out.value, &json!({"expression": expression, "result": expected}));
        if expected.abs() < 1_000_000_000_000_000 {
            let text = format!("{} = {expected}", expression.trim());
            prop_assert_eq!(out.model, ModelOutput::text(text));
        }
    }

    #[test]
    fn arbitrary_strings_never_panic(expression in any::<String>()) {
        check_total(&expression)?;
    }

    #[test]
    fn expression_like_strings_never_panic(
        expression in "[0-9 .,eE+*/%^()-]{0,40}|[a-z0-9 ,.()+*/^-]{0,40}"
    ) {
        check_total(&expression)?;
    }
}

/// The tool either returns a finite number or a non-fatal `INVALID_INPUT`/`MATH_ERROR`.
fn check_total(expression: &str) -> Result<(), TestCaseError> {
    match calc_blocking(expression) {
        Ok(out) => {
            prop_assert_eq!(&out.value["expression"], expression);
            prop_assert!(out.value["result"].is_number(), "{}", out.value);
        }
        Err(err) => {
            prop_assert!(
                matches!(err.code(), "INVALID_INPUT" | "MATH_ERROR"),
                "{:?}",
                err
            );
            prop_assert!(!err.is_fatal());
        }
    }
    Ok(())
}

/// Huge magnitudes cost nothing and fail precisely: `f64` arithmetic has no big-number path to
/// blow up (there is no factorial), so a tower of powers is one `powf` per level, bounded by the
/// nesting limit, and overflows to a `MATH_ERROR`.
#[test]
fn huge_magnitudes_are_precise_errors() {
    let cases = [
        ("9^9^9^9", "MATH_ERROR", "The result is not a finite number"),
        ("10^400", "MATH_ERROR", "The result is not a finite number"),
        (
            "exp(1e6)",
            "MATH_ERROR",
            "The result is not a finite number",
        ),
        (
            "1e308 * 10",
            "MATH_ERROR",
            "The result is not a finite number",
        ),
        (
            "1e999",
            "INVALID_INPUT",
            "The number '1e999' at position 1 is too large",
        ),
    ];
    for (expression, code, message) in cases {
        let err = calc_blocking(expression).unwrap_err();
        assert_eq!((err.code(), err.message()), (code, message), "{expression}");
    }
    let nines = "9".repeat(400);
    let err = calc_blocking(&format!("1+{nines}")).unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (
            "INVALID_INPUT",
            format!("The number '{nines}' at position 3 is too large").as_str()
        )
    );
    assert_eq!(
        calc_blocking(&format!("{}2", "2^".repeat(200)))
            .unwrap_err()
            .code(),
        "MATH_ERROR"
    );
    assert_eq!(calc_blocking("2^-1e300").unwrap().value["result"], json!(0));
}
