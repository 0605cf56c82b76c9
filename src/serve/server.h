// `egm serve`'s HTTP server: cpp-httplib (Debian's libcpp-httplib-dev) around
// handle_request (site.h). Binds 127.0.0.1 unless told another host; answers
// GET and HEAD, everything else 405; every answer comes from site.h, so the
// same read-only guarantees hold (the database opened read-only per request).
#pragma once

#include <memory>
#include <string>

#include "serve/site.h"

namespace httplib {
class Server;
}

namespace egm::serve {

struct ServeOptions {
  SiteOptions site;
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (tests); port() says which
};

class Server {
 public:
  // Checks that the database exists and is an egm results database this egm
  // can read (DbError otherwise, nothing created) and binds the socket
  // (IoError naming host:port when it cannot).
  explicit Server(ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const { return port_; }
  const std::string& host() const { return options_.host; }
  // "http://127.0.0.1:8080/" (IPv6 hosts in brackets).
  std::string url() const;
  // Serves until stop() (from another thread or a signal handler's thread).
  void run();
  void stop();

 private:
  ServeOptions options_;
  int port_ = 0;
  std::unique_ptr<httplib::Server> http_;
};

}  // namespace egm::serve
