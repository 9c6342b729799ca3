//! `#[derive(States)]`: registers a struct's state fields by name.

use proc_macro2::TokenStream as TokenStream2;
use quote::{ToTokens, quote};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, LitStr, Type};

/// The types registered without an attribute (the last segment of the field's type path).
const STATE_TYPES: [&str; 4] = ["KeyedState", "ValueState", "HostKeyedState", "HostMapState"];

/// One field to register.
struct StateField {
    /// `self.<member>`.
    member: syn::Member,
    name: LitStr,
}

pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new(
            input.ident.span(),
            "`States` can only be derived for a struct (its fields hold the states)",
        ));
    };
    let mut states: Vec<StateField> = Vec::new();
    for (index, field) in data.fields.iter().enumerate() {
        let mut marked = false;
        let mut name: Option<LitStr> = None;
        for attr in field.attrs.iter().filter(|a| a.path().is_ident("state")) {
            marked = true;
            if matches!(attr.meta, syn::Meta::Path(_)) {
                continue;
            }
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("name") {
                    name = Some(meta.value()?.parse()?);
                    Ok(())
                } else {
                    Err(meta.error("expected `name = \"...\"`"))
                }
            })?;
        }
        if !marked && !is_state_type(&field.ty) {
            continue;
        }
        let (member, name) = match (&field.ident, name) {
            (_, Some(name)) => {
                let member = field.ident.clone().map_or_else(
                    || syn::Member::Unnamed(syn::Index { index: index as u32, span: field.span() }),
                    syn::Member::Named,
                );
                (member, name)
            }
            (Some(ident), None) => {
                let text = ident.to_string();
                let text = text.strip_prefix("r#").unwrap_or(&text);
                (syn::Member::Named(ident.clone()), LitStr::new(text, ident.span()))
            }
            (None, None) => {
                return Err(syn::Error::new(
                    field.ty.span(),
                    "a state field of a tuple struct needs a name: `#[state(name = \"...\")]`",
                ));
            }
        };
        if name.value().is_empty() {
            return Err(syn::Error::new(name.span(), "a state name cannot be empty"));
        }
        if states.iter().any(|s| s.name.value() == name.value()) {
            return Err(syn::Error::new(
                name.span(),
                format!("the state name \"{}\" is registered twice", name.value()),
            ));
        }
        states.push(StateField { member, name });
    }
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let registrations = states.iter().map(|StateField { member, name }| {
        let member = member.to_token_stream();
        quote!(registry.register(#name, &mut self.#member);)
    });
    let unused = states.is_empty().then(|| quote!(let _ = registry;));
    Ok(quote! {
        impl #impl_generics ::weir_guest::States for #ident #ty_generics #where_clause {
            fn states<'__weir>(&'__weir mut self, registry: &mut ::weir_guest::StateRegistry<'__weir>) {
                #unused
                #(#registrations)*
            }
        }
    })
}

/// True for `KeyedState<..>` and `ValueState<..>`, by any path.
fn is_state_type(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => {
            p.qself.is_none()
                && p.path.segments.last().is_some_and(|s| STATE_TYPES.iter().any(|t| s.ident == t))
        }
        Type::Paren(p) => is_state_type(&p.elem),
        Type::Group(g) => is_state_type(&g.elem),
        _ => false,
    }
}
