#pragma once
// A real nginx (Debian's /usr/sbin/nginx) serving a directory on loopback, over plain HTTP and over
// HTTPS with a CA and server certificate made for this instance (openssl CLI). Runs as the current
// user with its own prefix/conf/pid/logs in a temp dir, `daemon off; master_process off;` as a child
// process; the destructor stops and reaps it.
//
// What it serves (see tests/support/README.md):
//   /<path>            files under `root` (Range, ETag, Last-Modified as nginx does)
//   /simple/<p>/       index.json when Accept asks for application/vnd.pypi.simple.v1+json and the
//                      file exists, else index.html (PEP 691 content negotiation)
//   /private/...       the same tree behind HTTP basic auth (user/password from the options)
//   /redirect-http/... 301 to the plain-HTTP server (https -> http downgrade tests)
//   autoindex on for directories without an index file (nginx autoindex markup for find-links)
#include <filesystem>
#include <memory>
#include <string>

#include "tests/support/child_process.hpp"
#include "util/error.hpp"

namespace envfix::testing {

struct NginxOptions {
  std::filesystem::path root; // directory to serve
  std::string basic_user = "envfix";
  std::string basic_password = "s3cret-pw";
  std::string extra_server_conf; // appended inside both server blocks
};

class NginxServer {
public:
  [[nodiscard]] static Expected<std::unique_ptr<NginxServer>> start(NginxOptions options);
  ~NginxServer();
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  [[nodiscard]] std::string http_url() const;                                 // "http://127.0.0.1:PORT"
  [[nodiscard]] std::string https_url() const;                                // "https://127.0.0.1:PORT"
  [[nodiscard]] const std::filesystem::path& ca_file() const { return m_ca; } // PEM, trust this
  [[nodiscard]] const std::filesystem::path& access_log() const { return m_access_log; }
  [[nodiscard]] const std::filesystem::path& prefix() const { return m_prefix; }
  [[nodiscard]] const NginxOptions& options() const { return m_options; }
  // The access log's text so far (method, URI, status, bytes; one request per line).
  [[nodiscard]] std::string access_log_text() const;

private:
  NginxServer() = default;
  NginxOptions m_options;
  std::filesystem::path m_prefix, m_ca, m_access_log;
  int m_http_port = 0, m_https_port = 0;
  std::unique_ptr<ChildProcess> m_child;
};

// Fault-injecting server (tests/support/fault_server.py) serving `root` over plain HTTP. The
// destructor stops it; the lifetime only ends one left behind, so it is as long as ctest's timeout.
class FaultServer {
public:
  [[nodiscard]] static Expected<std::unique_ptr<FaultServer>> start(const std::filesystem::path& root,
                                                                    int lifetime_seconds = 300);
  [[nodiscard]] std::string url() const; // "http://127.0.0.1:PORT"
  // URL of `path` (relative to root) with faults applied, e.g. fault_url("drop=5000", "files/x.whl").
  [[nodiscard]] std::string fault_url(std::string_view spec, std::string_view path) const;
  [[nodiscard]] std::string log_text() const; // one line per request: method path status
  ~FaultServer();
  FaultServer(const FaultServer&) = delete;
  FaultServer& operator=(const FaultServer&) = delete;

private:
  FaultServer() = default;
  std::filesystem::path m_dir, m_log;
  int m_port = 0;
  std::unique_ptr<ChildProcess> m_child;
};

// Runs tests/support/index_builder.py: `spec_json` as documented there; writes into `out_dir`.
// Returns the builder's JSON summary (stdout).
[[nodiscard]] Expected<std::string> build_index(const std::filesystem::path& out_dir, std::string_view spec_json);

[[nodiscard]] std::filesystem::path support_dir(); // ENVFIX_SOURCE_DIR/tests/support

} // namespace envfix::testing
