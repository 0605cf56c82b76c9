// What the parts of coordinator.cpp share and nothing outside coordinator/ needs:
// the ownership-lost exception and the one clock difference they all take.
#pragma once

#include <chrono>
#include <stdexcept>

namespace egm::coordinator::detail {

// This coordinator no longer owns its sweep (another took it over while this
// one was stopped or cut off): it stops its workers, writes nothing, exits 75.
// Thrown by Coordinator::beat (sweep_database.cpp), caught by Coordinator::run.
class OwnershipLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace egm::coordinator::detail
