// JSON Schema validation of a spec document (valijson, draft 7) against the
// embedded schemas/experiment.schema.json. valijson's raw errors are turned
// into one problem per violation with a JSON path and a message that says what
// was expected ("unknown key; valid keys: ...", "expected integer, got string").
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "spec/experiment_spec.h"

namespace egm::spec {

// Every violation, in the order valijson reports them, then the arrays whose items must be
// unique (checked here by sorting, not by valijson's pairwise loop); empty = valid.
std::vector<Problem> schema_problems(const nlohmann::json& document);

// `path` extended by an object key: "$.a.b", or "$.a[\"b c\"]" when the key is
// not a plain identifier.
std::string path_with_key(const std::string& path, const std::string& key);

}  // namespace egm::spec
