// Quoting for POSIX shells: the batch script egm submit renders and the
// command line egm sweep prints both go through here.
#pragma once

#include <string>
#include <string_view>

namespace egm {

// `value` as one shell word: unchanged when it has only safe characters
// ([A-Za-z0-9_@%+=:,./-]), otherwise in single quotes ('it'\''s').
std::string shell_quote(std::string_view value);

}  // namespace egm
