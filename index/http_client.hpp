#pragma once
// HTTP(S) client over the curl multi interface: parallel transfers with a limit, HTTP/2 and
// connection reuse (one multi handle per client), connect and low-speed (inactivity) timeouts,
// retries with jittered backoff on network errors and 408/429/5xx honouring Retry-After, resume of
// interrupted downloads with Range (only when the 206's Content-Range starts where we stopped),
// redirects with a limit and never https -> http, proxies from the usual variables (curl reads
// http_proxy/https_proxy/no_proxy), CA bundle from SSL_CERT_FILE then REQUESTS_CA_BUNDLE, ~/.netrc.
// Not thread-safe: use one client per thread.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"

namespace envfix::index {

// (bytes done, total if known). Called often; keep it cheap.
using ProgressFn = std::function<void(std::uint64_t, std::optional<std::uint64_t>)>;
// One line per transfer event; URLs in it are already redacted.
using LogFn = std::function<void(std::string_view)>;

struct HttpOptions {
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::seconds low_speed_time{30}; // abort a transfer that moves < 1 byte/s this long
  int retries = 3;                         // extra attempts after the first (network errors, 408/429/5xx)
  int max_resumes = 20;                    // extra attempts for downloads that made progress
  std::chrono::milliseconds backoff{250};  // base of the exponential backoff
  std::chrono::seconds max_retry_after{60};
  int max_redirects = 10;
  // Overall limit on one transfer, its attempts, retry waits and resumes together: a server that sends
  // a byte a second passes the low-speed check forever (slowloris). Memory bodies (pages, metadata,
  // range reads) take the page deadline, downloads (dest) theirs; 0: none. api/host.cpp sets them from
  // ENVFIX_PAGE_DEADLINE and ENVFIX_DOWNLOAD_DEADLINE (docs/environment.md).
  std::chrono::milliseconds page_deadline{std::chrono::minutes(5)};
  std::chrono::milliseconds download_deadline{std::chrono::hours(1)};
  std::size_t max_header_bytes = 256 * 1024; // one response's header lines together (100k lines of junk)
  std::size_t parallel = 8;
  std::optional<std::filesystem::path> ca_file; // else SSL_CERT_FILE, REQUESTS_CA_BUNDLE, system store
  bool use_netrc = true;                        // $NETRC or ~/.netrc, matched on host
  std::string user_agent = "envfix/0.1.0";
  std::uint64_t max_body_bytes = 256ull << 20; // limit for in-memory bodies (project pages)
  LogFn log;
};

struct HttpResponse;

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers; // "Name: value"
  bool head = false;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> range; // inclusive byte range
  std::optional<std::filesystem::path> dest;                    // stream a 2xx body into this file (truncated first)
  std::uint64_t max_body = 0;                                   // 0: HttpOptions::max_body_bytes (memory bodies only)
  std::uint64_t max_file = 0;                                   // dest transfers: fail once the file passes this (0: no limit)
  bool accept_compressed = false;                               // pages may be gzip'd; files never (hashes are of the wire bytes)
  ProgressFn progress;
  // Called once, on perform_many's thread, as soon as this transfer has its final result (its file,
  // for dest transfers, already fsynced and closed), while the others still run: a caller can start
  // on a finished download without waiting for the whole batch. The result is returned as well.
  std::function<void(const Expected<HttpResponse>&)> on_done;
};

struct HttpResponse {
  long status = 0;
  std::string url; // effective URL after redirects (may carry credentials: redact before showing)
  std::vector<std::pair<std::string, std::string>> headers; // final response; names lower-case
  std::string body;                                         // memory body, or the (bounded) error body of a dest transfer
  std::uint64_t bytes = 0;                                  // body bytes received in total (file size for dest transfers)
  std::string sha256;                                       // of the file, for dest transfers with a 2xx status
  int attempts = 1;
  int resumes = 0; // how many times a download continued with Range
  [[nodiscard]] std::optional<std::string> header(std::string_view name) const;
  [[nodiscard]] bool ok() const { return status >= 200 && status < 300; }
};

class HttpClient {
public:
  explicit HttpClient(HttpOptions options = {});
  HttpClient(HttpClient&&) noexcept;
  HttpClient& operator=(HttpClient&&) noexcept;
  ~HttpClient();

  // An Error only for transport failures (after retries) and local I/O; an HTTP status (404, 304,
  // a 503 that outlived the retries) is returned as data.
  [[nodiscard]] Expected<HttpResponse> perform(HttpRequest request);
  // Runs up to options().parallel transfers at once; results in request order.
  [[nodiscard]] std::vector<Expected<HttpResponse>> perform_many(std::vector<HttpRequest> requests);

  [[nodiscard]] const HttpOptions& options() const { return m_options; }

private:
  struct Impl;
  HttpOptions m_options;
  std::unique_ptr<Impl> m_impl;
};

// "HTTP 404 Not Found for <redacted url>" style error for a non-2xx response.
[[nodiscard]] Error http_status_error(const HttpResponse& response, std::string_view what_url);

} // namespace envfix::index
