//! Interprets the raw generated data ([`super::gen`]) against a generated schema: table
//! schemas, cells, wire ASTs (as JSON, through the real parser) and upstream ops.

use rindle_room_core::value::Value;
use rindle_room_core::{NetOp, TableSchema};
use serde_json::{json, Map, Value as Json};

use super::gen::{GenCond, GenLevel, GenLit, GenOp, GenStart, GenTable};

const TABLE_NAMES: [&str; 6] = ["issue", "comment", "Label", "a", "zz", "b_2"];
const COLUMN_NAMES: [&str; 4] = ["id", "k", "v", "w"];
/// Short strings, including LIKE metacharacters, case pairs and a 2-byte character.
const STRINGS: [&str; 10] = ["", "a", "A", "ab", "aB", "a%", "_b", "é", "É", "x\\y"];
const PATTERNS: [&str; 16] = [
    "a%", "A%", "_", "__", "\\%", "a\\%", "%\\_%", "\\_b", "_b", "%B", "É%", "%é", "x\\y",
    "x\\\\y", "%", "\\",
];
const OPS: [&str; 14] = [
    "=",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "IS",
    "IS NOT",
    "LIKE",
    "NOT LIKE",
    "ILIKE",
    "NOT ILIKE",
    "IN",
    "NOT IN",
];

/// A column's value domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// First pk column: integers 0..16, never NULL.
    KeyInt,
    /// Second pk column: integers 0..3 or a few strings, never NULL.
    KeySmall,
    /// Integers 0..=2 or NULL.
    Int,
    /// Short strings or NULL.
    Str,
    /// Booleans or NULL.
    Bool,
    /// Any type, NULL included (cross-type comparisons).
    Mixed,
}

impl Kind {
    /// A non-key column's kind: the second column is mostly an integer (a likely
    /// correlation column), later ones are often text.
    fn pick(byte: u8, col: usize) -> Kind {
        match (col, byte % 8) {
            (1, 0..=5) | (2.., 0..=2) => Kind::Int,
            (1, _) => Kind::Mixed,
            (_, 3..=5) => Kind::Str,
            (_, 6) => Kind::Bool,
            _ => Kind::Mixed,
        }
    }

    /// The cell a selector byte stands for.
    pub fn cell(self, b: u8) -> Value {
        match self {
            Kind::KeyInt => Value::num((b % 16) as f64),
            Kind::KeySmall => match b % 5 {
                n @ 0..=2 => Value::num(n as f64),
                3 => Value::str("a"),
                _ => Value::str("b"),
            },
            Kind::Int => match b % 4 {
                3 => Value::Null,
                n => Value::num(n as f64),
            },
            Kind::Str => match (b as usize) % (STRINGS.len() + 1) {
                n if n == STRINGS.len() => Value::Null,
                n => Value::str(STRINGS[n]),
            },
            Kind::Bool => match b % 3 {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                _ => Value::Null,
            },
            Kind::Mixed => match b % 9 {
                0 => Value::Null,
                1 => Value::num(0.0),
                2 => Value::num(1.0),
                3 => Value::num(2.0),
                4 => Value::num(1.5),
                5 => Value::str("a"),
                6 => Value::str("A"),
                7 => Value::Bool(true),
                _ => Value::Bool(false),
            },
        }
    }
}

/// One resolved table.
#[derive(Clone, Debug)]
pub struct Table {
    /// The hello schema.
    pub schema: TableSchema,
    /// Each column's domain.
    pub kinds: Vec<Kind>,
}

/// The resolved schema.
#[derive(Clone, Debug)]
pub struct Schema {
    /// The tables, in hello order.
    pub tables: Vec<Table>,
}

impl Schema {
    /// Builds distinct-named tables from the generated ones.
    pub fn new(gen: &[GenTable]) -> Schema {
        let mut used: Vec<&str> = Vec::new();
        let mut tables = Vec::new();
        for t in gen {
            let mut i = t.name as usize % TABLE_NAMES.len();
            while used.contains(&TABLE_NAMES[i]) {
                i = (i + 1) % TABLE_NAMES.len();
            }
            used.push(TABLE_NAMES[i]);
            let pk: Vec<usize> = match t.pk {
                0 => vec![0],
                1 => vec![0, 1],
                _ => vec![1, 0],
            };
            let mut kinds = Vec::new();
            for c in 0..t.columns {
                kinds.push(match c {
                    0 => Kind::KeyInt,
                    1 if pk.len() == 2 => Kind::KeySmall,
                    _ => Kind::pick(t.kinds[c], c),
                });
            }
            let schema = TableSchema::new(TABLE_NAMES[i], &COLUMN_NAMES[..t.columns], &pk);
            tables.push(Table { schema, kinds });
        }
        Schema { tables }
    }

    /// The table a selector names.
    pub fn table(&self, sel: u8) -> usize {
        sel as usize % self.tables.len()
    }

    /// A full row of table `t` from cell selectors (cycled).
    pub fn row(&self, t: usize, bytes: &[u8]) -> Vec<Value> {
        let kinds = &self.tables[t].kinds;
        (0..kinds.len())
            .map(|c| kinds[c].cell(bytes[c % bytes.len()]))
            .collect()
    }

    fn col(&self, t: usize, sel: u8) -> usize {
        sel as usize % self.tables[t].kinds.len()
    }

    fn col_name(&self, t: usize, c: usize) -> &str {
        &self.tables[t].schema.columns[c]
    }
}

fn cell_json(v: &Value, float_token: bool) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Num(f) if f.fract() == 0.0 && !float_token => json!(*f as i64),
        Value::Num(f) => json!(*f),
        Value::Str(s) => Json::String(s.to_string()),
    }
}

fn lit_json(s: &Schema, t: usize, col: usize, lit: &GenLit) -> Json {
    let kind = match (lit.same_kind, s.tables[t].kinds[col]) {
        (true, Kind::KeyInt) => Kind::Int,
        (true, k) => k,
        (false, _) => Kind::Mixed,
    };
    cell_json(&kind.cell(lit.byte), lit.float_token)
}

/// Renders a generated level as a wire AST. `variant` adds cosmetic differences that
/// must not change the query (unknown keys, `select`, `one`, other aliases).
pub fn ast(s: &Schema, level: &GenLevel, variant: u8) -> Json {
    let mut r = Render { s, variant, n: 0 };
    r.level(level, false).1
}

/// The state of one AST rendering.
struct Render<'s> {
    s: &'s Schema,
    variant: u8,
    /// Subquery counter (aliases).
    n: u32,
}

impl Render<'_> {
    /// Renders a level; returns its table and its JSON.
    fn level(&mut self, l: &GenLevel, exists: bool) -> (usize, Json) {
        let s = self.s;
        let t = s.table(l.table);
        let mut o = Map::new();
        o.insert("table".into(), json!(s.tables[t].schema.name.to_string()));
        if let Some(f) = &l.filter {
            let filter = self.cond(t, f);
            o.insert("where".into(), filter);
        }
        if !l.order.is_empty() {
            let order: Vec<Json> = l
                .order
                .iter()
                .map(|&(c, desc)| {
                    json!([
                        s.col_name(t, s.col(t, c)),
                        if desc { "desc" } else { "asc" }
                    ])
                })
                .collect();
            o.insert("orderBy".into(), Json::Array(order));
        }
        if let (Some(start), false) = (&l.start, exists) {
            o.insert("start".into(), start_json(s, t, l, start));
        }
        if let Some(limit) = l.limit {
            o.insert("limit".into(), json!(limit));
        }
        if !l.related.is_empty() && !exists {
            let mut related = Vec::new();
            for r in &l.related {
                self.n += 1;
                let alias = format!("r{}{}", self.n, if self.variant == 3 { "x" } else { "" });
                let (child, mut sub) = self.level(&r.level, false);
                sub["alias"] = json!(alias);
                let correlation = correlation(s, t, child, &r.pairs);
                related.push(json!({"correlation": correlation, "subquery": sub}));
            }
            o.insert("related".into(), Json::Array(related));
        }
        match self.variant {
            1 => {
                o.insert("zzUnknown".into(), json!({"ignored": [1, 2]}));
                o.insert("one".into(), json!(false));
            }
            v if selects(v) => {
                o.insert("select".into(), json!([s.col_name(t, 0)]));
            }
            _ => {}
        }
        (t, Json::Object(o))
    }

    fn cond(&mut self, t: usize, c: &GenCond) -> Json {
        let s = self.s;
        match c {
            GenCond::Simple {
                col,
                op,
                lit,
                list,
                pattern,
                lit_left,
            } => simple_json(s, t, *col, *op, lit, list, *pattern, *lit_left),
            GenCond::And(items) | GenCond::Or(items) => {
                let kind = if matches!(c, GenCond::And(_)) {
                    "and"
                } else {
                    "or"
                };
                let items: Vec<Json> = items.iter().map(|i| self.cond(t, i)).collect();
                json!({"type": kind, "conditions": items})
            }
            GenCond::Exists {
                negated,
                flip,
                system,
                pairs,
                level,
            } => {
                self.n += 1;
                let alias = format!("e{}", self.n);
                let (child, mut sub) = self.level(level, true);
                if self.variant != 2 {
                    sub["alias"] = json!(alias);
                }
                let mut related =
                    json!({"correlation": correlation(s, t, child, pairs), "subquery": sub});
                match system {
                    1 => related["system"] = json!("permissions"),
                    2 => related["system"] = json!("client"),
                    _ => {}
                }
                let mut o = json!({
                    "type": "correlatedSubquery",
                    "op": if *negated { "NOT EXISTS" } else { "EXISTS" },
                    "related": related,
                });
                match (flip, negated) {
                    (1, false) => o["flip"] = json!(true),
                    (2, _) => o["flip"] = json!(false),
                    _ => {}
                }
                o
            }
        }
    }
}

fn correlation(s: &Schema, parent: usize, child: usize, pairs: &[(u8, u8)]) -> Json {
    let parent_cols: Vec<&str> = pairs
        .iter()
        .map(|p| s.col_name(parent, s.col(parent, p.0)))
        .collect();
    let child_cols: Vec<&str> = pairs
        .iter()
        .map(|p| s.col_name(child, s.col(child, p.1)))
        .collect();
    json!({"parentField": parent_cols, "childField": child_cols})
}

/// The completed sort of a level, as column indices (user order, then missing pk).
fn completed_order(s: &Schema, t: usize, l: &GenLevel) -> Vec<usize> {
    let mut cols = Vec::new();
    for &(c, _) in &l.order {
        let c = s.col(t, c);
        if !cols.contains(&c) {
            cols.push(c);
        }
    }
    for &c in s.tables[t].schema.primary_key.iter() {
        if !cols.contains(&c) {
            cols.push(c);
        }
    }
    cols
}

fn start_json(s: &Schema, t: usize, l: &GenLevel, start: &GenStart) -> Json {
    let order = completed_order(s, t, l);
    let named: Vec<usize> = match start.mode {
        0 => order.clone(),
        1 => order[..1].to_vec(),
        2 => order[..order.len().max(2) - 1].to_vec(),
        _ => vec![s.col(t, start.bytes[0])],
    };
    let mut row = Map::new();
    for (i, &c) in named.iter().enumerate() {
        let v = s.tables[t].kinds[c].cell(start.bytes[i % start.bytes.len()].wrapping_add(i as u8));
        row.insert(s.col_name(t, c).to_string(), cell_json(&v, false));
    }
    json!({"row": row, "exclusive": start.exclusive})
}

fn simple_json(
    s: &Schema,
    t: usize,
    col: u8,
    op: u8,
    lit: &GenLit,
    list: &[GenLit],
    pattern: u8,
    lit_left: bool,
) -> Json {
    let op = OPS[op as usize % OPS.len()];
    let mut col = s.col(t, col);
    if op.contains("LIKE") && lit.same_kind {
        // LIKE on a non-text column is constant; prefer a text column.
        let kinds = &s.tables[t].kinds;
        if let Some(c) = (0..kinds.len()).find(|&c| kinds[c] == Kind::Str) {
            col = c;
        }
    }
    let right = match op {
        "IN" | "NOT IN" => Json::Array(list.iter().map(|l| lit_json(s, t, col, l)).collect()),
        "LIKE" | "NOT LIKE" | "ILIKE" | "NOT ILIKE" => {
            json!(PATTERNS[pattern as usize % PATTERNS.len()])
        }
        _ => lit_json(s, t, col, lit),
    };
    let left = if lit_left && matches!(op, "=" | "!=" | "IS" | "IS NOT") {
        json!({"type": "literal", "value": cell_json(&Kind::Mixed.cell(pattern), false)})
    } else {
        json!({"type": "column", "name": s.col_name(t, col)})
    };
    json!({"type": "simple", "op": op, "left": left, "right": {"type": "literal", "value": right}})
}

/// Resolves one generated op against `rows` (the current rows of every table, updated in
/// place). `None` when the op does not apply (removing from an empty table).
pub fn op(s: &Schema, rows: &mut [Vec<Vec<Value>>], g: &GenOp) -> Option<NetOp> {
    let op = match g {
        GenOp::Add { table, cells } => {
            let t = s.table(*table);
            let row = s.row(t, cells);
            match find_key(s, t, &rows[t], &row) {
                Some(i) => edit_to(s, rows, t, i, row),
                None => {
                    rows[t].push(row.clone());
                    NetOp::Add {
                        table: name(s, t),
                        row: row.into(),
                    }
                }
            }
        }
        GenOp::Remove { table, pick } => {
            let t = s.table(*table);
            if rows[t].is_empty() {
                return None;
            }
            let old = rows[t].remove(*pick as usize % rows[t].len());
            NetOp::Remove {
                table: name(s, t),
                row: old.into(),
            }
        }
        GenOp::Edit {
            table,
            pick,
            cells,
            mask,
        } => {
            let t = s.table(*table);
            if rows[t].is_empty() {
                return None;
            }
            let i = *pick as usize % rows[t].len();
            let mut new = rows[t][i].clone();
            let fresh = s.row(t, cells);
            let pk = &s.tables[t].schema.primary_key;
            for c in 0..new.len() {
                if !pk.contains(&c) && mask & (1 << c) != 0 {
                    new[c] = fresh[c].clone();
                }
            }
            // One edit in eight also moves the row to a new, unused key (the room
            // applies a key change as remove + add).
            if mask >> 5 == 0b111 {
                let mut moved = new.clone();
                for &c in pk.iter() {
                    moved[c] = fresh[c].clone();
                }
                if find_key(s, t, &rows[t], &moved).is_none() {
                    new = moved;
                }
            }
            edit_to(s, rows, t, i, new)
        }
    };
    Some(op)
}

fn name(s: &Schema, t: usize) -> std::sync::Arc<str> {
    s.tables[t].schema.name.clone()
}

fn find_key(s: &Schema, t: usize, rows: &[Vec<Value>], row: &[Value]) -> Option<usize> {
    let pk = &s.tables[t].schema.primary_key;
    rows.iter().position(|r| pk.iter().all(|&c| r[c] == row[c]))
}

fn edit_to(s: &Schema, rows: &mut [Vec<Vec<Value>>], t: usize, i: usize, new: Vec<Value>) -> NetOp {
    let old = std::mem::replace(&mut rows[t][i], new.clone());
    NetOp::Edit {
        table: name(s, t),
        old: old.into(),
        new: new.into(),
    }
}

/// Whether AST variant `variant` writes a `select` (which projects the rows, so such a
/// query does not share a pipeline with the same query written without one).
pub fn selects(variant: u8) -> bool {
    variant == 2
}
