//! The calculator's grammar: a recursive-descent parser over `f64` that evaluates as it parses.
//!
//! ```text
//! expr    = term (("+" | "-") term)*
//! term    = unary (("*" | "/" | "%") unary)*
//! unary   = ("-" | "+") unary | power
//! power   = primary ("^" unary)?
//! primary = number | "(" expr ")" | name | name "(" [expr ("," expr)*] ")"
//! ```
//!
//! `^` is right-associative and binds tighter than a unary minus on its left (`-2^2 = -4`), while
//! its exponent may carry its own sign (`2^-1 = 0.5`). Whitespace is allowed between any two
//! tokens. Positions in error messages are 1-based and count characters, not bytes.

use std::f64::consts;

use toolsmith_core::ToolError;

/// The longest expression accepted, in characters.
pub(super) const MAX_CHARS: usize = 10_000;
/// The deepest nesting of parentheses, function calls, signs and exponents accepted.
pub(super) const MAX_DEPTH: usize = 256;
/// The code of arithmetic failures: division by zero, non-finite results.
pub(super) const MATH_ERROR: &str = "MATH_ERROR";

type Result<T> = std::result::Result<T, ToolError>;

/// Evaluates `expression`.
///
/// # Errors
///
/// `INVALID_INPUT` when the expression is empty, too long, too deeply nested or malformed;
/// `MATH_ERROR` on a division by zero or a value that is not finite.
pub(super) fn evaluate(expression: &str) -> Result<f64> {
    if expression.chars().nth(MAX_CHARS).is_some() {
        return Err(ToolError::invalid_input(format!(
            "The expression is longer than {MAX_CHARS} characters"
        )));
    }
    if expression.trim().is_empty() {
        return Err(ToolError::invalid_input("The expression is empty"));
    }
    let mut parser = Parser {
        chars: expression.chars().collect(),
        pos: 0,
        depth: 0,
    };
    let value = parser.expr()?;
    parser.skip_whitespace();
    match parser.peek() {
        Some(c) => Err(unexpected(c, parser.pos)),
        None => finite(value),
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    /// Skips whitespace and consumes `c` if it comes next.
    fn eat(&mut self, c: char) -> bool {
        self.skip_whitespace();
        let found = self.peek() == Some(c);
        if found {
            self.pos += 1;
        }
        found
    }

    /// Runs `parse` one nesting level deeper, refusing to go past [`MAX_DEPTH`] so that hostile
    /// input cannot overflow the stack.
    fn nested<T>(&mut self, parse: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.depth >= MAX_DEPTH {
            return Err(ToolError::invalid_input(
                "The expression is nested too deeply",
            ));
        }
        self.depth += 1;
        let result = parse(self);
        self.depth -= 1;
        result
    }

    fn expr(&mut self) -> Result<f64> {
        let mut value = self.term()?;
        loop {
            if self.eat('+') {
                value = finite(value + self.term()?)?;
            } else if self.eat('-') {
                value = finite(value - self.term()?)?;
            } else {
                return Ok(value);
            }
        }
    }

    fn term(&mut self) -> Result<f64> {
        let mut value = self.unary()?;
        loop {
            if self.eat('*') {
                value = finite(value * self.unary()?)?;
            } else if self.eat('/') {
                value = finite(value / nonzero(self.unary()?)?)?;
            } else if self.eat('%') {
                value = finite(value % nonzero(self.unary()?)?)?;
            } else {
                return Ok(value);
            }
        }
    }

    fn unary(&mut self) -> Result<f64> {
        if self.eat('-') {
            Ok(-self.nested(Self::unary)?)
        } else if self.eat('+') {
            self.nested(Self::unary)
        } else {
            self.power()
        }
    }

    fn power(&mut self) -> Result<f64> {
        let base = self.primary()?;
        if self.eat('^') {
            let exponent = self.nested(Self::unary)?;
            finite(base.powf(exponent))
        } else {
            Ok(base)
        }
    }

    fn primary(&mut self) -> Result<f64> {
        self.skip_whitespace();
        let next = self.chars.get(self.pos + 1).copied();
        match self.peek() {
            None => Err(ToolError::invalid_input("Unexpected end of expression")),
            Some('(') => {
                self.pos += 1;
                let value = self.nested(Self::expr)?;
                self.expect_close()?;
                Ok(value)
            }
            Some(c) if c.is_ascii_digit() => self.number(),
            Some('.') if next.is_some_and(|c| c.is_ascii_digit()) => self.number(),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => self.name(),
            Some(c) => Err(unexpected(c, self.pos)),
        }
    }

    fn expect_close(&mut self) -> Result<()> {
        if self.eat(')') {
            return Ok(());
        }
        Err(ToolError::invalid_input(if self.pos < self.chars.len() {
            format!("Expected ')' at position {}", self.pos + 1)
        } else {
            "Expected ')' at end of expression".to_string()
        }))
    }

    fn skip_digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    /// `digits [. digits]`, `. digits`, either followed by an optional `e[+-]digits`.
    fn number(&mut self) -> Result<f64> {
        let start = self.pos;
        self.skip_digits();
        if self.peek() == Some('.') {
            self.pos += 1;
            self.skip_digits();
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            let mut end = self.pos + 1;
            if matches!(self.chars.get(end), Some('+' | '-')) {
                end += 1;
            }
            // Without digits, the `e` is not an exponent (and is reported as unexpected).
            if self.chars.get(end).is_some_and(|c| c.is_ascii_digit()) {
                self.pos = end;
                self.skip_digits();
            }
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        let position = start + 1;
        match text.parse::<f64>() {
            Ok(value) if value.is_finite() => Ok(value),
            Ok(_) => Err(ToolError::invalid_input(format!(
                "The number '{text}' at position {position} is too large"
            ))),
            Err(_) => Err(ToolError::invalid_input(format!(
                "Invalid number '{text}' at position {position}"
            ))),
        }
    }

    /// A constant, or a function call.
    fn name(&mut self) -> Result<f64> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.pos += 1;
        }
        let name: String = self.chars[start..self.pos].iter().collect();
        let position = start + 1;
        let function = Function::lookup(&name);
        if self.eat('(') {
            let Some(function) = function else {
                return Err(ToolError::invalid_input(format!(
                    "Unknown function '{name}' at position {position}"
                )));
            };
            let args = self.nested(Self::arguments)?;
            return function.apply(&name, &args);
        }
        match name.as_str() {
            "pi" => Ok(consts::PI),
            "e" => Ok(consts::E),
            _ if function.is_some() => Err(ToolError::invalid_input(format!(
                "Function '{name}' at position {position} must be followed by '('"
            ))),
            _ => Err(ToolError::invalid_input(format!(
                "Unknown name '{name}' at position {position}"
            ))),
        }
    }

    /// The arguments of a call, after its `(`, up to and including its `)`.
    fn arguments(&mut self) -> Result<Vec<f64>> {
        let mut args = Vec::new();
        if self.eat(')') {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if !self.eat(',') {
                self.expect_close()?;
                return Ok(args);
            }
        }
    }
}

/// A built-in function.
#[derive(Clone, Copy)]
enum Function {
    /// Takes exactly one argument.
    Unary(fn(f64) -> f64),
    /// Takes at least one argument, folded left to right.
    Fold(fn(f64, f64) -> f64),
}

impl Function {
    fn lookup(name: &str) -> Option<Self> {
        Some(match name {
            "sqrt" => Function::Unary(f64::sqrt),
            "abs" => Function::Unary(f64::abs),
            "round" => Function::Unary(f64::round),
            "floor" => Function::Unary(f64::floor),
            "ceil" => Function::Unary(f64::ceil),
            "ln" => Function::Unary(f64::ln),
            "log10" => Function::Unary(f64::log10),
            "exp" => Function::Unary(f64::exp),
            "sin" => Function::Unary(f64::sin),
            "cos" => Function::Unary(f64::cos),
            "tan" => Function::Unary(f64::tan),
            "min" => Function::Fold(f64::min),
            "max" => Function::Fold(f64::max),
            _ => return None,
        })
    }

    fn apply(self, name: &str, args: &[f64]) -> Result<f64> {
        match (self, args) {
            (Function::Unary(f), &[x]) => finite(f(x)),
            (Function::Unary(_), _) => Err(ToolError::invalid_input(format!(
                "Function '{name}' takes exactly 1 argument"
            ))),
            (Function::Fold(f), [first, rest @ ..]) => finite(rest.iter().copied().fold(*first, f)),
            (Function::Fold(_), []) => Err(ToolError::invalid_input(format!(
                "Function '{name}' takes at least 1 argument"
            ))),
        }
    }
}

fn unexpected(c: char, index: usize) -> ToolError {
    ToolError::invalid_input(format!(
        "Unexpected character '{c}' at position {}",
        index + 1
    ))
}

fn finite(value: f64) -> Result<f64> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(ToolError::new(
            MATH_ERROR,
            "The result is not a finite number",
        ))
    }
}

fn nonzero(divisor: f64) -> Result<f64> {
    if divisor == 0.0 {
        Err(ToolError::new(MATH_ERROR, "Division by zero"))
    } else {
        Ok(divisor)
    }
}

#[cfg(test)]
mod tests;
