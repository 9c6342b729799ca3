//! Pickle document → MessagePack batch.
//!
//! Reads what CPython's `pickle.dumps(obj, protocol=2..5)` writes for None, bool, int,
//! float, str, bytes, bytearray, list, tuple and dict, memoized or not (`Pickler.fast`).
//! Nothing is executed: the opcodes build a tree in an arena, which is then written as
//! MessagePack. The only callables understood are the ones CPython pickles bytes and
//! bytearray with below protocol 5 (`_codecs.encode(str, 'latin1')`, `bytes()`,
//! `bytearray()`, `bytearray(bytes)`), emulated, never looked up; every other global and
//! every other opcode is refused.
//!
//! Bounds: every opcode reads at least one byte and adds at most one arena object, stack
//! slot or memo slot, so those grow with the document's length; lengths are checked against
//! the remaining document before anything is read. Memo references may share or (through
//! mutation) cycle subtrees: the writer stops at `MAX_DEPTH` and at the output limit, and
//! writes at least one byte per object it visits, so a shared-subtree bomb costs no more
//! than the limit. The parse itself is held to a host-memory budget, twice the output limit
//! (at least 16 MiB):
//! its objects, stack, memo and container slots are counted as they grow (a document of
//! one-byte opcodes would otherwise take ~44 bytes of host memory per byte).

use super::super::bindings::{Batch, ChangeKind, StateEntry};
use super::msgpack::{Out, int_fits, valid_utf8};
use super::{DecodeError, MAX_DEPTH, kind};

/// The least host memory a pickle's parse may take, whatever the output limit: a small
/// limit must not refuse a document of many small values.
const MIN_PARSE_BUDGET: usize = 16 << 20;

/// A callable that CPython's pickles of bytes and bytearray name (protocols 2 to 4).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Callable {
    /// `_codecs.encode(str, 'latin1')`: the bytes of a protocol-2 `bytes`.
    Encode,
    /// `bytes()`: an empty protocol-2 `bytes`.
    Bytes,
    /// `bytearray()` or `bytearray(bytes)`.
    Bytearray,
}

/// A Python object in the arena; containers hold arena indices.
#[derive(Debug)]
enum Obj {
    None,
    Bool(bool),
    /// Within i64 ∪ u64 (checked when read).
    Int(i128),
    Float(f64),
    /// A range of the document holding valid UTF-8.
    Str(usize, usize),
    /// A range of the document.
    Bytes(usize, usize),
    /// Bytes made by `_codecs.encode`: an index into `Parser::owned`.
    OwnedBytes(u32),
    List(Vec<u32>),
    Tuple(Vec<u32>),
    /// Keys and values alternating, in insertion order.
    Dict(Vec<u32>),
    Callable(Callable),
}

/// Opcode names, for errors.
fn opcode_name(op: u8) -> &'static str {
    match op {
        b'c' => "GLOBAL",
        0x93 => "STACK_GLOBAL",
        b'R' => "REDUCE",
        b'b' => "BUILD",
        0x81 => "NEWOBJ",
        0x92 => "NEWOBJ_EX",
        b'i' => "INST",
        b'o' => "OBJ",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        0x82..=0x84 => "EXT",
        0x8f => "EMPTY_SET",
        0x90 => "ADDITEMS",
        0x91 => "FROZENSET",
        0x97 => "NEXT_BUFFER",
        0x98 => "READONLY_BUFFER",
        b'0' => "POP",
        b'1' => "POP_MARK",
        b'2' => "DUP",
        b'I' => "INT",
        b'L' => "LONG",
        b'F' => "FLOAT",
        b'S' => "STRING",
        b'T' => "BINSTRING",
        b'U' => "SHORT_BINSTRING",
        b'V' => "UNICODE",
        b'd' => "DICT",
        b'l' => "LIST",
        b'p' => "PUT",
        b'g' => "GET",
        _ => "unknown",
    }
}

/// An opcode that no plain value needs.
#[cold]
fn refused(op: u8) -> DecodeError {
    malformed(format!(
        "pickle opcode {op:#04x} ({}) is not allowed: only plain values (None, bool, int, float, str, bytes, \
         bytearray, list, tuple, dict) are",
        opcode_name(op)
    ))
}

fn malformed(what: impl Into<String>) -> DecodeError {
    DecodeError::Malformed(what.into())
}

struct Parser<'a> {
    doc: &'a [u8],
    pos: usize,
    arena: Vec<Obj>,
    stack: Vec<u32>,
    marks: Vec<usize>,
    memo: Vec<u32>,
    /// The bytes `_codecs.encode` made, and their total length.
    owned: Vec<Vec<u8>>,
    owned_len: usize,
    /// Item slots added to lists, tuples and dicts.
    items: usize,
    /// Opcodes read (the budget is checked every 256 of them).
    ops: usize,
    /// Host memory the parse may take.
    budget: usize,
}

impl<'a> Parser<'a> {
    fn take(&mut self, n: usize) -> Result<(usize, usize), DecodeError> {
        match self.pos.checked_add(n) {
            Some(end) if end <= self.doc.len() => {
                let start = self.pos;
                self.pos = end;
                Ok((start, end))
            }
            _ => Err(malformed(format!("the pickle is truncated at byte {}", self.pos))),
        }
    }

    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let (start, end) = self.take(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(&self.doc[start..end]);
        Ok(out)
    }

    fn len(&mut self, size: usize) -> Result<usize, DecodeError> {
        let n = match size {
            1 => u64::from(self.bytes::<1>()?[0]),
            4 => u64::from(u32::from_le_bytes(self.bytes()?)),
            _ => u64::from_le_bytes(self.bytes()?),
        };
        usize::try_from(n).map_err(|_| malformed(format!("the pickle is truncated at byte {}", self.pos)))
    }

    fn push(&mut self, obj: Obj) {
        self.stack.push(self.arena.len() as u32);
        self.arena.push(obj);
    }

    fn pop(&mut self) -> Result<u32, DecodeError> {
        if self.marks.last().is_some_and(|&m| m >= self.stack.len()) {
            return Err(malformed("a pickle opcode pops past a MARK"));
        }
        self.stack.pop().ok_or_else(|| malformed("a pickle opcode pops an empty stack"))
    }

    fn top(&self) -> Result<u32, DecodeError> {
        self.stack.last().copied().ok_or_else(|| malformed("a pickle opcode reads an empty stack"))
    }

    /// The items pushed since the last MARK, which is removed.
    fn pop_mark(&mut self) -> Result<Vec<u32>, DecodeError> {
        let mark =
            self.marks.pop().ok_or_else(|| malformed("a pickle opcode needs a MARK that is not there"))?;
        Ok(self.stack.split_off(mark))
    }

    fn str_range(&mut self, size: usize) -> Result<Obj, DecodeError> {
        let n = self.len(size)?;
        let (start, end) = self.take(n)?;
        if !valid_utf8(&self.doc[start..end]) {
            return Err(malformed("a pickled str is not valid UTF-8"));
        }
        Ok(Obj::Str(start, end))
    }

    fn bytes_range(&mut self, size: usize) -> Result<Obj, DecodeError> {
        let n = self.len(size)?;
        let (start, end) = self.take(n)?;
        Ok(Obj::Bytes(start, end))
    }

    fn long(&mut self, n: usize) -> Result<Obj, DecodeError> {
        let (start, end) = self.take(n)?;
        let bytes = &self.doc[start..end];
        let Some(&last) = bytes.last() else { return Ok(Obj::Int(0)) };
        let fill = if last & 0x80 != 0 { 0xff } else { 0 };
        // Sign-extension bytes beyond 16 carry nothing; anything else is out of range.
        let (low, high) = bytes.split_at(bytes.len().min(16));
        let mut buf = [fill; 16];
        buf[..low.len()].copy_from_slice(low);
        let v = i128::from_le_bytes(buf);
        if high.iter().any(|&b| b != fill) || (v < 0) != (fill == 0xff) || !int_fits(v) {
            return Err(malformed(
                "a pickled int does not fit 64 bits (MessagePack integers are i64 or u64)",
            ));
        }
        Ok(Obj::Int(v))
    }

    /// A global by name: only the callables CPython's pickles of bytes and bytearray use.
    fn global(&mut self, op: u8, module: &[u8], name: &[u8]) -> Result<(), DecodeError> {
        let callable = match (module, name) {
            (b"_codecs", b"encode") => Callable::Encode,
            (b"__builtin__" | b"builtins", b"bytes") => Callable::Bytes,
            (b"__builtin__" | b"builtins", b"bytearray") => Callable::Bytearray,
            _ => {
                return Err(malformed(format!(
                    "pickle opcode {} ({}.{}) is not allowed: only plain values (None, bool, int, float, \
                     str, bytes, bytearray, list, tuple, dict) are",
                    opcode_name(op),
                    String::from_utf8_lossy(module),
                    String::from_utf8_lossy(name)
                )));
            }
        };
        self.push(Obj::Callable(callable));
        Ok(())
    }

    fn line(&mut self) -> Result<&'a [u8], DecodeError> {
        let rest = &self.doc[self.pos..];
        let n = rest.iter().position(|&b| b == b'\n').ok_or_else(|| malformed("the pickle is truncated"))?;
        self.pos += n + 1;
        Ok(&rest[..n])
    }

    fn str_of(&self, idx: u32) -> Option<&'a [u8]> {
        match self.arena[idx as usize] {
            Obj::Str(start, end) => Some(&self.doc[start..end]),
            _ => None,
        }
    }

    /// REDUCE, for the allowed callables and the arguments CPython gives them.
    fn reduce(&mut self) -> Result<(), DecodeError> {
        let args = self.pop()?;
        let callable = self.pop()?;
        let not_allowed = || malformed("pickle opcode REDUCE is not allowed here: only plain values are");
        let Obj::Callable(callable) = self.arena[callable as usize] else { return Err(not_allowed()) };
        let Obj::Tuple(args) = &self.arena[args as usize] else { return Err(not_allowed()) };
        let obj = match (callable, args.as_slice()) {
            (Callable::Bytes | Callable::Bytearray, []) => Obj::Bytes(0, 0),
            (Callable::Bytearray, &[b]) => match self.arena[b as usize] {
                Obj::Bytes(start, end) => Obj::Bytes(start, end),
                Obj::OwnedBytes(bytes) => Obj::OwnedBytes(bytes),
                _ => return Err(not_allowed()),
            },
            (Callable::Encode, &[s, encoding]) => {
                let (Some(s), Some(b"latin1" | b"latin-1")) = (self.str_of(s), self.str_of(encoding)) else {
                    return Err(not_allowed());
                };
                let s = std::str::from_utf8(s).map_err(|_| not_allowed())?;
                // CPython encodes each bytes object once, from a str written for it, so
                // all of them together are shorter than the document; more means the same
                // str is encoded again and again (a memory bomb).
                if self.owned_len + s.len() > self.doc.len() {
                    return Err(malformed("the pickle builds bytes from the same str over and over"));
                }
                let bytes: Option<Vec<u8>> = s.chars().map(|c| u8::try_from(c).ok()).collect();
                let bytes = bytes.ok_or_else(not_allowed)?;
                self.owned_len += s.len();
                self.owned.push(bytes);
                Obj::OwnedBytes(self.owned.len() as u32 - 1)
            }
            _ => return Err(not_allowed()),
        };
        self.push(obj);
        Ok(())
    }

    fn container(&mut self, idx: u32) -> &mut Obj {
        &mut self.arena[idx as usize]
    }

    /// Runs the opcodes up to STOP; returns the object it returns.
    /// Host memory the parse holds now (counted, not measured: a lower bound).
    fn host_bytes(&self) -> usize {
        let slots = self.stack.len() + self.memo.len() + self.items;
        (self.arena.len() * size_of::<Obj>())
            .saturating_add(slots * 4)
            .saturating_add(self.marks.len() * 8)
            .saturating_add(self.owned_len)
    }

    fn run(&mut self) -> Result<u32, DecodeError> {
        loop {
            // Checked every 256 opcodes (counted, not by position: opcodes of two bytes from
            // an odd offset never land on a multiple of 256): each adds a few dozen bytes at
            // most, so the parse never passes the budget by more than a few KiB.
            self.ops += 1;
            if self.ops & 0xff == 0 && self.host_bytes() > self.budget {
                return Err(DecodeError::HostMemory(self.budget));
            }
            let op = self.bytes::<1>()?[0];
            match op {
                0x80 => self.protocol()?,
                0x95 => {
                    self.take(8)?;
                }
                b'(' => self.marks.push(self.stack.len()),
                b'.' => break,
                b'N' => self.push(Obj::None),
                0x88 => self.push(Obj::Bool(true)),
                0x89 => self.push(Obj::Bool(false)),
                b'J' => {
                    let v = i32::from_le_bytes(self.bytes()?);
                    self.push(Obj::Int(i128::from(v)));
                }
                b'K' => {
                    let v = self.bytes::<1>()?[0];
                    self.push(Obj::Int(i128::from(v)));
                }
                b'M' => {
                    let v = u16::from_le_bytes(self.bytes()?);
                    self.push(Obj::Int(i128::from(v)));
                }
                0x8a => {
                    let n = self.len(1)?;
                    let obj = self.long(n)?;
                    self.push(obj);
                }
                0x8b => {
                    let n = i32::from_le_bytes(self.bytes()?);
                    let n = usize::try_from(n).map_err(|_| malformed("LONG4 with a negative length"))?;
                    let obj = self.long(n)?;
                    self.push(obj);
                }
                b'G' => {
                    let v = f64::from_be_bytes(self.bytes()?);
                    self.push(Obj::Float(v));
                }
                0x8c | b'X' | 0x8d => {
                    let obj = self.str_range(match op {
                        0x8c => 1,
                        b'X' => 4,
                        _ => 8,
                    })?;
                    self.push(obj);
                }
                b'C' | b'B' | 0x8e | 0x96 => {
                    let obj = self.bytes_range(match op {
                        b'C' => 1,
                        b'B' => 4,
                        _ => 8,
                    })?;
                    self.push(obj);
                }
                b']' => self.push(Obj::List(Vec::new())),
                b')' => self.push(Obj::Tuple(Vec::new())),
                b'}' => self.push(Obj::Dict(Vec::new())),
                b'a' => self.append()?,
                b'e' => self.appends()?,
                b's' => self.setitem()?,
                b'u' => self.setitems()?,
                b't' => {
                    let items = self.pop_mark()?;
                    self.items += items.len();
                    self.push(Obj::Tuple(items));
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    let mut items = vec![0; n];
                    for slot in items.iter_mut().rev() {
                        *slot = self.pop()?;
                    }
                    self.items += n;
                    self.push(Obj::Tuple(items));
                }
                0x94 => {
                    let top = self.top()?;
                    self.memo.push(top);
                }
                b'q' | b'r' => self.put(op)?,
                b'h' | b'j' => {
                    let at = self.len(if op == b'h' { 1 } else { 4 })?;
                    let obj =
                        *self.memo.get(at).ok_or_else(|| malformed("a pickle memo reference to nothing"))?;
                    self.stack.push(obj);
                }
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.global(op, module, name)?;
                }
                0x93 => self.stack_global()?,
                b'R' => self.reduce()?,
                _ => return Err(refused(op)),
            }
        }
        self.result()
    }

    /// PROTO: the protocol version, 5 at most.
    fn protocol(&mut self) -> Result<(), DecodeError> {
        let version = self.bytes::<1>()?[0];
        if version > 5 {
            return Err(malformed(format!("pickle protocol {version} is not supported (2 to 5 are)")));
        }
        Ok(())
    }

    /// APPEND: one item onto the list on the top of the stack.
    #[inline(always)]
    fn append(&mut self) -> Result<(), DecodeError> {
        let item = self.pop()?;
        let list = self.top()?;
        match self.container(list) {
            Obj::List(items) => items.push(item),
            _ => return Err(malformed("pickle opcode APPEND on something that is not a list")),
        }
        self.items += 1;
        Ok(())
    }

    /// APPENDS: the items since the mark onto the list on the top of the stack.
    #[inline(always)]
    fn appends(&mut self) -> Result<(), DecodeError> {
        let items = self.pop_mark()?;
        let list = self.top()?;
        match self.container(list) {
            Obj::List(list) => list.extend(items.iter().copied()),
            _ => return Err(malformed("pickle opcode APPENDS on something that is not a list")),
        }
        self.items += items.len();
        Ok(())
    }

    /// SETITEM: one key and value into the dict on the top of the stack.
    #[inline(always)]
    fn setitem(&mut self) -> Result<(), DecodeError> {
        let value = self.pop()?;
        let key = self.pop()?;
        let dict = self.top()?;
        match self.container(dict) {
            Obj::Dict(pairs) => pairs.extend([key, value]),
            _ => return Err(malformed("pickle opcode SETITEM on something that is not a dict")),
        }
        self.items += 2;
        Ok(())
    }

    /// SETITEMS: the keys and values since the mark into the dict on the top of the stack.
    #[inline(always)]
    fn setitems(&mut self) -> Result<(), DecodeError> {
        let items = self.pop_mark()?;
        if items.len() % 2 != 0 {
            return Err(malformed("pickle opcode SETITEMS with an odd number of items"));
        }
        let dict = self.top()?;
        match self.container(dict) {
            Obj::Dict(pairs) => pairs.extend(items.iter().copied()),
            _ => return Err(malformed("pickle opcode SETITEMS on something that is not a dict")),
        }
        self.items += items.len();
        Ok(())
    }

    /// PUT and LONG_BINPUT (`q`, `r`): the top of the stack into the memo at the index
    /// read, which is at most the memo's length (pickle.dumps numbers them in order).
    #[inline(always)]
    fn put(&mut self, op: u8) -> Result<(), DecodeError> {
        let at = self.len(if op == b'q' { 1 } else { 4 })?;
        let top = self.top()?;
        match at.cmp(&self.memo.len()) {
            std::cmp::Ordering::Less => self.memo[at] = top,
            std::cmp::Ordering::Equal => self.memo.push(top),
            std::cmp::Ordering::Greater => {
                return Err(malformed("a pickle memo index skips ahead (not written by pickle.dumps)"));
            }
        }
        Ok(())
    }

    /// STACK_GLOBAL: a global named by the two strs on the top of the stack.
    fn stack_global(&mut self) -> Result<(), DecodeError> {
        let name = self.pop()?;
        let module = self.pop()?;
        let (module, name) = (self.str_of(module).unwrap_or(b"?"), self.str_of(name).unwrap_or(b"?"));
        self.global(0x93, module, name)
    }

    /// The object the pickle returns at STOP: the only one on the stack, with no mark open
    /// and nothing after STOP.
    fn result(&self) -> Result<u32, DecodeError> {
        if self.pos != self.doc.len() {
            return Err(malformed("bytes follow the pickle's STOP"));
        }
        match (self.stack.as_slice(), self.marks.is_empty()) {
            (&[result], true) => Ok(result),
            _ => Err(malformed("the pickle leaves more than one object (or an open MARK) at STOP")),
        }
    }

    fn items(&self, idx: u32) -> Option<&[u32]> {
        match &self.arena[idx as usize] {
            Obj::List(items) | Obj::Tuple(items) => Some(items),
            _ => None,
        }
    }

    /// The bytes of a `bytes` or `bytearray` object.
    fn bytes_of(&self, idx: u32) -> Option<&[u8]> {
        match self.arena[idx as usize] {
            Obj::Bytes(start, end) => Some(&self.doc[start..end]),
            Obj::OwnedBytes(bytes) => Some(self.owned[bytes as usize].as_slice()),
            _ => None,
        }
    }

    /// A non-negative int that fits `u32`.
    fn u32_of(&self, idx: u32) -> Option<u32> {
        match self.arena[idx as usize] {
            Obj::Int(v) => u32::try_from(v).ok(),
            _ => None,
        }
    }

    /// Writes the object at `idx`, which `depth` containers enclose.
    fn write<E>(&self, idx: u32, depth: usize, out: &mut Out<E>) -> Result<(), DecodeError> {
        match &self.arena[idx as usize] {
            Obj::None => out.nil(),
            &Obj::Bool(b) => out.bool(b),
            &Obj::Int(v) => out.int(v),
            &Obj::Float(v) => out.f64(v),
            &Obj::Str(start, end) => out.str(&self.doc[start..end]),
            &Obj::Bytes(start, end) => out.bin(&self.doc[start..end]),
            &Obj::OwnedBytes(bytes) => out.bin(&self.owned[bytes as usize]),
            Obj::List(items) | Obj::Tuple(items) => {
                nest(depth)?;
                out.array(items.len())?;
                items.iter().try_for_each(|&item| self.write(item, depth + 1, out))
            }
            Obj::Dict(pairs) => {
                nest(depth)?;
                out.map(pairs.len() / 2)?;
                pairs.iter().try_for_each(|&item| self.write(item, depth + 1, out))
            }
            Obj::Callable(_) => Err(malformed("a pickled callable is not a value")),
        }
    }
}

fn nest(depth: usize) -> Result<(), DecodeError> {
    if depth >= MAX_DEPTH {
        return Err(malformed(format!("a value is nested deeper than {MAX_DEPTH} (or is cyclic)")));
    }
    Ok(())
}

impl<'a> Parser<'a> {
    /// A parser of `doc` whose output may take `max` bytes.
    fn new(doc: &'a [u8], max: usize) -> Self {
        let budget = max.saturating_mul(2).max(MIN_PARSE_BUDGET);
        // Every object takes at least one byte, most take several.
        let objects = (doc.len() / 8).min(budget / 4 / size_of::<Obj>());
        Parser {
            doc,
            pos: 0,
            arena: Vec::with_capacity(objects),
            stack: Vec::new(),
            marks: Vec::new(),
            memo: Vec::new(),
            owned: Vec::new(),
            owned_len: 0,
            items: 0,
            ops: 0,
            budget,
        }
    }
}

pub(super) fn decode(doc: &[u8], max: usize) -> Result<Batch, DecodeError> {
    let mut p = Parser::new(doc, max);
    let result = p.run()?;
    let records = p.items(result).ok_or_else(|| malformed("the pickle is not a list of records"))?;
    let mut out: Out = Out::new(max, doc.len());
    for (i, &record) in records.iter().enumerate() {
        let shape =
            || malformed(format!("record {i} is not a (key: bytes, value, timestamp: int) tuple or list"));
        let &[key, value, timestamp] = p.items(record).ok_or_else(shape)? else { return Err(shape()) };
        let key = match p.arena[key as usize] {
            Obj::Bytes(start, end) => &doc[start..end],
            Obj::OwnedBytes(bytes) => p.owned[bytes as usize].as_slice(),
            _ => return Err(malformed(format!("record {i}'s key is not bytes"))),
        };
        let timestamp = match p.arena[timestamp as usize] {
            Obj::Int(t) => {
                i64::try_from(t).map_err(|_| malformed(format!("record {i}'s timestamp is beyond i64")))?
            }
            _ => return Err(malformed(format!("record {i}'s timestamp is not an int"))),
        };
        out.start_record(key)?;
        p.write(value, 0, &mut out)?;
        out.end_record(key.len(), timestamp)?;
    }
    Ok(out.finish())
}

/// A state document (`[(state, kind, items), ...]`, wit/encoded.wit) → the data and entries
/// of a state delta, in document order.
pub(super) fn decode_state(doc: &[u8], max: usize) -> Result<(Vec<u8>, Vec<StateEntry>), DecodeError> {
    let mut p = Parser::new(doc, max);
    let result = p.run()?;
    let sections = p.items(result).ok_or_else(|| malformed("the pickle is not a list of sections"))?;
    let mut out = Out::<StateEntry>::new(max, doc.len());
    for (i, &section) in sections.iter().enumerate() {
        let shape = || {
            malformed(format!(
                "section {i} is not a (state: int, kind: 0, 1 or 2, items: list) tuple or list"
            ))
        };
        let &[state, section_kind, items] = p.items(section).ok_or_else(shape)? else { return Err(shape()) };
        let state = p.u32_of(state).ok_or_else(shape)?;
        let section_kind = p.u32_of(section_kind).filter(|&k| k <= 2).ok_or_else(shape)? as u8;
        let change = if section_kind == kind::DELETE { ChangeKind::Delete } else { ChangeKind::Put };
        for (j, &item) in p.items(items).ok_or_else(shape)?.iter().enumerate() {
            let at = |what: &str| malformed(format!("section {i}, item {j}: {what}"));
            let (key, value) = if section_kind == kind::DELETE {
                (item, None)
            } else {
                match p.items(item) {
                    Some(&[key, value]) => (key, Some(value)),
                    _ => return Err(at("a put is not a (key, value) pair")),
                }
            };
            let key = p.bytes_of(key).ok_or_else(|| at("the key is not bytes"))?;
            out.start_record(key)?;
            match value {
                Some(value) if section_kind == kind::RAW => {
                    out.put(p.bytes_of(value).ok_or_else(|| at("a raw value is not bytes"))?)?
                }
                Some(value) => p.write(value, 0, &mut out)?,
                None => {}
            }
            out.end_entry(key.len(), |key_len, value_len| StateEntry {
                state,
                kind: change,
                key_len,
                value_len,
            })?;
        }
    }
    Ok(out.into_parts())
}
