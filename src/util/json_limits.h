// The one way egm reads JSON that comes from outside the process: specs, run
// configs, --set values, sweep protocol messages, checkpoint headers, and the
// copies of specs and configs kept in the results database.
//
// nlohmann's parser itself is iterative, but much of what runs on a parsed
// document is not: dump(), copies, comparisons, valijson's validator, and the
// std::regex valijson uses for "pattern" (libstdc++ recurses once per
// character, ~300 bytes of stack each). A 100000-deep "[[[[..." or a 50000-
// character sweep name overflowed the stack (SIGSEGV) before any message. So
// every limit here is enforced *while* parsing (a SAX handler), before any
// recursive code sees the document:
//
//   max_bytes       the whole document (checked before parsing; files are read
//                   only up to it, so /dev/zero or a 20 GB file cannot exhaust memory)
//   max_depth       nesting of arrays and objects ("[[1]]" is depth 2)
//   max_string      bytes in one string or object key
//   max_abs_float   a number that is not a 64-bit integer must be finite and at
//                   most this in magnitude (1e400 overflows to infinity: refused)
//
// A violation is a JsonError (a ConfigError, so commands exit 2 before they
// write anything) whose one-line message names the source, line and column,
// the JSON path ("$.variants[3]") and the limit. Callers that read egm's own
// files or messages rethrow it as their own type (IoError, ProtocolError).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace egm {

struct JsonLimits {
  const char* name;      // what these limits are for, quoted in messages
  size_t max_bytes;
  int max_depth;
  size_t max_string;
  double max_abs_float;

  // Written by people: experiment specs, run configs (--config, config.json),
  // --set values, and their copies in the database and in sweep.json markers.
  // Real specs are < 1.1 KB, 3 levels deep, strings < 400 bytes. The string
  // limit also keeps valijson's std::regex ("pattern" on a spec's name) well
  // inside an 8 MB stack (8 KiB x ~300 B = 2.4 MB), and |x| <= 1e15 keeps every
  // float exactly convertible to a 64-bit integer field.
  static constexpr JsonLimits user() { return {"specs and run configs", 1u << 20, 32, 8u << 10, 1e15}; }
  // Written by egm for egm: sweep protocol messages (a RECORDS batch holds ~0.5 s
  // of metrics; a FAILED carries an error text) and checkpoint headers. Losses
  // may be any finite double.
  static constexpr JsonLimits machine() {
    return {"protocol messages and checkpoint headers", 64u << 20, 64, 4u << 20, 1.7976931348623157e308};
  }
};

// A JSON document that does not parse or exceeds a limit.
class JsonError : public ConfigError {
 public:
  enum class Kind { syntax, size, depth, string, number };
  JsonError(Kind kind, std::string source, std::string path, int line, int column, std::string detail,
            std::string where);
  Kind kind() const { return kind_; }
  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }  // "$", "$.a[2]"; where parsing stopped for a syntax error
  int line() const { return line_; }                 // 1-based
  int column() const { return column_; }             // 1-based, in bytes
  // The message without "SOURCE:LINE:COLUMN: ": "$.name: string of 50000 bytes ...".
  const std::string& detail() const { return detail_; }

 private:
  Kind kind_;
  std::string source_;
  std::string path_;
  int line_;
  int column_;
  std::string detail_;
};

// A key given twice in one object (nlohmann keeps the last one).
struct JsonDuplicateKey {
  std::string path;  // the key's path: "$.seeds"
  std::string key;
  int line = 0;
  int column = 0;
};

// Parses `text` within `limits`; throws JsonError. `source` names the input in
// messages (a path, "--set model.lr"). With `duplicates`, keys given twice are
// collected there (the last value is kept); without, they are allowed silently.
nlohmann::json parse_json(std::string_view text, const JsonLimits& limits, const std::string& source,
                          std::vector<JsonDuplicateKey>* duplicates = nullptr);

// Whether `text` is one JSON object (and nothing else but white space): a check
// without building the tree, for text egm wrote and passes on as it is.
bool is_json_object_text(std::string_view text);

// Reads at most limits.max_bytes + 1 bytes of `path` (IoError when it cannot be
// read) and parses them with the path as source.
nlohmann::json read_json_file(const std::string& path, const JsonLimits& limits,
                              std::vector<JsonDuplicateKey>* duplicates = nullptr);
// The first limits.max_bytes + 1 bytes of `path`: what read_json_file parses.
std::string read_json_text(const std::string& path, const JsonLimits& limits);

// "$.a" for a plain key, "$[\"a b\"]" otherwise (the path syntax of every egm message).
std::string json_path_with_key(const std::string& path, const std::string& key);

}  // namespace egm
