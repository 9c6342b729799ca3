//! A MessagePack value as `rmpv::Value`'s `Display` shows it (`nil`, `"text"`, `[1, 2]`,
//! `{"a": 1}`), written in one pass with an explicit stack instead of a value tree and a
//! recursive `Display`: for error messages and for map keys that are not strings.

use std::fmt::Write as _;

use rmp::Marker;
use rmp::decode::RmpRead as _;

/// An open container: values left, values written, and whether it is a map.
struct Open {
    left: u64,
    written: u64,
    map: bool,
}

/// `bytes` (one well-formed MessagePack value, checked by [`super::skip`]) as `rmpv` shows
/// it, cut after `max` bytes of text (then ending with `…`). `None` if the bytes are not
/// well formed after all.
pub(super) fn shown(bytes: &[u8], max: usize) -> Option<String> {
    let mut rd = bytes;
    let mut out = String::new();
    let mut open: Vec<Open> = Vec::new();
    let mut started = false;
    loop {
        // Close what is complete, then the separator before the next value.
        while let Some(top) = open.last_mut().filter(|o| o.left == 0) {
            out.push(if top.map { '}' } else { ']' });
            open.pop();
        }
        match open.last_mut() {
            None if started => return Some(cut(out, max)),
            None => started = true,
            Some(top) => {
                if top.written > 0 {
                    out.push_str(if top.map && top.written % 2 == 1 { ": " } else { ", " });
                }
                top.left -= 1;
                top.written += 1;
            }
        }
        if out.len() > max {
            return Some(cut(out, max));
        }
        let marker = rmp::decode::read_marker(&mut rd).ok()?;
        let written = match marker {
            Marker::Null | Marker::Reserved => write!(out, "nil"),
            Marker::True => write!(out, "true"),
            Marker::False => write!(out, "false"),
            Marker::FixPos(n) => write!(out, "{n}"),
            Marker::FixNeg(n) => write!(out, "{n}"),
            Marker::U8 => write!(out, "{}", rd.read_data_u8().ok()?),
            Marker::U16 => write!(out, "{}", rd.read_data_u16().ok()?),
            Marker::U32 => write!(out, "{}", rd.read_data_u32().ok()?),
            Marker::U64 => write!(out, "{}", rd.read_data_u64().ok()?),
            // rmpv keeps a non-negative signed integer as unsigned: the same digits.
            Marker::I8 => write!(out, "{}", rd.read_data_i8().ok()?),
            Marker::I16 => write!(out, "{}", rd.read_data_i16().ok()?),
            Marker::I32 => write!(out, "{}", rd.read_data_i32().ok()?),
            Marker::I64 => write!(out, "{}", rd.read_data_i64().ok()?),
            Marker::F32 => write!(out, "{}", rd.read_data_f32().ok()?),
            Marker::F64 => write!(out, "{}", rd.read_data_f64().ok()?),
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                let bytes = payload(&mut rd, marker)?;
                match std::str::from_utf8(bytes) {
                    Ok(s) => write!(out, "{s:?}"),
                    Err(_) => write!(out, "{bytes:?}"),
                }
            }
            Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => write!(out, "{:?}", payload(&mut rd, marker)?),
            Marker::FixExt1
            | Marker::FixExt2
            | Marker::FixExt4
            | Marker::FixExt8
            | Marker::FixExt16
            | Marker::Ext8
            | Marker::Ext16
            | Marker::Ext32 => {
                let (kind, data) = super::ext_data(&mut rd, marker)?;
                write!(out, "[{kind}, {data:?}]")
            }
            Marker::FixArray(n) => container(&mut out, &mut open, u64::from(n), false),
            Marker::Array16 => container(&mut out, &mut open, u64::from(rd.read_data_u16().ok()?), false),
            Marker::Array32 => container(&mut out, &mut open, u64::from(rd.read_data_u32().ok()?), false),
            Marker::FixMap(n) => container(&mut out, &mut open, 2 * u64::from(n), true),
            Marker::Map16 => container(&mut out, &mut open, 2 * u64::from(rd.read_data_u16().ok()?), true),
            Marker::Map32 => container(&mut out, &mut open, 2 * u64::from(rd.read_data_u32().ok()?), true),
        };
        written.ok()?;
    }
}

/// `out` cut after `max` bytes (at a character's end), with `…` if anything was cut.
fn cut(mut out: String, max: usize) -> String {
    if out.len() > max {
        let mut end = max;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
        out.push('…');
    }
    out
}

fn container(out: &mut String, open: &mut Vec<Open>, left: u64, map: bool) -> std::fmt::Result {
    out.push(if map { '{' } else { '[' });
    open.push(Open { left, written: 0, map });
    Ok(())
}

/// The payload of a string or binary.
fn payload<'a>(rd: &mut &'a [u8], marker: Marker) -> Option<&'a [u8]> {
    let len = match marker {
        Marker::FixStr(n) => usize::from(n),
        Marker::Str8 | Marker::Bin8 => usize::from(rd.read_data_u8().ok()?),
        Marker::Str16 | Marker::Bin16 => usize::from(rd.read_data_u16().ok()?),
        _ => rd.read_data_u32().ok()? as usize,
    };
    let bytes = rd.get(..len)?;
    *rd = &rd[len..];
    Some(bytes)
}
