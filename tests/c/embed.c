/*
 * Embedding the room in a C host: the loop of the header's "THE LOOP A HOST RUNS".
 *
 *   1. open the room from the upstream hello;
 *   2. feed it the upstream frames (the seq-0 snapshot, then live batches);
 *   3. subscribe the downstream queries: send each its hello and snapshot;
 *   4. after every input that changed the head, drain (commit_all) and ship the frames;
 *   5. run a client's mutation through the write plane, drain;
 *   6. flush the dirty rows to the authority and settle the flight, drain;
 *   7. unsubscribe, sweep, free.
 *
 * A real host reads frames from sockets and sends to clients; here the "network" is
 * stdout, and the upstream frames are constants. Build and run (from the repository):
 *
 *   cargo build -p rindle-room-c
 *   cc -std=c11 -Iinclude tests/c/embed.c \
 *      "$CARGO_TARGET_DIR"/debug/librindle_room.a -lpthread -ldl -lm -o embed && ./embed
 *
 * It is also a test: it exits non-zero if the room does not answer as the contract says.
 */
#include "rindle_room.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A text argument from a C string. */
#define T(s) (s), strlen(s)

/* ---- What the upstream daemon sends (nhello.hello, then nbatch.batch frames). ---- */

static const char UPSTREAM_HELLO[] =
    "{\"epoch\":1,\"comparatorVersion\":2,\"tables\":[{\"name\":\"note\",\"columns\":"
    "[\"id\",\"body\"],\"primaryKey\":[0]}],\"normalizedFp\":\"d0ffe1b66912a02b\"}";

static const char *const UPSTREAM_BATCHES[] = {
    /* seq 0: the snapshot */
    "{\"epoch\":1,\"seq\":0,\"normalizedFp\":\"d0ffe1b66912a02b\",\"cv\":10,\"ops\":["
    "{\"table\":\"note\",\"op\":\"add\",\"row\":[1,\"buy milk\"]},"
    "{\"table\":\"note\",\"op\":\"add\",\"row\":[2,\"call bob\"]}]}",
    /* seq 1: a live change */
    "{\"epoch\":1,\"seq\":1,\"normalizedFp\":\"d0ffe1b66912a02b\",\"cv\":11,\"ops\":["
    "{\"table\":\"note\",\"op\":\"edit\",\"old\":[2,\"call bob\"],\"new\":[2,\"call bob at 5\"]},"
    "{\"table\":\"note\",\"op\":\"add\",\"row\":[3,\"water plants\"]}]}",
};

/* ---- What the downstream clients ask for. ---- */

static const char ALL_NOTES[] = "{\"table\":\"note\",\"orderBy\":[[\"id\",\"asc\"]]}";
static const char LATER_NOTES[] =
    "{\"table\":\"note\",\"where\":{\"type\":\"simple\",\"op\":\">\",\"left\":{\"type\":"
    "\"column\",\"name\":\"id\"},\"right\":{\"type\":\"literal\",\"value\":1}}}";

/* ---- The host's plumbing. ---- */

static double now_ms = 1000; /* the host's clock: the room reads none */
static int checks, failures;

/* Stops the host on a failed call, with the room's message. */
static void must(rindle_room_result rc, const rindle_room *room, const char *what) {
  if (rc == RINDLE_ROOM_RESULT_OK) return;
  const char *msg = "";
  size_t len = 0;
  if (room != NULL) rindle_room_last_error(room, &msg, &len);
  else rindle_room_thread_last_error(&msg, &len);
  fprintf(stderr, "%s failed: %s: %.*s\n", what, rindle_room_result_name(rc), (int)len, msg);
  exit(1);
}

/* The "network": ships one JSON text to someone. */
static void send_json(const char *to, const char *what, const rindle_room_buf *json) {
  printf("-> %-10s %-10s %.*s\n", to, what, (int)json->len, json->data);
}

/* This example is also a test: it counts what did not go as the contract says. */
static void check(int ok, const char *what) {
  checks++;
  if (!ok) {
    failures++;
    printf("UNEXPECTED: %s\n", what);
  }
}

/* Checks that a result holds a piece of text. */
static void expect(const rindle_room_buf *json, const char *part) {
  check(json->data != NULL && strstr(json->data, part) != NULL, part);
}

/* Step 4: the drain. Ships each subscriber's net batch; returns how many it shipped. */
static int drain(rindle_room *room) {
  rindle_room_buf frames = {0};
  must(rindle_room_commit_all(room, &frames), room, "commit_all");
  /* A real host parses `[{"sub":…,"batch":…},…]` and sends each batch to its sub;
   * here the whole drain goes out at once. */
  int shipped = 0;
  for (const char *p = frames.data; (p = strstr(p, "{\"sub\":")) != NULL; p++) shipped++;
  if (shipped > 0) send_json("clients", "drain", &frames);
  rindle_room_buf_free(&frames);
  return shipped;
}

int main(void) {
  rindle_room_buf out = {0};

  /* 1. Open the room from the upstream hello. */
  rindle_room *room = NULL;
  must(rindle_room_open(T(UPSTREAM_HELLO), 30000, &room), NULL, "open");

  /* 2. The snapshot makes the room live. */
  must(rindle_room_apply(room, T(UPSTREAM_BATCHES[0]), &out), room, "apply snapshot");
  expect(&out, "{\"applied\":\"snapshot\",\"rows\":2}");
  rindle_room_buf_free(&out);

  /* 3. Subscribe two clients: each gets its hello, then its seq-0 snapshot. */
  must(rindle_room_subscribe(room, T("alice:1"), 1, T(ALL_NOTES), now_ms, &out), room, "sub");
  send_json("alice:1", "subscribed", &out);
  expect(&out, "\"snapshot\":{\"epoch\":1,\"seq\":0");
  rindle_room_buf_free(&out);
  must(rindle_room_subscribe(room, T("bob:1"), 1, T(LATER_NOTES), now_ms, &out), room, "sub");
  send_json("bob:1", "subscribed", &out);
  expect(&out, "[2,\"call bob\"]");
  rindle_room_buf_free(&out);

  /* 2 + 4. A live upstream batch changes the head: drain. */
  must(rindle_room_apply(room, T(UPSTREAM_BATCHES[1]), &out), room, "apply live");
  expect(&out, "{\"applied\":\"live\",\"ops\":2}");
  rindle_room_buf_free(&out);
  check(drain(room) == 2, "the live batch reaches both subscribers");

  /* 5. A client mutation: enable the write plane, stage, commit, drain. */
  must(rindle_room_enable_writes(room, T("[\"note\"]")), room, "enable_writes");
  /* alice also follows her own mutation ledger row, to see her writes confirmed. */
  must(rindle_room_lmid_subscribe(room, T("alice:lmid"), 1, T("alice"), now_ms, &out), room,
       "lmid_subscribe");
  send_json("alice:lmid", "subscribed", &out);
  rindle_room_buf_free(&out);
  must(rindle_room_begin_mutation(room, T("alice"), 1, T("addNote"), T("{\"id\":4}"), &out),
       room, "begin_mutation");
  expect(&out, "{\"begin\":\"tx\"}");
  rindle_room_buf_free(&out);
  bool defined = false;
  must(rindle_room_tx_get(room, T("note"), T("[4]"), &out, &defined), room, "tx_get");
  check(!defined, "note 4 does not exist before the mutation");
  must(rindle_room_tx_add(room, T("note"), T("[4,\"from alice\"]")), room, "tx_add");
  must(rindle_room_commit_mutation(room, &out), room, "commit_mutation");
  expect(&out, "{\"headCv\":");
  rindle_room_buf_free(&out);
  check(drain(room) == 2, "the mutation reaches both subscribers");

  /* 6. Flush the dirty rows to the authority, then settle the flight. */
  must(rindle_room_begin_flush(room, &out, &defined), room, "begin_flush");
  if (defined) {
    send_json("authority", "flush", &out);
    expect(&out, "[4,\"from alice\"]");
    rindle_room_buf_free(&out);
    must(rindle_room_flush_ok(room, &out), room, "flush_ok");
    expect(&out, "\"dirty\":0");
    rindle_room_buf_free(&out);
  }
  check(defined, "the mutation left something to flush");
  /* The authority's ack makes alice's mutation durable. */
  must(rindle_room_ack(room, T("[{\"clientID\":\"alice\",\"mid\":1}]"), &out), room, "ack");
  rindle_room_buf_free(&out);
  check(drain(room) == 1, "the ack reaches alice's ledger subscription");
  double acked = 0;
  must(rindle_room_acked_lmid(room, T("alice"), &acked), room, "acked_lmid");
  check(acked == 1, "alice's acked mutation id is 1");

  /* 7. Bob leaves; a later sweep reclaims the idle query; the room goes away. */
  bool attached = false;
  must(rindle_room_unsubscribe(room, T("bob:1"), now_ms, &attached), room, "unsubscribe");
  double reclaimed = 0;
  now_ms += 60000;
  must(rindle_room_sweep(room, now_ms, &reclaimed), room, "sweep");
  double head_cv = 0;
  must(rindle_room_head_cv(room, &head_cv), room, "head_cv");
  rindle_room_json_number(head_cv, &out);
  printf("headCv %s, bob attached %d, %g idle queries reclaimed\n", out.data, attached,
         reclaimed);
  rindle_room_buf_free(&out);
  check(attached && reclaimed == 1, "bob was attached; his idle query is reclaimed");
  rindle_room_free(room);

  printf("embed: %d passed, %d failed\n", checks - failures, failures);
  return failures == 0 ? 0 : 1;
}
