//! Unit tests of the expansion: naming, doc extraction and the compile errors.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

use crate::expand::{doc_description, pascal_case, tool};

fn expand(attr: TokenStream, item: TokenStream) -> String {
    tool(attr, item).to_string()
}

fn assert_error(attr: TokenStream, item: TokenStream, message: &str) {
    let out = expand(attr, item);
    assert!(out.contains("compile_error"), "no error in: {out}");
    assert!(out.contains(message), "expected {message:?} in: {out}");
}

#[test]
fn pascal_case_rule() {
    assert_eq!(pascal_case("add"), "Add");
    assert_eq!(pascal_case("get_weather"), "GetWeather");
    assert_eq!(pascal_case("_private__fn_"), "PrivateFn");
    assert_eq!(pascal_case("fetch_v2"), "FetchV2");
    assert_eq!(pascal_case("get_HTTP_status"), "GetHTTPStatus");
}

#[test]
fn doc_lines_are_joined_and_trimmed() {
    let func: ItemFn = syn::parse_quote! {
        /// First line.
        ///
        ///   Indented.
        #[doc = include_str!("x")]
        fn f() {}
    };
    assert_eq!(doc_description(&func.attrs), "First line.\n\n  Indented.");
}

#[test]
fn a_valid_function_expands() {
    let out = expand(
        quote!(crate = toolsmith_core, side_effect),
        quote!(
            async fn get_weather(#[arg(description = "City.")] city: String) {}
        ),
    );
    assert!(!out.contains("compile_error"), "{out}");
    assert!(out.contains("struct GetWeather"), "{out}");
    assert!(out.contains("struct __GetWeatherArgs"), "{out}");
    assert!(!out.contains("# [arg"), "{out}");
}

#[test]
fn errors_are_precise() {
    assert_error(
        quote!(bogus = 1),
        quote!(
            fn f() {}
        ),
        "unknown `tool` option `bogus`",
    );
    assert_error(
        quote!(name = "a", name = "b"),
        quote!(
            fn f() {}
        ),
        "duplicate `tool` option `name`",
    );
    assert_error(
        quote!(name = ""),
        quote!(
            fn f() {}
        ),
        "the tool name must not be empty",
    );
    assert_error(
        quote!(timeout_ms = 0),
        quote!(
            fn f() {}
        ),
        "`timeout_ms` must be greater than 0",
    );
    assert_error(
        quote!(strict(true)),
        quote!(
            fn f() {}
        ),
        "expected `strict` or `strict = true|false`",
    );
    assert_error(
        quote!(),
        quote!(
            struct S;
        ),
        "can only be applied to a function",
    );
    assert_error(
        quote!(),
        quote!(
            fn f(&self) {}
        ),
        "does not support methods",
    );
    assert_error(
        quote!(),
        quote!(
            fn f<T>(t: T) {}
        ),
        "cannot be generic",
    );
    assert_error(
        quote!(),
        quote!(
            fn f((a, b): (i64, i64)) {}
        ),
        "must be plain identifiers",
    );
    assert_error(
        quote!(),
        quote!(
            fn f(s: &str) {}
        ),
        "must be owned types",
    );
    assert_error(
        quote!(),
        quote!(
            fn f(#[arg(desc = "x")] a: i64) {}
        ),
        "unknown `arg` option `desc`",
    );
    assert_error(
        quote!(),
        quote!(
            fn f(#[arg(description = "x")] cx: &ToolContext) {}
        ),
        "takes no `#[arg]` attribute",
    );
    assert_error(
        quote!(),
        quote!(
            fn f(cx: &mut ToolContext) {}
        ),
        "the context is shared",
    );
    assert_error(
        quote!(),
        quote!(
            fn Add() {}
        ),
        "clashes with this function",
    );
}

#[test]
fn errors_keep_the_function_without_arg_attributes() {
    let out = expand(
        quote!(bogus),
        quote!(
            fn f(#[arg(description = "x")] a: i64) {}
        ),
    );
    assert!(out.contains("fn f"), "{out}");
    assert!(!out.contains("# [arg"), "{out}");
}
