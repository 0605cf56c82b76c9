// Where the corpus is (--data, EGM_DATA, the cache), and its download with
// libcurl into the cache, refused unless its sha256 matches.
#include "data/corpus_source.h"

#include <curl/curl.h>

#include <filesystem>

#include "util/error.h"
#include "util/files.h"
#include "util/process_info.h"
#include "util/sha256.h"

namespace egm {
namespace {

// libcurl's write callback: returning less than size * n would abort the transfer.
size_t append_bytes(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

std::string download(const std::string& url) {
  struct CurlHandle {
    CURL* h = curl_easy_init();
    ~CurlHandle() { if (h) curl_easy_cleanup(h); }
  } curl;
  EGM_CHECK(curl.h != nullptr, "curl_easy_init failed");
  std::string body;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl.h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.h, CURLOPT_FOLLOWLOCATION, 1L);
  // FAILONERROR: an HTTP error (404) fails the transfer rather than saving the error page as the corpus.
  curl_easy_setopt(curl.h, CURLOPT_FAILONERROR, 1L);
  // Seconds: 20 to connect, 300 for the whole ~1 MB download, so a dead network fails rather than hangs.
  curl_easy_setopt(curl.h, CURLOPT_CONNECTTIMEOUT, 20L);
  curl_easy_setopt(curl.h, CURLOPT_TIMEOUT, 300L);
  curl_easy_setopt(curl.h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl.h, CURLOPT_WRITEFUNCTION, append_bytes);
  curl_easy_setopt(curl.h, CURLOPT_WRITEDATA, &body);
  CURLcode rc = curl_easy_perform(curl.h);
  if (rc != CURLE_OK)
    EGM_THROW(IoError, "cannot download {}: {}; copy the file by hand and pass --data PATH or set EGM_DATA", url,
              errbuf[0] ? errbuf : curl_easy_strerror(rc));
  return body;
}

}  // namespace

// Relative to the working directory unless EGM_CACHE_DIR names another cache.
std::string default_corpus_path() {
  return (std::filesystem::path(env_or("EGM_CACHE_DIR", "data")) / "tinyshakespeare" / "input.txt").string();
}

// --data wins over EGM_DATA, which wins over the cache path.
std::string locate_corpus(const std::string& flag) {
  if (!flag.empty()) return flag;
  std::string from_env = env_or("EGM_DATA");
  if (!from_env.empty()) return from_env;
  return default_corpus_path();
}

std::string existing_corpus(const std::string& flag) {
  // Absolute: workers and requeued jobs may start in another directory.
  const std::string path = std::filesystem::absolute(locate_corpus(flag)).lexically_normal().string();
  EGM_REQUIRE(file_exists(path), IoError,
              "corpus {} not found: run `egm data fetch`, or pass --data PATH (or set EGM_DATA)", path);
  return path;
}

void fetch_corpus(const std::string& dest, const std::string& url, const std::string& sha256) {
  std::string bytes = download(url);
  std::string got = sha256_hex(bytes);
  EGM_REQUIRE(got == sha256, IoError,
              "checksum mismatch for {}: expected sha256 {}, got {} ({} bytes); {} was not written. "
              "The download may be truncated or the file changed upstream",
              url, sha256, got, bytes.size(), dest);
  std::filesystem::path p(dest);
  if (p.has_parent_path()) make_dirs(p.parent_path().string());
  // Written only after the checksum matched, and atomically: no half-downloaded corpus is ever left at dest.
  atomic_write_file(dest, bytes);
}

void verify_corpus(const std::string& path, const std::string& sha256) {
  EGM_REQUIRE(file_exists(path), IoError, "corpus not found at {}; run `egm data fetch` or pass --data PATH", path);
  std::string got = sha256_hex(read_file(path));
  EGM_REQUIRE(got == sha256, IoError,
              "checksum mismatch for {}: expected sha256 {}, got {}; delete it and run `egm data fetch`", path,
              sha256, got);
}

}  // namespace egm
