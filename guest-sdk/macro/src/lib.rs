//! Macros of the Weir guest SDK: `#[map]`, `#[filter]`, `#[filter_map]` and `#[flat_map]`
//! turn one function into the crate's exported operator; `#[derive(States)]` registers an
//! operator's state fields. Use them through `weir-guest` (`#[weir_guest::map]`,
//! `#[derive(weir_guest::States)]`), which documents them.
#![deny(missing_docs)]

mod states;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::spanned::Spanned;
use syn::{DeriveInput, FnArg, ItemFn, LitStr, ReturnType, Type, parse_macro_input};

/// Implements `weir_guest::States`: registers every `KeyedState` and `ValueState` field under
/// its name; `#[state(name = "...")]` renames, `#[state]` registers a field of another type.
#[proc_macro_derive(States, attributes(state))]
pub fn derive_states(item: TokenStream) -> TokenStream {
    let input = parse_macro_input!(item as DeriveInput);
    states::derive(&input).unwrap_or_else(|e| e.to_compile_error()).into()
}

/// `fn(T) -> U`: emits `U` with the record's key (or `(K, U)` with `keyed`).
#[proc_macro_attribute]
pub fn map(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Map, attr, item)
}

/// `fn(&T) -> bool`: forwards the records that pass, unchanged.
#[proc_macro_attribute]
pub fn filter(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Filter, attr, item)
}

/// `fn(T) -> Option<U>`: emits `U` for each `Some` (or `(K, U)` with `keyed`).
#[proc_macro_attribute]
pub fn filter_map(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::FilterMap, attr, item)
}

/// `fn(T) -> impl IntoIterator<Item = U>`: emits every item (or `(K, U)` with `keyed`).
#[proc_macro_attribute]
pub fn flat_map(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::FlatMap, attr, item)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Map,
    Filter,
    FilterMap,
    FlatMap,
}

/// Options inside the attribute's parentheses.
#[derive(Default)]
struct Options {
    keyed: bool,
    name: Option<LitStr>,
}

fn expand(kind: Kind, attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("keyed") && kind != Kind::Filter {
            options.keyed = true;
            Ok(())
        } else if meta.path.is_ident("name") {
            options.name = Some(meta.value()?.parse()?);
            Ok(())
        } else if kind == Kind::Filter {
            Err(meta.error("expected `name = \"...\"`"))
        } else {
            Err(meta.error("expected `keyed` or `name = \"...\"`"))
        }
    });
    parse_macro_input!(attr with parser);
    let function = parse_macro_input!(item as ItemFn);
    match generate(kind, &options, &function) {
        Ok(tokens) => tokens.into(),
        Err(e) => {
            let error = e.to_compile_error();
            quote!(#function #error).into()
        }
    }
}

fn generate(kind: Kind, options: &Options, function: &ItemFn) -> syn::Result<TokenStream2> {
    let sig = &function.sig;
    if let Some(asyncness) = &sig.asyncness {
        return Err(syn::Error::new(asyncness.span(), "an operator function cannot be async"));
    }
    if !sig.generics.params.iter().all(|p| matches!(p, syn::GenericParam::Lifetime(_))) {
        return Err(syn::Error::new(
            sig.generics.span(),
            "an operator function cannot be generic over types",
        ));
    }
    let params: Vec<&Type> = sig
        .inputs
        .iter()
        .map(|arg| match arg {
            FnArg::Typed(pat) => Ok(&*pat.ty),
            FnArg::Receiver(r) => Err(syn::Error::new(r.span(), "an operator function cannot take `self`")),
        })
        .collect::<syn::Result<_>>()?;
    let value_type = match params.as_slice() {
        [value] | [value, _] => *value,
        _ => {
            return Err(syn::Error::new(
                sig.inputs.span(),
                "an operator function takes the record value, and optionally `&weir_guest::Record<'_>`",
            ));
        }
    };

    // A `&T` parameter borrows a value decoded as `T`; `&str` and `&[u8]` borrow the batch.
    let argument = match value_type {
        Type::Reference(r) if !borrows_batch(&r.elem) => quote!(&value),
        _ => quote!(value),
    };
    let record_argument = (params.len() == 2).then(|| quote!(, &record));
    let fallible = returns_result(&sig.output).then(|| quote!(?));
    let name = &sig.ident;
    let call = quote!(#name(#argument #record_argument) #fallible);

    let emit_one = |item: TokenStream2| {
        if options.keyed {
            quote!(::weir_guest::__private::emit_pair(out, &record, &#item))
        } else {
            quote!(::weir_guest::__private::emit_value(out, &record, &#item))
        }
    };
    let body = match kind {
        Kind::Map => emit_one(quote!(result)),
        Kind::Filter => quote! {
            if result {
                out.forward(&record);
            }
            ::core::result::Result::Ok(())
        },
        Kind::FilterMap => {
            let emit = emit_one(quote!(item));
            quote! {
                if let ::core::option::Option::Some(item) = result {
                    #emit?;
                }
                ::core::result::Result::Ok(())
            }
        }
        Kind::FlatMap => {
            let emit = emit_one(quote!(item));
            quote! {
                for item in result {
                    #emit?;
                }
                ::core::result::Result::Ok(())
            }
        }
    };

    let operator_name = match &options.name {
        Some(lit) => quote!(#lit),
        None => {
            let lit = LitStr::new(&name.to_string(), name.span());
            quote!(#lit)
        }
    };
    // The operator type takes the function's name: a braced struct lives in the type
    // namespace only, so it does not clash with the function, and a test can name it
    // (`Harness::<my_fn>::new()`).
    let vis = &function.vis;
    let doc = format!("The operator made of the function [`{name}`] (generated by `weir_guest`).");
    Ok(quote! {
        #function

        #[doc = #doc]
        #[allow(non_camel_case_types)]
        #[derive(::core::default::Default)]
        #vis struct #name {}

        impl ::weir_guest::States for #name {
            fn states<'__weir>(&'__weir mut self, _: &mut ::weir_guest::StateRegistry<'__weir>) {}
        }

        impl ::weir_guest::Operator for #name {
            #[inline]
            fn process(
                &mut self,
                record: ::weir_guest::Record<'_>,
                out: &mut ::weir_guest::Output,
            ) -> ::weir_guest::Result<()> {
                let value = record.value()?;
                let result = #call;
                #body
            }
        }

        ::weir_guest::export_operator!(#name, name = #operator_name);
    })
}

/// `str` and slices are decoded borrowing from the batch rather than owned.
fn borrows_batch(ty: &Type) -> bool {
    match ty {
        Type::Slice(_) => true,
        Type::Path(p) => p.qself.is_none() && p.path.is_ident("str"),
        Type::Paren(p) => borrows_batch(&p.elem),
        _ => false,
    }
}

/// True when the return type is written `Result<..>` (any path ending in `Result`).
fn returns_result(output: &ReturnType) -> bool {
    match output {
        ReturnType::Type(_, ty) => match &**ty {
            Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "Result"),
            _ => false,
        },
        ReturnType::Default => false,
    }
}
