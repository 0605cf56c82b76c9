// What makes two runs the same (issue 38): a run's identity. Two runs with
// equal identities compute the same numbers bit for bit, so a sweep that needs
// one may take the other's results instead of training it again (egm sweep's
// reuse, db/reuse.h). The rule itself, and the numerics version, are written
// where the run config is defined (config/run_config.h, kNumericsVersion).
#pragma once

#include <cstdint>
#include <string>

#include "run/device.h"

namespace egm {

struct RunIdentity {
  std::string config_hash;       // config_hash() of the fully resolved RunConfig
  std::string corpus_sha256;     // the corpus the run reads ("unknown" or empty: not known)
  std::string device_kind;       // "cpu" or "cuda" (device_kind(DeviceName))
  int64_t world_size = 1;        // data-parallel ranks of the run
  int64_t numerics_version = 0;  // kNumericsVersion of the egm that trained it; 0: not recorded

  // Every part recorded: a run with an unknown corpus or numerics version
  // (one trained before egm recorded them) is the same as no other run.
  bool known() const;
  // "config 3f2a9c01b2d4, corpus 9c01..., cpu x1, numerics 1" (hashes cut to 12).
  std::string str() const;
  friend bool operator==(const RunIdentity& a, const RunIdentity& b) {
    return a.config_hash == b.config_hash && a.corpus_sha256 == b.corpus_sha256 && a.device_kind == b.device_kind &&
           a.world_size == b.world_size && a.numerics_version == b.numerics_version;
  }
  friend bool operator!=(const RunIdentity& a, const RunIdentity& b) { return !(a == b); }
};

// True when one run may stand for the other: both known and equal.
bool same_run(const RunIdentity& a, const RunIdentity& b);

// The identity's device kind of a stored device text ("cuda:1" -> "cuda");
// empty for text that names no device.
std::string device_kind_of(const std::string& device_text);

}  // namespace egm
