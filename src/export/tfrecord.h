// TFRecord framing, the container of TensorBoard's event files: each record is
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes |
//   length bytes of data          | uint32 masked CRC-32C of the data
// where masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2^32), so that a
// CRC of data that itself holds CRCs does not degenerate. The CRC is
// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected, initial and final
// XOR 0xFFFFFFFF), computed by Boost.CRC: Debian 12 has no libcrc32c.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

namespace egm::exporter {

uint32_t crc32c(std::string_view bytes);
uint32_t masked_crc32c(std::string_view bytes);

class TfRecordWriter {
 public:
  // Creates (truncates) `path`; IoError when it cannot.
  explicit TfRecordWriter(const std::string& path);
  void write(std::string_view record);
  // Flushes and closes; IoError when the bytes did not all reach the file.
  void close();

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace egm::exporter
