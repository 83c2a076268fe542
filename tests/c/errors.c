/*
 * The error paths of the C ABI: NULL pointers, bytes that are not UTF-8, impossible
 * lengths, a poisoned room, the room's own refusals, the `undefined` convention,
 * out-parameters left untouched on failure, where messages go, and per-thread errors.
 * Every check is one line of output on failure; the last line is
 * "errors: N passed, M failed".
 */
#include "rindle_room.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
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

static const char HELLO[] =
    "{\"epoch\":1,\"comparatorVersion\":2,\"tables\":[{\"name\":\"note\",\"columns\":"
    "[\"id\",\"body\"],\"primaryKey\":[0]}],\"normalizedFp\":\"d0ffe1b66912a02b\"}";
static const char SNAPSHOT[] =
    "{\"epoch\":1,\"seq\":0,\"normalizedFp\":\"d0ffe1b66912a02b\",\"cv\":1,\"ops\":"
    "[{\"table\":\"note\",\"op\":\"add\",\"row\":[1,\"a\"]}]}";
/* Adds key 1 again: contradicts the store and poisons it. */
static const char DUPLICATE_ADD[] =
    "{\"epoch\":1,\"seq\":1,\"normalizedFp\":\"d0ffe1b66912a02b\",\"cv\":2,\"ops\":"
    "[{\"table\":\"note\",\"op\":\"add\",\"row\":[1,\"x\"]}]}";
static const char AST[] = "{\"table\":\"note\"}";

/* Sentinels: out-parameters must still hold them after a failed call. */
static const char sentinel_byte = 'S';
static const rindle_room_buf SENTINEL = {&sentinel_byte, 77, 78};

static int untouched(rindle_room_buf b) {
  return b.data == &sentinel_byte && b.len == 77 && b.capacity == 78;
}

static int has(const char *msg, size_t len, const char *part) {
  size_t n = strlen(part);
  for (size_t i = 0; i + n <= len; i++) {
    if (memcmp(msg + i, part, n) == 0) return 1;
  }
  return 0;
}

/* Whether the room's last error contains `part`. */
static int room_error_has(const rindle_room *room, const char *part) {
  const char *msg = NULL;
  size_t len = 0;
  if (rindle_room_last_error(room, &msg, &len) != RINDLE_ROOM_RESULT_OK) return 0;
  return msg[len] == '\0' && has(msg, len, part);
}

/* Whether this thread's last error contains `part`. */
static int thread_error_has(const char *part) {
  const char *msg = NULL;
  size_t len = 0;
  if (rindle_room_thread_last_error(&msg, &len) != RINDLE_ROOM_RESULT_OK) return 0;
  return msg[len] == '\0' && has(msg, len, part);
}

static rindle_room *open_live(void) {
  rindle_room *room = NULL;
  rindle_room_buf out = {0};
  CHECK(rindle_room_open(T(HELLO), 30000, &room) == RINDLE_ROOM_RESULT_OK);
  CHECK(rindle_room_apply(room, T(SNAPSHOT), &out) == RINDLE_ROOM_RESULT_OK);
  rindle_room_buf_free(&out);
  return room;
}

static void version_and_names(void) {
  CHECK(strcmp(RINDLE_ROOM_VERSION, rindle_room_version()) == 0);
  CHECK(RINDLE_ROOM_VERSION_MAJOR >= 0 && RINDLE_ROOM_VERSION_MINOR >= 0);
  CHECK(strcmp(rindle_room_result_name(RINDLE_ROOM_RESULT_OK), "OK") == 0);
  CHECK(strcmp(rindle_room_result_name(RINDLE_ROOM_RESULT_NULL_ARGUMENT), "NULL_ARGUMENT") == 0);
  CHECK(strcmp(rindle_room_result_name(RINDLE_ROOM_RESULT_POISONED), "POISONED") == 0);
  CHECK(strcmp(rindle_room_result_name(100), "MALFORMED_INPUT") == 0);
  CHECK(strcmp(rindle_room_result_name(140), "TOKEN_REFUSED") == 0);
  CHECK(strcmp(rindle_room_result_name(5), "UNKNOWN") == 0);
  CHECK(strcmp(rindle_room_result_name(UINT32_MAX), "UNKNOWN") == 0);
  CHECK(strlen(rindle_room_result_message(RINDLE_ROOM_RESULT_PANIC)) > 0);
  CHECK(strcmp(rindle_room_result_message(4242), "unknown result code") == 0);
}

static void frees_accept_null(void) {
  rindle_room_free(NULL);
  rindle_room_buf_free(NULL);
  rindle_room_buf empty = {0};
  rindle_room_buf_free(&empty);
  rindle_room_buf b = {0};
  CHECK(rindle_room_json_number(0.5, &b) == RINDLE_ROOM_RESULT_OK);
  CHECK(b.len == 3 && strcmp(b.data, "0.5") == 0);
  rindle_room_buf_free(&b);
  CHECK(b.data == NULL && b.len == 0);
  rindle_room_buf_free(&b); /* freeing through the same struct twice is a no-op */
}

static void null_pointers(void) {
  rindle_room *room = (rindle_room *)&sentinel_byte;
  CHECK(rindle_room_open(NULL, 0, 30000, &room) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(room == (rindle_room *)&sentinel_byte);
  CHECK(thread_error_has("rindle_room_open: `hello_json` is NULL"));
  CHECK(rindle_room_open(T(HELLO), 30000, NULL) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(thread_error_has("`out_room` is NULL"));

  /* A NULL room is "no room", for every kind of method. */
  rindle_room_buf out = SENTINEL;
  double num = -1;
  bool flag = true;
  CHECK(rindle_room_apply(NULL, T(SNAPSHOT), &out) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(untouched(out) && thread_error_has("rindle_room_apply: no room"));
  CHECK(rindle_room_head_cv(NULL, &num) == RINDLE_ROOM_RESULT_NULL_ARGUMENT && num == -1);
  CHECK(rindle_room_is_live(NULL, &flag) == RINDLE_ROOM_RESULT_NULL_ARGUMENT && flag);
  CHECK(thread_error_has("rindle_room_is_live: no room"));
  CHECK(rindle_room_acked_lmid(NULL, T("c1"), &num) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(rindle_room_flush_conflict(NULL, T("[]"), &out) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  const char *msg = NULL;
  size_t len = 0;
  CHECK(rindle_room_last_error(NULL, &msg, &len) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(rindle_room_thread_last_error(NULL, &len) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);

  room = open_live();
  /* NULL required arguments and out-parameters on a live room. */
  CHECK(rindle_room_apply(room, NULL, 5, &out) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(room_error_has(room, "rindle_room_apply: `batch_json` is NULL"));
  CHECK(rindle_room_commit_all(room, NULL) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(room_error_has(room, "`out_json` is NULL"));
  CHECK(rindle_room_subscribe(room, NULL, 0, 1, T(AST), 0, &out) ==
        RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(room_error_has(room, "`sub` is NULL"));
  CHECK(rindle_room_subscribe(room, T("c1"), 1, T(AST), 0, NULL) ==
        RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(rindle_room_cv(room, &num, NULL) == RINDLE_ROOM_RESULT_NULL_ARGUMENT && num == -1);
  CHECK(rindle_room_tx_add(room, NULL, 0, T("[1]")) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(rindle_room_mint_room_token(NULL, 0, &out) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  CHECK(untouched(out));
  /* The refused calls changed nothing: no subscriber was attached. */
  CHECK(rindle_room_subscriber_count(room, &num) == RINDLE_ROOM_RESULT_OK && num == 0);
  rindle_room_free(room);
}

static void bad_text(void) {
  rindle_room *room = open_live();
  rindle_room_buf out = SENTINEL;
  double num = -1;
  /* Bytes that are not UTF-8. */
  CHECK(rindle_room_apply(room, T("{\"epoch\":\xff}"), &out) == RINDLE_ROOM_RESULT_INVALID_UTF8);
  CHECK(untouched(out) && room_error_has(room, "`batch_json` is not valid UTF-8"));
  CHECK(rindle_room_subscribe(room, T("c\xc3"), 1, T(AST), 0, &out) ==
        RINDLE_ROOM_RESULT_INVALID_UTF8);
  CHECK(room_error_has(room, "`sub` is not valid UTF-8 (bad byte at offset 1)"));
  CHECK(rindle_room_durable_lmid(room, T("\xed\xa0\x80"), &num) ==
        RINDLE_ROOM_RESULT_INVALID_UTF8); /* a UTF-16 surrogate */
  CHECK(num == -1);
  CHECK(rindle_room_open(T("{\"epoch\":\xc0\xaf}"), 1, &room) == RINDLE_ROOM_RESULT_INVALID_UTF8);
  CHECK(thread_error_has("`hello_json` is not valid UTF-8"));
  /* A length that cuts a multi-byte character in half. */
  const char *sub = "caf\xc3\xa9";
  CHECK(rindle_room_subscribe(room, sub, 4, 1, T(AST), 0, &out) ==
        RINDLE_ROOM_RESULT_INVALID_UTF8);
  /* The whole character is fine. */
  CHECK(rindle_room_subscribe(room, sub, 5, 1, T(AST), 0, &out) == RINDLE_ROOM_RESULT_OK);
  rindle_room_buf_free(&out);

  /* Impossible lengths. */
  out = SENTINEL;
  CHECK(rindle_room_apply(room, SNAPSHOT, SIZE_MAX, &out) == RINDLE_ROOM_RESULT_INVALID_LENGTH);
  CHECK(untouched(out) && room_error_has(room, "impossible length"));
  CHECK(rindle_room_open(HELLO, (size_t)PTRDIFF_MAX + 1, 1, &room) ==
        RINDLE_ROOM_RESULT_INVALID_LENGTH);
  CHECK(rindle_room_reject_mutation(room, NULL, 3, NULL, 0) == RINDLE_ROOM_RESULT_INVALID_LENGTH);
  CHECK(room_error_has(room, "`kind` is NULL but its length is 3"));
  CHECK(rindle_room_begin_mutation(room, T("c1"), 1, NULL, 0, NULL, 9, &out) ==
        RINDLE_ROOM_RESULT_INVALID_LENGTH);
  /* Lengths that fit but are wrong: the room sees text that is not the JSON. */
  CHECK(rindle_room_apply(room, SNAPSHOT, sizeof SNAPSHOT - 5, &out) ==
        RINDLE_ROOM_RESULT_MALFORMED_INPUT);
  CHECK(rindle_room_apply(room, SNAPSHOT, sizeof SNAPSHOT, &out) == /* counts the NUL */
        RINDLE_ROOM_RESULT_MALFORMED_INPUT);
  CHECK(room_error_has(room, "malformed upstream batch"));
  CHECK(rindle_room_apply(room, SNAPSHOT, 0, &out) == RINDLE_ROOM_RESULT_MALFORMED_INPUT);
  CHECK(untouched(out));
  CHECK(rindle_room_head_cv(room, &num) == RINDLE_ROOM_RESULT_OK && num == 1);
  rindle_room_free(room);
}

static void room_refusals(void) {
  rindle_room *room = NULL;
  rindle_room_buf out = SENTINEL;
  /* A hello that breaks a rule. */
  CHECK(rindle_room_open(T("{\"epoch\":1,\"comparatorVersion\":1,\"tables\":[],"
                           "\"normalizedFp\":\"x\"}"), 1, &room) ==
        RINDLE_ROOM_RESULT_INVALID_HELLO);
  CHECK(room == NULL);
  CHECK(rindle_room_open(T(HELLO), -1, &room) == RINDLE_ROOM_RESULT_INVALID_ARGUMENT);
  CHECK(thread_error_has("idleTtlMs"));
  CHECK(rindle_room_open(T(HELLO), 30000, &room) == RINDLE_ROOM_RESULT_OK && room != NULL);
  /* Before the snapshot: not live; the refusal's message is the contract's. */
  CHECK(rindle_room_subscribe(room, T("c1"), 1, T(AST), 0, &out) == RINDLE_ROOM_RESULT_NOT_LIVE);
  CHECK(untouched(out));
  CHECK(rindle_room_enable_writes(room, T("[\"note\"]")) == RINDLE_ROOM_RESULT_NOT_LIVE);
  CHECK(room_error_has(room, "enableWrites: store is not live"));
  CHECK(rindle_room_apply(room, T(SNAPSHOT), &out) == RINDLE_ROOM_RESULT_OK);
  rindle_room_buf_free(&out);
  out = SENTINEL;
  CHECK(rindle_room_subscribe(room, T("c1"), 1, T("{\"table\":\"nope\"}"), 0, &out) ==
        RINDLE_ROOM_RESULT_UNSUPPORTED_QUERY);
  CHECK(room_error_has(room, "subscribe: Query(UnknownTable") && untouched(out));
  CHECK(rindle_room_subscribe(room, T("c1"), -1, T(AST), 0, &out) ==
        RINDLE_ROOM_RESULT_INVALID_ARGUMENT);
  CHECK(rindle_room_begin_mutation(room, T("c1"), 1, NULL, 0, NULL, 0, &out) ==
        RINDLE_ROOM_RESULT_WRONG_STATE);
  /* The last error stays until the next failure. */
  double num = 0;
  CHECK(rindle_room_head_cv(room, &num) == RINDLE_ROOM_RESULT_OK);
  CHECK(room_error_has(room, "enable"));
  /* Tokens. */
  CHECK(rindle_room_verify_room_token(T("rt1.x.y"), T("{\"doc\":\"d\",\"keys\":{},\"now\":0}"),
                                      &out) == RINDLE_ROOM_RESULT_TOKEN_REFUSED);
  CHECK(thread_error_has("lease token refused:") && untouched(out));
  CHECK(rindle_room_scope_specs_hash(T("[1,"), &out) == RINDLE_ROOM_RESULT_MALFORMED_INPUT);
  rindle_room_free(room);
}

static void undefined_results(void) {
  rindle_room *room = NULL;
  double cv = -1;
  bool defined = true;
  CHECK(rindle_room_open(T(HELLO), 30000, &room) == RINDLE_ROOM_RESULT_OK);
  CHECK(rindle_room_cv(room, &cv, &defined) == RINDLE_ROOM_RESULT_OK);
  CHECK(!defined && cv == 0);
  rindle_room_buf out = {0};
  CHECK(rindle_room_apply(room, T(SNAPSHOT), &out) == RINDLE_ROOM_RESULT_OK);
  rindle_room_buf_free(&out);
  CHECK(rindle_room_cv(room, &cv, &defined) == RINDLE_ROOM_RESULT_OK && defined && cv == 1);
  CHECK(rindle_room_enable_writes(room, T("[\"note\"]")) == RINDLE_ROOM_RESULT_OK);
  out = SENTINEL;
  defined = true;
  CHECK(rindle_room_begin_flush(room, &out, &defined) == RINDLE_ROOM_RESULT_OK);
  CHECK(!defined && out.data == NULL && out.len == 0);
  CHECK(rindle_room_begin_mutation(room, T("c1"), 1, NULL, 0, NULL, 0, &out) ==
        RINDLE_ROOM_RESULT_OK);
  CHECK(strcmp(out.data, "{\"begin\":\"tx\"}") == 0);
  rindle_room_buf_free(&out);
  out = SENTINEL;
  CHECK(rindle_room_tx_get(room, T("note"), T("[2]"), &out, &defined) == RINDLE_ROOM_RESULT_OK);
  CHECK(!defined && out.data == NULL);
  CHECK(rindle_room_tx_get(room, T("note"), T("[1]"), &out, &defined) == RINDLE_ROOM_RESULT_OK);
  CHECK(defined && strcmp(out.data, "[1,\"a\"]") == 0 && out.len == 7);
  rindle_room_buf_free(&out);
  CHECK(rindle_room_reject_mutation(room, NULL, 0, NULL, 0) == RINDLE_ROOM_RESULT_OK);
  rindle_room_free(room);
}

static void poisoned_room(void) {
  rindle_room *room = open_live();
  rindle_room_buf out = {0};
  bool flag = false;
  CHECK(rindle_room_subscribe(room, T("c1"), 1, T(AST), 0, &out) == RINDLE_ROOM_RESULT_OK);
  rindle_room_buf_free(&out);
  out = SENTINEL;
  CHECK(rindle_room_apply(room, T(DUPLICATE_ADD), &out) == RINDLE_ROOM_RESULT_POISONED);
  CHECK(untouched(out) && room_error_has(room, "poison"));
  CHECK(rindle_room_is_poisoned(room, &flag) == RINDLE_ROOM_RESULT_OK && flag);
  CHECK(rindle_room_is_live(room, &flag) == RINDLE_ROOM_RESULT_OK && !flag);
  /* Every later input is refused with a code, never a crash. */
  rindle_room_result rc = rindle_room_apply(room, T(SNAPSHOT), &out);
  CHECK(rc == RINDLE_ROOM_RESULT_POISONED || rc == RINDLE_ROOM_RESULT_NOT_LIVE);
  CHECK(rindle_room_subscribe(room, T("c2"), 1, T(AST), 0, &out) != RINDLE_ROOM_RESULT_OK);
  CHECK(room_error_has(room, "subscribe: Query(StoreNotLive)") && untouched(out));
  CHECK(rindle_room_enable_writes(room, T("[\"note\"]")) != RINDLE_ROOM_RESULT_OK);
  CHECK(rindle_room_commit_all(room, &out) == RINDLE_ROOM_RESULT_OK);
  CHECK(strcmp(out.data, "[]") == 0);
  rindle_room_buf_free(&out);
  rindle_room_free(room);
}

/* Distinct rooms on distinct threads, and each thread's own last error. */
static void *worker(void *arg) {
  const char *sub = arg;
  rindle_room *room = NULL;
  rindle_room_buf out = {0};
  int ok = 1;
  for (int i = 0; i < 50 && ok; i++) {
    ok = rindle_room_open(T(HELLO), 30000, &room) == RINDLE_ROOM_RESULT_OK &&
         rindle_room_apply(room, T(SNAPSHOT), &out) == RINDLE_ROOM_RESULT_OK;
    rindle_room_buf_free(&out);
    ok = ok && rindle_room_subscribe(room, sub, strlen(sub), 1, T(AST), i, &out) ==
                   RINDLE_ROOM_RESULT_OK;
    rindle_room_buf_free(&out);
    ok = ok && rindle_room_open(T(sub), 1, NULL) == RINDLE_ROOM_RESULT_NULL_ARGUMENT;
    rindle_room_free(room);
    room = NULL;
  }
  ok = ok && thread_error_has("`out_room` is NULL");
  return ok ? arg : NULL;
}

static void threads(void) {
  CHECK(rindle_room_scope_specs_hash(T("[1,"), NULL) == RINDLE_ROOM_RESULT_NULL_ARGUMENT);
  pthread_t a, b;
  char sa[] = "thread-a", sb[] = "thread-b";
  void *ra = NULL, *rb = NULL;
  CHECK(pthread_create(&a, NULL, worker, sa) == 0);
  CHECK(pthread_create(&b, NULL, worker, sb) == 0);
  CHECK(pthread_join(a, &ra) == 0 && ra == sa);
  CHECK(pthread_join(b, &rb) == 0 && rb == sb);
  /* The other threads' failures did not touch this thread's last error. */
  CHECK(thread_error_has("rindle_room_scope_specs_hash: `out_hash` is NULL"));
}

int main(void) {
  version_and_names();
  frees_accept_null();
  null_pointers();
  bad_text();
  room_refusals();
  undefined_results();
  poisoned_room();
  threads();
  printf("errors: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
