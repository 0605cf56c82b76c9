// SHA-256 (OpenSSL) for corpus verification and checkpoint integrity.
#pragma once

#include <string>
#include <string_view>

namespace egm {

std::string sha256_hex(std::string_view bytes);

}  // namespace egm
