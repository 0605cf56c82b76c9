// OpCounter: RecordFunction callbacks that count the ATen operators a step
// dispatches, leaving out the ones that launch nothing (views, allocations, metadata).
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
      "aten::movedim", "aten::flatten", "aten::unflatten", "aten::diagonal", "aten::resolve_conj",
      "aten::resolve_neg", "aten::_conj", "aten::conj", "detach", "aten::lift"};
  return names.count(name) > 0;
}

bool multi_tensor(const std::string& name) {
  return name.rfind("aten::_foreach_", 0) == 0 || name.rfind("aten::_fused_", 0) == 0;
}

struct State {
  std::mutex mutex;
  OpCounts counts;
};
// Global: RecordFunction callbacks are process-wide, so one counter at a time (the constructor refuses a second).
std::atomic<State*> g_state{nullptr};

// Per thread, for each open record: its name and whether a kernel-doing op ran inside it.
struct Open {
  std::string name;
  bool kernel_inside = false;
};
// Per thread: ops nest per thread, and autograd may run the backward on a worker thread of its own.
thread_local std::vector<Open> t_open;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  t_open.push_back({fn.name(), false});
  return nullptr;
}

void on_end(const at::RecordFunction&, at::ObserverContext*) {
  if (t_open.empty()) return;  // started before the counter
  const Open op = std::move(t_open.back());
  t_open.pop_back();
  State* s = g_state.load();
  // Only ATen operators: the autograd engine's and egm's own named scopes are not dispatched ops.
  if (!s || op.name.rfind("aten::", 0) != 0) return;
  bool top_level = true, inside_multi = false;
  for (const Open& o : t_open) {
    if (o.name.rfind("aten::", 0) == 0) top_level = false;
    if (multi_tensor(o.name)) inside_multi = true;
  }
  // A kernel: an op that does work (not a view, allocation or metadata) and calls no op that
  // does, so a linear counts once, as its addmm, and a to() as its copy_. A foreach or fused
  // op counts once, as what CUDA runs it as (multi_tensor_apply: one launch per up to 30-110
  // tensors), not as the per-tensor loop the CPU runs inside it.
  const bool kernel = !inside_multi && (multi_tensor(op.name) || (!op.kernel_inside && !launches_nothing(op.name)));
  // The enclosing op learns it contained a kernel, so it is not counted as one itself.
  if ((kernel || op.kernel_inside) && !t_open.empty()) t_open.back().kernel_inside = true;
  std::lock_guard<std::mutex> lock(s->mutex);
  ++s->counts.dispatched;
  ++s->counts.dispatched_by_name[op.name];
  if (top_level) ++s->counts.top_level;
  if (kernel) {
    ++s->counts.kernels;
    ++s->counts.kernels_by_name[op.name];
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
  // Installed only if none is: two counters would count every op twice.
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
