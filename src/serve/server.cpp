// Server: cpp-httplib bound to the given host and port, every GET and HEAD
// handed to handle_request, everything else 405.
#include "serve/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include "db/results_db.h"
#include "serve/html.h"
#include "util/error.h"

namespace egm::serve {

Server::Server(ServeOptions options) : options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  // The database must exist and be readable now: a typo in --db is one line at
  // start, not an error page on every request. Read-only: nothing is created.
  try {
    db::ResultsDb check(options_.site.db_path, db::OpenMode::read_only);
  } catch (const DbError& e) {  // one line: SQLite's message without the SQL it ran
    const std::string what = e.what();
    EGM_THROW(DbError, "{}", what.substr(0, what.find('\n')));
  }
  const SiteOptions site = options_.site;
  // The handler holds its own copy of the options, not a reference into this Server.
  auto answer = [site](const httplib::Request& req, httplib::Response& res) {
    const Response r = handle_request(site, req.method, req.target);
    res.status = r.status;
    res.set_content(r.body, r.content_type);
    if (!r.filename.empty())
      res.set_header("Content-Disposition", content_disposition(r.filename));
    // Every page is read from the database as it is now: nothing may be cached.
    res.set_header("Cache-Control", "no-store");
    // The browser must not guess another type (e.g. render a downloaded CSV as HTML).
    res.set_header("X-Content-Type-Options", "nosniff");
  };
  // One handler for every path and method: handle_request routes, and refuses
  // every method but GET and HEAD (httplib answers HEAD through the GET handler).
  http_->Get(".*", answer);
  http_->Post(".*", answer);
  http_->Put(".*", answer);
  http_->Patch(".*", answer);
  http_->Delete(".*", answer);
  http_->Options(".*", answer);
  // What httplib refuses before any handler (an unknown method, a malformed
  // request line, a request too large) still gets a page that says so.
  http_->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    res.set_content(fmt::format("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{0} - egm</title></head>"
                                "<body><h1>{0}</h1><p id=\"error\">egm serve could not take this request (HTTP {0}); "
                                "it answers GET requests for the pages listed at /.</p></body></html>\n",
                                res.status),
                    "text/html; charset=utf-8");
  });
  http_->set_payload_max_length(1 << 20);  // GET requests carry no body worth reading
  // httplib listens with a backlog of 5: a burst of connections (a browser
  // opening several, many users, the 200-request test) overflows it and the
  // extra clients wait for TCP's SYN retransmissions (1, 3, 7, ... s). Keep
  // httplib's socket options and remember the socket, to listen() on it again
  // with the system's backlog once bound (Linux takes the new value).
  // Shared with the socket-options callback, which httplib calls while it binds.
  auto listening = std::make_shared<int>(-1);
  http_->set_socket_options([listening](int sock) {
    httplib::default_socket_options(sock);
    *listening = sock;
  });
  // httplib takes an int: a value out of range is a config error here, not a bind failure later.
  if (options_.port < 0 || options_.port > 65535) EGM_THROW(ConfigError, "--port {}: not a port (0-65535)", options_.port);
  if (options_.port == 0) {
    // Port 0: the system picks a free port; url() reports the one chosen.
    port_ = http_->bind_to_any_port(options_.host);
    if (port_ < 0) EGM_THROW(IoError, "cannot listen on {} (any port)", options_.host);
  } else {
    if (!http_->bind_to_port(options_.host, options_.port))
      EGM_THROW(IoError, "cannot listen on {}:{} (in use, or not an address of this machine?)", options_.host,
                options_.port);
    port_ = options_.port;
  }
  if (*listening >= 0) ::listen(*listening, SOMAXCONN);
}

Server::~Server() { stop(); }

std::string Server::url() const {
  // An IPv6 literal needs brackets in a URL (RFC 3986).
  const bool v6 = options_.host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}/", v6 ? "[" : "", options_.host, v6 ? "]" : "", port_);
}

void Server::run() { http_->listen_after_bind(); }

void Server::stop() {
  if (http_) http_->stop();
}

}  // namespace egm::serve
