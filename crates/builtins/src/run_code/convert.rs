//! JS values to text: the result as JSON and console arguments as lines.
//!
//! Written in Rust rather than as a JS prelude: parsing even a small prelude costs about as much
//! as creating the context (~110 µs), and Rust code cannot be altered by the script (a script
//! that replaces `JSON` or `String` does not change how the host reads its values).

use rquickjs::function::Rest;
use rquickjs::{Coerced, Ctx, Function, Object, Type, Value};

/// The value as JSON text, as described on [`RunCode`](super::RunCode): `undefined` → `null`,
/// functions, symbols, BigInts, errors and non-finite numbers → strings describing them, and
/// `String(value)` when `JSON.stringify` throws (a cycle). `tripped` tells whether the script was
/// interrupted: the engine error is then passed on rather than papered over.
pub(super) fn to_json<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
    tripped: &dyn Fn() -> bool,
) -> rquickjs::Result<String> {
    match value.type_of() {
        Type::Undefined | Type::Uninitialized => return Ok("null".to_string()),
        Type::Float => {
            let number = value.as_float().unwrap_or(f64::NAN);
            if !number.is_finite() {
                return Ok(quote(&number_text(number)));
            }
        }
        Type::Function
        | Type::Constructor
        | Type::Symbol
        | Type::BigInt
        | Type::Exception
        | Type::String => return Ok(quote(&special_text(ctx, &value)?)),
        _ => {}
    }
    let replacer = Function::new(ctx.clone(), replace)?;
    match ctx.json_stringify_replacer(value.clone(), replacer) {
        Ok(Some(json)) => Ok(json.to_string().unwrap_or_else(|_| "null".to_string())),
        Ok(None) => Ok("null".to_string()),
        Err(rquickjs::Error::Exception) if !tripped() => {
            let _ = ctx.catch();
            match value.get::<Coerced<String>>() {
                Ok(text) => Ok(quote(&text.0)),
                Err(rquickjs::Error::Exception) if !tripped() => {
                    let _ = ctx.catch();
                    Ok(quote(&format!("[{}]", value.type_name())))
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// One console argument as text: strings as they are, objects as JSON, the rest as `String()`
/// would show them (functions, symbols and errors described).
pub(super) fn console_text<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
    tripped: &dyn Fn() -> bool,
) -> rquickjs::Result<String> {
    match value.type_of() {
        Type::Undefined | Type::Uninitialized => Ok("undefined".to_string()),
        Type::Null => Ok("null".to_string()),
        Type::Bool | Type::Int | Type::Float => Ok(value.get::<Coerced<String>>()?.0),
        Type::String
        | Type::Function
        | Type::Constructor
        | Type::Symbol
        | Type::BigInt
        | Type::Exception => special_text(ctx, &value),
        _ => to_json(ctx, value, tripped),
    }
}

/// Joins console arguments with spaces.
pub(super) fn console_line<'js>(
    ctx: &Ctx<'js>,
    args: Rest<Value<'js>>,
    tripped: &dyn Fn() -> bool,
) -> rquickjs::Result<String> {
    let mut line = String::new();
    for (i, arg) in args.0.into_iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        line.push_str(&console_text(ctx, arg, tripped)?);
    }
    Ok(line)
}

/// The `JSON.stringify` replacer: describes what JSON cannot hold, keeps everything else.
fn replace<'js>(
    ctx: Ctx<'js>,
    _key: Value<'js>,
    value: Value<'js>,
) -> rquickjs::Result<Value<'js>> {
    match value.type_of() {
        Type::Function | Type::Constructor | Type::Symbol | Type::BigInt | Type::Exception => {
            let text = special_text(&ctx, &value)?;
            Ok(rquickjs::String::from_str(ctx, &text)?.into_value())
        }
        Type::String => {
            // Lone surrogates would come out as `\udXXX` escapes, which are not valid JSON to
            // serde; replace them in the (rare) strings that have them.
            let string = value.as_string().cloned();
            match string.map(|s| s.to_string()) {
                Some(Err(_)) => Ok(rquickjs::String::from_str(
                    ctx.clone(),
                    &well_formed(&ctx, &value)?,
                )?
                .into_value()),
                _ => Ok(value),
            }
        }
        _ => Ok(value),
    }
}

/// The text of strings, functions, symbols, BigInts and errors.
fn special_text<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> rquickjs::Result<String> {
    match value.type_of() {
        Type::String => match value.as_string().map(|s| s.to_string()) {
            Some(Ok(text)) => Ok(text),
            _ => well_formed(ctx, value),
        },
        Type::Function | Type::Constructor => {
            let name = value
                .as_object()
                .and_then(|o| o.get::<_, Option<Coerced<String>>>("name").ok().flatten())
                .map(|n| n.0)
                .filter(|n| !n.is_empty());
            Ok(format!(
                "[Function: {}]",
                name.as_deref().unwrap_or("anonymous")
            ))
        }
        Type::Symbol => {
            let description = value
                .as_symbol()
                .and_then(|s| s.description().ok())
                .and_then(|d| d.get::<Option<Coerced<String>>>().ok().flatten())
                .map(|d| d.0)
                .unwrap_or_default();
            Ok(format!("Symbol({description})"))
        }
        Type::Exception => Ok(value.as_object().map(error_text).unwrap_or_default()),
        _ => Ok(value.get::<Coerced<String>>()?.0),
    }
}

/// `Name: message` and the stack, for an error object.
pub(super) fn error_text(error: &Object<'_>) -> String {
    let text = |key: &str| {
        error
            .get::<_, Option<Coerced<String>>>(key)
            .ok()
            .flatten()
            .map(|s| s.0)
    };
    let name = text("name").unwrap_or_else(|| "Error".to_string());
    let mut out = match text("message") {
        Some(message) if !message.is_empty() => format!("{name}: {message}"),
        _ => name,
    };
    if let Some(stack) = text("stack") {
        let stack = stack.trim_end();
        if !stack.is_empty() {
            out.push('\n');
            out.push_str(stack);
        }
    }
    out
}

/// The string with lone surrogates replaced by U+FFFD (`String.prototype.toWellFormed`).
fn well_formed<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> rquickjs::Result<String> {
    let to_well_formed: Function<'js> = ctx.eval("String.prototype.toWellFormed")?;
    let fixed: rquickjs::String<'js> =
        to_well_formed.call((rquickjs::function::This(value.clone()),))?;
    Ok(fixed.to_string().unwrap_or_else(|_| "\u{fffd}".to_string()))
}

/// How JS prints a non-finite number.
fn number_text(number: f64) -> String {
    if number.is_nan() {
        "NaN".to_string()
    } else if number > 0.0 {
        "Infinity".to_string()
    } else {
        "-Infinity".to_string()
    }
}

/// `text` as a JSON string literal.
fn quote(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(number_text(f64::NAN), "NaN");
        assert_eq!(number_text(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(number_text(f64::INFINITY), "Infinity");
        assert_eq!(quote("a\"b"), "\"a\\\"b\"");
    }
}
