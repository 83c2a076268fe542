//! Declarative mutators from the config file: `[mutators.<name>]` tables whose `steps`
//! read rows, check conditions against the args and the authenticated user, and write
//! rows with values taken from the args, the user, rows read earlier and literals.
//!
//! ```toml
//! [mutators.addNote]
//! steps = [
//!   { require = "args.id", type = "integer" },
//!   { read = "note", key = { id = "$args.id" }, as = "existing" },
//!   { check = "absent", value = "$existing", reason = "note already exists" },
//!   { check = "eq", left = "$args.owner", right = "$user", reason = "you can only add your own notes" },
//!   { insert = "note", row = { id = "$args.id", body = "$args.body", owner = "$user" } },
//! ]
//! ```
//!
//! The format is documented in full in `docs/mutators.md`. In short:
//!
//! - **Values.** A string starting with `$` is a reference: `$args` / `$args.a.b` /
//!   `$args.list[0]` (paths into the JSON args), `$user` (the authenticated subject),
//!   `$<alias>` / `$<alias>.<column>` (a row read earlier), `$null`. A trailing `?`
//!   (`$args.note?`) makes a missing value `null` instead of a rejection. `$$` starts a
//!   literal string beginning with `$`. Anything else is a literal; arrays and inline
//!   tables are JSON arrays and objects whose members are values too.
//! - **Steps.** `require` (an argument exists, optionally with a `type`), `read` (one row
//!   by primary key, bound to an alias), `check` (`eq`, `ne`, `lt`, `le`, `gt`, `ge`,
//!   `in`, `is_null`, `not_null`, `present`, `absent`), and the writes `insert`, `update`,
//!   `upsert`, `delete` (the keyed [`MutationTx`] methods).
//! - **Failures.** A failed check rejects with its `reason`; a missing or mistyped
//!   argument rejects with a message naming it; a write the room refuses rejects with the
//!   room's message. Nothing is applied on a rejection.
//!
//! A spec is checked in three stages: its shape when the TOML is parsed
//! ([`MutatorSpec`]'s `Deserialize`), its references when it is compiled ([`compile`]:
//! every `$alias` names a row read by an earlier step), and its table and column names
//! against the room's schema with [`validate`]. The schema arrives with the upstream
//! hello, after the config is loaded, so the server calls [`validate`] once the hello is
//! known (before it enables writes); a spec that was never validated still fails safely,
//! because the room refuses unknown tables and columns at run time.
//!
//! Declarative mutators are deterministic: they read nothing but the transaction, the
//! args and the user — no clock, no randomness — so journal replay re-runs them exactly.
//!
//! | file | owns |
//! |---|---|
//! | `spec.rs` | [`MutatorSpec`] and [`Step`]: the parsed form of a spec |
//! | `parse.rs` | TOML to steps: step kinds, their keys, their operands |
//! | `values.rs` | value expressions: `$args…`, `$user`, `$<alias>.<column>`, literals |
//! | `check.rs` | [`compile`] (references) and [`validate`] (the room's schema) |
//! | `error.rs` | [`SpecError`]: why a spec was refused, at any stage |
//! | `evaluate.rs` | running a [`DeclarativeMutator`] against a [`MutationTx`] |
//!
//! [`MutationTx`]: rindle_room_core::MutationTx

mod check;
mod error;
mod evaluate;
mod parse;
mod spec;
mod values;

pub use check::{compile, validate, DeclarativeMutator};
pub use error::{SchemaMismatch, SpecError};
pub(crate) use evaluate::{describe_json, object_to_row};
pub use spec::{MutatorSpec, Step};

/// The largest integer a wire number (an IEEE-754 double) holds exactly: 2^53 − 1.
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The indefinite article for `word`.
fn a(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}
