// The header from C++17: it must compile with -Wall -Wextra -Werror, link against
// librindle_room.a, and its result codes must behave as a C++ enum with uint32_t values.
#include "rindle_room.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

static_assert(std::is_same<std::underlying_type<rindle_room_result>::type, uint32_t>::value,
              "rindle_room_result is a uint32_t enum");
static_assert(RINDLE_ROOM_RESULT_OK == 0, "OK is 0");

namespace {

// RAII for the two things a C++ host owns.
struct RoomDeleter {
  void operator()(rindle_room *room) const { rindle_room_free(room); }
};
using Room = std::unique_ptr<rindle_room, RoomDeleter>;

std::string take(rindle_room_buf &buf) {
  std::string text(buf.data, buf.len);
  rindle_room_buf_free(&buf);
  return text;
}

}  // namespace

int main() {
  const std::string hello =
      R"({"epoch":1,"comparatorVersion":2,"tables":[{"name":"note","columns":["id","body"],)"
      R"("primaryKey":[0]}],"normalizedFp":"d0ffe1b66912a02b"})";
  const std::string snapshot =
      R"({"epoch":1,"seq":0,"normalizedFp":"d0ffe1b66912a02b","cv":5,"ops":[)"
      R"({"table":"note","op":"add","row":[1,"a"]}]})";

  rindle_room *raw = nullptr;
  if (rindle_room_open(hello.data(), hello.size(), 30000, &raw) != RINDLE_ROOM_RESULT_OK) {
    return 1;
  }
  Room room(raw);
  rindle_room_buf out{};
  if (rindle_room_apply(room.get(), snapshot.data(), snapshot.size(), &out) !=
      RINDLE_ROOM_RESULT_OK) {
    return 1;
  }
  const std::string applied = take(out);
  const bool ok = applied == R"({"applied":"snapshot","rows":1})" &&
                  std::strcmp(RINDLE_ROOM_VERSION, rindle_room_version()) == 0 &&
                  std::string(rindle_room_result_name(RINDLE_ROOM_RESULT_POISONED)) == "POISONED";
  std::printf("cpp_smoke: %d passed, %d failed\n", ok ? 1 : 0, ok ? 0 : 1);
  return ok ? 0 : 1;
}
