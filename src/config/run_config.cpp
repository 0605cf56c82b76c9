// The run config's fields, each bound to its JSON key once (to JSON, from JSON,
// overrides, defaults per preset), and the checks of their values.
#include "config/run_config.h"

#include <fmt/ranges.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "config/variants.h"
#include "util/error.h"
#include "util/sha256.h"

namespace egm {
namespace {

using nlohmann::json;

// One field of a config section: how to read it from JSON (with a type check
// that names the path) and how to write it.
template <typename Section>
struct Field {
  // Both directions from one member pointer (field() below), so a key cannot be read one way and written another.
  std::function<void(Section&, const json&, const std::string& path)> read;
  std::function<json(const Section&)> write;
  // Execution choices added after configs were hashed: written only when not at their
  // default, so every config written before them keeps its canonical JSON and hash.
  bool omitted_at_default = false;
};

const char* type_name(const json& v) { return v.type_name(); }

// v (an integer, or a float without a fraction such as 1e4) as a T, or nullopt
// when it does not fit: checked before converting, since a float beyond T is
// undefined behaviour to cast and an integer beyond T would wrap (4294967297 -> 1).
template <typename T>
std::optional<T> integral_value(const json& v) {
  using L = std::numeric_limits<T>;
  // nlohmann stores a non-negative integer as unsigned, a negative one as signed; a float goes last.
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    return u <= static_cast<uint64_t>(L::max()) ? std::optional<T>(static_cast<T>(u)) : std::nullopt;
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i < 0) return i >= static_cast<int64_t>(L::min()) ? std::optional<T>(static_cast<T>(i)) : std::nullopt;
    return static_cast<uint64_t>(i) <= static_cast<uint64_t>(L::max()) ? std::optional<T>(static_cast<T>(i))
                                                                         : std::nullopt;
  }
  const double d = v.get<double>();
  // [min, 2^digits): both ends exact in a double.
  if (std::trunc(d) != d || !(d >= static_cast<double>(L::min()) && d < std::ldexp(1.0, L::digits))) return std::nullopt;
  return static_cast<T>(d);
}

template <typename Section, typename T>
Field<Section> field(T Section::*member) {
  Field<Section> f;
  f.write = [member](const Section& s) { return json(s.*member); };
  f.read = [member](Section& s, const json& v, const std::string& path) {
    // bool first: it is an integral type too, but 1 must not pass for true.
    if constexpr (std::is_same_v<T, bool>) {
      EGM_REQUIRE(v.is_boolean(), ConfigError, "{}: expected a boolean, got {}", path, type_name(v));
      s.*member = v.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
      // A float with no fraction is accepted: JSON writers (and users) write 1e4 for 10000.
      EGM_REQUIRE(v.is_number_integer() || (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>()),
                  ConfigError, "{}: expected an integer, got {} {}", path, type_name(v), v.dump());
      if constexpr (std::is_unsigned_v<T>) {
        EGM_REQUIRE(v.is_number_unsigned() || v.get<double>() >= 0, ConfigError,
                    "{}: expected a non-negative integer, got {}", path, v.dump());
      }
      const std::optional<T> value = integral_value<T>(v);
      EGM_REQUIRE(value, ConfigError, "{}: {} is out of range ({}..{})", path, v.dump(), std::numeric_limits<T>::min(),
                  std::numeric_limits<T>::max());
      s.*member = *value;
    } else if constexpr (std::is_floating_point_v<T>) {
      EGM_REQUIRE(v.is_number(), ConfigError, "{}: expected a number, got {}", path, type_name(v));
      // Any number: an integer in a float field (lr: 1) is what the user meant.
      s.*member = v.get<T>();
    } else {
      EGM_REQUIRE(v.is_string(), ConfigError, "{}: expected a string, got {}", path, type_name(v));
      s.*member = v.get<std::string>();
    }
  };
  return f;
}

template <typename Section>
Field<Section> omitted_at_default(Field<Section> f) {
  f.omitted_at_default = true;
  return f;
}

const std::map<std::string, Field<ModelConfig>>& model_fields() {
  // The JSON keys: stored in every cell's config_json, so renaming one changes every config hash.
  static const std::map<std::string, Field<ModelConfig>> fields = {
      {"variant", field(&ModelConfig::variant)},
      {"n_layer", field(&ModelConfig::n_layer)},
      {"n_head", field(&ModelConfig::n_head)},
      {"d_model", field(&ModelConfig::d_model)},
      {"block_size", field(&ModelConfig::block_size)},
      {"vocab_size", field(&ModelConfig::vocab_size)},
      {"dropout", field(&ModelConfig::dropout)},
      {"ega_tau_init", field(&ModelConfig::ega_tau_init)},
      {"ega_alpha_init", field(&ModelConfig::ega_alpha_init)},
      {"conv_max_lag", field(&ModelConfig::conv_max_lag)},
      {"qk_scale_init", field(&ModelConfig::qk_scale_init)},
      {"attention_path", omitted_at_default(field(&ModelConfig::attention_path))},
  };
  return fields;
}

const std::map<std::string, Field<TrainConfig>>& train_fields() {
  static const std::map<std::string, Field<TrainConfig>> fields = {
      {"seed", field(&TrainConfig::seed)},
      {"batch_size", field(&TrainConfig::batch_size)},
      {"max_steps", field(&TrainConfig::max_steps)},
      {"lr", field(&TrainConfig::lr)},
      {"min_lr", field(&TrainConfig::min_lr)},
      {"warmup_steps", field(&TrainConfig::warmup_steps)},
      {"weight_decay", field(&TrainConfig::weight_decay)},
      {"beta1", field(&TrainConfig::beta1)},
      {"beta2", field(&TrainConfig::beta2)},
      {"adam_eps", field(&TrainConfig::adam_eps)},
      {"grad_clip", field(&TrainConfig::grad_clip)},
      {"eval_interval", field(&TrainConfig::eval_interval)},
      {"eval_batches", field(&TrainConfig::eval_batches)},
      {"full_val_eval", field(&TrainConfig::full_val_eval)},
      {"ar_eval_windows", field(&TrainConfig::ar_eval_windows)},
      {"precision", field(&TrainConfig::precision)},
      {"optimizer_path", omitted_at_default(field(&TrainConfig::optimizer_path))},
      {"cuda_graphs", omitted_at_default(field(&TrainConfig::cuda_graphs))},
  };
  return fields;
}

template <typename Section>
json section_to_json(const Section& s, const std::map<std::string, Field<Section>>& fields, bool every_field) {
  json j = json::object();
  // The struct's defaults (the paper's), not the preset's: an omitted field must read back the same under any preset.
  const Section defaults{};
  for (const auto& [key, f] : fields) {
    json value = f.write(s);
    if (f.omitted_at_default && !every_field && value == f.write(defaults)) continue;
    j[key] = std::move(value);
  }
  return j;
}

template <typename Section>
void read_section(Section& s, const json& j, const std::map<std::string, Field<Section>>& fields,
                  const std::string& path) {
  EGM_REQUIRE(j.is_object(), ConfigError, "{}: expected an object, got {}", path, type_name(j));
  for (const auto& [key, value] : j.items()) {
    // An unknown key is refused, never ignored: a misspelt "learning_rate" would otherwise train with the default.
    auto it = fields.find(key);
    if (it == fields.end()) {
      std::vector<std::string> valid;
      for (const auto& [k, f] : fields) valid.push_back(k);
      EGM_THROW(ConfigError, "{}.{}: unknown key; valid keys: {}", path, key, fmt::join(valid, ", "));
    }
    it->second.read(s, value, path + "." + key);
  }
}

// Accepts {"model": {...}} / {"train": {...}} and flat "model.x" keys.
void apply_sections(RunConfig& c, const json& j, const std::string& path, bool allow_preset) {
  EGM_REQUIRE(j.is_object(), ConfigError, "{}: expected an object, got {}", path, type_name(j));
  for (const auto& [key, value] : j.items()) {
    const std::string p = path.empty() ? key : path + "." + key;
    if (key == "model") {
      read_section(c.model, value, model_fields(), p);
    } else if (key == "train") {
      read_section(c.train, value, train_fields(), p);
    } else if (key == "preset" && allow_preset) {
      // handled by the caller
    } else if (key.rfind("model.", 0) == 0) {
      // A flat "model.x" key, as --set model.x=V writes it; read as a one-key section.
      read_section(c.model, json{{key.substr(6), value}}, model_fields(), path.empty() ? "model" : path + ".model");
    } else if (key.rfind("train.", 0) == 0) {
      read_section(c.train, json{{key.substr(6), value}}, train_fields(), path.empty() ? "train" : path + ".train");
    } else {
      EGM_THROW(ConfigError, "{}: unknown key; expected \"model\", \"train\"{}", p, allow_preset ? " or \"preset\"" : "");
    }
  }
}

// The model keys a JSON document sets itself ({"model": {...}} or flat "model.x").
std::set<std::string> explicit_model_keys(const json& j) {
  std::set<std::string> keys;
  for (const auto& [key, value] : j.items()) {
    if (key == "model" && value.is_object())
      for (const auto& [k, v] : value.items()) keys.insert(k);
    else if (key.rfind("model.", 0) == 0)
      keys.insert(key.substr(6));
  }
  return keys;
}

json variant_options_or_empty(const std::string& variant) {
  try {
    return resolve_variant(variant).options;
  } catch (const ConfigError&) {
    // Here the variant may still be unknown: options are applied before validate() says why.
    return json::object();  // validate() reports the unknown variant
  }
}

// Sets the options the variant fixes (conv_l8 -> conv_max_lag 8). A value the
// user set explicitly must agree. Options fixed only by `previous_variant`
// return to the preset's value, so switching variants leaves nothing behind.
void apply_variant_options_checked(RunConfig& c, const std::set<std::string>& explicit_keys,
                                   const std::string& previous_variant) {
  const json options = variant_options_or_empty(c.model.variant);
  const json previous = variant_options_or_empty(previous_variant);  // named: items() must not outlive it
  // First undo the previous variant's options (conv_l8 -> base must not keep conv_max_lag 8), then apply the new ones.
  for (const auto& [key, value] : previous.items()) {
    if (options.contains(key) || explicit_keys.count(key)) continue;
    const auto& f = model_fields().at(key);
    f.read(c.model, f.write(preset_config(c.preset).model), "model." + key);
  }
  for (const auto& [key, value] : options.items()) {
    const auto& f = model_fields().at(key);
    // A conflicting explicit value is refused rather than silently replaced: "conv_l8" with conv_max_lag 4 is a contradiction.
    EGM_REQUIRE(!explicit_keys.count(key) || f.write(c.model) == value, ConfigError,
                "model.{}: variant '{}' fixes it to {}, got {}; drop the key or pick another variant", key,
                c.model.variant, value.dump(), f.write(c.model).dump());
    f.read(c.model, value, "model." + key);
  }
}

}  // namespace

// For configs built in code: sets the variant's options without the explicit-key check.
void apply_variant_options(ModelConfig& model) {
  const json options = variant_options_or_empty(model.variant);
  for (const auto& [key, value] : options.items()) model_fields().at(key).read(model, value, "model." + key);
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = {"paper", "small", "tiny"};
  return names;
}

RunConfig preset_config(const std::string& preset) {
  RunConfig c;  // the struct defaults are the paper's configuration (SPEC.md section 3)
  c.preset = preset;
  if (preset == "paper") return c;
  if (preset == "small") {
    // CPU study scale: a few minutes per run on one core.
    // Values not set here keep the paper's (dropout, optimizer, schedule shape).
    c.model.n_layer = 4;
    c.model.n_head = 4;
    c.model.d_model = 128;
    c.model.block_size = 128;
    c.train.batch_size = 32;
    c.train.max_steps = 1500;
    c.train.lr = 1e-3;
    c.train.warmup_steps = 100;
    c.train.eval_interval = 250;
    c.train.eval_batches = 20;
    c.train.ar_eval_windows = 8;
    return c;
  }
  if (preset == "tiny") {
    // Tests: a couple of seconds per run.
    c.model.n_layer = 2;
    c.model.n_head = 2;
    c.model.d_model = 32;
    c.model.block_size = 32;
    c.train.batch_size = 8;
    c.train.max_steps = 60;
    c.train.lr = 3e-3;
    c.train.warmup_steps = 10;
    c.train.eval_interval = 20;
    c.train.eval_batches = 4;
    c.train.ar_eval_windows = 4;
    return c;
  }
  EGM_THROW(ConfigError, "unknown preset '{}'; valid: {}", preset, fmt::join(preset_names(), ", "));
}

json to_json(const RunConfig& c, bool every_field) {
  json j;
  // The preset too: run_config_from_json starts from it, so the config reads back the same.
  j["preset"] = c.preset;
  j["model"] = section_to_json(c.model, model_fields(), every_field);
  j["train"] = section_to_json(c.train, train_fields(), every_field);
  return j;
}

RunConfig run_config_from_json(const json& j, const std::string& default_preset) {
  EGM_REQUIRE(j.is_object(), ConfigError, "run config: expected a JSON object, got {}", type_name(j));
  // The preset is applied first: the document's fields then override its values.
  std::string preset = default_preset;
  if (j.contains("preset")) {
    EGM_REQUIRE(j["preset"].is_string(), ConfigError, "preset: expected a string, got {}", type_name(j["preset"]));
    preset = j["preset"].get<std::string>();
  }
  RunConfig c = preset_config(preset);
  // So a variant set by the document replaces the preset's cleanly (apply_variant_options_checked).
  const std::string preset_variant = c.model.variant;
  apply_sections(c, j, "", /*allow_preset=*/true);
  apply_variant_options_checked(c, explicit_model_keys(j), preset_variant);
  validate(c);
  return c;
}

void apply_overrides(RunConfig& c, const json& overrides) {
  // Overrides change a config that may already carry a variant's options: they are undone if the variant changes.
  const std::string previous_variant = c.model.variant;
  apply_sections(c, overrides, "", /*allow_preset=*/false);
  apply_variant_options_checked(c, explicit_model_keys(overrides), previous_variant);
  validate(c);
}

// Collects every problem before throwing, so one message lists them all, one per "  - " line
// (spec/experiment_spec.cpp splits on that format to point each at the spec's field).
void validate(const RunConfig& c) {
  std::vector<std::string> problems;
  auto need = [&](bool ok, std::string msg) {
    if (!ok) problems.push_back(std::move(msg));
  };
  const ModelConfig& m = c.model;
  const TrainConfig& t = c.train;
  try {
    VariantInfo v = resolve_variant(m.variant);
    // conv_max_lag matters only for conv attention; elsewhere a nonzero value is still checked for sign.
    if (v.attention == "conv" || m.conv_max_lag != 0)
      need(m.conv_max_lag >= 0, fmt::format("model.conv_max_lag must be >= 0, got {}", m.conv_max_lag));
    for (const auto& [key, value] : v.options.items()) {
      const json actual = model_fields().at(key).write(m);
      need(actual == value, fmt::format("model.{} = {} conflicts with variant '{}', which fixes it to {} "
                                        "(a config built in code needs apply_variant_options)",
                                        key, actual.dump(), m.variant, value.dump()));
    }
  } catch (const ConfigError& e) {
    problems.push_back(std::string("model.variant: ") + e.what());
  }
  need(m.n_layer >= 1, fmt::format("model.n_layer must be >= 1, got {}", m.n_layer));
  need(m.n_head >= 1, fmt::format("model.n_head must be >= 1, got {}", m.n_head));
  need(m.d_model >= 2, fmt::format("model.d_model must be >= 2, got {}", m.d_model));
  need(m.block_size >= 1, fmt::format("model.block_size must be >= 1, got {}", m.block_size));
  need(m.vocab_size >= 1, fmt::format("model.vocab_size must be >= 1, got {}", m.vocab_size));
  if (m.n_head >= 1 && m.d_model >= 1) {
    need(m.d_model % m.n_head == 0,
         fmt::format("model.d_model ({}) must be divisible by model.n_head ({})", m.d_model, m.n_head));
    need(m.d_model % 2 == 0, fmt::format("model.d_model ({}) must be even (positional encodings use sin/cos pairs)", m.d_model));
    if (m.d_model % m.n_head == 0)
      need(m.head_size() % 2 == 0,
           fmt::format("head size d_model/n_head = {} must be even (RoPE rotates pairs)", m.head_size()));
  }
  need(m.dropout >= 0.0 && m.dropout < 1.0, fmt::format("model.dropout must be in [0, 1), got {}", m.dropout));
  // JSON cannot hold an infinity, but a config built in code can.
  need(std::isfinite(m.ega_alpha_init) && std::isfinite(m.ega_tau_init), "model.ega_*_init must be finite");
  need(t.batch_size >= 1, fmt::format("train.batch_size must be >= 1, got {}", t.batch_size));
  need(t.max_steps >= 1, fmt::format("train.max_steps must be >= 1, got {}", t.max_steps));
  need(t.lr > 0.0, fmt::format("train.lr must be > 0, got {}", t.lr));
  // The cosine schedule decays from lr to min_lr: a min_lr above lr would make it rise.
  need(t.min_lr >= 0.0 && t.min_lr <= t.lr, fmt::format("train.min_lr must be in [0, lr], got {}", t.min_lr));
  need(t.warmup_steps >= 0, fmt::format("train.warmup_steps must be >= 0, got {}", t.warmup_steps));
  need(t.weight_decay >= 0.0, fmt::format("train.weight_decay must be >= 0, got {}", t.weight_decay));
  need(t.beta1 >= 0.0 && t.beta1 < 1.0, fmt::format("train.beta1 must be in [0, 1), got {}", t.beta1));
  need(t.beta2 >= 0.0 && t.beta2 < 1.0, fmt::format("train.beta2 must be in [0, 1), got {}", t.beta2));
  need(t.adam_eps > 0.0, fmt::format("train.adam_eps must be > 0, got {}", t.adam_eps));
  need(t.grad_clip >= 0.0, fmt::format("train.grad_clip must be >= 0, got {}", t.grad_clip));
  need(t.eval_interval >= 1, fmt::format("train.eval_interval must be >= 1, got {}", t.eval_interval));
  need(t.eval_batches >= 1, fmt::format("train.eval_batches must be >= 1, got {}", t.eval_batches));
  need(t.ar_eval_windows >= 0, fmt::format("train.ar_eval_windows must be >= 0, got {}", t.ar_eval_windows));
  // Checked as text here; the trainer maps the name to a dtype.
  need(t.precision == "fp32" || t.precision == "bf16" || t.precision == "fp16",
       fmt::format("train.precision must be fp32, bf16 or fp16, got '{}'", t.precision));
  need(m.attention_path == "auto" || m.attention_path == "kernels" || m.attention_path == "sdpa" ||
           m.attention_path == "eager",
       fmt::format("model.attention_path must be auto, kernels, sdpa or eager, got '{}'", m.attention_path));
  need(t.optimizer_path == "auto" || t.optimizer_path == "fused" || t.optimizer_path == "libtorch",
       fmt::format("train.optimizer_path must be auto, fused or libtorch, got '{}'", t.optimizer_path));
  if (!problems.empty())
    EGM_THROW(ConfigError, "invalid run config:\n  - {}", fmt::join(problems, "\n  - "));
}

// auto: the fused SDPA path on CUDA, egm's own kernels on the CPU, whichever is faster there.
std::string resolved_attention_path(const ModelConfig& model, bool cuda) {
  if (model.attention_path != "auto") return model.attention_path;
  return cuda ? "sdpa" : "kernels";
}

// auto: the fused AdamW on CUDA, LibTorch's optimizer on the CPU.
std::string resolved_optimizer_path(const TrainConfig& train, bool cuda) {
  if (train.optimizer_path != "auto") return train.optimizer_path;
  return cuda ? "fused" : "libtorch";
}

// nlohmann::json objects keep keys sorted, so dump() is canonical.
std::string config_text(const RunConfig& c) { return to_json(c).dump(); }

std::string config_hash(const RunConfig& c) { return config_hash_of_text(config_text(c)); }

std::string config_hash_of_text(const std::string& config_text) { return sha256_hex(config_text); }

}  // namespace egm
