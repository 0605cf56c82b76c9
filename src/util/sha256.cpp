// SHA-256 of a byte string as lowercase hex, through OpenSSL's EVP interface.
#include "util/sha256.h"

#include <openssl/evp.h>

#include "util/error.h"

namespace egm {

std::string sha256_hex(std::string_view bytes) {
  // len comes back as 32 for SHA-256; the buffer is sized for any digest.
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EGM_CHECK(EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr) == 1,
            "OpenSSL EVP_Digest(sha256) failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 15]);
  }
  return out;
}

}  // namespace egm
