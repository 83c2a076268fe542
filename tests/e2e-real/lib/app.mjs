// The test application both tiers share: the schema (matching migrations/0001_init.sql of the
// project the runner writes), the one realtime-labelled named query, and the predicted mutators.
// The room serves the profile "board": every issue row of the database; its doc is "board/main".
import {
  createSchema,
  defineQuery,
  newQueryBuilder,
  shared,
  string,
  table,
} from "@rindle/client";

export const issue = table("issue")
  .columns({ id: string(), title: string(), status: string() })
  .primaryKey("id");
export const comment = table("comment")
  .columns({ id: string(), issueId: string(), body: string() })
  .primaryKey("id");
export const schema = createSchema({ tables: [issue, comment] });
export const q = newQueryBuilder(schema);

export const ROOM_PROFILE = "board";
export const ROOM_KEY = "main";
export const ROOM_DOC = `${ROOM_PROFILE}/${ROOM_KEY}`;

/** The SQL the runner applies as the project's first migration. */
export const MIGRATION_SQL = [
  "CREATE TABLE IF NOT EXISTS issue (id TEXT NOT NULL, title TEXT NOT NULL, status TEXT NOT NULL, PRIMARY KEY (id));",
  "CREATE TABLE IF NOT EXISTS comment (id TEXT NOT NULL, issueId TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (id));",
  "CREATE INDEX IF NOT EXISTS comment_issue ON comment (issueId);",
  "",
].join("\n");

/** Seed rows, inserted with `rindle sql` once the fleet is up. */
export const SEED_SQL =
  "INSERT INTO issue (id, title, status) VALUES ('seed-1', 'first seeded issue', 'open'), " +
  "('seed-2', 'second seeded issue', 'open'); " +
  "INSERT INTO comment (id, issueId, body) VALUES ('c-1', 'seed-1', 'a seeded comment')";

/** Every issue, by id: the query the clients subscribe to, served by the room. */
export const issuesQuery = defineQuery(
  "issues",
  () => q.issue.orderBy("id", "asc"),
  { realtime: { room: ROOM_PROFILE, args: () => ({}) } },
);

/** The room profile the API server registers (realtime.rooms). */
export const roomProfiles = {
  [ROOM_PROFILE]: {
    key: () => ROOM_KEY,
    footprint: () => q.issue,
  },
};

const argsOf = (fields) => ({
  parse(raw) {
    if (typeof raw !== "object" || raw === null) throw new Error("args must be an object");
    for (const f of fields) {
      if (typeof raw[f] !== "string") throw new Error(`args.${f} must be a string`);
    }
    return raw;
  },
});

/** The predicted mutators. The room's authoritative twins (declarative, in the room's config, or
 *  JavaScript for the Node shell) have the same names and refuse the title "spam", which these
 *  predictions accept: that is the rejection the test provokes. */
export const mutators = {
  createIssue: shared(argsOf(["id", "title"]), function* (tx, a) {
    yield tx.insert("issue", { id: a.id, title: a.title, status: "open" });
  }),
  setTitle: shared(argsOf(["id", "title"]), function* (tx, a) {
    yield tx.update("issue", { id: a.id, title: a.title });
  }),
};

export const ROOM_MUTATOR_NAMES = Object.keys(mutators);
