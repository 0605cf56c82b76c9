// TEST-ONLY failure injection, read in this one place.
//
//   EGM_TEST_FAIL="VARIANT:SEED:STEP:ATTEMPTS[:KIND][,VARIANT:SEED:STEP:ATTEMPTS[:KIND]...]"
//
// makes cell VARIANT-sSEED throw at optimiser step STEP on its first ATTEMPTS
// attempts (the coordinator passes fail_at_step and fail_kind in ASSIGN; the
// trainer throws "injected failure at step N"). KIND says what the worker
// reports it as: `error` (default, retriable), `config` (a ConfigError) or
// `oom` (a LibTorch out-of-memory c10::Error, stack trace included; not
// retriable at step 0, before the first step completes). The tests use it to
// check that a failing run is recorded, retried or given up; it has no use in
// real sweeps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace egm::coordinator {

struct InjectedFailure {
  std::string variant;
  uint64_t seed = 0;
  int64_t step = 0;
  int attempts = 1;
  std::string kind = "error";  // error | config | oom
};

// Parses the variable's value; ConfigError naming the bad entry.
std::vector<InjectedFailure> parse_injected_failures(const std::string& text);
// $EGM_TEST_FAIL, parsed (empty when unset).
std::vector<InjectedFailure> injected_failures_from_env();

// The step attempt `attempt` (1-based) of the cell must fail at, or -1.
int64_t injected_fail_step(const std::vector<InjectedFailure>& failures, const std::string& variant, uint64_t seed,
                           int attempt);
// The kind of that failure ("error" when none is injected).
std::string injected_fail_kind(const std::vector<InjectedFailure>& failures, const std::string& variant,
                               uint64_t seed, int attempt);

}  // namespace egm::coordinator
