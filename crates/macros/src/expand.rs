//! The expansion of `#[tool]`: analysis of the function, then code generation.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, ExprLit, FnArg, GenericArgument, Ident, Item, ItemFn, Lit, LitStr, Meta, Pat,
    Path, PathArguments, ReturnType, Type,
};

use crate::args::{ToolOptions, take_arg_attrs};

/// Expands `#[tool(attr)] item`.
///
/// On error the output is the `compile_error!`s plus the function (with its `#[arg]` attributes
/// removed) or the untouched item, so that one mistake does not cascade into unrelated errors.
pub(crate) fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let options = ToolOptions::parse(attr);
    let mut func = match syn::parse2::<Item>(item.clone()) {
        Ok(Item::Fn(func)) => func,
        Ok(other) => {
            let error = syn::Error::new(
                item_keyword_span(&other),
                "`#[tool]` can only be applied to a function (`fn` or `async fn`)",
            );
            return with_errors(other.into_token_stream(), Some(error));
        }
        Err(error) => return with_errors(item, Some(error)),
    };
    let analysed = analyse(&mut func);
    let generated = match (options, analysed) {
        (Ok(options), Ok(tool_fn)) => generate(&func, &tool_fn, &options),
        (options, analysed) => {
            let mut errors = None;
            for error in [options.err(), analysed.err()].into_iter().flatten() {
                push_error(&mut errors, error);
            }
            return with_errors(func.into_token_stream(), errors);
        }
    };
    quote! {
        #func
        #generated
    }
}

fn with_errors(item: TokenStream, errors: Option<syn::Error>) -> TokenStream {
    let errors = errors.map(|e| e.to_compile_error());
    quote! {
        #errors
        #item
    }
}

fn push_error(errors: &mut Option<syn::Error>, error: syn::Error) {
    match errors {
        Some(errors) => errors.combine(error),
        None => *errors = Some(error),
    }
}

/// The span of the keyword that names an item's kind (`struct`, `impl`…), for "not a function".
fn item_keyword_span(item: &Item) -> Span {
    match item {
        Item::Struct(i) => i.struct_token.span,
        Item::Enum(i) => i.enum_token.span,
        Item::Union(i) => i.union_token.span,
        Item::Impl(i) => i.impl_token.span,
        Item::Trait(i) => i.trait_token.span,
        Item::Const(i) => i.const_token.span,
        Item::Static(i) => i.static_token.span,
        Item::Mod(i) => i.mod_token.span,
        Item::Type(i) => i.type_token.span,
        Item::Use(i) => i.use_token.span,
        other => other.span(),
    }
}

/// What the analysis of the function found.
struct ToolFn {
    /// The tool's default name: the function's name without `r#`.
    fn_name: String,
    /// The generated struct's name.
    struct_ident: Ident,
    /// The description from the doc comment (may be empty).
    doc: String,
    /// The fields of the arguments struct, in parameter order.
    fields: Vec<ArgField>,
    /// How each parameter is supplied, in parameter order.
    call_args: Vec<CallArg>,
    /// The shape of the return type.
    ret: Ret,
}

struct ArgField {
    ident: Ident,
    ty: Type,
    description: Option<LitStr>,
}

enum CallArg {
    /// A field of the arguments struct.
    Field(Ident),
    /// `&ToolContext`: the call's context.
    ContextRef,
    /// `ToolContext`: a clone of the call's context.
    ContextOwned,
}

enum Ret {
    /// No return type, or `()`.
    Unit,
    /// `Result<T, E>` (recognised by its last path segment), with `T` and `E` when they are
    /// spelled out (`io::Result<T>` names no `E`).
    Result {
        ok: Option<Box<Type>>,
        err: Option<Box<Type>>,
    },
    /// Any other `T: IntoToolOutput`.
    Plain(Box<Type>),
}

/// Checks the function, strips its `#[arg]` attributes and collects what generation needs.
/// Every problem found is reported, not only the first.
fn analyse(func: &mut ItemFn) -> syn::Result<ToolFn> {
    let mut errors = None;
    let sig = &mut func.sig;

    if !sig.generics.params.is_empty() {
        push_error(
            &mut errors,
            syn::Error::new_spanned(
                &sig.generics,
                "`#[tool]` functions cannot be generic: the input schema needs concrete types",
            ),
        );
    } else if let Some(where_clause) = &sig.generics.where_clause {
        push_error(
            &mut errors,
            syn::Error::new_spanned(
                where_clause,
                "`#[tool]` functions cannot have a where clause",
            ),
        );
    }
    if let Some(unsafety) = &sig.unsafety {
        push_error(
            &mut errors,
            syn::Error::new_spanned(unsafety, "`#[tool]` functions cannot be `unsafe`"),
        );
    }
    if let Some(variadic) = &sig.variadic {
        push_error(
            &mut errors,
            syn::Error::new_spanned(variadic, "`#[tool]` functions cannot be variadic"),
        );
    }

    let fn_name = sig.ident.unraw().to_string();
    let pascal = pascal_case(&fn_name);
    let struct_ident = match syn::parse_str::<Ident>(&pascal) {
        Ok(_) if pascal == fn_name => {
            push_error(
                &mut errors,
                syn::Error::new(
                    sig.ident.span(),
                    format!(
                        "`#[tool]` generates a struct named `{pascal}`, which clashes with this \
                         function; give the function a snake_case name"
                    ),
                ),
            );
            None
        }
        Ok(_) => Some(Ident::new(&pascal, sig.ident.span())),
        Err(_) => {
            push_error(
                &mut errors,
                syn::Error::new(
                    sig.ident.span(),
                    format!(
                        "`#[tool]` cannot name a struct after `{fn_name}` (PascalCase gives \
                         `{pascal}`); rename the function"
                    ),
                ),
            );
            None
        }
    };

    let mut fields = Vec::new();
    let mut call_args = Vec::new();
    for input in &mut sig.inputs {
        let arg = match input {
            FnArg::Receiver(receiver) => {
                push_error(
                    &mut errors,
                    syn::Error::new_spanned(
                        receiver,
                        "`#[tool]` does not support methods (`self` parameters); use a free \
                         function, or implement `Tool` by hand for a tool that carries state",
                    ),
                );
                continue;
            }
            FnArg::Typed(arg) => arg,
        };
        let options = match take_arg_attrs(&mut arg.attrs) {
            Ok(options) => options,
            Err(error) => {
                push_error(&mut errors, error);
                continue;
            }
        };

        if let Some(context) = context_param(&arg.ty) {
            match context {
                Ok(call_arg) => call_args.push(call_arg),
                Err(error) => push_error(&mut errors, error),
            }
            if let Some(attr) = &options.first_attr {
                push_error(
                    &mut errors,
                    syn::Error::new_spanned(
                        attr,
                        "the `ToolContext` parameter is not part of the input schema and takes \
                         no `#[arg]` attribute",
                    ),
                );
            }
            continue;
        }

        let ident = match &*arg.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
            other => {
                push_error(
                    &mut errors,
                    syn::Error::new_spanned(
                        other,
                        "`#[tool]` parameters must be plain identifiers (like `city: String`): \
                         each one becomes a named property of the input schema",
                    ),
                );
                continue;
            }
        };
        if let Err(error) = check_owned(&arg.ty) {
            push_error(&mut errors, error);
            continue;
        }
        call_args.push(CallArg::Field(ident.clone()));
        fields.push(ArgField {
            ident,
            ty: (*arg.ty).clone(),
            description: options.description,
        });
    }

    let ret = match &sig.output {
        ReturnType::Default => Ret::Unit,
        ReturnType::Type(_, ty) => match strip_groups(ty) {
            Type::Tuple(tuple) if tuple.elems.is_empty() => Ret::Unit,
            Type::Path(path) if path.qself.is_none() && last_segment_is(&path.path, "Result") => {
                let mut types = result_type_args(&path.path).into_iter().map(Box::new);
                Ret::Result {
                    ok: types.next(),
                    err: types.next(),
                }
            }
            _ => Ret::Plain(ty.clone()),
        },
    };

    match (errors, struct_ident) {
        (Some(errors), _) => Err(errors),
        (None, None) => unreachable!("a missing struct name is always reported"),
        (None, Some(struct_ident)) => Ok(ToolFn {
            fn_name,
            struct_ident,
            doc: doc_description(&func.attrs),
            fields,
            call_args,
            ret,
        }),
    }
}

/// `Some` when the type is the context (`&ToolContext` or `ToolContext`, by the last path
/// segment), with an error for forms that cannot be supplied (`&mut ToolContext`).
fn context_param(ty: &Type) -> Option<syn::Result<CallArg>> {
    match strip_groups(ty) {
        Type::Reference(reference) if is_context(&reference.elem) => {
            Some(match &reference.mutability {
                Some(mutability) => Err(syn::Error::new_spanned(
                    mutability,
                    "the context is shared: take it as `&ToolContext` or `ToolContext`",
                )),
                None => Ok(CallArg::ContextRef),
            })
        }
        other if is_context(other) => Some(Ok(CallArg::ContextOwned)),
        _ => None,
    }
}

fn is_context(ty: &Type) -> bool {
    match strip_groups(ty) {
        Type::Path(path) => path.qself.is_none() && last_segment_is(&path.path, "ToolContext"),
        _ => false,
    }
}

/// Arguments are deserialised from JSON into an owned struct: borrowed and `impl Trait`
/// parameters cannot be.
fn check_owned(ty: &Type) -> syn::Result<()> {
    match strip_groups(ty) {
        Type::Reference(reference) => Err(syn::Error::new_spanned(
            reference,
            "`#[tool]` parameters are deserialised from JSON and must be owned types: use \
             `String` instead of `&str`, `Vec<T>` instead of `&[T]`",
        )),
        Type::ImplTrait(impl_trait) => Err(syn::Error::new_spanned(
            impl_trait,
            "`#[tool]` parameters cannot be `impl Trait`: the input schema needs concrete types",
        )),
        _ => Ok(()),
    }
}

fn strip_groups(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Group(group) => ty = &group.elem,
            Type::Paren(paren) => ty = &paren.elem,
            _ => return ty,
        }
    }
}

fn last_segment_is(path: &Path, name: &str) -> bool {
    path.segments.last().is_some_and(|s| s.ident == name)
}

/// The type arguments of a path's last segment: `T` and `E` of `Result<T, E>`.
fn result_type_args(path: &Path) -> Vec<Type> {
    let Some(PathArguments::AngleBracketed(args)) = path.segments.last().map(|s| &s.arguments)
    else {
        return Vec::new();
    };
    args.args
        .iter()
        .filter_map(|arg| match arg {
            GenericArgument::Type(ty) => Some(ty.clone()),
            _ => None,
        })
        .collect()
}

/// Whether a type mentions `impl Trait`, which cannot appear in a qualified path.
fn mentions_impl(ty: &Type) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|tree| match tree {
            TokenTree::Ident(ident) => ident == "impl",
            TokenTree::Group(group) => walk(group.stream()),
            _ => false,
        })
    }
    walk(ty.to_token_stream())
}

/// `get_weather` → `GetWeather`: split on `_`, drop empty pieces, upper-case the first character
/// of each piece and keep the rest as written.
pub(crate) fn pascal_case(name: &str) -> String {
    name.split('_')
        .filter(|piece| !piece.is_empty())
        .flat_map(|piece| {
            let mut chars = piece.chars();
            let first = chars.next().into_iter().flat_map(char::to_uppercase);
            first.chain(chars)
        })
        .collect()
}

/// The doc comment's text: the `#[doc = "..."]` lines with one leading space removed, joined
/// with `\n` and trimmed. Non-literal doc attributes (`#[doc = include_str!(..)]`) are skipped.
pub(crate) fn doc_description(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        let Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        if !nv.path.is_ident("doc") {
            continue;
        }
        if let Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) = &nv.value
        {
            let text = text.value();
            for line in text.split('\n') {
                let line = line.strip_prefix(' ').unwrap_or(line);
                lines.push(line.trim_end().to_owned());
            }
        }
    }
    lines.join("\n").trim().to_owned()
}

/// Generates the struct and its `Tool` impl.
fn generate(func: &ItemFn, tool_fn: &ToolFn, options: &ToolOptions) -> TokenStream {
    let krate = match &options.krate {
        Some(path) => path.to_token_stream(),
        None => quote!(::toolsmith),
    };
    let krate_str = krate.to_string().replace(' ', "");
    let serde_path = LitStr::new(&format!("{krate_str}::__private::serde"), Span::call_site());
    let schemars_path = LitStr::new(
        &format!("{krate_str}::__private::schemars"),
        Span::call_site(),
    );

    let vis = &func.vis;
    let fn_ident = &func.sig.ident;
    let struct_ident = &tool_fn.struct_ident;
    let args_ident = format_ident!("__{}Args", struct_ident);

    let name = options
        .name
        .as_ref()
        .map_or_else(|| tool_fn.fn_name.clone(), LitStr::value);
    let description = options
        .description
        .as_ref()
        .map_or_else(|| tool_fn.doc.clone(), |d| d.value().trim().to_owned());

    let mut struct_doc = format!(
        "The `{name}` tool, generated by `#[tool]` from the function `{}`.",
        tool_fn.fn_name
    );
    if !description.is_empty() {
        struct_doc.push_str("\n\n");
        struct_doc.push_str(&description);
    }

    let fields = tool_fn.fields.iter().map(|field| {
        let ArgField {
            ident,
            ty,
            description,
        } = field;
        let description = description
            .as_ref()
            .map(|d| quote!(#[schemars(description = #d)]));
        quote! {
            #description
            #ident: #ty
        }
    });

    let mut spec = quote!(#krate::ToolSpec::for_type::<#args_ident>(#name));
    if !description.is_empty() {
        spec.extend(quote!(.with_description(#description)));
    }
    if options.strict == Some(true) {
        spec.extend(quote!(.with_strict(true)));
    }

    let meta_fn = options.has_meta().then(|| {
        let mut meta = quote!(#krate::ToolMeta::new());
        if let Some(side_effect) = options.side_effect {
            meta.extend(quote!(.side_effect(#side_effect)));
        }
        if let Some(idempotent) = options.idempotent {
            meta.extend(quote!(.idempotent(#idempotent)));
        }
        if let Some(millis) = options.timeout_ms {
            meta.extend(quote!(.timeout(::core::time::Duration::from_millis(#millis))));
        }
        if let Some(exclusive) = options.exclusive {
            let concurrency = if exclusive {
                quote!(Exclusive)
            } else {
                quote!(Shared)
            };
            meta.extend(quote!(.concurrency(#krate::Concurrency::#concurrency)));
        }
        quote! {
            fn meta(&self) -> &#krate::ToolMeta {
                static META: ::std::sync::OnceLock<#krate::ToolMeta> =
                    ::std::sync::OnceLock::new();
                META.get_or_init(|| #meta)
            }
        }
    });

    let call_args = tool_fn.call_args.iter().map(|arg| match arg {
        CallArg::Field(ident) => quote!(__args.#ident),
        CallArg::ContextRef => quote!(__cx),
        CallArg::ContextOwned => quote!(::core::clone::Clone::clone(__cx)),
    });
    let await_ = func.sig.asyncness.map(|_| quote!(.await));
    let call = quote!(#fn_ident(#(#call_args),*) #await_);

    // Qualified paths spelled with the user's own type tokens: a type that does not implement
    // the trait is reported at the type, not at the whole function.
    let into_output =
        |ty: Option<&Type>, value: TokenStream| match ty.filter(|ty| !mentions_impl(ty)) {
            Some(ty) => quote!(<#ty as #krate::IntoToolOutput>::into_tool_output(#value)),
            None => quote!(#krate::IntoToolOutput::into_tool_output(#value)),
        };
    let body = match &tool_fn.ret {
        Ret::Unit => quote! {
            #call;
            #krate::IntoToolOutput::into_tool_output(())
        },
        Ret::Plain(ty) => into_output(Some(ty), call),
        Ret::Result { ok, err } => {
            let ok = into_output(ok.as_deref(), quote!(__out));
            let err = match err.as_deref().filter(|ty| !mentions_impl(ty)) {
                Some(ty) => quote!(<#ty as ::core::convert::Into<#krate::ToolError>>::into(__err)),
                None => quote!(::core::convert::Into::<#krate::ToolError>::into(__err)),
            };
            quote! {
                match #call {
                    ::core::result::Result::Ok(__out) => #ok,
                    ::core::result::Result::Err(__err) => ::core::result::Result::Err(#err),
                }
            }
        }
    };

    quote! {
        #[doc = #struct_doc]
        #[derive(
            ::core::fmt::Debug,
            ::core::clone::Clone,
            ::core::marker::Copy,
            ::core::default::Default,
        )]
        #vis struct #struct_ident;

        const _: () = {
            #[doc(hidden)]
            #[derive(#krate::__private::serde::Deserialize, #krate::__private::schemars::JsonSchema)]
            #[serde(crate = #serde_path)]
            #[schemars(crate = #schemars_path)]
            struct #args_ident {
                #(#fields,)*
            }

            #[#krate::async_trait]
            impl #krate::Tool for #struct_ident {
                fn spec(&self) -> &#krate::ToolSpec {
                    static SPEC: ::std::sync::OnceLock<#krate::ToolSpec> =
                        ::std::sync::OnceLock::new();
                    SPEC.get_or_init(|| #spec)
                }

                #meta_fn

                async fn call(
                    &self,
                    __input: #krate::__private::serde_json::Value,
                    __cx: &#krate::ToolContext,
                ) -> ::core::result::Result<#krate::ToolOutput, #krate::ToolError> {
                    let __args: #args_ident = #krate::__private::serde_json::from_value(__input)
                        .map_err(|__e| {
                            #krate::ToolError::invalid_input(::std::format!("Invalid arguments: {__e}"))
                        })?;
                    #body
                }
            }
        };
    }
}
