//! The room's keyed transaction behind [`Mtx`], and the verdicts a run on the room gives.

use super::*;

// ------------------------------------------------------ the room's transaction

/// The core's keyed transaction behind [`Mtx`].
pub struct RoomTx<'r>(pub MutationTx<'r>);

fn owned_pairs(pairs: &[(&str, Value)]) -> Vec<(String, Value)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn classify(e: Error) -> MutErr {
    if e.code() == ErrorCode::Environment {
        MutErr::Env(e.message().to_string())
    } else {
        MutErr::Refused(e.message().to_string())
    }
}

impl Mtx for RoomTx<'_> {
    fn row(
        &mut self,
        table: &str,
        pk: &[(&str, Value)],
    ) -> Result<Option<Vec<(String, Value)>>, MutErr> {
        self.0.row(table, &owned_pairs(pk)).map_err(classify)
    }
    fn insert(&mut self, table: &str, row: &[(&str, Value)]) -> Result<(), MutErr> {
        self.0.insert(table, &owned_pairs(row)).map_err(classify)
    }
    fn update(&mut self, table: &str, row: &[(&str, Value)]) -> Result<(), MutErr> {
        self.0.update(table, &owned_pairs(row)).map_err(classify)
    }
    fn upsert(&mut self, table: &str, row: &[(&str, Value)]) -> Result<(), MutErr> {
        self.0.upsert(table, &owned_pairs(row)).map_err(classify)
    }
    fn delete(&mut self, table: &str, pk: &[(&str, Value)]) -> Result<(), MutErr> {
        self.0.delete(table, &owned_pairs(pk)).map_err(classify)
    }
    fn get(&mut self, table: &str, pk: &[Value]) -> Result<Option<Image>, MutErr> {
        self.0
            .get(table, pk)
            .map(|r| r.map(|r| r.to_vec()))
            .map_err(classify)
    }
    fn add(&mut self, table: &str, cells: Image) -> Result<(), MutErr> {
        self.0.add(table, Row::from(cells)).map_err(classify)
    }
    fn remove(&mut self, table: &str, cells: &[Value]) -> Result<(), MutErr> {
        self.0.remove(table, cells).map_err(classify)
    }
    fn edit(&mut self, table: &str, old: &[Value], new: &[Option<Value>]) -> Result<(), MutErr> {
        self.0.edit(table, old, new).map_err(classify)
    }
    fn query(&mut self) -> Result<(), MutErr> {
        self.0.query().map_err(classify)
    }
}

// ------------------------------------------------------------------ verdicts

/// A commit-gate deopt (`{reason, table, pk, op?, column?}`).
#[derive(Clone, Debug, PartialEq)]
pub struct GateDeopt {
    /// `writeOutOfScope` | `joinKeyChanged` | `absentReadUnproven`.
    pub reason: String,
    /// The table.
    pub table: String,
    /// The key's pk cells.
    pub pk: Vec<Value>,
    /// `add` | `remove` | `edit` for `writeOutOfScope`.
    pub op: Option<String>,
    /// The column for `joinKeyChanged`.
    pub column: Option<String>,
}

/// What one envelope did.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// An absorbed redelivery.
    Dedup,
    /// Committed.
    Applied,
    /// Consumed with no effect, final.
    Rejected {
        /// The recorded reason.
        reason: Option<String>,
        /// A staging refusal (the message is the core's own).
        refused: bool,
    },
    /// Consumed with no effect; the client re-routes.
    Deopt {
        /// The recorded reason.
        reason: Option<String>,
        /// The gate's verdict, when the gate refused.
        gate: Option<GateDeopt>,
    },
}

impl Verdict {
    /// The journal outcome (`applied` / `rejected` / `deopt`; `dedup` is never journaled).
    pub fn outcome(&self) -> &'static str {
        match self {
            Verdict::Dedup => "dedup",
            Verdict::Applied => "applied",
            Verdict::Rejected { .. } => "rejected",
            Verdict::Deopt { .. } => "deopt",
        }
    }

    /// Whether two verdicts agree (a refusal's message is the core's and not compared).
    pub fn agrees(&self, other: &Verdict) -> bool {
        match (self, other) {
            (Verdict::Rejected { refused: true, .. }, Verdict::Rejected { refused: true, .. }) => {
                true
            }
            _ => self == other,
        }
    }
}

/// The Node shell's `runMutation` against a room: begin; a journaled non-applied
/// outcome replays as `rejectMutation(outcome)` without running; an unknown name is a
/// rejection; an environment shortfall is a `deopt`/`environment`; any other throw is
/// a rejection with its message; else commit (which may deopt under v2).
pub fn run_on_room(
    room: &mut Room,
    client: &str,
    mid: u64,
    name: &str,
    args: &Json,
    journaled: Option<&str>,
) -> Result<Verdict, Error> {
    let args_text = args.to_string();
    if room.begin_mutation(client, mid, Some(name), Some(&args_text))? == Begin::Dedup {
        return Ok(Verdict::Dedup);
    }
    if let Some(kind) = journaled.filter(|k| *k != "applied") {
        room.reject_mutation(Some(kind), None)?;
        return Ok(replayed(kind));
    }
    let Some(m) = Mutation::from_envelope(name, args) else {
        let reason = format!("unknown mutator `{name}`");
        room.reject_mutation(Some("rejected"), Some(&reason))?;
        return Ok(Verdict::Rejected {
            reason: Some(reason),
            refused: false,
        });
    };
    let res = {
        let tx = room.mutation_tx()?;
        m.run(&mut RoomTx(tx))
    };
    match res {
        Err(MutErr::Env(_)) => {
            room.reject_mutation(Some("deopt"), Some("environment"))?;
            Ok(Verdict::Deopt {
                reason: Some("environment".into()),
                gate: None,
            })
        }
        Err(MutErr::Refused(msg)) => {
            room.reject_mutation(Some("rejected"), Some(&msg))?;
            Ok(Verdict::Rejected {
                reason: Some(msg),
                refused: true,
            })
        }
        Err(MutErr::Thrown(msg)) => {
            room.reject_mutation(Some("rejected"), Some(&msg))?;
            Ok(Verdict::Rejected {
                reason: Some(msg),
                refused: false,
            })
        }
        Ok(()) => match room.commit_mutation()? {
            Commit::Applied { .. } => Ok(Verdict::Applied),
            Commit::Deopt(d) => Ok(Verdict::Deopt {
                reason: Some(d.reason.to_string()),
                gate: Some(GateDeopt {
                    reason: d.reason.to_string(),
                    table: d.table.clone(),
                    pk: d.pk.clone(),
                    op: d.op.map(String::from),
                    column: d.column.clone(),
                }),
            }),
        },
    }
}

pub(super) fn replayed(kind: &str) -> Verdict {
    if kind == "deopt" {
        Verdict::Deopt {
            reason: None,
            gate: None,
        }
    } else {
        Verdict::Rejected {
            reason: None,
            refused: false,
        }
    }
}
