/*
 * Replays every conformance scenario (every tests/conformance/<name>.json) through the C ABI and
 * compares each output with the scenario's, byte for byte.
 *
 * The scenarios are JSON and C has no JSON parser here, so
 * `cargo run -p rindle-room-c --example flatten_conformance` first renders them into
 * length-prefixed records (format in bindings-c/examples/flatten_conformance.rs), with
 * every argument already spelled exactly as the Rust runner passes it. This program
 * only transports bytes: it calls the function of each step's method and renders the
 * result the way tests/conformance/README.md says (JSON verbatim, strings quoted,
 * numbers as JSON.stringify prints them, `undefined` as `null`).
 *
 * It also checks, on every failing step, that the out-parameters were left untouched.
 *
 * Usage: conformance <flattened file>
 * Prints one line per mismatch and ends with "conformance: N passed, M failed".
 */
#include "rindle_room.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *p;
  size_t len;
} span;

/* One record `<tag> <length>:<bytes>\n`. */
typedef struct {
  span tag;
  span body;
} record;

typedef struct {
  const char *start;
  const char *cur;
  const char *end;
} reader;

static int read_record(reader *r, record *out) {
  const char *p = r->cur;
  const char *space = memchr(p, ' ', (size_t)(r->end - p));
  if (space == NULL) return 0;
  size_t len = 0;
  const char *q = space + 1;
  while (q < r->end && *q >= '0' && *q <= '9') len = len * 10 + (size_t)(*q++ - '0');
  if (q >= r->end || *q != ':' || (size_t)(r->end - q - 1) < len + 1 || q[1 + len] != '\n') {
    fprintf(stderr, "malformed record at byte %ld\n", (long)(p - r->start));
    exit(2);
  }
  out->tag.p = p;
  out->tag.len = (size_t)(space - p);
  out->body.p = q + 1;
  out->body.len = len;
  r->cur = q + 2 + len;
  return 1;
}

static int is(span s, const char *text) {
  return s.len == strlen(text) && memcmp(s.p, text, s.len) == 0;
}

#define MAX_ARGS 4
#define MAX_ERRS 8

typedef struct {
  char kind; /* 's' string, 'j' JSON text, 'n' number, 'u' undefined */
  span text;
  double num;
} argument;

typedef struct {
  span method;
  argument args[MAX_ARGS];
  int nargs;
  int want_ok;
  span expect;
  span errs[MAX_ERRS];
  int nerrs;
} step;

static double hex_double(span s) {
  uint64_t bits = 0;
  for (size_t i = 0; i < s.len; i++) {
    char c = s.p[i];
    bits = (bits << 4) | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* ------------------------------------------------------------------------------------ */
/* Running one step.                                                                     */
/* ------------------------------------------------------------------------------------ */

/* What a call produced: the rendered output text, or the error message. */
typedef struct {
  rindle_room_result rc;
  char *text;
  size_t len;
  int out_touched; /* an out-parameter changed although the call failed */
} outcome;

static void set_text(outcome *o, const char *p, size_t len) {
  o->text = malloc(len + 1);
  if (o->text == NULL) abort();
  memcpy(o->text, p, len);
  o->text[len] = '\0';
  o->len = len;
}

/* Takes a JSON result. */
static void take_json(outcome *o, rindle_room_buf *b) {
  set_text(o, b->data, b->len);
  rindle_room_buf_free(b);
}

/* Takes a string result (a token, a hash): rendered as a JSON string literal. */
static void take_string(outcome *o, rindle_room_buf *b) {
  rindle_room_buf quoted = {0};
  if (rindle_room_json_string(b->data, b->len, &quoted) != RINDLE_ROOM_RESULT_OK) abort();
  take_json(o, &quoted);
  rindle_room_buf_free(b);
}

static void take_number(outcome *o, double value) {
  rindle_room_buf spelled = {0};
  if (rindle_room_json_number(value, &spelled) != RINDLE_ROOM_RESULT_OK) abort();
  take_json(o, &spelled);
}

static void take_bool(outcome *o, bool value) {
  const char *t = value ? "true" : "false";
  set_text(o, t, strlen(t));
}

static void take_undefined(outcome *o) { set_text(o, "null", 4); }

/* Sentinels: out-parameters must still hold them after a failed call. */
static const char sentinel_byte = 'S';
#define SENTINEL_BUF {&sentinel_byte, 77, 78}
#define SENTINEL_NUM (-12345.5)

static int buf_untouched(const rindle_room_buf *b) {
  return b->data == &sentinel_byte && b->len == 77 && b->capacity == 78;
}

/* The arguments of the step being run. */
#define TEXT(i) st->args[i].text.p, st->args[i].text.len
#define OPT_TEXT(i)                                              \
  (st->args[i].kind == 'u' ? NULL : st->args[i].text.p), \
      (st->args[i].kind == 'u' ? 0 : st->args[i].text.len)
#define NUM(i) st->args[i].num
#define M(name) is(st->method, name)

static outcome run_step(rindle_room **room, const step *st) {
  outcome o = {RINDLE_ROOM_RESULT_OK, NULL, 0, 0};
  rindle_room *r = *room;
  rindle_room_buf buf = SENTINEL_BUF;
  double num = SENTINEL_NUM;
  bool flag = false;
  bool defined = false;
  enum { JSON, STRING, NUMBER, BOOL, UNDEFINED, OPT_JSON, OPT_NUMBER, OPENED } kind = JSON;
  int uses_room = 1;
  rindle_room *opened = NULL;
  rindle_room_result rc;

  if (M("open")) {
    rc = rindle_room_open(TEXT(0), NUM(1), &opened), kind = OPENED, uses_room = 0;
  } else if (M("mintRoomToken")) {
    rc = rindle_room_mint_room_token(TEXT(0), &buf), kind = STRING, uses_room = 0;
  } else if (M("verifyRoomToken")) {
    rc = rindle_room_verify_room_token(TEXT(0), TEXT(1), &buf), uses_room = 0;
  } else if (M("scopeSpecsHash")) {
    rc = rindle_room_scope_specs_hash(TEXT(0), &buf), kind = STRING, uses_room = 0;
  } else if (M("apply")) {
    rc = rindle_room_apply(r, TEXT(0), &buf);
  } else if (M("subscribe")) {
    rc = rindle_room_subscribe(r, TEXT(0), NUM(1), TEXT(2), NUM(3), &buf);
  } else if (M("unsubscribe")) {
    rc = rindle_room_unsubscribe(r, TEXT(0), NUM(1), &flag), kind = BOOL;
  } else if (M("sweep")) {
    rc = rindle_room_sweep(r, NUM(0), &num), kind = NUMBER;
  } else if (M("commitAll")) {
    rc = rindle_room_commit_all(r, &buf);
  } else if (M("cv")) {
    rc = rindle_room_cv(r, &num, &defined), kind = OPT_NUMBER;
  } else if (M("headCv")) {
    rc = rindle_room_head_cv(r, &num), kind = NUMBER;
  } else if (M("epoch")) {
    rc = rindle_room_epoch(r, &num), kind = NUMBER;
  } else if (M("isLive")) {
    rc = rindle_room_is_live(r, &flag), kind = BOOL;
  } else if (M("isPoisoned")) {
    rc = rindle_room_is_poisoned(r, &flag), kind = BOOL;
  } else if (M("materializationCount")) {
    rc = rindle_room_materialization_count(r, &num), kind = NUMBER;
  } else if (M("subscriberCount")) {
    rc = rindle_room_subscriber_count(r, &num), kind = NUMBER;
  } else if (M("enableWrites")) {
    rc = rindle_room_enable_writes(r, TEXT(0)), kind = UNDEFINED;
  } else if (M("enableWritesV2")) {
    rc = rindle_room_enable_writes_v2(r, TEXT(0), OPT_TEXT(1)), kind = UNDEFINED;
  } else if (M("beginMutation")) {
    rc = rindle_room_begin_mutation(r, TEXT(0), NUM(1), OPT_TEXT(2), OPT_TEXT(3), &buf);
  } else if (M("txGet")) {
    rc = rindle_room_tx_get(r, TEXT(0), TEXT(1), &buf, &defined), kind = OPT_JSON;
  } else if (M("txAdd")) {
    rc = rindle_room_tx_add(r, TEXT(0), TEXT(1)), kind = UNDEFINED;
  } else if (M("txEdit")) {
    rc = rindle_room_tx_edit(r, TEXT(0), TEXT(1)), kind = UNDEFINED;
  } else if (M("txRemove")) {
    rc = rindle_room_tx_remove(r, TEXT(0), TEXT(1)), kind = UNDEFINED;
  } else if (M("commitMutation")) {
    rc = rindle_room_commit_mutation(r, &buf);
  } else if (M("rejectMutation")) {
    rc = rindle_room_reject_mutation(r, OPT_TEXT(0), OPT_TEXT(1)), kind = UNDEFINED;
  } else if (M("ack")) {
    rc = rindle_room_ack(r, TEXT(0), &buf);
  } else if (M("ackedLmid")) {
    rc = rindle_room_acked_lmid(r, TEXT(0), &num), kind = NUMBER;
  } else if (M("appliedMid")) {
    rc = rindle_room_applied_mid(r, TEXT(0), &num), kind = NUMBER;
  } else if (M("durableLmid")) {
    rc = rindle_room_durable_lmid(r, TEXT(0), &num), kind = NUMBER;
  } else if (M("lmidSubscribe")) {
    rc = rindle_room_lmid_subscribe(r, TEXT(0), NUM(1), TEXT(2), NUM(3), &buf);
  } else if (M("seedDurable")) {
    rc = rindle_room_seed_durable(r, TEXT(0), &buf);
  } else if (M("pendingLen")) {
    rc = rindle_room_pending_len(r, &num), kind = NUMBER;
  } else if (M("dirtyLen")) {
    rc = rindle_room_dirty_len(r, &num), kind = NUMBER;
  } else if (M("beginFlush")) {
    rc = rindle_room_begin_flush(r, &buf, &defined), kind = OPT_JSON;
  } else if (M("flushOk")) {
    rc = rindle_room_flush_ok(r, &buf);
  } else if (M("flushConflict")) {
    rc = rindle_room_flush_conflict(r, TEXT(0), &buf);
  } else if (M("flushInFlight")) {
    rc = rindle_room_flush_in_flight(r, &flag), kind = BOOL;
  } else {
    fprintf(stderr, "no C function for method %.*s\n", (int)st->method.len, st->method.p);
    exit(2);
  }

  o.rc = rc;
  if (rc != RINDLE_ROOM_RESULT_OK) {
    const char *msg = NULL;
    size_t len = 0;
    rindle_room_result got = (uses_room && r != NULL) ? rindle_room_last_error(r, &msg, &len)
                                                      : rindle_room_thread_last_error(&msg, &len);
    if (got != RINDLE_ROOM_RESULT_OK) abort();
    set_text(&o, msg, len);
    o.out_touched = !buf_untouched(&buf) || num != SENTINEL_NUM || opened != NULL;
    return o;
  }
  switch (kind) {
    case JSON: take_json(&o, &buf); break;
    case STRING: take_string(&o, &buf); break;
    case NUMBER: take_number(&o, num); break;
    case BOOL: take_bool(&o, flag); break;
    case UNDEFINED: take_undefined(&o); break;
    case OPT_JSON:
      if (defined) {
        take_json(&o, &buf);
      } else {
        if (buf.data != NULL || buf.len != 0) o.out_touched = 1; /* must be {NULL, 0} */
        take_undefined(&o);
      }
      break;
    case OPT_NUMBER:
      if (defined) take_number(&o, num); else take_undefined(&o);
      break;
    case OPENED:
      rindle_room_free(*room); /* a successful open replaces the room */
      *room = opened;
      take_undefined(&o);
      break;
  }
  return o;
}

/* ------------------------------------------------------------------------------------ */
/* Comparing.                                                                            */
/* ------------------------------------------------------------------------------------ */

static int contains(const char *hay, size_t hay_len, span needle) {
  if (needle.len > hay_len) return 0;
  for (size_t i = 0; i + needle.len <= hay_len; i++) {
    if (memcmp(hay + i, needle.p, needle.len) == 0) return 1;
  }
  return 0;
}

/* Returns 1 if the step matched; reports a mismatch otherwise. */
static int check(span scenario, int index, const step *st, const outcome *o) {
  int ok;
  if (st->want_ok) {
    ok = o->rc == RINDLE_ROOM_RESULT_OK && o->len == st->expect.len &&
         memcmp(o->text, st->expect.p, o->len) == 0;
  } else {
    ok = o->rc != RINDLE_ROOM_RESULT_OK && !o->out_touched;
    for (int i = 0; ok && i < st->nerrs; i++) ok = contains(o->text, o->len, st->errs[i]);
  }
  if (o->rc == RINDLE_ROOM_RESULT_OK && o->out_touched) ok = 0;
  if (ok) return 1;
  printf("MISMATCH %.*s step %d (%.*s)\n", (int)scenario.len, scenario.p, index,
         (int)st->method.len, st->method.p);
  if (st->want_ok) {
    printf("  expected: ok    %.*s\n", (int)st->expect.len, st->expect.p);
  } else {
    printf("  expected: error containing");
    for (int i = 0; i < st->nerrs; i++) printf(" \"%.*s\"", (int)st->errs[i].len, st->errs[i].p);
    printf("\n");
  }
  printf("  got:      %s %s (%s)%s\n", o->rc == RINDLE_ROOM_RESULT_OK ? "ok   " : "error", o->text,
         rindle_room_result_name(o->rc), o->out_touched ? " [out-parameter written]" : "");
  return 0;
}

/* ------------------------------------------------------------------------------------ */

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    perror(path);
    exit(2);
  }
  size_t cap = 1 << 16, n = 0;
  char *data = malloc(cap);
  size_t got;
  while (data != NULL && (got = fread(data + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) data = realloc(data, cap *= 2);
  }
  fclose(f);
  if (data == NULL) abort();
  *len = n;
  return data;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <flattened scenarios>\n", argv[0]);
    return 2;
  }
  size_t size;
  char *data = read_file(argv[1], &size);
  reader rd = {data, data, data + size};
  record rec;
  if (!read_record(&rd, &rec) || !is(rec.tag, "flat") || !is(rec.body, "1")) {
    fprintf(stderr, "%s is not a flattened scenario file (version 1)\n", argv[1]);
    return 2;
  }

  int passed = 0, failed = 0, scenarios = 0, index = 0;
  span scenario = {"", 0};
  rindle_room *room = NULL;
  step st;
  memset(&st, 0, sizeof st);
  while (read_record(&rd, &rec)) {
    if (is(rec.tag, "scenario")) {
      rindle_room_free(room); /* each scenario starts with no room */
      room = NULL;
      scenario = rec.body;
      scenarios++;
      index = 0;
    } else if (is(rec.tag, "step")) {
      memset(&st, 0, sizeof st);
      st.method = rec.body;
    } else if (rec.tag.len == 1 && strchr("sjnu", rec.tag.p[0]) != NULL) {
      if (st.nargs == MAX_ARGS) return fprintf(stderr, "too many arguments\n"), 2;
      argument *a = &st.args[st.nargs++];
      a->kind = rec.tag.p[0];
      a->text = rec.body;
      if (a->kind == 'n') a->num = hex_double(rec.body);
    } else if (is(rec.tag, "ok")) {
      st.want_ok = 1;
      st.expect = rec.body;
    } else if (is(rec.tag, "err")) {
      if (st.nerrs == MAX_ERRS) return fprintf(stderr, "too many error substrings\n"), 2;
      st.errs[st.nerrs++] = rec.body;
    } else if (is(rec.tag, "end")) {
      outcome o = run_step(&room, &st);
      if (check(scenario, index, &st, &o)) passed++; else failed++;
      free(o.text);
      index++;
    } else {
      fprintf(stderr, "unknown record %.*s\n", (int)rec.tag.len, rec.tag.p);
      return 2;
    }
  }
  rindle_room_free(room);
  free(data);
  printf("%d scenarios through the C ABI\n", scenarios);
  printf("conformance: %d passed, %d failed\n", passed, failed);
  return failed == 0 && scenarios > 0 ? 0 : 1;
}
