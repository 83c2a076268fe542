//! The mutators: each body runs against a [`Mtx`], the room's transaction or the model's.

use super::*;

// ------------------------------------------------------------- the mutators

/// Why a mutator did not finish.
#[derive(Clone, Debug, PartialEq)]
pub enum MutErr {
    /// A staging call was refused (the core's / the model's message).
    Refused(String),
    /// An environment shortfall (`tx.query`): a `deopt` with reason `environment`.
    Env(String),
    /// The mutator threw on its own (authz / validation): a `rejected`.
    Thrown(String),
}

/// The published `MutationTx` surface the mutators use.
pub trait Mtx {
    /// `row(table, pk)`.
    fn row(
        &mut self,
        table: &str,
        pk: &[(&str, Value)],
    ) -> Result<Option<Vec<(String, Value)>>, MutErr>;
    /// `insert(table, row)`.
    fn insert(&mut self, table: &str, row: &[(&str, Value)]) -> Result<(), MutErr>;
    /// `update(table, row)`.
    fn update(&mut self, table: &str, row: &[(&str, Value)]) -> Result<(), MutErr>;
    /// `upsert(table, row)`.
    fn upsert(&mut self, table: &str, row: &[(&str, Value)]) -> Result<(), MutErr>;
    /// `delete(table, pk)`.
    fn delete(&mut self, table: &str, pk: &[(&str, Value)]) -> Result<(), MutErr>;
    /// `get(table, pk cells)`.
    fn get(&mut self, table: &str, pk: &[Value]) -> Result<Option<Image>, MutErr>;
    /// `add(table, cells)`.
    fn add(&mut self, table: &str, cells: Image) -> Result<(), MutErr>;
    /// `remove(table, cells)`.
    fn remove(&mut self, table: &str, cells: &[Value]) -> Result<(), MutErr>;
    /// `edit(table, old, new)`.
    fn edit(&mut self, table: &str, old: &[Value], new: &[Option<Value>]) -> Result<(), MutErr>;
    /// `query(...)`.
    fn query(&mut self) -> Result<(), MutErr>;
}

/// One registered mutator invocation (`name` + `args`).
#[derive(Clone, Debug, PartialEq)]
pub enum Mutation {
    /// `insert item`.
    InsertItem { id: i64, owner: String, qty: f64 },
    /// `update item {id, qty}`.
    SetQty { id: i64, qty: f64 },
    /// `upsert item`.
    UpsertItem { id: i64, owner: String, qty: f64 },
    /// `delete item`.
    DeleteItem { id: i64 },
    /// `update item {id, owner}` — a join-key edit under v2.
    MoveItem { id: i64, owner: String },
    /// Reads the item (throws when absent), then inserts the tag.
    AddTag { id: i64, item: i64, label: String },
    /// `update tag {id, itemId}` — a join-key edit under v2.
    Retag { id: i64, item: i64 },
    /// `update tag {id, label}`.
    Relabel { id: i64, label: String },
    /// `delete tag`.
    DeleteTag { id: i64 },
    /// Positional `add tag`.
    RawTag { id: i64, item: i64 },
    /// Positional `remove tag` (refused when absent).
    RawDeleteTag { id: i64 },
    /// Reads `zone[ctx].v` (1 when absent) and the item (throws when absent), then
    /// `qty += by * v`.
    Bump { id: i64, by: f64, ctx: i64 },
    /// Positional `get` + `edit` of the item's qty (throws when absent).
    PosEdit { id: i64, qty: f64 },
    /// Throws `msg`.
    Fail { msg: String },
    /// Reads, then calls `tx.query` (an environment deopt).
    NeedsQuery,
    /// Does nothing.
    Noop,
    /// Inserts an item and a tag, edits the item; with `undo` deletes both again.
    Multi {
        id: i64,
        owner: String,
        tag: i64,
        undo: bool,
    },
    /// Updates a context row (refused when it exists; a no-op when absent).
    EditCtx { id: i64, v: f64 },
    /// Reads a tag; relabels it `seen` when present.
    ProbeTag { id: i64 },
    /// An envelope naming no registered mutator.
    Unknown,
}

fn field(row: &[(String, Value)], name: &str) -> Value {
    row.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or(Value::Null)
}

pub(super) fn n_id(id: i64) -> Value {
    num(id as f64)
}

impl Mutation {
    /// Decodes a generated selector into a mutation.
    pub fn pick(kind: u8, a: u8, b: u8, c: u8) -> Mutation {
        let item = pick(&ITEM_IDS, a);
        let tag = pick(&TAG_IDS, a);
        match kind % 20 {
            0 | 1 => Mutation::InsertItem {
                id: item,
                owner: pick(&OWNERS, b).into(),
                qty: pick(&QTYS, c),
            },
            2 => Mutation::SetQty {
                id: item,
                qty: pick(&QTYS, b),
            },
            3 => Mutation::UpsertItem {
                id: item,
                owner: pick(&OWNERS, b).into(),
                qty: pick(&QTYS, c),
            },
            4 => Mutation::DeleteItem { id: item },
            5 => Mutation::MoveItem {
                id: item,
                owner: pick(&OWNERS, b).into(),
            },
            6 | 7 => Mutation::AddTag {
                id: tag,
                item: pick(&ITEM_IDS, b),
                label: pick(&LABELS, c).into(),
            },
            8 => Mutation::Retag {
                id: tag,
                item: pick(&ITEM_IDS, b),
            },
            9 => Mutation::Relabel {
                id: tag,
                label: pick(&LABELS, b).into(),
            },
            10 => Mutation::DeleteTag { id: tag },
            11 => Mutation::RawTag {
                id: tag,
                item: pick(&ITEM_IDS, b),
            },
            12 => Mutation::RawDeleteTag { id: tag },
            13 => Mutation::Bump {
                id: item,
                by: pick(&[1.0, 30.0, 60.0], b),
                ctx: pick(&[1, 3], c),
            },
            14 => Mutation::PosEdit {
                id: item,
                qty: pick(&QTYS, b),
            },
            15 => match b % 4 {
                0 => Mutation::Fail {
                    msg: format!("not allowed #{c}"),
                },
                1 => Mutation::NeedsQuery,
                2 => Mutation::Unknown,
                _ => Mutation::Noop,
            },
            16 => Mutation::Multi {
                id: item,
                owner: pick(&OWNERS, b).into(),
                tag: pick(&TAG_IDS, c),
                undo: c.is_multiple_of(2),
            },
            17 => Mutation::EditCtx {
                id: pick(&CTX_IDS, b),
                v: pick(&[1.0, 2.0, 7.0], c),
            },
            _ => Mutation::ProbeTag { id: tag },
        }
    }

    /// The wire envelope's `name` and `args`.
    pub fn envelope(&self) -> (String, Json) {
        let (name, args) = match self {
            Mutation::InsertItem { id, owner, qty } => {
                ("insertItem", json!({"id": id, "owner": owner, "qty": qty}))
            }
            Mutation::SetQty { id, qty } => ("setQty", json!({"id": id, "qty": qty})),
            Mutation::UpsertItem { id, owner, qty } => {
                ("upsertItem", json!({"id": id, "owner": owner, "qty": qty}))
            }
            Mutation::DeleteItem { id } => ("deleteItem", json!({ "id": id })),
            Mutation::MoveItem { id, owner } => ("moveItem", json!({"id": id, "owner": owner})),
            Mutation::AddTag { id, item, label } => {
                ("addTag", json!({"id": id, "itemId": item, "label": label}))
            }
            Mutation::Retag { id, item } => ("retag", json!({"id": id, "itemId": item})),
            Mutation::Relabel { id, label } => ("relabel", json!({"id": id, "label": label})),
            Mutation::DeleteTag { id } => ("deleteTag", json!({ "id": id })),
            Mutation::RawTag { id, item } => ("rawTag", json!({"id": id, "itemId": item})),
            Mutation::RawDeleteTag { id } => ("rawDeleteTag", json!({ "id": id })),
            Mutation::Bump { id, by, ctx } => ("bump", json!({"id": id, "by": by, "ctx": ctx})),
            Mutation::PosEdit { id, qty } => ("posEdit", json!({"id": id, "qty": qty})),
            Mutation::Fail { msg } => ("fail", json!({ "msg": msg })),
            Mutation::NeedsQuery => ("needsQuery", json!({})),
            Mutation::Noop => ("noop", json!(null)),
            Mutation::Multi {
                id,
                owner,
                tag,
                undo,
            } => (
                "multi",
                json!({"id": id, "owner": owner, "tag": tag, "undo": undo}),
            ),
            Mutation::EditCtx { id, v } => ("editCtx", json!({"id": id, "v": v})),
            Mutation::ProbeTag { id } => ("probeTag", json!({ "id": id })),
            Mutation::Unknown => ("noSuchMutator", json!({"x": [1, "two"]})),
        };
        (name.to_string(), args)
    }

    /// The registry: the mutation an envelope names, `None` for an unknown name.
    pub fn from_envelope(name: &str, args: &Json) -> Option<Mutation> {
        let i = |k: &str| args[k].as_i64().unwrap_or(0);
        let f = |k: &str| args[k].as_f64().unwrap_or(0.0);
        let s = |k: &str| args[k].as_str().unwrap_or("").to_string();
        Some(match name {
            "insertItem" => Mutation::InsertItem {
                id: i("id"),
                owner: s("owner"),
                qty: f("qty"),
            },
            "setQty" => Mutation::SetQty {
                id: i("id"),
                qty: f("qty"),
            },
            "upsertItem" => Mutation::UpsertItem {
                id: i("id"),
                owner: s("owner"),
                qty: f("qty"),
            },
            "deleteItem" => Mutation::DeleteItem { id: i("id") },
            "moveItem" => Mutation::MoveItem {
                id: i("id"),
                owner: s("owner"),
            },
            "addTag" => Mutation::AddTag {
                id: i("id"),
                item: i("itemId"),
                label: s("label"),
            },
            "retag" => Mutation::Retag {
                id: i("id"),
                item: i("itemId"),
            },
            "relabel" => Mutation::Relabel {
                id: i("id"),
                label: s("label"),
            },
            "deleteTag" => Mutation::DeleteTag { id: i("id") },
            "rawTag" => Mutation::RawTag {
                id: i("id"),
                item: i("itemId"),
            },
            "rawDeleteTag" => Mutation::RawDeleteTag { id: i("id") },
            "bump" => Mutation::Bump {
                id: i("id"),
                by: f("by"),
                ctx: i("ctx"),
            },
            "posEdit" => Mutation::PosEdit {
                id: i("id"),
                qty: f("qty"),
            },
            "fail" => Mutation::Fail { msg: s("msg") },
            "needsQuery" => Mutation::NeedsQuery,
            "noop" => Mutation::Noop,
            "multi" => Mutation::Multi {
                id: i("id"),
                owner: s("owner"),
                tag: i("tag"),
                undo: args["undo"].as_bool().unwrap_or(false),
            },
            "editCtx" => Mutation::EditCtx {
                id: i("id"),
                v: f("v"),
            },
            "probeTag" => Mutation::ProbeTag { id: i("id") },
            _ => return None,
        })
    }

    /// Runs the mutator body against a transaction.
    pub fn run<T: Mtx>(&self, tx: &mut T) -> Result<(), MutErr> {
        match self {
            Mutation::InsertItem { id, owner, qty } => tx.insert(
                "item",
                &[
                    ("id", n_id(*id)),
                    ("owner", text(owner)),
                    ("qty", num(*qty)),
                ],
            ),
            Mutation::SetQty { id, qty } => {
                tx.update("item", &[("id", n_id(*id)), ("qty", num(*qty))])
            }
            Mutation::UpsertItem { id, owner, qty } => tx.upsert(
                "item",
                &[
                    ("qty", num(*qty)),
                    ("owner", text(owner)),
                    ("id", n_id(*id)),
                ],
            ),
            Mutation::DeleteItem { id } => tx.delete("item", &[("id", n_id(*id))]),
            Mutation::MoveItem { id, owner } => {
                tx.update("item", &[("id", n_id(*id)), ("owner", text(owner))])
            }
            Mutation::AddTag { id, item, label } => {
                if tx.row("item", &[("id", n_id(*item))])?.is_none() {
                    return Err(MutErr::Thrown(format!("item {item} does not exist")));
                }
                tx.insert(
                    "tag",
                    &[
                        ("id", n_id(*id)),
                        ("itemId", n_id(*item)),
                        ("label", text(label)),
                    ],
                )
            }
            Mutation::Retag { id, item } => {
                tx.update("tag", &[("id", n_id(*id)), ("itemId", n_id(*item))])
            }
            Mutation::Relabel { id, label } => {
                tx.update("tag", &[("id", n_id(*id)), ("label", text(label))])
            }
            Mutation::DeleteTag { id } => tx.delete("tag", &[("id", n_id(*id))]),
            Mutation::RawTag { id, item } => {
                tx.add("tag", vec![n_id(*id), n_id(*item), text("raw")])
            }
            Mutation::RawDeleteTag { id } => tx.remove("tag", &[n_id(*id)]),
            Mutation::Bump { id, by, ctx } => {
                let v = match tx.row("zone", &[("id", n_id(*ctx))])? {
                    Some(r) => as_num(&field(&r, "v")),
                    None => 1.0,
                };
                let Some(it) = tx.row("item", &[("id", n_id(*id))])? else {
                    return Err(MutErr::Thrown(format!("cannot bump missing item {id}")));
                };
                let qty = as_num(&field(&it, "qty")) + by * v;
                tx.update("item", &[("id", n_id(*id)), ("qty", num(qty))])
            }
            Mutation::PosEdit { id, qty } => {
                let Some(old) = tx.get("item", &[n_id(*id)])? else {
                    return Err(MutErr::Thrown(format!("no item {id} to edit")));
                };
                tx.edit("item", &old, &[None, None, Some(num(*qty))])
            }
            Mutation::Fail { msg } => Err(MutErr::Thrown(msg.clone())),
            Mutation::NeedsQuery => {
                tx.row("item", &[("id", n_id(1))])?;
                tx.query()
            }
            Mutation::Noop | Mutation::Unknown => Ok(()),
            Mutation::Multi {
                id,
                owner,
                tag,
                undo,
            } => {
                tx.insert(
                    "item",
                    &[("id", n_id(*id)), ("owner", text(owner)), ("qty", num(1.0))],
                )?;
                tx.insert(
                    "tag",
                    &[
                        ("id", n_id(*tag)),
                        ("itemId", n_id(*id)),
                        ("label", text("m")),
                    ],
                )?;
                tx.update("item", &[("id", n_id(*id)), ("qty", num(2.0))])?;
                if *undo {
                    tx.delete("tag", &[("id", n_id(*tag))])?;
                    tx.delete("item", &[("id", n_id(*id))])?;
                }
                Ok(())
            }
            Mutation::EditCtx { id, v } => tx.update("zone", &[("id", n_id(*id)), ("v", num(*v))]),
            Mutation::ProbeTag { id } => {
                if tx.get("tag", &[n_id(*id)])?.is_some() {
                    tx.update("tag", &[("id", n_id(*id)), ("label", text("seen"))])?;
                }
                Ok(())
            }
        }
    }
}
