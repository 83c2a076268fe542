//! The hot path of `JsonRoom::apply`: an upstream batch parsed in one pass over its
//! bytes, straight into the room's ops.
//!
//! The parser knows the room. A table name becomes the room's own `Arc<str>`, and once
//! an op's `table` is read, its width and primary-key columns are known. The core needs
//! only the key of a `remove` row or an edit's `old` row (the old image comes from the
//! store, see `Room::upstream_key`), so when `table` (and, for a remove, `op`) came
//! first, their other cells are checked but not kept: they stay `null` and their text is
//! never copied.
//!
//! This path only ever says yes. Whatever it does not take exactly as the general
//! (serde) parser would, it gives up on (`None`): a wrong width, an unknown table or
//! kind, a fingerprint that does not match, a duplicate or missing field, a number that
//! is not a plain safe integer where one is needed, a `\u` escape of a surrogate, an op
//! given as an array, nesting deeper than [`MAX_DEPTH`], any syntax error. Then
//! `JsonRoom::apply` parses the text again the general way, which names the error,
//! poisons the store, or accepts, exactly as before. So the two parsers never disagree
//! on what a text means: this one only takes texts whose meaning is plain.

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::json::write::plain_run;
use crate::room::{ApplyStatus, Room, UpstreamBatch};
use crate::serve::NetOp;
use crate::value::row::MAX_ROW_CELLS;
use crate::value::{CellRef, Cells, Row, Value};

/// How deep an ignored field's value may nest before the parser gives up.
const MAX_DEPTH: usize = 64;

/// Parses `text` as a batch for `room`, if it takes the plain shape (see the module
/// docs). The fingerprint has been matched: `normalized_fp` is left empty.
pub(crate) fn parse_batch_for(text: &str, room: &Room) -> Option<UpstreamBatch> {
    let mut p = Parser {
        text,
        i: 0,
        last_table: None,
    };
    let batch = p.batch(room)?;
    p.ws();
    (p.i == text.len()).then_some(batch)
}

/// Applies `text` as a seq-0 snapshot op by op while it is parsed, so the ops are never
/// all in memory at once next to the rows they become. It applies only when the room
/// awaits its snapshot and the batch names its `epoch`, `seq` 0 and the matching
/// `normalizedFp` before its `ops`. Anything else — another shape, an op the batch path
/// would refuse, a syntax error anywhere — gives up (`None`) having applied nothing:
/// what was applied is discarded and the caller applies the text the ordinary way,
/// which says what is wrong (or poisons) exactly as before.
pub(crate) fn stream_snapshot(text: &str, room: &mut Room) -> Option<ApplyStatus> {
    if !room.awaits_snapshot() {
        return None;
    }
    let mut p = Parser {
        text,
        i: 0,
        last_table: None,
    };
    let mut applied = false;
    let parsed = p.snapshot(room, &mut applied).filter(|_| {
        p.ws();
        p.i == text.len()
    });
    match parsed {
        Some((rows, cv)) => Some(room.finish_snapshot(rows, cv)),
        None => {
            if applied {
                room.discard_snapshot();
            }
            None
        }
    }
}

/// A batch's header fields as read so far.
#[derive(Default)]
struct Header {
    epoch: Option<u64>,
    seq: Option<u64>,
    /// Whether `normalizedFp` was read (and matched).
    fp: bool,
    cv: Option<Option<f64>>,
}

/// A cursor over the text. Every method returns `None` to give up.
struct Parser<'a> {
    text: &'a str,
    i: usize,
    /// The table of the last op read: a batch's ops mostly come table by table, so
    /// the next op's table is usually this one, found without a lookup.
    last_table: Option<TableInfo>,
}

/// What the parser knows of an op's table once its `table` is read.
#[derive(Clone)]
struct TableInfo {
    /// The table's index in the store (a user table).
    id: usize,
    name: Arc<str>,
    width: usize,
    /// Bit `c` is set when column `c` (< 64) is part of the primary key. Columns from 64
    /// on are always kept.
    key_mask: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Add,
    Remove,
    Edit,
}

/// A row field: absent, `null`, or a row.
type RowField = Option<Option<Row>>;

/// A cell as parsed, its text borrowed from the batch unless it had escapes: packing a
/// row copies each cell once, from the text into the row image.
#[derive(Debug, Default)]
enum Parsed<'a> {
    #[default]
    Null,
    Bool(bool),
    Num(f64),
    Str(Cow<'a, str>),
}

/// Rows of up to this many cells are gathered on the stack.
const GATHER: usize = 8;

impl Cells for [Parsed<'_>] {
    #[inline]
    fn cell(&self, col: usize) -> CellRef<'_> {
        match &self[col] {
            Parsed::Null => CellRef::Null,
            Parsed::Bool(b) => CellRef::Bool(*b),
            Parsed::Num(f) => CellRef::Num(*f),
            Parsed::Str(s) => CellRef::Str(s),
        }
    }

    #[inline]
    fn width(&self) -> usize {
        self.len()
    }
}

impl<'a> Parser<'a> {
    #[inline]
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// Skips JSON whitespace.
    #[inline]
    fn ws(&mut self) {
        let _ = self.peek();
    }

    /// The next byte after whitespace, not consumed.
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        let b = self.bytes();
        loop {
            let c = *b.get(self.i)?;
            // Every JSON whitespace byte is at most b' ': one compare for the common case.
            if c > b' ' || !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(c);
            }
            self.i += 1;
        }
    }

    /// Consumes `c` after whitespace.
    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek()? == c {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// After a member or element: `true` for `,` (another follows), `false` for `close`.
    #[inline]
    fn more(&mut self, close: u8) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.i += 1;
                Some(true)
            }
            c if c == close => {
                self.i += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// Opens an object or array: `false` when it is empty (and already closed).
    #[inline]
    fn open(&mut self, open: u8, close: u8) -> Option<bool> {
        self.eat(open)?;
        if self.peek()? == close {
            self.i += 1;
            return Some(false);
        }
        Some(true)
    }

    /// Consumes the literal `word` (its first byte already seen).
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.bytes().get(self.i..self.i + word.len())? == word {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }

    /// A string, borrowed from the text when it has no escape.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let b = self.bytes();
        let start = self.i;
        let mut i = plain_run(b, start);
        loop {
            match *b.get(i)? {
                b'"' => {
                    self.i = i + 1;
                    // Both ends are ASCII quotes: char boundaries.
                    return Some(Cow::Borrowed(self.text.get(start..i)?));
                }
                b'\\' => break,
                c if c < 0x20 => return None,
                _ => i += 1,
            }
        }
        let mut out = String::from(self.text.get(start..i)?);
        self.i = i;
        self.escaped_rest(&mut out)?;
        Some(Cow::Owned(out))
    }

    /// The rest of a string from its first `\`, unescaped into `out`.
    fn escaped_rest(&mut self, out: &mut String) -> Option<()> {
        let b = self.bytes();
        loop {
            let run = self.i;
            while !matches!(*b.get(self.i)?, b'"' | b'\\') {
                if b[self.i] < 0x20 {
                    return None;
                }
                self.i += 1;
            }
            out.push_str(self.text.get(run..self.i)?);
            if b[self.i] == b'"' {
                self.i += 1;
                return Some(());
            }
            let e = *b.get(self.i + 1)?;
            self.i += 2;
            out.push(match e {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let hex = self.text.get(self.i..self.i + 4)?;
                    // Four hex digits, no sign.
                    if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                        return None;
                    }
                    self.i += 4;
                    // A surrogate (paired or not) is left to the general parser.
                    char::from_u32(u32::from_str_radix(hex, 16).ok()?)?
                }
                _ => return None,
            });
        }
    }

    /// Skips a string, checking it (no copy).
    fn skip_string(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        let b = self.bytes();
        let mut i = plain_run(b, self.i + 1);
        loop {
            match *b.get(i)? {
                b'"' => {
                    self.i = i + 1;
                    return Some(());
                }
                b'\\' => {
                    self.i = i;
                    // Rare: check the escapes the way `string` does.
                    return self.escaped_rest(&mut String::new());
                }
                c if c < 0x20 => return None,
                _ => i += 1,
            }
        }
    }

    /// A JSON number, as the general parser reads it: an integer that fits in a `u64`
    /// (negated for `-`) through `as f64`, anything else correctly rounded (both parsers
    /// round correctly); a value that overflows to infinity gives up.
    fn number(&mut self) -> Option<f64> {
        self.ws();
        let b = self.bytes();
        let start = self.i;
        let mut i = start;
        let neg = b.get(i) == Some(&b'-');
        if neg {
            i += 1;
        }
        let int_start = i;
        let mut n: u64 = 0;
        let mut fits = true;
        match *b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => {
                while let Some(d @ b'0'..=b'9') = b.get(i).copied() {
                    match n
                        .checked_mul(10)
                        .and_then(|n| n.checked_add(u64::from(d - b'0')))
                    {
                        Some(m) => n = m,
                        None => fits = false,
                    }
                    i += 1;
                }
            }
            _ => return None,
        }
        debug_assert!(i > int_start);
        let mut integral = true;
        if b.get(i) == Some(&b'.') {
            i += 1;
            i = digits(b, i)?;
            integral = false;
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            i = digits(b, i)?;
            integral = false;
        }
        self.i = i;
        if integral && fits {
            let f = n as f64;
            return Some(if neg { -f } else { f });
        }
        let f: f64 = self.text.get(start..i)?.parse().ok()?;
        f.is_finite().then_some(f)
    }

    /// `epoch` / `seq`: plain digits below 2^53 (anything else is for the general parser).
    fn safe_uint(&mut self) -> Option<u64> {
        self.ws();
        let b = self.bytes();
        let start = self.i;
        let mut i = start;
        let mut n: u64 = 0;
        while let Some(d @ b'0'..=b'9') = b.get(i).copied() {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            i += 1;
        }
        let plain = i > start && !(b[start] == b'0' && i > start + 1);
        if !plain || matches!(b.get(i), Some(b'.' | b'e' | b'E')) || n >= 1 << 53 {
            return None;
        }
        self.i = i;
        Some(n)
    }

    /// A cell: `null`, a boolean, a finite number or a string.
    fn cell(&mut self) -> Option<Parsed<'a>> {
        Some(match self.peek()? {
            b'n' => {
                self.literal(b"null")?;
                Parsed::Null
            }
            b't' => {
                self.literal(b"true")?;
                Parsed::Bool(true)
            }
            b'f' => {
                self.literal(b"false")?;
                Parsed::Bool(false)
            }
            b'"' => Parsed::Str(self.string()?),
            _ => match Value::num(self.number()?) {
                Value::Num(f) => Parsed::Num(f),
                _ => return None,
            },
        })
    }

    /// Checks a cell without keeping it.
    fn skip_cell(&mut self) -> Option<()> {
        match self.peek()? {
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'"' => self.skip_string(),
            _ => self.number().map(drop),
        }
    }

    /// Skips any JSON value (an ignored field), checking it.
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'[' => {
                if self.open(b'[', b']')? {
                    loop {
                        self.skip_value(depth + 1)?;
                        if !self.more(b']')? {
                            break;
                        }
                    }
                }
                Some(())
            }
            b'{' => {
                if self.open(b'{', b'}')? {
                    loop {
                        self.skip_string()?;
                        self.eat(b':')?;
                        self.skip_value(depth + 1)?;
                        if !self.more(b'}')? {
                            break;
                        }
                    }
                }
                Some(())
            }
            _ => self.skip_cell(),
        }
    }

    /// Cell `c` of a row: kept when bit `c` of `keep` is set (always from 64 on), else
    /// checked and left `null`.
    #[inline]
    fn cell_at(&mut self, c: usize, keep: u64) -> Option<Parsed<'a>> {
        if c >= 64 || keep & (1 << c) != 0 {
            self.cell()
        } else {
            self.skip_cell().map(|()| Parsed::Null)
        }
    }

    /// A row field's value: `null` or an array of cells (see [`Parser::cell_at`]). With
    /// the table's `width` known, a row of another width gives up.
    fn row(&mut self, keep: u64, width: Option<usize>) -> Option<Option<Row>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        self.eat(b'[')?;
        let Some(width) = width else {
            return self.row_of_any_width(keep).map(Some);
        };
        // The cells are gathered (on the stack for a short row) and packed once; a
        // failure gives up at once, a longer row at the `]`.
        let mut stack: [Parsed<'a>; GATHER] = Default::default();
        let mut heap: Vec<Parsed<'a>> = Vec::new();
        for c in 0..width {
            if c > 0 {
                self.eat(b',')?;
            }
            let cell = self.cell_at(c, keep)?;
            match stack.get_mut(c).filter(|_| width <= GATHER) {
                Some(slot) => *slot = cell,
                None => heap.push(cell),
            }
        }
        self.eat(b']')?;
        let cells = if width <= GATHER {
            &stack[..width]
        } else {
            &heap[..]
        };
        Some(Some(Row::new(cells)))
    }

    /// The cells of a row of a table not known yet (its `[` consumed).
    fn row_of_any_width(&mut self, keep: u64) -> Option<Row> {
        let mut cells: Vec<Parsed<'a>> = Vec::new();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(Row::new(&cells[..]));
        }
        loop {
            if cells.len() == MAX_ROW_CELLS {
                return None; // the general parser refuses the row, saying why
            }
            let v = self.cell_at(cells.len(), keep)?;
            cells.push(v);
            if !self.more(b']')? {
                return Some(Row::new(&cells[..]));
            }
        }
    }

    /// The batch object.
    fn batch(&mut self, room: &Room) -> Option<UpstreamBatch> {
        let mut head = Header::default();
        let mut ops = None;
        if self.open(b'{', b'}')? {
            loop {
                let key = self.string()?;
                self.eat(b':')?;
                match &*key {
                    "ops" if ops.is_none() => ops = Some(self.ops(room)?),
                    "ops" => return None,
                    _ => self.header_field(&key, room, &mut head)?,
                }
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        if !head.fp {
            return None;
        }
        Some(UpstreamBatch {
            epoch: head.epoch?,
            seq: head.seq?,
            normalized_fp: String::new(),
            cv: head.cv.flatten(),
            ops: ops?,
        })
    }

    /// One header field of a batch (`epoch`, `seq`, `normalizedFp`, `cv`; any other key
    /// is skipped). Gives up on a duplicate, a bad value or another fingerprint.
    fn header_field(&mut self, key: &str, room: &Room, head: &mut Header) -> Option<()> {
        match key {
            "epoch" if head.epoch.is_none() => head.epoch = Some(self.safe_uint()?),
            "seq" if head.seq.is_none() => head.seq = Some(self.safe_uint()?),
            "normalizedFp" if !head.fp => {
                if !room.upstream_fp_is(&self.string()?) {
                    return None;
                }
                head.fp = true;
            }
            "cv" if head.cv.is_none() => {
                head.cv = Some(if self.peek()? == b'n' {
                    self.literal(b"null")?;
                    None
                } else {
                    Some(self.number()?)
                });
            }
            // A duplicate field.
            "epoch" | "seq" | "normalizedFp" | "cv" => return None,
            _ => self.skip_value(0)?,
        }
        Some(())
    }

    /// A whole snapshot batch, its ops applied as they come: how many, and the `cv`.
    /// `applied` turns true once the room was changed.
    fn snapshot(&mut self, room: &mut Room, applied: &mut bool) -> Option<(usize, u64)> {
        let mut head = Header::default();
        let mut rows = None;
        if !self.open(b'{', b'}')? {
            return None;
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            match &*key {
                "ops" if rows.is_none() => {
                    let ready = head.fp
                        && head.seq == Some(0)
                        && head.epoch.is_some_and(|e| room.streams_snapshot(e));
                    if !ready {
                        return None;
                    }
                    let mut n = 0usize;
                    let mut run = Run::default();
                    if self.open(b'[', b']')? {
                        loop {
                            let (t, op) = self.op(room)?;
                            *applied = true;
                            if let Some(more) = run.next(t, self.i, self.text.len()) {
                                room.reserve_rows(t, more);
                            }
                            if !room.snapshot_add(t, &op) {
                                return None;
                            }
                            n += 1;
                            if !self.more(b']')? {
                                break;
                            }
                        }
                    }
                    rows = Some(n);
                }
                "ops" => return None,
                _ => self.header_field(&key, &*room, &mut head)?,
            }
            if !self.more(b'}')? {
                break;
            }
        }
        // Without a valid `cv` the snapshot is discarded and applied the ordinary way,
        // which says what is wrong.
        let cv = crate::upstream::wire_counter(head.cv.flatten()?)?;
        Some((rows?, cv))
    }

    /// The `ops` array.
    fn ops(&mut self, room: &Room) -> Option<Vec<NetOp>> {
        let mut ops = Vec::new();
        if self.open(b'[', b']')? {
            loop {
                ops.push(self.op(room)?.1);
                if !self.more(b']')? {
                    break;
                }
            }
        }
        Some(ops)
    }

    /// One op object.
    fn op(&mut self, room: &Room) -> Option<(usize, NetOp)> {
        let mut table: Option<TableInfo> = None;
        let mut kind: Option<Kind> = None;
        let mut row: RowField = None;
        let mut old: RowField = None;
        let mut new: RowField = None;
        // Which cells to keep of a row that is only a key.
        let key_only = |table: &Option<TableInfo>| table.as_ref().map_or(u64::MAX, |t| t.key_mask);
        let width = |table: &Option<TableInfo>| table.as_ref().map(|t| t.width);
        if self.open(b'{', b'}')? {
            loop {
                let key = self.string()?;
                self.eat(b':')?;
                match &*key {
                    "table" if table.is_none() => {
                        let name = self.string()?;
                        let info = match &self.last_table {
                            Some(last) if *last.name == *name => last.clone(),
                            _ => table_info(room, &name)?,
                        };
                        self.last_table = Some(info.clone());
                        table = Some(info);
                    }
                    "op" if kind.is_none() => {
                        kind = Some(match &*self.string()? {
                            "add" => Kind::Add,
                            "remove" => Kind::Remove,
                            "edit" => Kind::Edit,
                            _ => return None,
                        });
                    }
                    // Only a remove's row is a key; an add's is kept whole.
                    "row" if row.is_none() => {
                        let keep = if kind == Some(Kind::Remove) {
                            key_only(&table)
                        } else {
                            u64::MAX
                        };
                        row = Some(self.row(keep, width(&table))?);
                    }
                    "old" if old.is_none() => {
                        old = Some(self.row(key_only(&table), width(&table))?);
                    }
                    "new" if new.is_none() => new = Some(self.row(u64::MAX, width(&table))?),
                    "table" | "op" | "row" | "old" | "new" => return None,
                    _ => self.skip_value(0)?,
                }
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        let table = table?;
        // Missing, `null` or the wrong width: the general path names it (or poisons).
        let fits = |r: RowField| r.flatten().filter(|r| r.len() == table.width);
        let id = table.id;
        Some((
            id,
            match kind? {
                Kind::Add => NetOp::Add {
                    row: fits(row)?,
                    table: table.name,
                },
                Kind::Remove => NetOp::Remove {
                    row: fits(row)?,
                    table: table.name,
                },
                Kind::Edit => NetOp::Edit {
                    old: fits(old)?,
                    new: fits(new)?,
                    table: table.name,
                },
            },
        ))
    }
}

/// One or more ASCII digits from `i`; the index after them.
fn digits(b: &[u8], mut i: usize) -> Option<usize> {
    let start = i;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    (i > start).then_some(i)
}

/// One of the room's upstream tables (not a system table).
/// A streamed snapshot's current run of ops on one table, to size the table once:
/// after [`Run::SAMPLE`] ops in a row, the bytes they took and the bytes left estimate
/// how many more the table will get (an estimate: a run that ends early leaves some
/// room unused; one that goes on grows the table as usual).
#[derive(Default)]
struct Run {
    table: usize,
    ops: usize,
    /// Where the run's first op ended in the text.
    from: usize,
}

impl Run {
    const SAMPLE: usize = 1024;

    /// Counts an op on table `t` that ended at byte `at` of a `len`-byte text; at the
    /// run's sample point, the rows to make room for.
    fn next(&mut self, t: usize, at: usize, len: usize) -> Option<usize> {
        if self.ops == 0 || self.table != t {
            *self = Run {
                table: t,
                ops: 1,
                from: at,
            };
            return None;
        }
        self.ops += 1;
        if self.ops != Self::SAMPLE {
            return None;
        }
        let per_op = (at - self.from) / (Self::SAMPLE - 1);
        (per_op > 0).then(|| (len - at) / per_op)
    }
}

fn table_info(room: &Room, name: &str) -> Option<TableInfo> {
    let t = room
        .store
        .table_id(name)
        .filter(|&t| t < room.user_tables)?;
    let schema = &room.store.table(t).schema;
    let key_mask = schema
        .primary_key
        .iter()
        .filter(|&&c| c < 64)
        .fold(0u64, |m, &c| m | 1 << c);
    Some(TableInfo {
        id: t,
        name: schema.name.clone(),
        width: schema.columns.len(),
        key_mask,
    })
}

#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
