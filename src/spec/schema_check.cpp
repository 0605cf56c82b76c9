// The spec's JSON Schema check (valijson), its errors rendered as one line
// naming the path in the user's file.
#include "spec/schema_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include <algorithm>
#include <limits>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "spec/generated_experiment_schema.h"
#include "util/json_limits.h"

namespace egm::spec {
namespace {

using nlohmann::json;

// The schema without its "uniqueItems" keywords, which unique_items_problems
// checks instead: valijson compares every pair of items (O(n^2): 25,000 seeds
// took seconds, a hostile million would take hours) and reports every pair.
json without_unique_items(json schema) {
  if (schema.is_object()) {
    schema.erase("uniqueItems");
    for (auto& [key, value] : schema.items()) value = without_unique_items(std::move(value));
  } else if (schema.is_array()) {
    for (auto& value : schema) value = without_unique_items(std::move(value));
  }
  return schema;
}

const valijson::Schema& compiled_schema() {
  // Compiled once per process (a function-local static: thread-safe initialisation).
  static const std::unique_ptr<valijson::Schema> schema = [] {
    auto s = std::make_unique<valijson::Schema>();
    // Draft 7: the version schemas/experiment.schema.json is written against.
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    const json checked = without_unique_items(experiment_schema());
    valijson::adapters::NlohmannJsonAdapter adapter(checked);
    parser.populateSchema(adapter, *s);
    return s;
  }();
  return *schema;
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

// A step of a JSON path: an object key or an array index.
struct Step {
  bool is_index = false;
  std::string key;
  size_t index = 0;
};

std::string render_path(const std::vector<Step>& steps) {
  std::string path = "$";
  for (const auto& s : steps) path = s.is_index ? path + fmt::format("[{}]", s.index) : path_with_key(path, s.key);
  return path;
}

// valijson's context is {"<root>", "[key]", "[3]", ...}; whether "[3]" is an
// index or a key called "3" depends on the document, so walk it.
std::vector<Step> resolve_context(const std::vector<std::string>& context, const json& document) {
  std::vector<Step> steps;
  const json* node = &document;
  for (size_t i = 1; i < context.size(); ++i) {
    std::string token = context[i];
    if (token.size() >= 2 && token.front() == '[' && token.back() == ']') token = token.substr(1, token.size() - 2);
    Step step;
    if (node && node->is_array()) {
      step.is_index = true;
      step.index = static_cast<size_t>(std::stoul(token));
      node = step.index < node->size() ? &(*node)[step.index] : nullptr;
    } else {
      step.key = token;
      node = node && node->is_object() && node->contains(token) ? &(*node)[token] : nullptr;
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

// nullptr when the path leaves the document (a missing required key's parent path still resolves).
const json* value_at(const json& document, const std::vector<Step>& steps) {
  const json* node = &document;
  for (const auto& s : steps) {
    if (s.is_index) {
      if (!node->is_array() || s.index >= node->size()) return nullptr;
      node = &(*node)[s.index];
    } else {
      if (!node->is_object() || !node->contains(s.key)) return nullptr;
      node = &(*node)[s.key];
    }
  }
  return node;
}

// Only local references ("#/definitions/..."): the schema refers to nothing outside itself.
const json* follow_ref(const json* node) {
  while (node && node->is_object() && node->contains("$ref")) {
    const std::string ref = (*node)["$ref"].get<std::string>();
    if (!starts_with(ref, "#")) return nullptr;
    const json& root = experiment_schema();
    const json::json_pointer pointer(ref.substr(1));
    node = root.contains(pointer) ? &root.at(pointer) : nullptr;
  }
  return node;
}

// The schema node of one step below `node` (its $ref followed; nullptr when unknown).
const json* child_schema(const json* node, const Step& s) {
  if (!node) return nullptr;
  if (s.is_index) return follow_ref(node->contains("items") ? &(*node)["items"] : nullptr);
  if (node->contains("properties") && (*node)["properties"].contains(s.key))
    return follow_ref(&(*node)["properties"][s.key]);
  if (node->contains("additionalProperties") && (*node)["additionalProperties"].is_object())
    return follow_ref(&(*node)["additionalProperties"]);
  return nullptr;
}

// The schema node that describes the value at `steps` (nullptr when unknown).
const json* schema_at(const std::vector<Step>& steps) {
  const json* node = follow_ref(&experiment_schema());
  for (const auto& s : steps) node = child_schema(node, s);
  return node;
}

std::string describe_value(const json* value) {
  if (!value) return "nothing";
  // Cut at 40 characters: the message names the value, it does not reprint it.
  std::string text = value->dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  if (value->is_object() || value->is_array()) return std::string("an ") + (value->is_object() ? "object" : "array");
  return fmt::format("{} {}", value->type_name(), text);
}

std::string type_text(const json& type) {
  if (type.is_array()) {
    std::vector<std::string> names;
    for (const auto& t : type) names.push_back(t.get<std::string>());
    return fmt::format("{}", fmt::join(names, " or "));
  }
  return type.get<std::string>();
}

// The text between the last pair of single quotes of a valijson message.
std::string quoted_name(const std::string& description) {
  size_t end = description.rfind('\'');
  if (end == std::string::npos || end == 0) return {};
  size_t begin = description.rfind('\'', end - 1);
  if (begin == std::string::npos) return {};
  return description.substr(begin + 1, end - begin - 1);
}

// Messages that only say "something below failed": the leaf error says what.
bool is_summary(const std::string& d) {
  return starts_with(d, "Failed to validate against schema associated with property name") ||
         starts_with(d, "Failed to validate item #") ||
         starts_with(d, "Failed to validate against additional properties schema") ||
         starts_with(d, "Failed to validate against child schema #") ||
         starts_with(d, "Failed to validate against any child schemas allowed by oneOf") ||
         starts_with(d, "Failed to validate against any schemas allowed by anyOf");
}

Problem translate(const valijson::ValidationResults::Error& error, const json& document) {
  std::vector<Step> steps = resolve_context(error.context, document);
  const std::string& d = error.description;
  const json* schema = schema_at(steps);
  const json* value = value_at(document, steps);

  // The matched prefixes are valijson's own messages; an unmatched one is passed through as it is (the last return).
  if (starts_with(d, "Object contains a property that could not be validated")) {
    const std::string key = quoted_name(d);
    std::vector<std::string> valid;
    if (schema && schema->contains("properties"))
      for (const auto& [k, v] : (*schema)["properties"].items()) valid.push_back(k);
    steps.push_back(Step{false, key, 0});
    return {render_path(steps), valid.empty() ? "unknown key"
                                              : fmt::format("unknown key; valid keys: {}", fmt::join(valid, ", "))};
  }
  if (starts_with(d, "Missing required property")) {
    steps.push_back(Step{false, quoted_name(d), 0});
    return {render_path(steps), "required key is missing"};
  }
  if (starts_with(d, "Value type not permitted") && schema && schema->contains("type"))
    return {render_path(steps), fmt::format("expected {}, got {}", type_text((*schema)["type"]), describe_value(value))};
  if (starts_with(d, "Failed to match against any enum values") && schema && schema->contains("enum")) {
    std::vector<std::string> options;
    for (const auto& e : (*schema)["enum"]) options.push_back(e.dump());
    return {render_path(steps), fmt::format("must be one of {}, got {}", fmt::join(options, ", "), describe_value(value))};
  }
  if (starts_with(d, "Failed to match regex") && schema && schema->contains("pattern"))
    return {render_path(steps),
            fmt::format("must match {} (letters, digits, '_', '.', '-'), got {}",
                        (*schema)["pattern"].get<std::string>(), describe_value(value))};
  // Only minItems 1 has a plainer wording; another minimum keeps valijson's message.
  if (starts_with(d, "Array should contain no fewer than") && schema && schema->value("minItems", 0) == 1)
    return {render_path(steps), "must not be empty"};
  if (starts_with(d, "Expected number greater than")) {
    // The validator reads an integer past int64's range as a negative one: it is
    // refused, as it must be (cells store seeds and fields as signed 64-bit), but
    // for what it is.
    if (value && value->is_number_unsigned() &&
        value->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return {render_path(steps),
              fmt::format("must be <= {}, got {}",
                          schema && schema->contains("maximum") ? (*schema)["maximum"].dump()
                                                                : std::to_string(std::numeric_limits<int64_t>::max()),
                          describe_value(value))};
    if (schema && schema->contains("minimum"))
      return {render_path(steps),
              fmt::format("must be >= {}, got {}", (*schema)["minimum"].dump(), describe_value(value))};
  }
  if (starts_with(d, "Expected number less than") && schema && schema->contains("maximum"))
    return {render_path(steps),
            fmt::format("must be <= {}, got {}", (*schema)["maximum"].dump(), describe_value(value))};
  return {render_path(steps), d};
}

// "uniqueItems" of the schema, checked by sorting: each item equal to an earlier one is
// one problem naming the first ("$.seeds[2]: duplicate of item [0] (number 0)").
// Walks the document beside the schema with schema_at's steps (child_schema), so every
// array the schema marks unique is checked, wherever it sits.
void unique_items_problems(const json& value, const json* schema, std::vector<Step>& steps,
                           std::vector<Problem>& problems) {
  schema = follow_ref(schema);
  if (!schema || !schema->is_object()) return;
  if (value.is_array()) {
    if (schema->value("uniqueItems", false) && value.size() > 1) {
      std::vector<size_t> order(value.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      // Stable, so among equal items the first in the file comes first and the rest are named its duplicates.
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return value[a] < value[b]; });
      std::vector<std::pair<size_t, size_t>> duplicates;  // (later index, first index)
      for (size_t k = 1, first = order[0]; k < order.size(); ++k) {
        if (value[order[k]] == value[order[k - 1]])
          duplicates.emplace_back(order[k], first);
        else
          first = order[k];
      }
      // Reported in the file's order, not the sorted one.
      std::sort(duplicates.begin(), duplicates.end());
      for (const auto& [later, first] : duplicates) {
        steps.push_back(Step{true, {}, later});
        problems.push_back({render_path(steps), fmt::format("duplicate of item [{}] ({}); items must be unique", first,
                                                            describe_value(&value[later]))});
        steps.pop_back();
      }
    }
    for (size_t i = 0; i < value.size(); ++i) {
      steps.push_back(Step{true, {}, i});
      unique_items_problems(value[i], child_schema(schema, steps.back()), steps, problems);
      steps.pop_back();
    }
  } else if (value.is_object()) {
    for (const auto& [key, child] : value.items()) {
      steps.push_back(Step{false, key, 0});
      unique_items_problems(child, child_schema(schema, steps.back()), steps, problems);
      steps.pop_back();
    }
  }
}

}  // namespace

std::string path_with_key(const std::string& path, const std::string& key) {
  return json_path_with_key(path, key);
}

const json& experiment_schema() {
  // Embedded at build time (generated_experiment_schema.h); the size minus the string's NUL.
  static const json schema = json::parse(std::string_view(embedded::kExperimentSchema,
                                                           sizeof(embedded::kExperimentSchema) - 1));
  return schema;
}

std::vector<Problem> schema_problems(const json& document) {
  // Strong types: "10" is not a number, 1 is not a boolean.
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(document);
  std::vector<Problem> problems;
  if (!validator.validate(compiled_schema(), target, &results)) {
    std::set<std::pair<std::string, std::string>> seen;
    valijson::ValidationResults::Error error;
    while (results.popError(error)) {
      // valijson reports a failure at every level above the leaf; only the leaf says what is wrong.
      if (is_summary(error.description)) continue;
      Problem p = translate(error, document);
      if (seen.insert({p.path, p.message}).second) problems.push_back(std::move(p));
    }
  }
  // Run even when valijson found problems, so one check reports the duplicates too.
  std::vector<Step> steps;
  unique_items_problems(document, &experiment_schema(), steps, problems);
  return problems;
}

}  // namespace egm::spec
