// File helpers with the guarantees the project relies on: whole-file atomic
// replacement (temp file + fsync + rename), and errors that name the path.
#pragma once

#include <string>
#include <string_view>

namespace egm {

// Replaces `path` with `bytes` atomically: readers see the old or the new
// file, never a mix. A full disk leaves the old file untouched and throws IoError.
void atomic_write_file(const std::string& path, std::string_view bytes);

// Reads a whole file; throws IoError naming the path when it cannot.
std::string read_file(const std::string& path);

bool file_exists(const std::string& path);

// mkdir -p; throws IoError on failure.
void make_dirs(const std::string& path);

}  // namespace egm
