//! A MessagePack deserializer over a byte slice: the guest SDK's fast path for decoding
//! keys, values and state (the host's native baselines use it too, so that they run the
//! same code as the guest).
//!
//! It implements exactly rmp_serde's data model (the same `visit_*` call for every marker,
//! the same enum, option, unit-struct and binary rules, the same depth limit) for everything
//! but extension types and 128-bit integers. Whatever it cannot or does not decode — an
//! extension, a type error, truncated input, a depth overrun — makes it give up, and
//! [`from_slice`] decodes the bytes again with `rmp_serde`, whose result (its value or its
//! error message) is then the answer. So the outcome is always rmp_serde's; this path only
//! makes the common case cheaper:
//!
//! - strings are checked with SIMD when the guest is built with `+simd128` (`simdutf8`),
//!   instead of `core::str::from_utf8`, which the prebuilt `std` runs four bytes at a time on
//!   wasm32;
//! - values a type skips (fields a struct does not declare, `IgnoredAny`) are stepped over
//!   without checking their strings: rmp_serde accepts an invalid string there as bytes, so
//!   skipping gives the same result without reading it;
//! - failing carries no message (nothing is formatted until rmp_serde runs).

#![deny(missing_docs)]

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Visitor};

/// Nesting depth at which rmp_serde stops (its default).
const MAX_DEPTH: u32 = 1024;
/// Strings at least this long are checked with `simdutf8`, shorter ones by `core`.
const SIMD_UTF8_FROM: usize = 32;
/// `deserialize_newtype_struct`'s name for rmp_serde's extension type.
const EXT_STRUCT_NAME: &str = "_ExtStruct";

/// Decodes `bytes` as `T` with the result `rmp_serde::from_slice` gives (trailing bytes
/// ignored), faster.
pub fn from_slice<'a, T: Deserialize<'a>>(
    bytes: &'a [u8],
) -> std::result::Result<T, rmp_serde::decode::Error> {
    let mut fast = Fast { input: bytes, pos: 0, depth: MAX_DEPTH, failed: false };
    match T::deserialize(&mut fast) {
        // A type may catch an error and go on (`serde_with::DefaultOnError`, say): the fast
        // path's own failures are remembered, so that such a type never sees a failure
        // rmp_serde would not have raised.
        Ok(value) if !fast.failed => Ok(value),
        _ => rmp_serde::from_slice(bytes),
    }
}

/// The fast path gave up: decode again with rmp_serde.
#[derive(Debug)]
struct GiveUp;

impl std::fmt::Display for GiveUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("fast MessagePack path gave up")
    }
}

impl std::error::Error for GiveUp {}

impl de::Error for GiveUp {
    #[cold]
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        GiveUp
    }
}

type Result<T> = std::result::Result<T, GiveUp>;

/// The string `bytes` hold, if they are UTF-8.
///
/// Short strings (field names, most values) are mostly ASCII: `is_ascii` is inlined and
/// compiled here (with SIMD where the guest has it), where `core::str::from_utf8` is a call
/// into the prebuilt `std` that costs more than the check itself on a few bytes.
#[inline]
fn utf8(bytes: &[u8]) -> Option<&str> {
    if bytes.len() >= SIMD_UTF8_FROM {
        simdutf8::basic::from_utf8(bytes).ok()
    } else if bytes.is_ascii() {
        #[allow(unsafe_code)]
        // SAFETY: ASCII bytes are valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

struct Fast<'de> {
    input: &'de [u8],
    pos: usize,
    /// Containers that may still be entered.
    depth: u32,
    /// The fast path itself failed (not the type it decodes): rmp_serde decides.
    failed: bool,
}

/// What a marker byte starts.
enum Kind {
    Nil,
    Bool(bool),
    PosFix(u8),
    NegFix(i8),
    /// An integer or float of this many bytes; the marker says which.
    Num(u8, usize),
    /// A string, binary, array or map whose length is in the next `n` bytes (0: in the marker).
    Str(usize),
    Bin(usize),
    Array(usize),
    Map(usize),
    /// Extension types and the reserved marker: left to rmp_serde.
    Other,
}

#[inline]
fn kind(marker: u8) -> Kind {
    match marker {
        0x00..=0x7f => Kind::PosFix(marker),
        0x80..=0x8f => Kind::Map(0),
        0x90..=0x9f => Kind::Array(0),
        0xa0..=0xbf => Kind::Str(0),
        0xc0 => Kind::Nil,
        0xc2 => Kind::Bool(false),
        0xc3 => Kind::Bool(true),
        0xc4 => Kind::Bin(1),
        0xc5 => Kind::Bin(2),
        0xc6 => Kind::Bin(4),
        0xca => Kind::Num(marker, 4),
        0xcb => Kind::Num(marker, 8),
        0xcc | 0xd0 => Kind::Num(marker, 1),
        0xcd | 0xd1 => Kind::Num(marker, 2),
        0xce | 0xd2 => Kind::Num(marker, 4),
        0xcf | 0xd3 => Kind::Num(marker, 8),
        0xd9 => Kind::Str(1),
        0xda => Kind::Str(2),
        0xdb => Kind::Str(4),
        0xdc => Kind::Array(2),
        0xdd => Kind::Array(4),
        0xde => Kind::Map(2),
        0xdf => Kind::Map(4),
        0xe0..=0xff => Kind::NegFix(marker as i8),
        _ => Kind::Other,
    }
}

impl<'de> Fast<'de> {
    /// Gives up: the input is one this path leaves to rmp_serde (or broken).
    #[cold]
    fn give_up<T>(&mut self) -> Result<T> {
        self.failed = true;
        Err(GiveUp)
    }

    #[inline]
    fn peek(&mut self) -> Result<u8> {
        match self.input.get(self.pos) {
            Some(byte) => Ok(*byte),
            None => self.give_up(),
        }
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'de [u8]> {
        let input: &'de [u8] = self.input;
        match self.pos.checked_add(n).and_then(|end| Some((end, input.get(self.pos..end)?))) {
            Some((end, bytes)) => {
                self.pos = end;
                Ok(bytes)
            }
            None => self.give_up(),
        }
    }

    #[inline]
    fn take_array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let bytes = self.take(N)?;
        let mut array = [0; N];
        array.copy_from_slice(bytes);
        Ok(array)
    }

    /// A length stored in `n` bytes after the marker, or in the marker's low bits (`n == 0`).
    #[inline]
    fn len(&mut self, marker: u8, n: usize) -> Result<usize> {
        Ok(match n {
            0 => usize::from(marker & if marker >= 0xa0 { 0x1f } else { 0x0f }),
            1 => usize::from(self.take_array::<1>()?[0]),
            2 => usize::from(u16::from_be_bytes(self.take_array()?)),
            _ => u32::from_be_bytes(self.take_array()?) as usize,
        })
    }

    /// An integer or float, as rmp_serde's `any_num` visits it.
    #[inline]
    fn number<V: Visitor<'de>>(&mut self, marker: u8, visitor: V) -> Result<V::Value> {
        match marker {
            0xca => visitor.visit_f32(f32::from_be_bytes(self.take_array()?)),
            0xcb => visitor.visit_f64(f64::from_be_bytes(self.take_array()?)),
            0xcc => visitor.visit_u8(self.take_array::<1>()?[0]),
            0xcd => visitor.visit_u16(u16::from_be_bytes(self.take_array()?)),
            0xce => visitor.visit_u32(u32::from_be_bytes(self.take_array()?)),
            0xcf => visitor.visit_u64(u64::from_be_bytes(self.take_array()?)),
            0xd0 => visitor.visit_i8(i8::from_be_bytes(self.take_array()?)),
            0xd1 => visitor.visit_i16(i16::from_be_bytes(self.take_array()?)),
            0xd2 => visitor.visit_i32(i32::from_be_bytes(self.take_array()?)),
            _ => visitor.visit_i64(i64::from_be_bytes(self.take_array()?)),
        }
    }

    /// What rmp_serde's `any_num` accepts: nil, booleans and numbers.
    #[inline]
    fn scalar<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        let marker = self.peek()?;
        self.pos += 1;
        match kind(marker) {
            Kind::Nil => visitor.visit_unit(),
            Kind::Bool(b) => visitor.visit_bool(b),
            Kind::PosFix(n) => visitor.visit_u8(n),
            Kind::NegFix(n) => visitor.visit_i8(n),
            Kind::Num(marker, _) => self.number(marker, visitor),
            _ => self.give_up(),
        }
    }

    /// rmp_serde's `any_inner`: binary is visited as bytes when `allow_bytes`, else as a
    /// sequence of `u8`.
    fn any<V: Visitor<'de>>(&mut self, visitor: V, allow_bytes: bool) -> Result<V::Value> {
        let marker = self.peek()?;
        self.pos += 1;
        match kind(marker) {
            Kind::Nil => visitor.visit_unit(),
            Kind::Bool(b) => visitor.visit_bool(b),
            Kind::PosFix(n) => visitor.visit_u8(n),
            Kind::NegFix(n) => visitor.visit_i8(n),
            Kind::Num(marker, _) => self.number(marker, visitor),
            Kind::Str(n) => {
                let len = self.len(marker, n)?;
                let bytes = self.take(len)?;
                match utf8(bytes) {
                    Some(s) => visitor.visit_borrowed_str(s),
                    // As rmp_serde: a string that is not UTF-8 may still be read as bytes.
                    None => visitor.visit_borrowed_bytes(bytes),
                }
            }
            Kind::Bin(n) => {
                let len = self.len(marker, n)?;
                let bytes = self.take(len)?;
                if allow_bytes {
                    visitor.visit_borrowed_bytes(bytes)
                } else {
                    visitor.visit_seq(de::value::SeqDeserializer::<_, GiveUp>::new(bytes.iter().copied()))
                }
            }
            Kind::Array(n) => {
                let len = self.len(marker, n)?;
                self.enter()?;
                let mut seq = Elements { de: self, left: len };
                let value = visitor.visit_seq(&mut seq)?;
                let left = seq.left;
                self.depth += 1;
                if left == 0 { Ok(value) } else { self.give_up() }
            }
            Kind::Map(n) => {
                let len = self.len(marker, n)?;
                self.enter()?;
                let mut map = Entries { de: self, left: len };
                let value = visitor.visit_map(&mut map)?;
                let left = map.left;
                self.depth += 1;
                if left == 0 { Ok(value) } else { self.give_up() }
            }
            Kind::Other => self.give_up(),
        }
    }

    #[inline]
    fn enter(&mut self) -> Result<()> {
        match self.depth.checked_sub(1).filter(|d| *d > 0) {
            Some(depth) => {
                self.depth = depth;
                Ok(())
            }
            None => self.give_up(),
        }
    }

    /// Steps over one value without looking into its strings or binaries.
    fn skip(&mut self) -> Result<()> {
        let marker = self.peek()?;
        self.pos += 1;
        match kind(marker) {
            Kind::Nil | Kind::Bool(_) | Kind::PosFix(_) | Kind::NegFix(_) => Ok(()),
            Kind::Num(_, n) => self.take(n).map(drop),
            Kind::Str(n) | Kind::Bin(n) => {
                let len = self.len(marker, n)?;
                self.take(len).map(drop)
            }
            Kind::Array(n) => {
                let len = self.len(marker, n)?;
                self.skip_items(len as u64)
            }
            Kind::Map(n) => {
                let len = self.len(marker, n)?;
                // At most 2^33 on wasm32's usize: counted in u64.
                self.skip_items(2 * len as u64)
            }
            Kind::Other => self.give_up(),
        }
    }

    /// Steps over the `items` values of a container.
    fn skip_items(&mut self, items: u64) -> Result<()> {
        self.enter()?;
        for _ in 0..items {
            self.skip()?;
        }
        self.depth += 1;
        Ok(())
    }
}

/// `deserialize_*` methods of the types rmp_serde reads with `any_num`.
macro_rules! scalars {
    ($($method:ident)*) => {$(
        #[inline]
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            self.scalar(visitor)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for &mut Fast<'de> {
    type Error = GiveUp;

    fn is_human_readable(&self) -> bool {
        false
    }

    #[inline]
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.any(visitor, true)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.peek()? == 0xc0 {
            self.pos += 1;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        let marker = self.peek()?;
        match kind(marker) {
            Kind::Map(n) => {
                self.pos += 1;
                // As rmp_serde: a map of one entry is {variant: content}; any other length fails.
                if self.len(marker, n)? != 1 {
                    return self.give_up();
                }
                visitor.visit_enum(Variant { de: self })
            }
            // Anything else is a unit variant named by the value itself.
            _ => visitor.visit_enum(UnitVariant { de: self }),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value> {
        if name == EXT_STRUCT_NAME {
            return self.give_up();
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value> {
        // As rmp_serde: a unit struct is nil or an empty array.
        match self.peek()? {
            0xc0 | 0x90 => {
                self.pos += 1;
                visitor.visit_unit()
            }
            _ => self.any(visitor, true),
        }
    }

    fn deserialize_i128<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
        self.give_up()
    }

    fn deserialize_u128<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
        self.give_up()
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.any(visitor, false)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        self.any(visitor, false)
    }

    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.any(visitor, false)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.any(visitor, false)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.skip()?;
        visitor.visit_unit()
    }

    scalars! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_f32
        deserialize_f64
    }

    serde::forward_to_deserialize_any! {
        bytes byte_buf unit map identifier str string char
    }
}

/// The elements of an array.
struct Elements<'a, 'de> {
    de: &'a mut Fast<'de>,
    left: usize,
}

impl<'de> de::SeqAccess<'de> for Elements<'_, 'de> {
    type Error = GiveUp;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.de).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// The entries of a map.
struct Entries<'a, 'de> {
    de: &'a mut Fast<'de>,
    left: usize,
}

impl<'de> de::MapAccess<'de> for Entries<'_, 'de> {
    type Error = GiveUp;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.de).map(Some)
    }

    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        seed.deserialize(&mut *self.de)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// An enum as a map of one entry: the variant, then its content.
struct Variant<'a, 'de> {
    de: &'a mut Fast<'de>,
}

impl<'de> de::EnumAccess<'de> for Variant<'_, 'de> {
    type Error = GiveUp;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self)> {
        Ok((seed.deserialize(&mut *self.de)?, self))
    }
}

impl<'de> de::VariantAccess<'de> for Variant<'_, 'de> {
    type Error = GiveUp;

    fn unit_variant(self) -> Result<()> {
        // As rmp_serde: the content of a unit variant in a map is nil.
        if self.de.peek()? != 0xc0 {
            return self.de.give_up();
        }
        self.de.pos += 1;
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        seed.deserialize(self.de)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        de::Deserializer::deserialize_tuple(self.de, len, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        de::Deserializer::deserialize_tuple(self.de, fields.len(), visitor)
    }
}

/// An enum given by its variant alone (a string or an integer): only unit variants.
struct UnitVariant<'a, 'de> {
    de: &'a mut Fast<'de>,
}

impl<'de> de::EnumAccess<'de> for UnitVariant<'_, 'de> {
    type Error = GiveUp;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self)> {
        Ok((seed.deserialize(&mut *self.de)?, self))
    }
}

impl<'de> de::VariantAccess<'de> for UnitVariant<'_, 'de> {
    type Error = GiveUp;

    fn unit_variant(self) -> Result<()> {
        Ok(())
    }

    // rmp_serde fails these with a type error (a unit variant where content was expected):
    // a failure of the value, but the fast path leaves its message to rmp_serde.
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _seed: T) -> Result<T::Value> {
        self.de.give_up()
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> Result<V::Value> {
        self.de.give_up()
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value> {
        self.de.give_up()
    }
}

#[cfg(test)]
mod tests;
