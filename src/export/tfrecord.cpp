// TfRecordWriter: each record framed with its length and masked CRC-32C
// (Boost's CRC with the Castagnoli polynomial), written to one file.
#include "export/tfrecord.h"

#include <boost/crc.hpp>

#include "util/error.h"

namespace egm::exporter {
namespace {

void put_le(std::string& out, uint64_t value, int bytes) {
  // Little-endian whatever the host: TFRecord's framing fixes the byte order.
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  // CRC-32C: Castagnoli polynomial, reflected, initial and final XOR all ones (TensorFlow's crc32c).
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, /*reflect_in=*/true, /*reflect_out=*/true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t c = crc32c(bytes);
  // TFRecord's mask (rotate right 15, add a constant): a CRC of data that embeds CRCs stays well-behaved.
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

TfRecordWriter::TfRecordWriter(const std::string& path) : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
  EGM_REQUIRE(out_.good(), IoError, "cannot create {}", path);
}

void TfRecordWriter::write(std::string_view record) {
  std::string header;
  // The frame: length (8 bytes), the length's masked CRC, the data, the data's masked CRC.
  put_le(header, record.size(), 8);
  std::string frame = header;
  put_le(frame, masked_crc32c(header), 4);
  frame.append(record);
  put_le(frame, masked_crc32c(record), 4);
  out_.write(frame.data(), static_cast<std::streamsize>(frame.size()));
}

void TfRecordWriter::close() {
  out_.flush();
  EGM_REQUIRE(out_.good(), IoError, "cannot write {} (disk full?)", path_);
  out_.close();
}

}  // namespace egm::exporter
