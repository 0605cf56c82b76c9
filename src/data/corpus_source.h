// Where the corpus comes from: --data, else EGM_DATA, else the cache under
// data/ (EGM_CACHE_DIR overrides the folder); and how to fetch TinyShakespeare
// into that cache with a checksum check.
#pragma once

#include <string>

namespace egm {

// TinyShakespeare (SPEC.md section 3).
inline constexpr const char* kTinyShakespeareUrl =
    "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt";
inline constexpr const char* kTinyShakespeareSha256 =
    "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed";

// The cache location: $EGM_CACHE_DIR/tinyshakespeare/input.txt (default data/).
std::string default_corpus_path();

// flag if non-empty, else $EGM_DATA, else default_corpus_path().
std::string locate_corpus(const std::string& flag);

// locate_corpus(flag) as an absolute path, for processes that start elsewhere
// (egm sweep's workers, a batch job's); IoError when no file is there.
std::string existing_corpus(const std::string& flag);

// Downloads `url` into `dest` atomically, after checking the sha256 of the
// bytes against `sha256`; a mismatch leaves `dest` untouched and throws
// IoError naming the URL, both digests and what to do.
void fetch_corpus(const std::string& dest, const std::string& url = kTinyShakespeareUrl,
                  const std::string& sha256 = kTinyShakespeareSha256);

// Checks a file on disk against the expected digest; throws IoError on mismatch.
void verify_corpus(const std::string& path, const std::string& sha256 = kTinyShakespeareSha256);

}  // namespace egm
