#include "egmt.h"

#include <cstring>

#include "util/error.h"
#include "util/files.h"

namespace egm::test {
namespace {

class Cursor {
 public:
  Cursor(const std::string& bytes, const std::string& path) : bytes_(bytes), path_(path) {}
  template <typename T>
  T read() {
    T v;
    need(sizeof(T));
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(size_t n) {
    need(n);
    std::string s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  void read_into(void* dst, size_t n) {
    need(n);
    std::memcpy(dst, bytes_.data() + pos_, n);
    pos_ += n;
  }
  bool at_end() const { return pos_ == bytes_.size(); }

 private:
  void need(size_t n) const {
    EGM_REQUIRE(pos_ + n <= bytes_.size(), IoError, "{}: truncated EGMT file", path_);
  }
  const std::string& bytes_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

TensorMap read_egmt(const std::string& path) {
  const std::string bytes = read_file(path);
  Cursor in(bytes, path);
  EGM_REQUIRE(in.read_string(8) == "EGMTENS1", IoError, "{}: not an EGMT v1 file (bad magic)", path);
  const uint32_t count = in.read<uint32_t>();
  TensorMap out;
  for (uint32_t i = 0; i < count; ++i) {
    std::string name = in.read_string(in.read<uint32_t>());
    const uint32_t ndim = in.read<uint32_t>();
    std::vector<int64_t> dims(ndim);
    for (auto& d : dims) d = in.read<int64_t>();
    const uint32_t dtype = in.read<uint32_t>();
    EGM_REQUIRE(dtype <= 1, IoError, "{}: tensor {} has unknown dtype {}", path, name, dtype);
    torch::Tensor t = torch::empty(dims, dtype == 0 ? torch::kFloat32 : torch::kInt64);
    in.read_into(t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size());
    out[name] = t;
  }
  EGM_REQUIRE(in.at_end(), IoError, "{}: trailing bytes after the last tensor", path);
  return out;
}

std::string reference_fixture_dir() {
#ifdef EGM_REFERENCE_FIXTURE_DIR
  return EGM_REFERENCE_FIXTURE_DIR;
#else
  return "";
#endif
}

}  // namespace egm::test
