//! Unit tests of the calculator's parser.

use super::*;

fn eval(expression: &str) -> f64 {
    evaluate(expression).unwrap_or_else(|e| panic!("{expression:?} failed: {e}"))
}

fn fails(expression: &str) -> (String, String) {
    let error = evaluate(expression).expect_err(expression);
    (error.code().to_string(), error.message().to_string())
}

fn invalid(expression: &str, message: &str) {
    assert_eq!(
        fails(expression),
        ("INVALID_INPUT".into(), message.into()),
        "{expression:.80}"
    );
}

fn math(expression: &str, message: &str) {
    assert_eq!(
        fails(expression),
        (MATH_ERROR.into(), message.into()),
        "{expression:?}"
    );
}

#[test]
fn precedence_and_associativity() {
    let cases = [
        ("2 + 3 * 4", 14.0),
        ("(2 + 3) * 4", 20.0),
        ("10 - 4 - 3", 3.0),
        ("2 * 3 % 4", 2.0),
        ("100 / 10 / 5", 2.0),
        ("7 % 4 * 3", 9.0),
        ("-7 % 4", -3.0),
        ("2 ^ 3 ^ 2", 512.0),
        ("(2 ^ 3) ^ 2", 64.0),
        ("-2^2", -4.0),
        ("(-2)^2", 4.0),
        ("2^-1", 0.5),
        ("2^-2^2", 0.0625),
        ("2 * -3", -6.0),
        ("2 - -3", 5.0),
        ("--3", 3.0),
        ("+3 - +1", 2.0),
        ("1 + 2 * 3 ^ 2 - 4 / 2", 17.0),
        ("-(1 + 2) * 3", -9.0),
        ("3 * 2 ^ 2", 12.0),
    ];
    for (expression, expected) in cases {
        assert_eq!(eval(expression), expected, "{expression}");
    }
}

#[test]
fn number_formats() {
    let cases = [
        ("3", 3.0),
        ("3.5", 3.5),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("2.5E-2", 0.025),
        ("1e+2", 100.0),
        ("007", 7.0),
        (" \t1\n+\r\n2 ", 3.0),
    ];
    for (expression, expected) in cases {
        assert_eq!(eval(expression), expected, "{expression:?}");
    }
    invalid("1e400", "The number '1e400' at position 1 is too large");
    invalid("1 + 1e", "Unexpected character 'e' at position 6");
    invalid("1.2.3", "Unexpected character '.' at position 4");
    invalid(".", "Unexpected character '.' at position 1");
    invalid("1 2", "Unexpected character '2' at position 3");
}

#[test]
fn functions_and_constants() {
    let cases = [
        ("sqrt(16)", 4.0),
        ("abs(-2.5)", 2.5),
        ("round(2.5)", 3.0),
        ("round(-2.5)", -3.0),
        ("floor(-1.5)", -2.0),
        ("ceil(1.2)", 2.0),
        ("ln(e)", 1.0),
        ("log10(1000)", 3.0),
        ("exp(0)", 1.0),
        ("sin(0)", 0.0),
        ("cos(0)", 1.0),
        ("tan(0)", 0.0),
        ("min(3, 1, 2)", 1.0),
        ("max(3, 1 + 9, 2)", 10.0),
        ("max(7)", 7.0),
        ("max ( 1 , min(4, 5) )", 4.0),
        ("2 * pi", 2.0 * consts::PI),
        ("e^2", consts::E.powf(2.0)),
    ];
    for (expression, expected) in cases {
        assert_eq!(eval(expression), expected, "{expression}");
    }
    assert!((eval("sqrt(2)^2") - 2.0).abs() < 1e-12);
}

#[test]
fn function_errors() {
    invalid("foo(1)", "Unknown function 'foo' at position 1");
    invalid("1 + pi(2)", "Unknown function 'pi' at position 5");
    invalid("SQRT(4)", "Unknown function 'SQRT' at position 1");
    invalid("1 + x", "Unknown name 'x' at position 5");
    invalid("2*x", "Unknown name 'x' at position 3");
    invalid("PI", "Unknown name 'PI' at position 1");
    invalid(
        "sqrt",
        "Function 'sqrt' at position 1 must be followed by '('",
    );
    invalid("max()", "Function 'max' takes at least 1 argument");
    invalid("min( )", "Function 'min' takes at least 1 argument");
    invalid("sqrt()", "Function 'sqrt' takes exactly 1 argument");
    invalid("sqrt(1, 2)", "Function 'sqrt' takes exactly 1 argument");
    invalid("max(1 2", "Expected ')' at position 7");
    invalid("max(1,", "Unexpected end of expression");
    invalid("max(1,)", "Unexpected character ')' at position 7");
    invalid("max(1", "Expected ')' at end of expression");
}

#[test]
fn syntax_errors() {
    invalid("", "The expression is empty");
    invalid(" \n\t ", "The expression is empty");
    invalid("1 + $", "Unexpected character '$' at position 5");
    invalid("1 +", "Unexpected end of expression");
    invalid("-", "Unexpected end of expression");
    invalid("(1 + 2", "Expected ')' at end of expression");
    invalid("(1 + 2 3", "Expected ')' at position 8");
    invalid("1 + 2)", "Unexpected character ')' at position 6");
    invalid("()", "Unexpected character ')' at position 2");
    invalid("2 ** 3", "Unexpected character '*' at position 4");
    invalid("é + 1", "Unexpected character 'é' at position 1");
    invalid("1 + é", "Unexpected character 'é' at position 5");
}

#[test]
fn math_errors() {
    math("1 / 0", "Division by zero");
    math("1 % (2 - 2)", "Division by zero");
    math("0 / -0", "Division by zero");
    math("sqrt(-1)", "The result is not a finite number");
    math("ln(0)", "The result is not a finite number");
    math("10 ^ 400", "The result is not a finite number");
    math("exp(1000) * 0", "The result is not a finite number");
    math("0 ^ -1", "The result is not a finite number");
    math("(-8) ^ (1/3)", "The result is not a finite number");
}

#[test]
fn limits() {
    let long = "1+".repeat(5_000) + "1";
    invalid(&long, "The expression is longer than 10000 characters");
    let longest = "1+".repeat(4_999) + "1";
    assert_eq!(eval(&format!("{longest} ")), 5_000.0);

    let parens = |n: usize| format!("{}1{}", "(".repeat(n), ")".repeat(n));
    assert_eq!(eval(&parens(MAX_DEPTH)), 1.0);
    invalid(
        &parens(MAX_DEPTH + 1),
        "The expression is nested too deeply",
    );
    invalid(&"(".repeat(9_999), "The expression is nested too deeply");
    invalid(
        &format!("{}1", "-".repeat(9_000)),
        "The expression is nested too deeply",
    );
    invalid(
        &format!("{}1", "sqrt(".repeat(1_000)),
        "The expression is nested too deeply",
    );
    invalid(&"2^".repeat(4_000), "The expression is nested too deeply");
}
