// The wall clock as the database stores times: UNIX seconds (REAL, UTC).
#pragma once

#include <chrono>

namespace egm {

inline double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace egm
