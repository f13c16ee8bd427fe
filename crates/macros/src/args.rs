//! Parsing of the `#[tool(...)]` options and of the `#[arg(...)]` parameter attributes.

use proc_macro2::TokenStream;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Attribute, LitBool, LitInt, LitStr, Path, Token};

/// The options `#[tool]` accepts, as listed in error messages.
const TOOL_OPTIONS: &str = "`name`, `description`, `crate`, `side_effect`, `idempotent`, \
                            `timeout_ms`, `exclusive`, `strict`";

/// The options of one `#[tool(...)]` attribute.
#[derive(Default)]
pub(crate) struct ToolOptions {
    /// `name = "..."`: the tool's name instead of the function's.
    pub(crate) name: Option<LitStr>,
    /// `description = "..."`: the description instead of the doc comment.
    pub(crate) description: Option<LitStr>,
    /// `crate = path`: where the toolsmith items live (default `::toolsmith`).
    pub(crate) krate: Option<Path>,
    /// `side_effect` / `side_effect = bool`.
    pub(crate) side_effect: Option<bool>,
    /// `idempotent` / `idempotent = bool`.
    pub(crate) idempotent: Option<bool>,
    /// `timeout_ms = N`.
    pub(crate) timeout_ms: Option<u64>,
    /// `exclusive` / `exclusive = bool`: `Concurrency::Exclusive`.
    pub(crate) exclusive: Option<bool>,
    /// `strict` / `strict = bool`: the spec's strict flag.
    pub(crate) strict: Option<bool>,
}

impl ToolOptions {
    /// Parses the tokens inside `#[tool(...)]`.
    pub(crate) fn parse(attr: TokenStream) -> syn::Result<Self> {
        let mut options = ToolOptions::default();
        let parser = syn::meta::parser(|meta| options.parse_one(&meta));
        parser.parse2(attr)?;
        Ok(options)
    }

    /// Whether any option that lands in `ToolMeta` was given.
    pub(crate) fn has_meta(&self) -> bool {
        self.side_effect.is_some()
            || self.idempotent.is_some()
            || self.timeout_ms.is_some()
            || self.exclusive.is_some()
    }

    fn parse_one(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = match meta.path.get_ident() {
            Some(ident) => ident.to_string(),
            None => return Err(unknown_option(meta)),
        };
        match key.as_str() {
            "name" => {
                ensure_unset(meta, &self.name, &key)?;
                let name: LitStr = meta.value()?.parse()?;
                if name.value().trim().is_empty() {
                    return Err(syn::Error::new(
                        name.span(),
                        "the tool name must not be empty",
                    ));
                }
                self.name = Some(name);
            }
            "description" => {
                ensure_unset(meta, &self.description, &key)?;
                self.description = Some(meta.value()?.parse()?);
            }
            "crate" => {
                ensure_unset(meta, &self.krate, &key)?;
                let value = meta.value()?;
                // Both `crate = some::path` and serde's style `crate = "some::path"`.
                let path = if value.peek(LitStr) {
                    value.parse::<LitStr>()?.parse_with(Path::parse_mod_style)?
                } else {
                    Path::parse_mod_style(value)?
                };
                self.krate = Some(path);
            }
            "side_effect" => set_flag(meta, &mut self.side_effect, &key)?,
            "idempotent" => set_flag(meta, &mut self.idempotent, &key)?,
            "exclusive" => set_flag(meta, &mut self.exclusive, &key)?,
            "strict" => set_flag(meta, &mut self.strict, &key)?,
            "timeout_ms" => {
                ensure_unset(meta, &self.timeout_ms, &key)?;
                let lit: LitInt = meta.value()?.parse()?;
                let millis: u64 = lit.base10_parse()?;
                if millis == 0 {
                    return Err(syn::Error::new(
                        lit.span(),
                        "`timeout_ms` must be greater than 0",
                    ));
                }
                self.timeout_ms = Some(millis);
            }
            _ => return Err(unknown_option(meta)),
        }
        Ok(())
    }
}

fn unknown_option(meta: &ParseNestedMeta<'_>) -> syn::Error {
    let path = &meta.path;
    let shown = quote::quote!(#path).to_string().replace(' ', "");
    meta.error(format!(
        "unknown `tool` option `{shown}`; expected one of {TOOL_OPTIONS}"
    ))
}

fn ensure_unset<T>(meta: &ParseNestedMeta<'_>, slot: &Option<T>, key: &str) -> syn::Result<()> {
    match slot {
        Some(_) => Err(meta.error(format!("duplicate `tool` option `{key}`"))),
        None => Ok(()),
    }
}

/// A boolean option: `key` alone means `true`, or `key = true|false`.
fn set_flag(meta: &ParseNestedMeta<'_>, slot: &mut Option<bool>, key: &str) -> syn::Result<()> {
    ensure_unset(meta, slot, key)?;
    let value = if meta.input.peek(Token![=]) {
        meta.value()?.parse::<LitBool>()?.value
    } else if meta.input.is_empty() || meta.input.peek(Token![,]) {
        true
    } else {
        return Err(meta.error(format!("expected `{key}` or `{key} = true|false`")));
    };
    *slot = Some(value);
    Ok(())
}

/// What `#[arg(...)]` attributes say about one parameter.
#[derive(Default)]
pub(crate) struct ArgOptions {
    /// `description = "..."`: the parameter's description in the input schema.
    pub(crate) description: Option<LitStr>,
    /// The first `#[arg]` attribute, for errors about parameters that take none.
    pub(crate) first_attr: Option<Attribute>,
}

/// Removes every `#[arg(...)]` attribute from `attrs` and parses them.
pub(crate) fn take_arg_attrs(attrs: &mut Vec<Attribute>) -> syn::Result<ArgOptions> {
    let mut options = ArgOptions::default();
    let mut errors: Option<syn::Error> = None;
    let mut kept = Vec::with_capacity(attrs.len());
    for attr in attrs.drain(..) {
        if !attr.path().is_ident("arg") {
            kept.push(attr);
            continue;
        }
        let parsed = attr.meta.require_list().and_then(|list| {
            list.parse_nested_meta(|meta| {
                if meta.path.is_ident("description") {
                    if options.description.is_some() {
                        return Err(meta.error("duplicate `arg` option `description`"));
                    }
                    options.description = Some(meta.value()?.parse()?);
                    Ok(())
                } else {
                    let path = &meta.path;
                    let shown = quote::quote!(#path).to_string().replace(' ', "");
                    Err(meta.error(format!(
                        "unknown `arg` option `{shown}`; expected `description`"
                    )))
                }
            })
        });
        if let Err(error) = parsed {
            match &mut errors {
                Some(errors) => errors.combine(error),
                None => errors = Some(error),
            }
        }
        options.first_attr.get_or_insert(attr);
    }
    *attrs = kept;
    match errors {
        Some(errors) => Err(errors),
        None => Ok(options),
    }
}
