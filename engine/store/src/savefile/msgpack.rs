//! [`MsgReader`]: a bounds-checked MessagePack reader over one frame's payload, for the
//! frames of a savepoint file (their payloads are MessagePack maps).

use rmp::Marker;

use super::frame_error::FrameError;

/// `what` must be of type `expected` but is what `found` introduces.
fn wrong_type(what: &str, expected: &'static str, found: Marker) -> FrameError {
    FrameError::WrongType { what: what.to_owned(), expected, found: marker_name(found) }
}

/// What a MessagePack marker introduces, for error messages.
pub(super) fn marker_name(marker: Marker) -> &'static str {
    match marker {
        Marker::FixPos(_)
        | Marker::FixNeg(_)
        | Marker::U8
        | Marker::U16
        | Marker::U32
        | Marker::U64
        | Marker::I8
        | Marker::I16
        | Marker::I32
        | Marker::I64 => "an integer",
        Marker::F32 | Marker::F64 => "a float",
        Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => "a string",
        Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => "binary data",
        Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => "an array",
        Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => "a map",
        Marker::Null => "nil",
        Marker::True | Marker::False => "a boolean",
        Marker::FixExt1
        | Marker::FixExt2
        | Marker::FixExt4
        | Marker::FixExt8
        | Marker::FixExt16
        | Marker::Ext8
        | Marker::Ext16
        | Marker::Ext32 => "an extension",
        Marker::Reserved => "the reserved byte 0xc1",
    }
}

/// A bounds-checked MessagePack reader over one payload; values borrow from it.
pub(super) struct MsgReader<'a> {
    pub(super) rest: &'a [u8],
}

impl<'a> MsgReader<'a> {
    pub(super) fn new(payload: &'a [u8]) -> Self {
        MsgReader { rest: payload }
    }

    fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], FrameError> {
        if len > self.rest.len() {
            return Err(FrameError::Short { what: what.to_owned(), len, left: self.rest.len() });
        }
        let (taken, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(taken)
    }

    fn be(&mut self, len: usize, what: &str) -> Result<u64, FrameError> {
        Ok(self.take(len, what)?.iter().fold(0, |value, byte| (value << 8) | u64::from(*byte)))
    }

    fn marker(&mut self, what: &str) -> Result<Marker, FrameError> {
        Ok(Marker::from_u8(self.take(1, what)?[0]))
    }

    pub(super) fn map_len(&mut self, what: &str) -> Result<u64, FrameError> {
        match self.marker(what)? {
            Marker::FixMap(len) => Ok(u64::from(len)),
            Marker::Map16 => self.be(2, what),
            Marker::Map32 => self.be(4, what),
            other => Err(wrong_type(what, "a map", other)),
        }
    }

    pub(super) fn array_len(&mut self, what: &str) -> Result<u64, FrameError> {
        match self.marker(what)? {
            Marker::FixArray(len) => Ok(u64::from(len)),
            Marker::Array16 => self.be(2, what),
            Marker::Array32 => self.be(4, what),
            other => Err(wrong_type(what, "an array", other)),
        }
    }

    pub(super) fn str(&mut self, what: &str) -> Result<&'a str, FrameError> {
        let len = match self.marker(what)? {
            Marker::FixStr(len) => u64::from(len),
            Marker::Str8 => self.be(1, what)?,
            Marker::Str16 => self.be(2, what)?,
            Marker::Str32 => self.be(4, what)?,
            other => return Err(wrong_type(what, "a string", other)),
        };
        let bytes = self.take(len as usize, what)?;
        std::str::from_utf8(bytes).map_err(|_| FrameError::NotUtf8 { what: what.to_owned() })
    }

    pub(super) fn bin(&mut self, what: &str) -> Result<&'a [u8], FrameError> {
        let len = match self.marker(what)? {
            Marker::Bin8 => self.be(1, what)?,
            Marker::Bin16 => self.be(2, what)?,
            Marker::Bin32 => self.be(4, what)?,
            other => return Err(wrong_type(what, "binary data", other)),
        };
        self.take(len as usize, what)
    }

    /// An unsigned integer in any MessagePack integer encoding (signed ones must not be
    /// negative).
    pub(super) fn uint(&mut self, what: &str) -> Result<u64, FrameError> {
        let negative = || FrameError::Negative { what: what.to_owned() };
        match self.marker(what)? {
            Marker::FixPos(value) => Ok(u64::from(value)),
            Marker::U8 => self.be(1, what),
            Marker::U16 => self.be(2, what),
            Marker::U32 => self.be(4, what),
            Marker::U64 => self.be(8, what),
            Marker::I8 => u64::try_from(self.take(1, what)?[0] as i8).map_err(|_| negative()),
            Marker::I16 => u64::try_from(self.be(2, what)? as u16 as i16).map_err(|_| negative()),
            Marker::I32 => u64::try_from(self.be(4, what)? as u32 as i32).map_err(|_| negative()),
            Marker::I64 => u64::try_from(self.be(8, what)? as i64).map_err(|_| negative()),
            Marker::FixNeg(_) => Err(negative()),
            other => Err(wrong_type(what, "an unsigned integer", other)),
        }
    }

    pub(super) fn u32(&mut self, what: &str) -> Result<u32, FrameError> {
        let value = self.uint(what)?;
        u32::try_from(value).map_err(|_| FrameError::Over32Bits { what: what.to_owned(), value })
    }

    /// Reads a map with exactly the fields `names` (any order), handing each field's name and
    /// the reader positioned at its value to `field`.
    pub(super) fn fields(
        &mut self,
        what: &str,
        names: &[&str],
        mut field: impl FnMut(&str, &mut Self) -> Result<(), FrameError>,
    ) -> Result<(), FrameError> {
        let len = self.map_len(what)?;
        let mut seen = vec![false; names.len()];
        for _ in 0..len {
            let name = self.str(&format!("a key of {what}"))?;
            let index = names
                .iter()
                .position(|known| *known == name)
                .ok_or_else(|| FrameError::UnknownField { what: what.to_owned(), name: name.to_owned() })?;
            if std::mem::replace(&mut seen[index], true) {
                return Err(FrameError::DuplicateField { what: what.to_owned(), name: name.to_owned() });
            }
            field(name, self)?;
        }
        match seen.iter().position(|seen| !seen) {
            Some(missing) => {
                Err(FrameError::MissingField { what: what.to_owned(), name: names[missing].to_owned() })
            }
            None => Ok(()),
        }
    }

    pub(super) fn finish(&self, what: &str) -> Result<(), FrameError> {
        match self.rest.len() {
            0 => Ok(()),
            extra => Err(FrameError::TrailingBytes { extra: extra as u64, what: what.to_owned() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_integers_are_accepted_when_not_negative() {
        for (bytes, expected) in [
            (&[0xd0, 5][..], Ok(5)),
            (&[0xd1, 0x01, 0x00], Ok(256)),
            (&[0xd2, 0, 0, 0, 9], Ok(9)),
            (&[0xd3, 0, 0, 0, 0, 0, 0, 0, 1], Ok(1)),
            (&[0xd0, 0xff], Err("`n` must not be negative")),
            (&[0xff], Err("`n` must not be negative")),
            (&[0xcb, 0, 0, 0, 0, 0, 0, 0, 0], Err("`n` must be an unsigned integer, not a float")),
        ] {
            assert_eq!(
                MsgReader::new(bytes).uint("`n`").map_err(|e| e.to_string()),
                expected.map_err(str::to_owned),
                "{bytes:?}"
            );
        }
    }
}
