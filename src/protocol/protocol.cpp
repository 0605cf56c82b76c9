// The protocol's encoding (the format is written down in protocol.h): a
// message is a 16-byte header and a JSON body. Encoding builds the body from
// the typed message (records and outcomes through their own encoders in
// src/run, so RECORDS and metrics.jsonl hold the same JSON) and prepends the
// header. Decoding checks the frame from the outside in (length, magic,
// version, kind, body length, JSON, fields), so the first thing wrong is what
// the error names: a worker from another egm build fails on the version, not
// on a field it happens to lack.
#include "protocol/protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "util/error.h"
#include "util/json_fields.h"
#include "util/json_limits.h"

namespace egm::protocol {
namespace {

using json = nlohmann::json;

// The header's integers are little-endian whatever the host, so mixed machines agree.
void put_u16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>((v >> 8) & 0xff));
}
void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint16_t get_u16(std::string_view s, size_t at) {
  return static_cast<uint16_t>(static_cast<unsigned char>(s[at]) | (static_cast<unsigned char>(s[at + 1]) << 8));
}
uint32_t get_u32(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

// The cast of an unknown number to Kind is well defined (the enum has a fixed underlying type); the switch then misses it.
bool known_kind(uint16_t k) {
  switch (static_cast<Kind>(k)) {
    case Kind::hello:
    case Kind::records:
    case Kind::result:
    case Kind::failed:
    case Kind::bye:
    case Kind::assign:
    case Kind::stop:
    case Kind::shutdown:
      return true;
  }
  return false;
}

// The fields of a message body; every problem names the kind, the sender and the field.
// Optional fields (those added after v1) are read with a default, so an older
// peer's message still decodes (protocol.h, "Versioning").
JsonFields fields(const json& body, const char* what, const std::string& from) {
  return JsonFields(body, fmt::format("{} message from {}", what, from));
}

// The defaults here match RunSettings' own, so an omitted optional field changes nothing.
RunSettings settings_from_json(const JsonFields& r) {
  RunSettings s;
  s.out_dir = r.text("out_dir");
  s.threads = static_cast<int>(r.integer("threads"));
  try {
    s.device = parse_device_name(r.text("device"), "");
  } catch (const ConfigError& e) {
    r.fail("device", e.what());
  }
  s.fail_at_step = r.integer_or("fail_at_step", -1);
  s.fail_kind = r.text_or("fail_kind", "error");
  s.checkpoint_interval = r.integer_or("checkpoint_interval", 0);
  s.log_interval = r.integer_or("log_interval", 10);
  return s;
}

Message body_from_json(Kind kind, const json& body, const std::string& from) {
  const JsonFields r = fields(body, kind_name(kind), from);
  switch (kind) {
    case Kind::hello: {
      Hello h;
      h.protocol_version = static_cast<int>(r.integer("protocol_version"));
      h.host = r.text("host");
      h.pid = r.integer_or("pid", 0);
      h.local_rank = static_cast<int>(r.integer_or("local_rank", -1));
      h.cores = static_cast<int>(r.integer_or("cores", 1));
      h.torch_version = r.text_or("torch_version", "");
      h.git_commit = r.text_or("git_commit", "");
      h.corpus_path = r.text_or("corpus_path", "");
      h.corpus_sha256 = r.text_or("corpus_sha256", "");
      h.error = r.text_or("error", "");
      h.gpus = static_cast<int>(r.integer_or("gpus", 0));
      h.nccl = r.boolean_or("nccl", false);
      h.source_diff_sha256 = r.text_or("source_diff_sha256", "");
      // Checked item by item: a wrong type must be a ProtocolError naming the field, not a json exception.
      if (r.has("gpu_names")) {
        const json& names = r.field("gpu_names");
        if (!names.is_array()) r.fail("gpu_names", "must be a list of names");
        for (const json& n : names) {
          if (!n.is_string()) r.fail("gpu_names", "must be a list of names");
          h.gpu_names.push_back(n.get<std::string>());
        }
      }
      return h;
    }
    case Kind::records: {
      Records m;
      m.cell_id = r.integer("cell_id");
      m.run_id = r.integer("run_id");
      const json& records = r.array("records");
      m.records.reserve(records.size());
      const std::string what = fmt::format("a record in RECORDS from {}", from);
      // Records share the encoder of metrics.jsonl (run/records.h), so a worker's file and its messages agree.
      for (const json& rec : records) m.records.push_back(record_from_json(rec, what));
      return m;
    }
    case Kind::result: {
      Result m;
      m.cell_id = r.integer("cell_id");
      m.run_id = r.integer("run_id");
      m.result = run_outcome_from_json(r.object("result"), fmt::format("RESULT result message from {}", from));
      m.signal = static_cast<int>(r.integer_or("signal", 0));
      return m;
    }
    // retriable defaults to true: a failure is retried unless the worker says it would recur.
    case Kind::failed: {
      Failed m;
      m.cell_id = r.integer("cell_id");
      m.run_id = r.integer("run_id");
      m.error = r.text("error");
      m.where = r.text_or("where", "");
      m.step = r.integer_or("step", -1);
      m.retriable = r.boolean_or("retriable", true);
      m.detail = r.text_or("detail", "");
      return m;
    }
    case Kind::bye:
      return Bye{r.text_or("error", "")};
    case Kind::assign: {
      Assign m;
      m.cell_id = r.integer("cell_id");
      m.run_id = r.integer("run_id");
      m.attempt = static_cast<int>(r.integer("attempt"));
      m.cell_key = r.text("cell_key");
      m.variant = r.text("variant");
      // Unsigned: seeds span the full 64 bits.
      m.seed = r.unsigned_integer("seed");
      m.config = r.object("config");
      m.runtime = settings_from_json(fields(r.object("runtime"), "ASSIGN runtime", from));
      for (const json& g : r.array("group")) {
        if (!g.is_number_integer()) r.fail("group", "must hold rank numbers, got " + g.dump());
        m.group.push_back(g.get<int>());
      }
      // A group lists the ranks that train the cell together; even a single rank lists itself.
      if (m.group.empty()) r.fail("group", "is empty");
      return m;
    }
    case Kind::stop:
      return Stop{r.text_or("reason", ""), static_cast<int>(r.integer_or("signal", 0))};
    case Kind::shutdown:
      return Shutdown{r.text_or("reason", "")};
  }
  // Unreachable after known_kind; it keeps the function from falling off its end.
  EGM_THROW(ProtocolError, "unknown message kind {}", static_cast<int>(kind));
}

}  // namespace

std::string failure_headline(std::string_view text) {
  // c10::Error::what() puts the stack trace after the message: "Exception raised from ..."
  // Only the headline travels in FAILED's "error"; the full text goes in "detail".
  const size_t trace = text.find("Exception raised from ");
  if (trace != std::string_view::npos) text = text.substr(0, trace);
  // The message's lines on one line: "invalid run config:\n  model.n_head: ..." keeps its
  // detail as "invalid run config: model.n_head: ..."; other breaks become "; ".
  std::string line;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view part = text.substr(pos, end - pos);
    const size_t first = part.find_first_not_of(" \t\r");
    if (first != std::string_view::npos) {
      part = part.substr(first, part.find_last_not_of(" \t\r") + 1 - first);
      if (!line.empty()) line += line.back() == ':' ? " " : "; ";
      line += part;
    }
    pos = end + 1;
  }
  // A headline is one line in listings and the events table; longer text is cut, marked with "...".
  constexpr size_t kMax = 300;
  if (line.size() <= kMax) return line;
  return line.substr(0, kMax - 3) + "...";
}

// The names in upper case, as protocol.h and the error messages write them.
const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::hello: return "HELLO";
    case Kind::records: return "RECORDS";
    case Kind::result: return "RESULT";
    case Kind::failed: return "FAILED";
    case Kind::bye: return "BYE";
    case Kind::assign: return "ASSIGN";
    case Kind::stop: return "STOP";
    case Kind::shutdown: return "SHUTDOWN";
  }
  return "?";
}

// One branch per alternative of Message; a new message type without one fails to compile.
Kind kind_of(const Message& message) {
  return std::visit(
      [](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Hello>) return Kind::hello;
        if constexpr (std::is_same_v<T, Records>) return Kind::records;
        if constexpr (std::is_same_v<T, Result>) return Kind::result;
        if constexpr (std::is_same_v<T, Failed>) return Kind::failed;
        if constexpr (std::is_same_v<T, Bye>) return Kind::bye;
        if constexpr (std::is_same_v<T, Assign>) return Kind::assign;
        if constexpr (std::is_same_v<T, Stop>) return Kind::stop;
        if constexpr (std::is_same_v<T, Shutdown>) return Kind::shutdown;
      },
      message);
}

json to_json(const Message& message) {
  return std::visit(
      [](const auto& m) -> json {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Hello>) {
          return {{"protocol_version", m.protocol_version}, {"host", m.host}, {"pid", m.pid},
                  {"local_rank", m.local_rank},
                  {"cores", m.cores}, {"torch_version", m.torch_version}, {"git_commit", m.git_commit},
                  {"corpus_path", m.corpus_path}, {"corpus_sha256", m.corpus_sha256}, {"error", m.error},
                  {"nccl", m.nccl}, {"gpus", m.gpus}, {"source_diff_sha256", m.source_diff_sha256},
                  {"gpu_names", m.gpu_names}};
        } else if constexpr (std::is_same_v<T, Records>) {
          json records = json::array();
          for (const Record& r : m.records) records.push_back(egm::to_json(r));
          return {{"cell_id", m.cell_id}, {"run_id", m.run_id}, {"records", std::move(records)}};
        } else if constexpr (std::is_same_v<T, Result>) {
          return {{"cell_id", m.cell_id}, {"run_id", m.run_id}, {"result", egm::to_json(m.result)}, {"signal", m.signal}};
        } else if constexpr (std::is_same_v<T, Failed>) {
          return {{"cell_id", m.cell_id}, {"run_id", m.run_id}, {"error", m.error}, {"where", m.where},
                  {"step", m.step}, {"retriable", m.retriable}, {"detail", m.detail}};
        } else if constexpr (std::is_same_v<T, Bye>) {
          return {{"error", m.error}};
        } else if constexpr (std::is_same_v<T, Assign>) {
          const RunSettings& s = m.runtime;
          return {{"cell_id", m.cell_id}, {"run_id", m.run_id}, {"attempt", m.attempt},
                  {"cell_key", m.cell_key}, {"variant", m.variant}, {"seed", m.seed},  // + config: encode()
                  // The runtime settings are the coordinator's, not part of the cell's config (and so not of its hash).
                  {"runtime", {{"out_dir", s.out_dir}, {"threads", s.threads}, {"device", s.device.str()},
                               {"fail_at_step", s.fail_at_step}, {"fail_kind", s.fail_kind},
                               {"checkpoint_interval", s.checkpoint_interval},
                               {"log_interval", s.log_interval}}},
                  {"group", m.group}};
        } else if constexpr (std::is_same_v<T, Stop>) {
          return {{"reason", m.reason}, {"signal", m.signal}};
        } else {
          static_assert(std::is_same_v<T, Shutdown>);
          return {{"reason", m.reason}};
        }
      },
      message);
}

std::string encode_frame(uint16_t version, uint16_t kind, const std::string& body) {
  EGM_CHECK(body.size() <= UINT32_MAX, "message body of {} bytes is too large", body.size());
  std::string out;
  out.reserve(kHeaderSize + body.size());
  out.append(kProtocolMagic, sizeof kProtocolMagic);
  put_u16(out, version);
  put_u16(out, kind);
  put_u32(out, static_cast<uint32_t>(body.size()));
  // Reserved: always 0 in this version; decode does not read it.
  put_u32(out, 0);
  out += body;
  return out;
}

std::string encode(const Message& message) {
  // dump() is nlohmann's compact form; NaN cannot appear (every measurement is
  // an optional written as null), and invalid UTF-8 is replaced below.
  // Replace invalid UTF-8 (e.g. a path in an error text) instead of throwing.
  std::string body = to_json(message).dump(-1, ' ', false, json::error_handler_t::replace);
  if (const auto* a = std::get_if<Assign>(&message)) {
    // ASSIGN's config goes in as the text it is: `{...}` -> `{...,"config":CONFIG}`.
    EGM_CHECK(body.size() >= 2 && body.back() == '}', "ASSIGN body {} is no JSON object", body);
    // The stored config text is spliced in as it is: parsing and dumping it again could change its bytes, and with them its hash.
    body.pop_back();
    body += body.size() == 1 ? "\"config\":" : ",\"config\":";
    body += a->config_json.empty() ? a->config.dump(-1, ' ', false, json::error_handler_t::replace) : a->config_json;
    body += '}';
  }
  return encode_frame(kProtocolVersion, static_cast<uint16_t>(kind_of(message)), body);
}

Message decode(std::string_view bytes, const std::string& from) {
  EGM_REQUIRE(bytes.size() >= kHeaderSize, ProtocolError,
              "message from {} is {} bytes, shorter than the {}-byte egm sweep protocol header; is {} an egm process?",
              from, bytes.size(), kHeaderSize, from);
  EGM_REQUIRE(std::memcmp(bytes.data(), kProtocolMagic, sizeof kProtocolMagic) == 0, ProtocolError,
              "message from {} does not start with the egm sweep protocol magic 'EGMP'; is {} an egm process?", from,
              from);
  // Offsets: magic 0-3, version 4-5, kind 6-7, body length 8-11, reserved 12-15.
  const uint16_t version = get_u16(bytes, 4);
  EGM_REQUIRE(version == kProtocolVersion, ProtocolError,
              "protocol version mismatch: {} speaks egm sweep protocol v{}, this process speaks v{}; build "
              "egm-coordinator and egm-worker from the same egm version",
              from, version, kProtocolVersion);
  const uint16_t kind = get_u16(bytes, 6);
  EGM_REQUIRE(known_kind(kind), ProtocolError,
              "message from {} has unknown kind {} (protocol v{} knows HELLO=1, RECORDS=2, RESULT=3, FAILED=4, BYE=5, "
              "ASSIGN=16, STOP=17, SHUTDOWN=18)",
              from, kind, kProtocolVersion);
  const uint32_t length = get_u32(bytes, 8);
  // A truncated or padded message is refused before its body is parsed.
  EGM_REQUIRE(length == bytes.size() - kHeaderSize, ProtocolError,
              "{} message from {}: header says {} body bytes, the message holds {}",
              kind_name(static_cast<Kind>(kind)), from, length, bytes.size() - kHeaderSize);
  json body;
  try {
    // The machine limits: a peer's message is bounded too, since a broken or foreign process may send anything.
    body = parse_json(bytes.substr(kHeaderSize), JsonLimits::machine(), "body");
  } catch (const JsonError& e) {
    EGM_THROW(ProtocolError, "{} message from {}: body {}: {}", kind_name(static_cast<Kind>(kind)), from,
              e.kind() == JsonError::Kind::syntax ? "is not valid JSON" : "exceeds a limit", e.what());
  }
  EGM_REQUIRE(body.is_object(), ProtocolError, "{} message from {}: body must be a JSON object, got {}",
              kind_name(static_cast<Kind>(kind)), from, body.type_name());
  return body_from_json(static_cast<Kind>(kind), body, from);
}

}  // namespace egm::protocol
