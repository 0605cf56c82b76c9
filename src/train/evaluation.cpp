// Validation loss three ways (random batches, every window, autoregressive
// prefixes), summed over a data-parallel run's ranks, and EGA's gate-open shares.
#include "train/evaluation.h"

#include "model/causality.h"
#include "util/torch_compat.h"

namespace egm {
namespace {

// Sum of token losses and token count, summed over ranks.
std::pair<double, double> combine(Communicator& comm, double loss_sum, double tokens) {
  torch::Tensor t = torch::tensor({loss_sum, tokens}, torch::kFloat64);
  std::vector<torch::Tensor> v{t};
  // The communicator only averages; multiplying by the rank count turns the mean back into the sum.
  comm.allreduce_mean(v);
  const double k = static_cast<double>(comm.size());
  return {v[0][0].item<double>() * k, v[0][1].item<double>() * k};
}

double token_loss_sum(const EvalContext& ctx, const Batch& b) {
  compat::AutocastGuard autocast(ctx.autocast, ctx.device.type(), ctx.autocast_dtype);
  torch::Tensor logits = ctx.model.forward(b.x.to(ctx.device));
  torch::Tensor loss = GPTImpl::loss(logits, b.y.to(ctx.device));
  // The loss is a mean over tokens: times the count gives a sum that adds across batches and ranks.
  return loss.item<double>() * static_cast<double>(b.y.numel());
}

// RAII: eval mode (no dropout) and no autograd for the scope, training mode restored after.
struct EvalMode {
  explicit EvalMode(GPTImpl& m) : model(m), was_training(m.is_training()) { model.eval(); }
  ~EvalMode() { model.train(was_training); }
  GPTImpl& model;
  bool was_training;
  torch::NoGradGuard no_grad;
};

}  // namespace

double evaluate_random_batches(const EvalContext& ctx, Split split, int64_t step, int64_t batches, int64_t batch_size) {
  EvalMode mode(ctx.model);
  double sum = 0.0, tokens = 0.0;
  // The batches are dealt round-robin over the ranks; together they evaluate exactly the single-rank set.
  for (int64_t m = ctx.comm.rank(); m < batches; m += ctx.comm.size()) {
    Batch b = ctx.sampler.eval_batch(split, step, m, batch_size);
    sum += token_loss_sum(ctx, b);
    tokens += static_cast<double>(b.y.numel());
  }
  auto [total, count] = combine(ctx.comm, sum, tokens);
  return total / count;
}

LearnedParams measure_gate_open_shares(const EvalContext& ctx, int64_t windows) {
  const std::vector<int64_t> picks = autoregressive_window_indices(ctx.sampler.num_windows(Split::val), windows);
  if (picks.empty()) return {};
  std::vector<torch::Tensor> xs;
  for (int64_t pick : picks) xs.push_back(ctx.sampler.windows(Split::val, pick, 1).x);
  compat::AutocastGuard autocast(ctx.autocast, ctx.device.type(), ctx.autocast_dtype);
  return ctx.model.gate_open_shares(torch::cat(xs, 0).to(ctx.device));
}

WindowsLoss evaluate_all_windows(const EvalContext& ctx, Split split, int64_t batch_size) {
  EvalMode mode(ctx.model);
  const int64_t n = ctx.sampler.num_windows(split);
  double sum = 0.0, tokens = 0.0;
  int64_t chunk = 0;
  for (int64_t first = 0; first < n; first += batch_size, ++chunk) {
    if (chunk % ctx.comm.size() != ctx.comm.rank()) continue;
    Batch b = ctx.sampler.windows(split, first, std::min(batch_size, n - first));
    sum += token_loss_sum(ctx, b);
    tokens += static_cast<double>(b.y.numel());
  }
  auto [total, count] = combine(ctx.comm, sum, tokens);
  return {total / count, n};
}

std::vector<int64_t> autoregressive_window_indices(int64_t available, int64_t count) {
  count = std::min(count, available);
  std::vector<int64_t> idx;
  // Spread evenly over the split, and the same indices on every run for the same corpus.
  for (int64_t k = 0; k < count; ++k) idx.push_back(k * available / count);
  return idx;
}

AutoregressiveLoss evaluate_autoregressive(const EvalContext& ctx, int64_t windows) {
  EvalMode mode(ctx.model);
  std::vector<int64_t> picks = autoregressive_window_indices(ctx.sampler.num_windows(Split::val), windows);
  // This rank's windows, batched: T forwards of [W, 1..T] rather than W*T of batch 1.
  std::vector<torch::Tensor> xs, ys;
  for (size_t w = static_cast<size_t>(ctx.comm.rank()); w < picks.size(); w += static_cast<size_t>(ctx.comm.size())) {
    Batch b = ctx.sampler.windows(Split::val, picks[w], 1);
    xs.push_back(b.x);
    ys.push_back(b.y);
  }
  double prefix_sum = 0.0, window_sum = 0.0, tokens = 0.0;
  if (!xs.empty()) {
    torch::Tensor x = torch::cat(xs).to(ctx.device), y = torch::cat(ys).to(ctx.device);
    compat::AutocastGuard autocast(ctx.autocast, ctx.device.type(), ctx.autocast_dtype);
    tokens = static_cast<double>(y.numel());
    prefix_sum = GPTImpl::loss(prefix_logits(ctx.model, x), y).item<double>() * tokens;
    window_sum = GPTImpl::loss(ctx.model.forward(x), y).item<double>() * tokens;
  }
  auto [p_total, count] = combine(ctx.comm, prefix_sum, tokens);
  auto [w_total, count2] = combine(ctx.comm, window_sum, tokens);
  (void)count2;
  return {p_total / count, w_total / count, static_cast<int64_t>(picks.size())};
}

}  // namespace egm
