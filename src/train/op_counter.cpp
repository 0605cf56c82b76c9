#include "train/op_counter.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>

namespace egm {
namespace {

// Leaves that launch no kernel: views, allocations, metadata.
bool launches_nothing(const std::string& name) {
  static const std::set<std::string> names = {
      "aten::view", "aten::_unsafe_view", "aten::as_strided", "aten::transpose", "aten::t", "aten::permute",
      "aten::expand", "aten::expand_as", "aten::unsqueeze", "aten::squeeze", "aten::select", "aten::slice",
      "aten::narrow", "aten::unbind", "aten::split", "aten::split_with_sizes", "aten::chunk", "aten::reshape",
      "aten::alias", "aten::detach", "aten::detach_", "aten::empty", "aten::empty_strided", "aten::empty_like",
      "aten::resize_", "aten::lift_fresh", "aten::result_type", "aten::is_nonzero", "aten::_reshape_alias",
      "aten::view_as", "aten::contiguous", "aten::set_", "aten::_has_compatible_shallow_copy_type",
      "aten::is_same_size", "aten::size", "aten::stride", "aten::numel", "aten::dim", "aten::to", "aten::_to_copy_noop",
      "aten::movedim", "aten::flatten", "aten::unflatten", "aten::diagonal"};
  return names.count(name) > 0;
}

struct State {
  std::mutex mutex;
  OpCounts counts;
};
std::atomic<State*> g_state{nullptr};

// Per thread: for each open op, whether an op ran inside it.
thread_local std::vector<bool> t_open;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction&) {
  if (!t_open.empty()) t_open.back() = true;
  t_open.push_back(false);
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (t_open.empty()) return;  // started before the counter
  const bool had_child = t_open.back();
  t_open.pop_back();
  State* s = g_state.load();
  if (!s) return;
  const std::string name = fn.name();
  std::lock_guard<std::mutex> lock(s->mutex);
  ++s->counts.dispatched;
  ++s->counts.dispatched_by_name[name];
  if (t_open.empty()) ++s->counts.top_level;
  if (!had_child && !launches_nothing(name)) {
    ++s->counts.kernels;
    ++s->counts.kernels_by_name[name];
  }
}

at::CallbackHandle g_handle = 0;

}  // namespace

std::vector<std::string> OpCounts::top_kernels(size_t n) const {
  std::vector<std::pair<int64_t, std::string>> v;
  for (const auto& [name, count] : kernels_by_name) v.emplace_back(-count, name);
  std::sort(v.begin(), v.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size() && i < n; ++i) out.push_back(v[i].second + " " + std::to_string(-v[i].first));
  return out;
}

OpCounter::OpCounter() {
  State* expected = nullptr;
  auto* state = new State;
  if (!g_state.compare_exchange_strong(expected, state)) {
    delete state;
    throw std::logic_error("OpCounter: another counter is alive");
  }
  // Only ATen operators (RecordScope::FUNCTION): not autograd nodes or user scopes.
  g_handle = at::addGlobalCallback(
      at::RecordFunctionCallback(on_start, on_end).needsInputs(false).scopes({at::RecordScope::FUNCTION}));
}

OpCounter::~OpCounter() {
  at::removeCallback(g_handle);
  delete g_state.exchange(nullptr);
}

OpCounts OpCounter::counts() const {
  State* s = g_state.load();
  std::lock_guard<std::mutex> lock(s->mutex);
  return s->counts;
}

}  // namespace egm
