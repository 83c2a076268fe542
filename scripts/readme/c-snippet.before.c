/* The README's c-snippet as a program (scripts/test-readme.sh): the snippet's #include
 * lines go first, then these inputs (the upstream frames and the query of the README's
 * replay example), then the snippet as the body of main. */
static const char hello[] =
    "{\"epoch\":1,\"comparatorVersion\":2,\"tables\":[{\"name\":\"note\",\"columns\":"
    "[\"id\",\"body\"],\"primaryKey\":[0]}],\"normalizedFp\":\"d0ffe1b66912a02b\"}";
static const size_t hello_len = sizeof hello - 1;
static const char snapshot[] =
    "{\"epoch\":1,\"seq\":0,\"normalizedFp\":\"d0ffe1b66912a02b\",\"ops\":[{\"table\":"
    "\"note\",\"op\":\"add\",\"row\":[1,\"a\"]}],\"cv\":17}";
static const size_t snapshot_len = sizeof snapshot - 1;
static const char ast[] = "{\"table\":\"note\"}";
static const size_t ast_len = sizeof ast - 1;
static const double now_ms = 0;
