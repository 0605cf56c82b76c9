// Reading JSON from users and files within limits (size, depth, duplicate keys),
// with errors that give the line, column and JSON path of what is wrong.
#include "util/json_limits.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

namespace egm {
namespace {

using nlohmann::json;

// 1-based line and column (bytes) of byte `offset` in `text`: the character
// at offset - 1 is the last one the parser had read.
std::pair<int, int> line_column(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  const std::string_view before = text.substr(0, offset == 0 ? 0 : offset - 1);
  int line = 1;
  for (char c : before) line += c == '\n';
  const size_t nl = before.rfind('\n');
  const size_t column = offset - (nl == std::string_view::npos ? 0 : nl + 1);
  return {line, static_cast<int>(std::max<size_t>(column, 1))};
}

// A pointer into the text that records how far the parser has read, so a
// violation found in a SAX event can be given a line and column.
class CountingIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* p, const char** high_water) : p_(p), high_water_(high_water) {}
  reference operator*() const { return *p_; }
  // The high-water mark, not the current position: the parser may look ahead and back up.
  CountingIterator& operator++() {
    ++p_;
    if (p_ > *high_water_) *high_water_ = p_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const CountingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const CountingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char** high_water_;
};

bool plain_key(const std::string& key) {
  if (key.empty()) return false;
  for (char c : key)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// A key as a path step; a long one is cut (a path is for reading, and a
// message stays one short line).
std::string key_step(const std::string& key) {
  constexpr size_t kShown = 64;
  if (key.size() <= kShown) return plain_key(key) ? "." + key : "[" + json(key).dump(-1, ' ', false, json::error_handler_t::replace) + "]";
  return "[" + json(key.substr(0, kShown)).dump(-1, ' ', false, json::error_handler_t::replace) + "...]";
}

// Builds the document from SAX events, enforcing the limits as it goes.
class BoundedBuilder {
 public:
  BoundedBuilder(std::string_view text, const JsonLimits& limits, const std::string& source,
                 std::vector<JsonDuplicateKey>* duplicates, const char** high_water)
      : text_(text), limits_(limits), source_(source), duplicates_(duplicates), high_water_(high_water) {}

  json result;

  bool null() { return add(nullptr); }
  bool boolean(bool b) { return add(b); }
  bool number_integer(json::number_integer_t i) { return add(i); }
  bool number_unsigned(json::number_unsigned_t u) { return add(u); }
  // A float beyond the limit (1e308) would turn into inf in later arithmetic; checked at the parse.
  bool number_float(json::number_float_t x, const std::string& literal) {
    if (!std::isfinite(x) || std::fabs(x) > limits_.max_abs_float)
      fail(JsonError::Kind::number, element_path(),
           fmt::format("number {} is out of range (at most {:g} in magnitude)", literal, limits_.max_abs_float));
    return add(x);
  }
  bool string(std::string& s) {
    check_string(s, [this] { return element_path(); });
    return add(std::move(s));
  }
  // Required by the SAX interface; JSON text never produces it.
  bool binary(json::binary_t& b) { return add(json::binary(std::move(b))); }  // not produced by JSON text
  bool start_object(size_t /*elements*/) { return open(json::object(), /*object=*/true); }
  bool start_array(size_t /*elements*/) { return open(json::array(), /*object=*/false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    Frame& f = frames_.back();
    f.key = k;
    check_string(k, [this] { return path_of(frames_.size(), /*with_current=*/true); });
    // nlohmann keeps the last of two equal keys silently; the caller decides whether that is an error.
    if (duplicates_ && !f.keys.insert(k).second) {
      const auto [line, column] = position();
      duplicates_->push_back({path_of(frames_.size(), /*with_current=*/true), k, line, column});
    }
    return true;
  }
  bool parse_error(size_t byte, const std::string& last_token, const nlohmann::detail::exception& e) {
    // Such a number never reaches number_float: the parser reports it here instead.
    if (e.id == 406)  // out_of_range.406: a number that overflows a double
      fail(JsonError::Kind::number, element_path(),
           fmt::format("number {} is out of range (at most {:g} in magnitude)", last_token, limits_.max_abs_float));
    // "[json.exception.parse_error.101] parse error at line 3, column 11: syntax error ..."
    const std::string what = e.what();
    int line = 0, column = 0;
    const size_t at = what.find("at line ");
    // nlohmann's message holds the position when it knows it; else it is computed from the byte offset.
    if (at == std::string::npos || std::sscanf(what.c_str() + at, "at line %d, column %d", &line, &column) != 2)
      std::tie(line, column) = line_column(text_, byte);
    const size_t colon = what.find(": ", at == std::string::npos ? 0 : at);
    const std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    const std::string path = element_path();  // the value being read: an object's key, an array's next index
    throw JsonError(JsonError::Kind::syntax, source_, path, line, column,
                    path == "$" ? fmt::format("invalid JSON: {}", detail)
                                : fmt::format("invalid JSON: {} (in {})", detail, path),
                    detail::location(__FILE__, __LINE__));
  }

 private:
  struct Frame {
    json* container;
    bool object;
    std::string key;     // objects: the current key
    size_t count = 0;    // arrays: elements started so far
    std::set<std::string> keys;  // objects, when duplicates are collected
  };

  // The path of the first `n` open containers, plus each one's current
  // element; with_current = false leaves out the innermost current element.
  std::string path_of(size_t n, bool with_current) const {
    std::vector<std::string> steps;
    for (size_t i = 0; i < n; ++i) {
      const Frame& f = frames_[i];
      if (i + 1 == n && !with_current) break;
      steps.push_back(f.object ? key_step(f.key) : fmt::format("[{}]", f.count == 0 ? 0 : f.count - 1));
    }
    // A deep path is shown by its ends (the message says how deep).
    constexpr size_t kEnds = 5;
    std::string p = "$";
    // The path of a 10,000-deep document would be a 10,000-step message; it is shortened to its ends.
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps.size() > 3 * kEnds && i == kEnds) {
        p += fmt::format(" ...{} more... ", steps.size() - 2 * kEnds);
        i = steps.size() - kEnds;
      }
      p += steps[i];
    }
    return p;
  }
  // The path of the element about to be added (an array's next index).
  std::string element_path() {
    // count is bumped for the path only: the element is not placed yet, so its index is count.
    if (!frames_.empty() && !frames_.back().object) {
      ++frames_.back().count;
      std::string p = path_of(frames_.size(), true);
      --frames_.back().count;
      return p;
    }
    return path_of(frames_.size(), true);
  }

  std::pair<int, int> position() const {
    return line_column(text_, static_cast<size_t>(*high_water_ - text_.data()));
  }

  [[noreturn]] void fail(JsonError::Kind kind, const std::string& path, const std::string& what) const {
    const auto [line, column] = position();
    throw JsonError(kind, source_, path, line, column, fmt::format("{}: {} (the limit for {})", path, what, limits_.name),
                    detail::location(__FILE__, __LINE__));
  }

  // `path` makes the element's path, only when it is needed for the message
  // (it was built for every key and string, at more cost than the check itself).
  template <typename PathFn>
  void check_string(const std::string& s, PathFn path) const {
    // The string is already in memory (the parser built it), but it is refused before it is copied into the document.
    if (s.size() > limits_.max_string)
      fail(JsonError::Kind::string, path(),
           fmt::format("string of {} bytes is longer than {} bytes", s.size(), limits_.max_string));
  }

  // Places `value` in the open container; returns where it now lives.
  json* place(json&& value) {
    if (frames_.empty()) {
      result = std::move(value);
      return &result;
    }
    Frame& f = frames_.back();
    // An object's member lives in a std::map node (stable address); an array's last element only moves
    // when the array grows, which cannot happen while that element is the open container.
    if (f.object) {
      json& slot = (*f.container)[f.key];
      slot = std::move(value);
      return &slot;
    }
    ++f.count;
    f.container->push_back(std::move(value));
    return &f.container->back();
  }

  bool add(json&& value) {
    place(std::move(value));
    return true;
  }

  bool open(json&& empty, bool object) {
    // Depth bounds the recursion of everything that later walks the document (dump, valijson, destructors).
    if (static_cast<int>(frames_.size()) >= limits_.max_depth)
      fail(JsonError::Kind::depth, element_path(),
           fmt::format("nested deeper than {} levels of arrays and objects", limits_.max_depth));
    json* container = place(std::move(empty));
    frames_.push_back(Frame{container, object, {}, 0, {}});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  std::string_view text_;
  const JsonLimits& limits_;
  const std::string& source_;
  std::vector<JsonDuplicateKey>* duplicates_;
  const char** high_water_;
  std::vector<Frame> frames_;
};

}  // namespace

JsonError::JsonError(Kind kind, std::string source, std::string path, int line, int column, std::string detail,
                     std::string where)
    : ConfigError(fmt::format("{}:{}:{}: {}", source, line, column, detail), std::move(where)),
      kind_(kind),
      source_(std::move(source)),
      path_(std::move(path)),
      line_(line),
      column_(column),
      detail_(std::move(detail)) {}

json parse_json(std::string_view text, const JsonLimits& limits, const std::string& source,
                std::vector<JsonDuplicateKey>* duplicates) {
  // Checked before parsing: the size limit is the cheapest and bounds the work of every later check.
  if (text.size() > limits.max_bytes) {
    const auto [line, column] = line_column(text, limits.max_bytes + 1);
    throw JsonError(JsonError::Kind::size, source, "$", line, column,
                    fmt::format("$: document is longer than {} bytes (the limit for {})", limits.max_bytes, limits.name),
                    detail::location(__FILE__, __LINE__));
  }
  const char* high_water = text.data();
  BoundedBuilder builder(text, limits, source, duplicates, &high_water);
  const CountingIterator first(text.data(), &high_water), last(text.data() + text.size(), &high_water);
  // SAX: the limits are enforced as the document is built, never after a huge one exists in memory.
  json::sax_parse(first, last, &builder);
  return std::move(builder.result);
}

bool is_json_object_text(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  // accept() validates without building a document.
  return first != std::string_view::npos && text[first] == '{' && json::accept(text);
}

std::string read_json_text(const std::string& path, const JsonLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) EGM_THROW(IoError, "cannot open {}: {}", path, std::strerror(errno));
  // Up to one byte past the limit, so an oversized file is told apart from one
  // of exactly max_bytes; never more (a 20 GB file or /dev/zero costs 1 MiB).
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= limits.max_bytes && in) {
    in.read(chunk, static_cast<std::streamsize>(std::min(sizeof chunk, limits.max_bytes + 1 - text.size())));
    text.append(chunk, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) EGM_THROW(IoError, "cannot read {}", path);
  return text;
}

json read_json_file(const std::string& path, const JsonLimits& limits, std::vector<JsonDuplicateKey>* duplicates) {
  return parse_json(read_json_text(path, limits), limits, path, duplicates);
}

std::string json_path_with_key(const std::string& path, const std::string& key) {
  return plain_key(key) ? path + "." + key : path + "[" + json(key).dump(-1, ' ', false, json::error_handler_t::replace) + "]";
}

}  // namespace egm
