/*
 * The room host through the C ABI, with no sockets: this program is the driver. It
 * scripts one session — lease, upstream hello and snapshot, the journal read at boot, a
 * client that inits and subscribes, mutations through a C mutator (applied, rejected
 * with a reason, an environment deopt, an unknown name, a refused write), group commit
 * on the host's own deadline, the journal acknowledgement, a control request — and
 * checks the host's outputs (JSON objects) after every step, then the error paths.
 * Every check is one line of output on failure; the last line is
 * "host: N passed, M failed".
 */
#include "rindle_room.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond)                                                  \
  do {                                                               \
    if (cond) {                                                      \
      passed++;                                                      \
    } else {                                                         \
      failed++;                                                      \
      printf("FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond);       \
    }                                                                \
  } while (0)

/* A text argument from a C string literal. */
#define T(s) (s), strlen(s)

static const char CONFIG[] =
    "{\"docId\":\"doc/1\",\"tokenKeys\":[[\"k1\",\"secret\"]],\"sweepIntervalMs\":50,"
    "\"entropy\":\"0707070707070707070707070707070707070707070707070707070707070707\","
    "\"writes\":{\"ownedTables\":[\"note\"],\"groupCommitMs\":5,\"flushDebounceMs\":20}}";
static const char NHELLO[] =
    "{\"t\":\"nhello\",\"queryId\":1,\"bootId\":\"daemon-1\",\"hello\":{\"epoch\":1,"
    "\"comparatorVersion\":2,\"tables\":[{\"name\":\"note\",\"columns\":[\"id\",\"body\"],"
    "\"primaryKey\":[0]}],\"normalizedFp\":\"d0ffe1b66912a02b\"}}";
static const char NBATCH[] =
    "{\"t\":\"nbatch\",\"queryId\":1,\"batch\":{\"epoch\":1,\"seq\":0,\"normalizedFp\":"
    "\"d0ffe1b66912a02b\",\"cv\":1,\"ops\":[{\"table\":\"note\",\"op\":\"add\",\"row\":"
    "[1,\"a\"]}]}}";
static const char PROGRESS[] = "{\"t\":\"progress\",\"frame\":{\"cvMin\":1}}";
static const char EMPTY_JOURNAL[] =
    "{\"entries\":[],\"bindings\":[],\"flushes\":[],\"maxFlushSeq\":0}";

/* ------------------------------------------------------------------------------------
 * The outputs of the last step, each a JSON object.
 */

#define MAX_OUTPUTS 128
static char *outputs[MAX_OUTPUTS];
static size_t n_outputs;

static void forget_outputs(void) {
  for (size_t i = 0; i < n_outputs; i++) free(outputs[i]);
  n_outputs = 0;
}

/* Polls every output the host has ready. */
static void poll_all(rindle_room_host *host) {
  forget_outputs();
  for (;;) {
    rindle_room_buf out = {0};
    bool defined = false;
    if (rindle_room_host_poll(host, &out, &defined) != RINDLE_ROOM_RESULT_OK) {
      CHECK(!"rindle_room_host_poll failed");
      return;
    }
    if (!defined) {
      CHECK(out.data == NULL && out.len == 0);
      return;
    }
    if (n_outputs < MAX_OUTPUTS) {
      char *copy = malloc(out.len + 1);
      memcpy(copy, out.data, out.len + 1);
      outputs[n_outputs++] = copy;
    }
    rindle_room_buf_free(&out);
  }
}

/* The first output of this step that contains every one of `a`, `b` (NULL: skip). */
static const char *find(const char *a, const char *b) {
  for (size_t i = 0; i < n_outputs; i++) {
    if (strstr(outputs[i], a) && (!b || strstr(outputs[i], b))) return outputs[i];
  }
  return NULL;
}

/* The unsigned number after `"key":` in `json` (0 if absent). */
static uint64_t number(const char *json, const char *key) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  const char *at = json ? strstr(json, pattern) : NULL;
  return at ? strtoull(at + strlen(pattern), NULL, 10) : 0;
}

static int last_error_has(const rindle_room_host *host, const char *part) {
  const char *msg = NULL;
  size_t len = 0;
  if (rindle_room_host_last_error(host, &msg, &len) != RINDLE_ROOM_RESULT_OK) return 0;
  return msg[len] == '\0' && strstr(msg, part) != NULL;
}

static int thread_error_has(const char *part) {
  const char *msg = NULL;
  size_t len = 0;
  if (rindle_room_thread_last_error(&msg, &len) != RINDLE_ROOM_RESULT_OK) return 0;
  return strstr(msg, part) != NULL;
}

/* ------------------------------------------------------------------------------------
 * The C program's side of the host: mutators, the tables check, the backlog.
 */

typedef struct {
  int mutator_calls;
  int tables_calls;
  int backlog_calls;
  char last_user[32];
} app;

static int is(const char *name, size_t len, const char *want) {
  return len == strlen(want) && memcmp(name, want, len) == 0;
}

static uint32_t run_mutator(void *ctx, rindle_room_mutation_tx *tx, const char *name,
                            size_t name_len, const char *args, size_t args_len,
                            const char *user, size_t user_len) {
  app *a = ctx;
  a->mutator_calls++;
  size_t n = user_len < sizeof a->last_user - 1 ? user_len : sizeof a->last_user - 1;
  memcpy(a->last_user, user, n);
  a->last_user[n] = '\0';

  if (is(name, name_len, "addNote")) {
    /* args is the row object itself: {"id":…,"body":…}. */
    if (args == NULL) return RINDLE_ROOM_MUTATOR_FAILED;
    if (rindle_room_mutation_insert(tx, T("note"), args, args_len) != RINDLE_ROOM_RESULT_OK)
      return RINDLE_ROOM_MUTATOR_FAILED;
    rindle_room_buf row = {0};
    bool defined = false;
    CHECK(rindle_room_mutation_row(tx, T("note"), T("{\"id\":2}"), &row, &defined) ==
          RINDLE_ROOM_RESULT_OK);
    CHECK(defined && strcmp(row.data, "{\"id\":2,\"body\":\"b\"}") == 0);
    rindle_room_buf_free(&row);
    return RINDLE_ROOM_MUTATOR_DONE;
  }
  if (is(name, name_len, "retitle")) {
    /* A keep marker leaves the id; the body changes. */
    return rindle_room_mutation_edit(tx, T("note"), T("[1,\"a\"]"),
                                     T("[{\"$keep\":true},\"A\"]")) == RINDLE_ROOM_RESULT_OK
               ? RINDLE_ROOM_MUTATOR_DONE
               : RINDLE_ROOM_MUTATOR_FAILED;
  }
  if (is(name, name_len, "refuse")) {
    CHECK(rindle_room_mutation_reject(tx, T("notes are closed")) == RINDLE_ROOM_RESULT_OK);
    return RINDLE_ROOM_MUTATOR_REJECTED;
  }
  if (is(name, name_len, "search")) {
    CHECK(rindle_room_mutation_query(tx) == RINDLE_ROOM_RESULT_ENVIRONMENT);
    return RINDLE_ROOM_MUTATOR_FAILED;
  }
  if (is(name, name_len, "badRow")) {
    /* Not an object: the core refuses it, with the core's message. */
    rindle_room_result rc = rindle_room_mutation_insert(tx, T("note"), T("[3]"));
    CHECK(rc == RINDLE_ROOM_RESULT_WRITE_REFUSED);
    const char *msg = NULL;
    size_t len = 0;
    CHECK(rindle_room_mutation_last_error(tx, &msg, &len) == RINDLE_ROOM_RESULT_OK);
    CHECK(strstr(msg, "must be an object of column values") != NULL);
    return RINDLE_ROOM_MUTATOR_FAILED;
  }
  return RINDLE_ROOM_MUTATOR_UNKNOWN;
}

static const char *tables_known(void *ctx, const char *json, size_t len) {
  app *a = ctx;
  a->tables_calls++;
  CHECK(len > 0 && json[0] == '[');
  return NULL;
}

static const char *tables_refused(void *ctx, const char *json, size_t len) {
  (void)ctx;
  (void)json;
  (void)len;
  return "this program serves no notes";
}

static void backlog(void *ctx, uint64_t conn, uint64_t *live, uint64_t *snapshot) {
  app *a = ctx;
  a->backlog_calls++;
  (void)conn;
  *live = 0;
  *snapshot = 0;
}

/* ------------------------------------------------------------------------------------
 * The session.
 */

static double now = 1000000;

static void input(rindle_room_host *host, const char *json) {
  rindle_room_result rc = rindle_room_host_input(host, now, json, strlen(json));
  if (rc != RINDLE_ROOM_RESULT_OK) {
    const char *msg = NULL;
    size_t len = 0;
    rindle_room_host_last_error(host, &msg, &len);
    printf("FAILED input %s: %s\n", json, msg);
    failed++;
  }
  poll_all(host);
}

static void conn_frame(rindle_room_host *host, uint64_t conn, const char *text) {
  CHECK(rindle_room_host_conn_frame(host, now, conn, text, strlen(text)) ==
        RINDLE_ROOM_RESULT_OK);
  poll_all(host);
}

/* Advances the clock to the host's deadline and fires it. */
static void fire_deadline(rindle_room_host *host) {
  double at = 0;
  bool defined = false;
  CHECK(rindle_room_host_next_deadline(host, &at, &defined) == RINDLE_ROOM_RESULT_OK);
  CHECK(defined && at >= now);
  if (defined) now = at;
  CHECK(rindle_room_host_timeout(host, now) == RINDLE_ROOM_RESULT_OK);
  poll_all(host);
}

/* Group commit: the append comes on the host's deadline; acknowledges it. */
static void commit_journal(rindle_room_host *host, const char *must_hold) {
  fire_deadline(host);
  const char *append = find("\"t\":\"journalAppend\"", must_hold);
  CHECK(append != NULL);
  char ack[96];
  snprintf(ack, sizeof ack, "{\"t\":\"journalWritten\",\"io\":%llu}",
           (unsigned long long)number(append, "io"));
  input(host, ack);
}

static void push(rindle_room_host *host, uint64_t mid, const char *name, const char *args) {
  char frame[256];
  snprintf(frame, sizeof frame,
           "{\"t\":\"pushMutation\",\"envelope\":{\"clientID\":\"c1\",\"mid\":%llu,"
           "\"name\":\"%s\",\"args\":%s}}",
           (unsigned long long)mid, name, args);
  conn_frame(host, 1, frame);
}

static void session(void) {
  app a = {0};
  rindle_room_host_callbacks cb = {&a, run_mutator, tables_known, backlog};
  rindle_room_host *host = NULL;
  CHECK(rindle_room_host_new(T(CONFIG), &cb, &host) == RINDLE_ROOM_RESULT_OK);
  if (!host) return;

  /* Start: no authority, so straight to the lease. */
  CHECK(rindle_room_host_start(host, now) == RINDLE_ROOM_RESULT_OK);
  poll_all(host);
  CHECK(find("{\"t\":\"mintLease\"}", NULL) != NULL);
  input(host, "{\"t\":\"leaseMinted\",\"token\":\"lease-1\"}");
  const char *open = find("\"t\":\"openUpstream\"", NULL);
  CHECK(open != NULL);
  uint64_t link = number(open, "link");
  char opened[64];
  snprintf(opened, sizeof opened, "{\"t\":\"upstreamOpened\",\"link\":%llu}",
           (unsigned long long)link);
  input(host, opened);
  CHECK(find("\"t\":\"upstreamSend\"", "subscribe") != NULL);
  CHECK(find("\"t\":\"upstreamSend\"", "lease-1") != NULL);

  /* The daemon answers: hello, snapshot, progress. The write plane reads the journal. */
  CHECK(rindle_room_host_upstream_frame(host, now, link, T(NHELLO)) == RINDLE_ROOM_RESULT_OK);
  CHECK(rindle_room_host_upstream_frame(host, now, link, T(NBATCH)) == RINDLE_ROOM_RESULT_OK);
  CHECK(rindle_room_host_upstream_frame(host, now, link, T(PROGRESS)) ==
        RINDLE_ROOM_RESULT_OK);
  poll_all(host);
  CHECK(a.tables_calls == 1);
  const char *read = find("\"t\":\"journalRead\"", NULL);
  CHECK(read != NULL);
  char contents[160];
  snprintf(contents, sizeof contents, "{\"t\":\"journalRead\",\"io\":%llu,\"contents\":%s}",
           (unsigned long long)number(read, "io"), EMPTY_JOURNAL);
  input(host, contents);
  CHECK(find("\"t\":\"live\"", "\"bootId\":\"") != NULL);

  rindle_room_buf status = {0};
  CHECK(rindle_room_host_status(host, &status) == RINDLE_ROOM_RESULT_OK);
  CHECK(strstr(status.data, "\"live\":true") && strstr(status.data, "\"stopped\":false"));
  rindle_room_buf_free(&status);

  /* A client: init, the lmid query, then the notes with a lease token for u1. */
  input(host, "{\"t\":\"connOpened\",\"conn\":1}");
  conn_frame(host, 1, "{\"t\":\"init\",\"clientID\":\"c1\"}");
  conn_frame(host, 1, "{\"t\":\"subscribe\",\"queryId\":0,\"name\":\"_rindle/clientLmid\"}");
  CHECK(find("\"t\":\"send\",\"conn\":1", "nhello") != NULL);
  rindle_room_buf token = {0};
  char opts[256];
  snprintf(opts, sizeof opts,
           "{\"doc\":\"doc/1\",\"ast\":{\"table\":\"note\"},\"sub\":\"u1\",\"kid\":\"k1\","
           "\"key\":\"secret\",\"ttlMs\":600000,\"now\":%.0f}",
           now);
  CHECK(rindle_room_mint_room_token(opts, strlen(opts), &token) == RINDLE_ROOM_RESULT_OK);
  char subscribe[512];
  snprintf(subscribe, sizeof subscribe,
           "{\"t\":\"subscribe\",\"queryId\":1,\"leaseToken\":\"%s\"}", token.data);
  rindle_room_buf_free(&token);
  conn_frame(host, 1, subscribe);
  CHECK(find("\"class\":\"snapshot\"", "[1,\\\"a\\\"]") != NULL);
  CHECK(find("progress", NULL) != NULL);

  /* Applied: fan-out right away, the lmid only once the journal holds it. */
  push(host, 1, "addNote", "{\"id\":2,\"body\":\"b\"}");
  CHECK(a.mutator_calls == 1 && strcmp(a.last_user, "u1") == 0);
  CHECK(find("\"t\":\"send\",\"conn\":1", "[2,\\\"b\\\"]") != NULL);
  CHECK(find("journalAppend", NULL) == NULL);
  commit_journal(host, "\"name\":\"addNote\"");
  CHECK(find("\"t\":\"send\",\"conn\":1", "\\\"c1\\\",1") != NULL);

  push(host, 2, "retitle", "{}");
  CHECK(find("\"t\":\"send\",\"conn\":1", "\\\"A\\\"") != NULL);
  commit_journal(host, "\"name\":\"retitle\"");

  /* Rejections and deopts: the outcome frame at once; the lmid once journaled. */
  push(host, 3, "refuse", "{}");
  CHECK(find("mutationOutcome", "notes are closed") != NULL);
  commit_journal(host, "\"name\":\"refuse\"");
  CHECK(find("\"t\":\"send\",\"conn\":1", "\\\"c1\\\",3") != NULL);
  push(host, 4, "search", "{}");
  CHECK(find("mutationOutcome", "\\\"kind\\\":\\\"deopt\\\"") != NULL);
  CHECK(find("mutationOutcome", "environment") != NULL);
  commit_journal(host, "\"name\":\"search\"");
  push(host, 5, "nope", "{}");
  CHECK(find("mutationOutcome", "unknown mutator `nope`") != NULL);
  commit_journal(host, "\"name\":\"nope\"");
  push(host, 6, "badRow", "{}");
  CHECK(find("mutationOutcome", "must be an object of column values") != NULL);
  commit_journal(host, "\"name\":\"badRow\"");
  CHECK(find("\"t\":\"send\",\"conn\":1", "\\\"c1\\\",6") != NULL);
  CHECK(a.backlog_calls > 0);

  /* The control plane. */
  input(host, "{\"t\":\"control\",\"id\":9,\"request\":{\"kind\":\"stats\"}}");
  CHECK(find("\"t\":\"controlReply\",\"id\":9", NULL) != NULL);

  /* Bad inputs are refused with the reason; the host carries on. */
  CHECK(rindle_room_host_input(host, now, T("{")) == RINDLE_ROOM_RESULT_MALFORMED_INPUT);
  CHECK(last_error_has(host, "input:"));
  CHECK(rindle_room_host_input(host, now, T("{\"t\":\"teleport\"}")) ==
        RINDLE_ROOM_RESULT_MALFORMED_INPUT);
  CHECK(last_error_has(host, "unknown kind"));
  CHECK(rindle_room_host_timeout(host, -1) == RINDLE_ROOM_RESULT_INVALID_ARGUMENT);
  CHECK(last_error_has(host, "`now`"));
  CHECK(rindle_room_host_conn_frame(host, now, 1, "\xff", 1) ==
        RINDLE_ROOM_RESULT_INVALID_UTF8);
  rindle_room_buf unused = {0};
  CHECK(rindle_room_host_poll(host, &unused, NULL) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);

  /* A client frame that is not JSON is ignored, as the published shell does; the client stays.
     The only output is the host's debug line saying so. */
  conn_frame(host, 1, "not json");
  for (size_t i = 0; i < n_outputs; i++) CHECK(strstr(outputs[i], "\"log\"") != NULL);
  CHECK(n_outputs <= 1);
  push(host, 7, "nope", "{}");
  CHECK(find("mutationOutcome", "\"mid\\\":7") != NULL);

  input(host, "{\"t\":\"connClosed\",\"conn\":1}");
  forget_outputs();
  rindle_room_host_free(host);
}

/* Starts a host and hands it its first snapshot on upstream link 1. */
static void first_snapshot(rindle_room_host *host) {
  rindle_room_host_start(host, now);
  input(host, "{\"t\":\"leaseMinted\",\"token\":\"lease-1\"}");
  input(host, "{\"t\":\"upstreamOpened\",\"link\":1}");
  CHECK(rindle_room_host_upstream_frame(host, now, 1, T(NHELLO)) == RINDLE_ROOM_RESULT_OK);
  CHECK(rindle_room_host_upstream_frame(host, now, 1, T(NBATCH)) == RINDLE_ROOM_RESULT_OK);
  poll_all(host);
}

/* A tables callback that refuses kills the incarnation with its message. */
static void refused_tables(void) {
  app a = {0};
  rindle_room_host_callbacks cb = {&a, run_mutator, tables_refused, NULL};
  rindle_room_host *host = NULL;
  CHECK(rindle_room_host_new(T(CONFIG), &cb, &host) == RINDLE_ROOM_RESULT_OK);
  if (!host) return;
  first_snapshot(host);
  CHECK(find("\"t\":\"log\"", "this program serves no notes") != NULL);
  CHECK(find("\"t\":\"live\"", NULL) == NULL);
  forget_outputs();
  rindle_room_host_free(host);
}

/* Fires every deadline up to `until` (ms); true when an output holding both `a` and `b`
   came on the way. */
static bool advance_seeing(rindle_room_host *host, double until, const char *a, const char *b) {
  bool seen = false;
  for (;;) {
    double at = 0;
    bool defined = false;
    CHECK(rindle_room_host_next_deadline(host, &at, &defined) == RINDLE_ROOM_RESULT_OK);
    if (!defined || at > until) break;
    now = at;
    CHECK(rindle_room_host_timeout(host, now) == RINDLE_ROOM_RESULT_OK);
    poll_all(host);
    if (find(a, b)) seen = true;
  }
  now = until;
  return seen;
}

/* Silent links: the host pings a link silent for a third of its timeout and takes it as
   dead past it; a pong (`upstreamHeard`, `connHeard`) keeps it. */
static void silent_links(void) {
  app a = {0};
  rindle_room_host_callbacks cb = {&a, NULL, tables_known, NULL};
  rindle_room_host *host = NULL;
  CHECK(rindle_room_host_new(T("{\"docId\":\"doc/1\",\"tokenKeys\":[[\"k1\",\"secret\"]],"
                               "\"upstreamSilenceTimeoutMs\":3000,\"silenceTimeoutMs\":3000}"),
                             &cb, &host) == RINDLE_ROOM_RESULT_OK);
  if (!host) return;
  first_snapshot(host);
  CHECK(rindle_room_host_upstream_frame(host, now, 1, T(PROGRESS)) == RINDLE_ROOM_RESULT_OK);
  poll_all(host);
  input(host, "{\"t\":\"connOpened\",\"conn\":1}");
  conn_frame(host, 1, "{\"t\":\"init\",\"clientID\":\"c1\"}");
  double start = now;
  CHECK(advance_seeing(host, start + 1500, "{\"t\":\"pingUpstream\",\"link\":1}", NULL));
  now = start + 1500;
  CHECK(advance_seeing(host, start + 1500, "x", NULL) == false);
  /* Both answer; then both go dark. */
  input(host, "{\"t\":\"upstreamHeard\",\"link\":1}");
  input(host, "{\"t\":\"connHeard\",\"conn\":1}");
  CHECK(advance_seeing(host, start + 4400, "closeUpstream", NULL) == false);
  CHECK(advance_seeing(host, start + 4600, "closeUpstream", NULL));
  CHECK(advance_seeing(host, start + 6000, "\"t\":\"close\",\"conn\":1", "1011"));
  forget_outputs();
  rindle_room_host_free(host);
}

static void errors(void) {
  app a = {0};
  rindle_room_host_callbacks cb = {&a, NULL, NULL, NULL};
  rindle_room_host *host = NULL;
  CHECK(rindle_room_host_new(T(CONFIG), &cb, &host) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(host == NULL && thread_error_has("run_mutator"));
  CHECK(rindle_room_host_new(T("{\"tokenKeys\":[]}"), &cb, &host) ==
        RINDLE_ROOM_RESULT_MALFORMED_INPUT);
  CHECK(thread_error_has("docId"));
  CHECK(rindle_room_host_new(T("{"), &cb, &host) == RINDLE_ROOM_RESULT_MALFORMED_INPUT);
  CHECK(rindle_room_host_new(T(CONFIG), NULL, &host) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(rindle_room_host_start(NULL, now) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(thread_error_has("no host"));
  CHECK(rindle_room_mutation_insert(NULL, T("note"), T("{}")) ==
        RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(thread_error_has("no transaction"));
  rindle_room_host_free(NULL);

  /* A read-only host needs no mutator. */
  CHECK(rindle_room_host_new(T("{\"docId\":\"d\",\"tokenKeys\":[[\"k\",\"s\"]]}"), &cb,
                             &host) == RINDLE_ROOM_RESULT_OK);
  CHECK(rindle_room_host_start(host, now) == RINDLE_ROOM_RESULT_OK);
  poll_all(host);
  CHECK(find("mintLease", NULL) != NULL);
  forget_outputs();
  rindle_room_host_free(host);
}

/* A C driver that speaks HTTP classifies the authority's replies with the host's
 * mapping and hands the result back as an `authority` input. */
static void authority_replies(void) {
  static const struct {
    uint32_t call;
    uint16_t status;
    const char *body, *want;
  } cases[] = {
      {RINDLE_ROOM_AUTHORITY_CLAIM, 200, "{\"epoch\":3}", "{\"claimed\":3}"},
      {RINDLE_ROOM_AUTHORITY_LMIDS, 200, "{\"lmids\":{\"c1\":2}}", "{\"lmids\":{\"c1\":2}}"},
      {RINDLE_ROOM_AUTHORITY_APPLY, 200, "{\"cv\":7}",
       "{\"applied\":{\"kind\":\"ok\",\"applied\":true,\"cv\":7}}"},
      {RINDLE_ROOM_AUTHORITY_APPLY, 409, "{\"error\":\"fenced\",\"currentEpoch\":4}",
       "{\"applied\":{\"kind\":\"fenced\",\"currentEpoch\":4}}"},
      {RINDLE_ROOM_AUTHORITY_APPLY, 503, "down", "{\"retryable\":\"POST http://a/x: 503 down\"}"},
      {RINDLE_ROOM_AUTHORITY_APPLY, 500, "batch identity mismatch",
       "{\"fatal\":\"POST http://a/x: 500 batch identity mismatch\"}"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rindle_room_buf out = {0};
    CHECK(rindle_room_authority_reply(cases[i].call, T("http://a/x"), cases[i].status,
                                      T(cases[i].body), &out) == RINDLE_ROOM_RESULT_OK);
    CHECK(out.data != NULL && strcmp(out.data, cases[i].want) == 0);
    rindle_room_buf_free(&out);
  }
  rindle_room_buf out = {0};
  CHECK(rindle_room_authority_reply(9, T("u"), 200, T("{}"), &out) ==
        RINDLE_ROOM_RESULT_INVALID_ARGUMENT);
  CHECK(thread_error_has("RINDLE_ROOM_AUTHORITY_CLAIM"));
  CHECK(rindle_room_authority_reply(RINDLE_ROOM_AUTHORITY_CLAIM, T("u"), 200, NULL, 0, NULL) ==
        RINDLE_ROOM_RESULT_NULL_ARGUMENT);
}

int main(void) {
  session();
  refused_tables();
  silent_links();
  errors();
  authority_replies();
  printf("host: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
