// Rendering of the sweep batch script (see batch_script.h).
#include "slurm/batch_script.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <utility>

#include "slurm/sbatch_template.h"
#include "util/error.h"
#include "util/shell.h"

namespace egm::slurm {
namespace {

// Sorted by name: the order `egm submit --help` and error messages list them.
// Each entry: name, whether required, default ("" for none), help line.
const std::vector<BatchParamInfo> kParams = {
    {"account", false, "", "charge the job to this account (--account)"},
    {"chdir", false, "", "working directory of the job (--chdir); default: where sbatch runs"},
    {"constraint", false, "", "node features required (--constraint)"},
    // 1 core per rank by default: a CPU run asks for more with this parameter.
    {"cpus_per_task", false, "1", "cores per rank (--cpus-per-task); also OMP_NUM_THREADS"},
    {"error", false, "", "stderr file (--error); default: into the output file"},
    {"gpus_per_node", false, "", "GPUs per node, [type:]count (--gpus-per-node)"},
    {"gres", false, "", "generic resources, e.g. gpu:a100:4 (--gres), for sites without --gpus-per-node"},
    {"job_name", false, "egm-sweep", "job name (--job-name)"},
    {"launch_command", true, "", "the command that starts coordinator and workers (egm sweep --print-command)"},
    {"max_restarts", false, "20", "requeue at most this many times, then stop and wait for a resubmit"},
    {"mem", false, "", "memory per node, e.g. 64G (--mem)"},
    {"modules", false, "", "environment modules to load, separated by spaces (site setup)"},
    {"nodes", false, "1", "nodes (--nodes)"},
    {"output", false, "egm-sweep-%j.out", "log file (--output); appended to, so requeued attempts add to it"},
    {"partition", false, "", "partition (--partition)"},
    {"qos", false, "", "quality of service (--qos)"},
    {"time", true, "", "time limit per attempt, e.g. 4:00:00 or 1-00:00:00 (--time)"},
    {"warning_seconds", false, "300", "SIGUSR2 this many seconds before the time limit, to checkpoint"},
    {"workers", true, "", "worker ranks; the job has workers + 1 tasks (the coordinator is one)"},
};

const BatchParamInfo* find_param(const std::string& name) {
  for (const auto& p : kParams)
    if (p.name == name) return &p;
  return nullptr;
}

// In kParams' order, which is sorted by name.
std::string valid_names() {
  std::string names;
  for (const auto& p : kParams) names += (names.empty() ? "" : ", ") + p.name;
  return names;
}

// Levenshtein distance, for "did you mean" on a misspelt parameter.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    // One row of the DP table, updated in place; `diagonal` holds the previous row's value at j - 1.
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string did_you_mean(const std::string& name) {
  // ntasks is no parameter (it is workers + 1), but it is what a Slurm user would type.
  if (edit_distance(name, "ntasks") <= 1)
    return " (the task count is derived: workers + 1; set 'workers')";
  const BatchParamInfo* best = nullptr;
  std::size_t best_distance = 3;  // farther than two edits is no suggestion
  for (const auto& p : kParams) {
    std::size_t d = edit_distance(name, p.name);
    if (d < best_distance) best = &p, best_distance = d;
  }
  return best ? fmt::format(" (did you mean '{}'?)", best->name) : "";
}

bool is_digits(std::string_view value) {
  return !value.empty() && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::int64_t parse_int(const std::string& name, const std::string& value, std::int64_t min,
                       std::int64_t max) {
  // At most 18 digits fits an int64, so stoll cannot overflow after this check.
  EGM_REQUIRE(is_digits(value) && value.size() <= 18, ConfigError,
              "batch parameter {}='{}' is not a whole number", name, value);
  std::int64_t parsed = std::stoll(value);
  EGM_REQUIRE(parsed >= min && parsed <= max, ConfigError,
              "batch parameter {}={} is out of range [{}, {}]", name, parsed, min, max);
  return parsed;
}

bool all_of_chars(std::string_view value, const char* extra) {
  return std::all_of(value.begin(), value.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view(extra).find(c) != std::string_view::npos;
  });
}

// Parameters after defaults are applied and every value checked.
struct ResolvedParams {
  std::map<std::string, std::string> values;  // every parameter that has a value
  std::int64_t workers = 0;

  bool has(const std::string& name) const { return values.count(name) > 0; }
  const std::string& at(const std::string& name) const { return values.at(name); }
};

ResolvedParams resolve(const BatchParams& params) {
  for (const auto& [name, value] : params) {
    EGM_REQUIRE(find_param(name) != nullptr, ConfigError,
                "unknown batch parameter '{}'{}; valid parameters: {}", name, did_you_mean(name),
                valid_names());
    EGM_REQUIRE(!value.empty(), ConfigError,
                "batch parameter '{}' is empty; give it a value or leave it out", name);
    // A newline in a value would end its #SBATCH line and inject a line of shell into the script.
    bool printable = std::none_of(value.begin(), value.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    EGM_REQUIRE(printable, ConfigError,
                "batch parameter '{}' contains a newline or control character", name);
  }
  ResolvedParams r;
  // Defaults are filled in here, so every later check sees one value per parameter.
  for (const auto& p : kParams) {
    auto given = params.find(p.name);
    if (given != params.end()) {
      r.values[p.name] = given->second;
    } else if (!p.default_value.empty()) {
      r.values[p.name] = p.default_value;
    } else {
      EGM_REQUIRE(!p.required, ConfigError, "batch parameter '{}' is required: {}", p.name, p.help);
    }
  }

  r.workers = parse_int("workers", r.at("workers"), 1, 100000);
  std::int64_t nodes = parse_int("nodes", r.at("nodes"), 1, 100000);
  // Slurm would refuse more nodes than tasks; saying so here names the parameters to change.
  EGM_REQUIRE(r.workers + 1 >= nodes, ConfigError,
              "{} nodes for {} tasks (workers + 1): every node needs at least one task", nodes,
              r.workers + 1);
  parse_int("cpus_per_task", r.at("cpus_per_task"), 1, 4096);
  parse_int("max_restarts", r.at("max_restarts"), 0, 10000);
  // sbatch --signal accepts at most 65535 seconds.
  std::int64_t warning = parse_int("warning_seconds", r.at("warning_seconds"), 1, 65535);
  // Parsed here too so a malformed time fails at submit, not when sbatch reads it.
  std::int64_t limit = parse_slurm_time_seconds(r.at("time"));
  EGM_REQUIRE(warning < limit, ConfigError,
              "warning_seconds={} is not shorter than time={} ({} s): the warning would come at the start",
              warning, r.at("time"), limit);
  if (r.has("mem")) {
    const std::string& mem = r.at("mem");
    // Slurm's own --mem syntax: a number of megabytes, or one with a K, M, G or T suffix.
    bool has_unit = std::string_view("KMGT").find(mem.back()) != std::string_view::npos;
    EGM_REQUIRE(is_digits(has_unit ? mem.substr(0, mem.size() - 1) : mem), ConfigError,
                "batch parameter mem='{}' is not like 64G (digits, then K, M, G or T)", mem);
  }
  if (r.has("gpus_per_node")) {
    const std::string& gpus = r.at("gpus_per_node");
    auto colon = gpus.rfind(':');
    // A GPU type is a word of the site's (a100, h100_80gb); the count follows the last colon.
    bool ok = colon == std::string::npos
                  ? is_digits(gpus)
                  : colon > 0 && is_digits(gpus.substr(colon + 1)) &&
                        all_of_chars(gpus.substr(0, colon), "_.-");
    EGM_REQUIRE(ok, ConfigError, "batch parameter gpus_per_node='{}' is not [type:]count, e.g. 4 or a100:4",
                gpus);
  }
  if (r.has("modules")) {
    // A restricted alphabet: a value with shell syntax in it is refused rather than handed to `module load`.
    EGM_REQUIRE(all_of_chars(r.at("modules"), " _.+/@-"), ConfigError,
                "batch parameter modules='{}': module names are letters, digits and _.+/@- separated by spaces",
                r.at("modules"));
  }
  return r;
}

std::string sbatch_lines(const ResolvedParams& r) {
  // option -> value ("" for a flag); std::map keeps them sorted.
  std::map<std::string, std::string> options = {
      {"cpus-per-task", r.at("cpus_per_task")},
      {"job-name", r.at("job_name")},
      {"nodes", r.at("nodes")},
      {"ntasks", std::to_string(r.workers + 1)},
      // Append: a requeued attempt adds to the log of the earlier ones instead of truncating it.
      {"open-mode", "append"},
      {"output", r.at("output")},
      // Requeueable: after a checkpoint on the warning signal the script runs `scontrol requeue` on itself.
      {"requeue", ""},
      // B: the signal goes to the batch shell only, which forwards it to the coordinator and workers.
      {"signal", fmt::format("B:{}@{}", kWarningSignal, r.at("warning_seconds"))},
      {"time", r.at("time")},
  };
  const std::pair<const char*, const char*> optional[] = {
      {"account", "account"}, {"chdir", "chdir"},  {"constraint", "constraint"},
      {"error", "error"},     {"gpus_per_node", "gpus-per-node"},
      {"gres", "gres"},       {"mem", "mem"},      {"partition", "partition"},
      {"qos", "qos"},
  };
  for (const auto& [param, option] : optional)
    if (r.has(param)) options[option] = r.at(param);

  std::string lines;
  for (const auto& [option, value] : options) {
    lines += "#SBATCH --" + option;
    // Quoted: sbatch reads #SBATCH values with shell-like quoting, so a space in a value stays one word.
    if (!value.empty()) lines += "=" + shell_quote(value);
    lines += "\n";
  }
  // Never empty: the required options above always give lines.
  lines.pop_back();  // the template supplies the line's end
  return lines;
}

// The module names as shell words for the template's `modules=(...)` array.
std::string module_words(const ResolvedParams& r) {
  std::string words;
  if (!r.has("modules")) return words;
  std::string_view rest = r.at("modules");
  while (true) {
    auto start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    // npos is larger than any size, so min gives the end of the text for the last word.
    auto end = std::min(rest.find(' '), rest.size());
    words += (words.empty() ? "" : " ") + shell_quote(rest.substr(0, end));
    rest.remove_prefix(end);
  }
  return words;
}

// Replaces every {{key}} in `text`; a key without a value is a template bug.
std::string substitute(std::string_view text, const std::map<std::string, std::string>& values) {
  std::string out;
  std::size_t pos = 0;
  while (true) {
    std::size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) break;
    std::size_t close = text.find("}}", open);
    EGM_CHECK(close != std::string_view::npos, "batch script template: unclosed '{{{{' at offset {}", open);
    std::string key(text.substr(open + 2, close - open - 2));
    auto value = values.find(key);
    // The template is egm's own (compiled in): an unknown placeholder is a bug, not a user error.
    EGM_CHECK(value != values.end(), "batch script template: unknown placeholder '{}'", key);
    out.append(text.substr(pos, open - pos));
    // Values are not scanned again, so a value that contains {{...}} is left as it is.
    out += value->second;
    pos = close + 2;
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace

const std::vector<BatchParamInfo>& batch_parameters() { return kParams; }

std::string_view batch_script_template() { return detail::kSweepTemplate; }

std::string render_batch_script(const BatchParams& params) {
  ResolvedParams r = resolve(params);
  std::map<std::string, std::string> values = {
      {"sbatch_lines", sbatch_lines(r)},
      {"modules", module_words(r)},
      // One shell word assigned in the script, which runs it with eval: its own quoting survives.
      {"launch_command", shell_quote(r.at("launch_command"))},
      {"requeue_exit_code", std::to_string(kRequeueExitCode)},
      {"warning_seconds", r.at("warning_seconds")},
      {"max_restarts", r.at("max_restarts")},
      {"cpus_per_task", r.at("cpus_per_task")},
  };
  return substitute(batch_script_template(), values);
}

std::int64_t parse_slurm_time_seconds(std::string_view time) {
  std::string text(time);
  auto bad = [&] {
    EGM_THROW(ConfigError,
              "time='{}' is not a Slurm time limit: use M, M:S, H:M:S, D-H, D-H:M or D-H:M:S", text);
  };
  std::int64_t days = 0;
  std::string_view rest = time;
  auto dash = rest.find('-');
  bool has_days = dash != std::string_view::npos;
  // At most 9 digits per field: the total below cannot overflow an int64.
  auto number = [&](std::string_view digits) -> std::int64_t {
    if (!is_digits(digits) || digits.size() > 9) bad();
    return std::stoll(std::string(digits));
  };
  if (has_days) {
    days = number(rest.substr(0, dash));
    rest.remove_prefix(dash + 1);
  }
  std::vector<std::int64_t> fields;
  while (true) {
    auto colon = rest.find(':');
    fields.push_back(number(rest.substr(0, colon)));
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  if (fields.size() > 3) bad();
  std::int64_t h = 0, m = 0, s = 0;
  if (has_days) {
    // D-H, D-H:M, D-H:M:S
    h = fields[0];
    if (fields.size() > 1) m = fields[1];
    if (fields.size() > 2) s = fields[2];
  } else if (fields.size() == 1) {
    // Without days, Slurm reads one number as minutes and two as minutes:seconds.
    m = fields[0];
  } else if (fields.size() == 2) {
    m = fields[0], s = fields[1];
  } else {
    h = fields[0], m = fields[1], s = fields[2];
  }
  std::int64_t total = ((days * 24 + h) * 60 + m) * 60 + s;
  EGM_REQUIRE(total > 0, ConfigError, "time='{}' is zero; give the job a time limit", text);
  return total;
}

// Reads sbatch's plain "Submitted batch job N" or its --parsable "N[;cluster]", on any line (sites print banners).
std::uint64_t parse_sbatch_job_id(std::string_view sbatch_output) {
  auto digits_at = [](std::string_view s) {
    std::size_t n = 0;
    // At most 19 digits fits an unsigned 64-bit, so stoull cannot overflow.
    while (n < s.size() && n < 19 && s[n] >= '0' && s[n] <= '9') ++n;
    return n;
  };
  constexpr std::string_view kPrefix = "Submitted batch job ";
  std::string_view rest = sbatch_output;
  while (!rest.empty()) {
    auto end = std::min(rest.find('\n'), rest.size());
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
    if (line.substr(0, kPrefix.size()) == kPrefix) {
      std::string_view id = line.substr(kPrefix.size());
      std::size_t n = digits_at(id);
      if (n > 0 && (n == id.size() || id[n] == ' ')) return std::stoull(std::string(id.substr(0, n)));
    }
    // --parsable: "123" or "123;cluster"
    std::size_t n = digits_at(line);
    if (n > 0 && (n == line.size() || line[n] == ';')) return std::stoull(std::string(line.substr(0, n)));
  }
  // Error, not ConfigError: the job may have been submitted, and the user must check squeue.
  EGM_THROW(Error, "no job id in sbatch's output: '{}'", std::string(sbatch_output));
}

}  // namespace egm::slurm
