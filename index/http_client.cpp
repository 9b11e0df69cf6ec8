#include "index/http_client.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "index/candidate.hpp"
#include "index/url.hpp"
#include "util/env.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"
#include "util/writeback.hpp"

namespace envfix::index {

namespace {

using Clock = std::chrono::steady_clock;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool retryable_curl(CURLcode rc) {
  switch (rc) {
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_PARTIAL_FILE:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_GOT_NOTHING:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_BAD_CONTENT_ENCODING: return true;
  default: return false;
  }
}

// A transport failure said as what it is (a DNS or TLS problem reads as one, naming the URL, never as
// "no build fits"), with what to check.
struct FailureKind {
  std::string_view what, hint;
};
FailureKind failure_kind(CURLcode rc) {
  constexpr std::string_view ca = "set SSL_CERT_FILE (or REQUESTS_CA_BUNDLE) to the CA bundle that signs this index";
  switch (rc) {
  case CURLE_COULDNT_RESOLVE_HOST:
    return {"DNS lookup failed", "check the host name in the URL (--index-url, --mirror, ENVFIX_MIRROR) and this machine's DNS "
                                 "or proxy settings"};
  case CURLE_COULDNT_RESOLVE_PROXY: return {"DNS lookup of the proxy failed", "check HTTPS_PROXY / https_proxy"};
  case CURLE_COULDNT_CONNECT:
    return {"connection failed", "check that the server is up and reachable from here (port, firewall, proxy)"};
  case CURLE_PEER_FAILED_VERIFICATION: return {"TLS certificate not trusted", ca};
  case CURLE_SSL_CACERT_BADFILE: return {"TLS CA bundle unreadable", ca};
  case CURLE_SSL_CONNECT_ERROR:
    return {"TLS handshake failed",
            "check the URL's scheme and port (an http:// server answers no TLS) and any proxy in between"};
  case CURLE_OPERATION_TIMEDOUT:
    return {"timed out", "the server or the network is slow or unreachable; try again, or raise the timeout"};
  default: return {};
  }
}

Error transport_error(CURLcode rc, std::string_view url, const std::string& why) {
  const auto k = failure_kind(rc);
  return Error::made(ErrorCode::network,
                     k.what.empty() ? util::msg("{}: {}", redact_url(url), why)
                                    : util::msg("{}: {}: {}", redact_url(url), k.what, why),
                     {}, util::plain(std::string(k.hint)));
}

// A transfer that outlived its overall deadline (HttpOptions::page_deadline, download_deadline).
Error deadline_error(std::string_view url, bool download, std::chrono::milliseconds limit, int attempts) {
  Error e{ErrorCode::network,
          fmt::format("{}: no complete answer within {:g} s (the {} deadline)", redact_url(url),
                      static_cast<double>(limit.count()) / 1000.0, download ? "download" : "page"),
          {},
          fmt::format("the server is slow, or sends its answer a little at a time; on a slow link raise {} (seconds)",
                      download ? "ENVFIX_DOWNLOAD_DEADLINE" : "ENVFIX_PAGE_DEADLINE")};
  if (attempts > 1) e.add_cause(util::msg("gave up after {} attempts", attempts));
  return e;
}

bool retryable_status(long s) { return s == 408 || s == 429 || (s >= 500 && s <= 599); }

// Remove user:password from text that might echo a URL (curl messages).
std::string scrub(std::string text, std::string_view url) {
  std::string stripped = strip_credentials(url);
  if (stripped.size() == url.size()) return text;
  std::string_view rest = url.substr(url.find("://") + 3);
  std::string userinfo(rest.substr(0, rest.find('@')));
  for (std::string needle :
       {userinfo, userinfo.substr(userinfo.find(':') == std::string::npos ? userinfo.size() : userinfo.find(':') + 1)}) {
    if (needle.empty()) continue;
    for (std::size_t p; (p = text.find(needle)) != std::string::npos;) text.replace(p, needle.size(), "***");
  }
  return text;
}

// Work that must not stall the transfer loop, which moves the bytes of every running transfer:
// write-back of downloaded ranges (sync_file_range can block while the disk's queue is full) and
// each finished download's fsync, close and on_done (verification, the move into a cache, an early
// unpack's start). Done inline on the loop, a gigabyte's fsync stopped every other download for
// seconds. One thread, first in first out: a file's fsync comes after its ranges' write-back.
class Finisher {
public:
  ~Finisher() { drain(); }
  void post(std::function<void()> task) {
    {
      std::lock_guard lock(m_mutex);
      m_tasks.push_back(std::move(task));
      if (!m_thread.joinable()) m_thread = std::thread([this] { run(); });
    }
    m_wake.notify_one();
  }
  // Runs what is queued, then stops the thread (post starts it again).
  void drain() {
    {
      std::lock_guard lock(m_mutex);
      m_closing = true;
    }
    m_wake.notify_one();
    if (m_thread.joinable()) m_thread.join();
    m_closing = false;
  }

private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(m_mutex);
        m_wake.wait(lock, [&] { return m_closing || !m_tasks.empty(); });
        if (m_tasks.empty()) return;
        task = std::move(m_tasks.front());
        m_tasks.pop_front();
      }
      task();
    }
  }
  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::deque<std::function<void()>> m_tasks;
  std::thread m_thread;
  bool m_closing = false;
};

// "scheme://host:port" of a URL (curl's own parser, default ports filled in); the URL itself when
// curl cannot parse it (the transfer then fails on its own).
std::string origin_of(const std::string& url) {
  std::string out = url;
  if (CURLU* u = curl_url()) {
    char *scheme = nullptr, *host = nullptr, *port = nullptr;
    if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK && curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK)
      out = fmt::format("{}://{}:{}", scheme, host, port);
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
  }
  return out;
}

struct Transfer {
  std::size_t index = 0;
  std::string origin;           // "https://host:443": what is remembered per server (origin_of)
  Finisher* finisher = nullptr; // the perform_many call's (every transfer runs in one)
  HttpRequest req;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  int attempts = 0;
  int retries_used = 0;
  int resumes = 0;
  Clock::time_point not_before{};
  std::chrono::milliseconds deadline_after{0}; // HttpOptions' page or download deadline (0: none)
  std::optional<Clock::time_point> deadline;   // set when the first attempt starts
  std::size_t max_header_bytes = 0;
  // Per attempt
  std::size_t header_bytes = 0; // this response's header lines so far
  bool headers_too_large = false;
  long status = 0;
  std::vector<std::pair<std::string, std::string>> resp_headers;
  std::string body;
  bool too_large = false;
  bool write_failed = false;
  bool range_mismatch = false;
  std::string write_error;
  int write_errno = 0; // the failed write's errno, kept in the error (cli's OS hints read it)
  char errbuf[CURL_ERROR_SIZE] = {};
  // Download state kept across attempts (resume).
  util::Fd fd;
  std::uint64_t file_bytes = 0;  // bytes committed to the file (and the hash)
  std::uint64_t resume_from = 0; // Range start asked in this attempt (0 = none)
  bool decided = false;          // this attempt's body target (file vs error body) is known
  bool to_file = false;
  std::unique_ptr<util::Sha256> hash;
  util::WritebackPacer writeback; // the fsync at the end then finds most pages written
  std::optional<std::uint64_t> total;
  std::optional<Expected<HttpResponse>> result;
  bool notified = false; // notify_done ran
};

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  std::uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc{} || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

size_t header_cb(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) {
    t->resp_headers.clear();
    t->header_bytes = 0;
    return size * n;
  }
  t->header_bytes += line.size();
  if (t->max_header_bytes && t->header_bytes > t->max_header_bytes) {
    t->headers_too_large = true;
    return 0; // curl ends the transfer (CURLE_WRITE_ERROR), judged in Attempts::finish
  }
  auto colon = line.find(':');
  if (colon != std::string_view::npos)
    t->resp_headers.emplace_back(util::lower(util::trim(line.substr(0, colon))), util::trim(line.substr(colon + 1)));
  return size * n;
}

std::optional<std::string> find_header(const std::vector<std::pair<std::string, std::string>>& h, std::string_view name) {
  std::optional<std::string> v;
  for (const auto& [k, val] : h)
    if (k == name) v = val;
  return v;
}

// Decide where this attempt's body goes, once the status is known.
bool decide_target(Transfer& t) {
  if (t.decided) return true;
  t.decided = true;
  long code = 0;
  curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &code);
  t.status = code;
  if (!t.req.dest || code < 200 || code >= 300) return true;
  t.to_file = true;
  if (t.resume_from > 0) {
    if (code == 206) {
      // A resumed download: the 206's Content-Range must start exactly where we stopped.
      auto cr = find_header(t.resp_headers, "content-range");
      std::optional<std::uint64_t> start;
      if (cr && cr->starts_with("bytes ")) start = parse_u64(std::string_view(*cr).substr(6, cr->find('-') - 6));
      if (!start || *start != t.resume_from) {
        t.range_mismatch = true;
        return false;
      }
    } else {
      // 200: the server ignored Range; start over.
      t.file_bytes = 0;
      t.hash = std::make_unique<util::Sha256>();
      if (ftruncate(t.fd.get(), 0) != 0 || lseek(t.fd.get(), 0, SEEK_SET) != 0) {
        t.write_failed = true;
        t.write_error = "cannot truncate the partial file";
        return false;
      }
    }
  }
  curl_off_t cl = -1;
  curl_easy_getinfo(t.easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
  if (cl >= 0) t.total = t.file_bytes + static_cast<std::uint64_t>(cl);
  return true;
}

size_t write_cb(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * n;
  if (!decide_target(*t)) return 0;
  if (t->to_file) {
    // An endless or oversized body must not fill the disk (issue 10).
    if (t->req.max_file && t->file_bytes + len > t->req.max_file) {
      t->too_large = true;
      return 0;
    }
    if (int err = util::write_all(t->fd.get(), std::string_view(data, len)); err != 0) {
      t->write_failed = true;
      t->write_errno = err;
      t->write_error = std::strerror(err);
      return 0;
    }
    t->hash->update(data, len);
    t->file_bytes += len;
    if (auto r = t->writeback.due(t->file_bytes)) t->finisher->post([fd = t->fd.get(), r = *r] { util::start_writeback(fd, r); });
    if (t->req.progress) t->req.progress(t->file_bytes, t->total);
    return len;
  }
  std::uint64_t limit = t->req.max_body;
  if (t->req.dest) limit = 64 * 1024; // error body of a download: keep a little for the message
  if (t->body.size() + len > limit) {
    if (t->req.dest) return len; // drop the rest, not an error
    t->too_large = true;
    return 0;
  }
  t->body.append(data, len);
  return len;
}

// Retry-After: seconds or an HTTP date.
std::optional<std::chrono::milliseconds> retry_after(const Transfer& t) {
  auto v = find_header(t.resp_headers, "retry-after");
  if (!v) return std::nullopt;
  if (auto s = parse_u64(*v)) return std::chrono::milliseconds(*s * 1000);
  time_t when = curl_getdate(v->c_str(), nullptr);
  if (when < 0) return std::nullopt;
  auto delta = when - time(nullptr);
  return std::chrono::milliseconds(std::max<time_t>(delta, 0) * 1000);
}

} // namespace

std::optional<std::string> HttpResponse::header(std::string_view name) const { return find_header(headers, util::lower(name)); }

Error http_status_error(const HttpResponse& r, std::string_view what_url) {
  auto e = Error::made(r.status == 404 ? ErrorCode::not_found : ErrorCode::network,
                       util::msg("HTTP {} for {}", r.status, redact_url(what_url)));
  if (r.status == 401 || r.status == 403)
    e.advise(util::msg("the index needs credentials: put them in the URL (user:password@host) or in ~/.netrc"));
  if (r.attempts > 1) e.add_cause(util::msg("gave up after {} attempts", r.attempts));
  return e;
}

struct HttpClient::Impl {
  CURLM* multi = nullptr;
  CURLSH* share = nullptr;
  std::string ca_file;
  std::string netrc_file;
  // Servers that answered over HTTP/1.x: their transfers start at once on connections of their own
  // instead of waiting to share one (CURLOPT_PIPEWAIT, for HTTP/2), see Attempts::start.
  std::set<std::string> h1_origins;
  std::mt19937 rng{std::random_device{}()};
  ~Impl() {
    if (multi) curl_multi_cleanup(multi);
    if (share) curl_share_cleanup(share);
  }
};

HttpClient::HttpClient(HttpOptions options) : m_options(std::move(options)), m_impl(std::make_unique<Impl>()) {
  global_init();
  m_impl->multi = curl_multi_init();
  curl_multi_setopt(m_impl->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  curl_multi_setopt(m_impl->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                    static_cast<long>(std::max<std::size_t>(m_options.parallel, 1)));
  m_impl->share = curl_share_init();
  curl_share_setopt(m_impl->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(m_impl->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  if (m_options.ca_file)
    m_impl->ca_file = m_options.ca_file->string();
  else if (auto v = util::get_env(util::Env::ssl_cert_file); v && !v->empty())
    m_impl->ca_file = *v;
  else if (auto r = util::get_env(util::Env::requests_ca_bundle); r && !r->empty())
    m_impl->ca_file = *r;
  if (auto n = util::get_env(util::Env::netrc); n && !n->empty()) m_impl->netrc_file = *n;
}

HttpClient::HttpClient(HttpClient&&) noexcept = default;
HttpClient& HttpClient::operator=(HttpClient&&) noexcept = default;
HttpClient::~HttpClient() = default;

Expected<HttpResponse> HttpClient::perform(HttpRequest request) {
  std::vector<HttpRequest> one;
  one.push_back(std::move(request));
  return std::move(perform_many(std::move(one)).front());
}

namespace {

// The attempts of one perform_many call: starting a transfer on the multi handle, and judging how an
// attempt ended (a result, or another attempt: retry or resume).
struct Attempts {
  const HttpOptions& o;
  CURLM* multi;
  CURLSH* share;
  const std::string& ca_file;
  const std::string& netrc_file;
  std::mt19937& rng;
  std::set<std::string>& h1_origins;

  void log(std::string line) const {
    if (o.log) o.log(line);
  }

  void start(Transfer& t) const {
    ++t.attempts;
    t.status = 0;
    t.header_bytes = 0;
    t.headers_too_large = false;
    t.resp_headers.clear();
    t.body.clear();
    t.too_large = t.write_failed = t.range_mismatch = t.decided = t.to_file = false;
    t.errbuf[0] = 0;
    t.resume_from = t.req.dest ? t.file_bytes : 0;
    CURL* e = curl_easy_init();
    t.easy = e;
    curl_easy_setopt(e, CURLOPT_URL, t.req.url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
    curl_easy_setopt(e, CURLOPT_SHARE, share);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    bool https = url_scheme(t.req.url) == "https";
    // Waiting for a connection to share pays off only with HTTP/2 (https here, ALPN). To an HTTP/1
    // server every waiting transfer queued behind one connection: plain http:// pages went one at a
    // time, and an HTTPS mirror without HTTP/2 got its parallel transfers a handshake late.
    if (t.origin.empty()) t.origin = origin_of(t.req.url);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, https && !h1_origins.contains(t.origin) ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, static_cast<long>(o.max_redirects));
    // Never follow https -> http.
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, https ? "https" : "http,https");
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.connect_timeout.count()));
    if (t.deadline_after.count() > 0) {
      if (!t.deadline) t.deadline = Clock::now() + t.deadline_after;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*t.deadline - Clock::now()).count();
      curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<long long>(left, 1)));
    }
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                     static_cast<long>(std::max<long>(1, static_cast<long>(o.low_speed_time.count()))));
    curl_easy_setopt(e, CURLOPT_USERAGENT, o.user_agent.c_str());
    if (!ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, ca_file.c_str());
    if (o.use_netrc) {
      curl_easy_setopt(e, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL));
      if (!netrc_file.empty()) curl_easy_setopt(e, CURLOPT_NETRC_FILE, netrc_file.c_str());
    }
    if (t.req.accept_compressed) curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    if (t.req.head) curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    std::string range;
    if (t.req.range)
      range = fmt::format("{}-{}", t.req.range->first, t.req.range->second);
    else if (t.resume_from > 0)
      range = fmt::format("{}-", t.resume_from);
    if (!range.empty()) curl_easy_setopt(e, CURLOPT_RANGE, range.c_str()); // copied by curl
    if (t.headers) curl_slist_free_all(t.headers);
    t.headers = nullptr;
    for (const auto& h : t.req.headers) t.headers = curl_slist_append(t.headers, h.c_str());
    if (!t.req.accept_compressed) t.headers = curl_slist_append(t.headers, "Accept-Encoding: identity");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    curl_multi_add_handle(multi, e);
    log(fmt::format("{} {}{} (attempt {})", t.req.head ? "HEAD" : "GET", redact_url(t.req.url),
                    range.empty() ? "" : " range " + range, t.attempts));
  }

  std::chrono::milliseconds backoff(const Transfer& t) const {
    double base = static_cast<double>(o.backoff.count()) * static_cast<double>(1u << std::min(t.attempts - 1, 10));
    std::uniform_real_distribution<double> jitter(0.5, 1.0);
    return std::chrono::milliseconds(static_cast<long>(base * jitter(rng)));
  }

  // Sets t.result, or schedules another attempt and returns false.
  bool finish(Transfer& t, CURLcode rc) const;
  // Another attempt if the budget allows (resumes for a download that progressed, else retries);
  // else the transport error, for a transport failure.
  bool schedule_retry(Transfer& t, CURLcode rc, const std::string& why, bool progressed,
                      std::optional<std::chrono::milliseconds> delay) const;
};

// A download whose partial file the server does not continue starts over without Range.
void restart_download(Transfer& t) {
  t.file_bytes = 0;
  t.hash = std::make_unique<util::Sha256>();
  if (ftruncate(t.fd.get(), 0) != 0 || lseek(t.fd.get(), 0, SEEK_SET) != 0)
    t.result = fail(ErrorCode::io, "cannot truncate {}", t.req.dest->string());
}

bool Attempts::schedule_retry(Transfer& t, CURLcode rc, const std::string& why, bool progressed,
                              std::optional<std::chrono::milliseconds> delay) const {
  bool can = progressed ? t.resumes < o.max_resumes : t.retries_used < o.retries;
  auto d = progressed ? std::chrono::milliseconds(0) : backoff(t);
  if (delay) d = std::min<std::chrono::milliseconds>(*delay, o.max_retry_after);
  if (can && t.deadline && Clock::now() + d >= *t.deadline) { // no time left for another attempt
    t.result = std::unexpected(deadline_error(t.req.url, t.req.dest.has_value(), t.deadline_after, t.attempts));
    return false;
  }
  if (can) {
    if (progressed)
      ++t.resumes;
    else
      ++t.retries_used;
    t.not_before = Clock::now() + d;
    log(fmt::format("retry {} in {} ms: {}", redact_url(t.req.url), d.count(), why));
    return true;
  }
  if (rc != CURLE_OK) {
    Error err = transport_error(rc, t.req.url, why);
    err.add_cause(util::msg("gave up after {} attempts", t.attempts));
    t.result = std::unexpected(std::move(err));
  }
  return false;
}

bool Attempts::finish(Transfer& t, CURLcode rc) const {
  long code = 0;
  curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &code);
  t.status = code;
  char* eff = nullptr;
  curl_easy_getinfo(t.easy, CURLINFO_EFFECTIVE_URL, &eff);
  std::string effective = eff ? eff : t.req.url;
  if (rc == CURLE_OK && t.req.dest && !t.decided) decide_target(t); // empty body
  std::string why;
  bool retry = false;
  bool progressed = false;
  std::optional<std::chrono::milliseconds> delay;
  // A header line past curl's own limit (CURL_MAX_HTTP_HEADER, 100 KiB) reads as "Out of memory" in curl
  // 7.88; no body byte has arrived then.
  const bool long_header_line = rc == CURLE_OUT_OF_MEMORY && !t.decided;
  if (t.headers_too_large || long_header_line) {
    t.result = make_error(
        ErrorCode::network,
        long_header_line
            ? fmt::format("{}: the response's headers are larger than curl accepts (a header line over 100 KiB)",
                          redact_url(t.req.url))
            : fmt::format("{}: the response's headers are larger than {} bytes", redact_url(t.req.url), t.max_header_bytes),
        "the server is broken or hostile; no index needs headers that large");
  } else if (rc == CURLE_OPERATION_TIMEDOUT && t.deadline && Clock::now() + std::chrono::milliseconds(50) >= *t.deadline) {
    t.result = std::unexpected(deadline_error(t.req.url, t.req.dest.has_value(), t.deadline_after, t.attempts));
  } else if (t.too_large && t.req.dest && t.req.max_file) {
    // A download sent past the size recorded for it (the index's or the lockfile's), or the cap.
    t.result = make_error(ErrorCode::hash_mismatch,
                          util::msg("{}: the download passed {} bytes, the size recorded for it (or the download limit)",
                                    redact_url(t.req.url), t.req.max_file),
                          util::msg("the server sends another file than the one recorded; nothing of it was kept"));
  } else if (t.too_large) {
    t.result = make_error(ErrorCode::invalid_input,
                          util::msg("{}: response is larger than the limit of {} bytes", redact_url(t.req.url), t.req.max_body),
                          util::msg("raise the page size limit if this index really serves pages this large"));
  } else if (t.write_failed) {
    t.result = fail_errno(t.write_errno, ErrorCode::io, "writing {}: {}", t.req.dest->string(), t.write_error);
  } else if (t.range_mismatch) {
    // The server answered the resume with other bytes.
    why = "206 Content-Range does not start at the resume offset";
    restart_download(t);
    retry = !t.result;
  } else if (rc != CURLE_OK) {
    why = scrub(t.errbuf[0] ? std::string(t.errbuf) : std::string(curl_easy_strerror(rc)), t.req.url);
    if (rc == CURLE_TOO_MANY_REDIRECTS || rc == CURLE_UNSUPPORTED_PROTOCOL) {
      t.result =
          make_error(ErrorCode::network, util::msg("{}: {}", redact_url(t.req.url), why),
                     rc == CURLE_UNSUPPORTED_PROTOCOL ? util::msg("redirects from https to http are refused") : util::Message{});
    } else if (retryable_curl(rc)) {
      retry = true;
      progressed = t.req.dest && t.to_file && t.file_bytes > t.resume_from;
    } else {
      t.result = std::unexpected(transport_error(rc, t.req.url, why));
    }
  } else if (t.req.dest && t.resume_from > 0 && code == 416) {
    // The partial file is not a prefix the server agrees with.
    why = "HTTP 416 for the resume range";
    restart_download(t);
    retry = !t.result;
  } else if (retryable_status(code)) {
    why = fmt::format("HTTP {}", code);
    retry = true;
    delay = retry_after(t);
  }
  if (retry && !t.result && schedule_retry(t, rc, why, progressed, delay)) return false;
  if (!t.result) {
    HttpResponse r;
    r.status = code;
    r.url = effective;
    r.headers = std::move(t.resp_headers);
    r.body = std::move(t.body);
    r.attempts = t.attempts;
    r.resumes = t.resumes;
    if (t.req.dest) {
      r.bytes = t.file_bytes;
      if (t.to_file) r.sha256 = t.hash->hex_digest();
    } else {
      r.bytes = r.body.size();
    }
    t.result = std::move(r);
    log(fmt::format("{} {} -> {}", t.req.head ? "HEAD" : "GET", redact_url(t.req.url), code));
  }
  return true;
}

// A transfer's final result is in: its file is made durable and closed (before anyone renames it
// into a cache), then the request's on_done is told, once.
void notify_done(Transfer& t) {
  if (t.notified || !t.result) return;
  t.notified = true;
  if (t.fd.valid()) {
    if (*t.result && (*t.result)->ok()) ::fsync(t.fd.get());
    t.fd = util::Fd();
  }
  if (t.req.on_done) t.req.on_done(*t.result);
}

// SIGINT/SIGTERM recorded by a util::InterruptScope (the caller's: apply's download): every
// transfer not done ends now with `interrupted`, and each on_done removes its partial file.
bool end_on_interrupt(CURLM* multi, std::vector<std::unique_ptr<Transfer>>& ts) {
  const int sig = util::pending_interrupt();
  if (sig == 0) return false;
  for (auto& t : ts) {
    if (t->result) continue;
    if (t->easy) {
      curl_multi_remove_handle(multi, t->easy);
      curl_easy_cleanup(t->easy);
      t->easy = nullptr;
    }
    t->result = fail(ErrorCode::interrupted, "download stopped: envfix was interrupted by signal {}", sig);
  }
  return true;
}

} // namespace

std::vector<Expected<HttpResponse>> HttpClient::perform_many(std::vector<HttpRequest> requests) {
  const HttpOptions& o = m_options;
  std::vector<std::unique_ptr<Transfer>> ts;
  std::deque<Transfer*> waiting;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    auto t = std::make_unique<Transfer>();
    t->index = i;
    t->req = std::move(requests[i]);
    if (t->req.max_body == 0) t->req.max_body = o.max_body_bytes;
    t->deadline_after = t->req.dest ? o.download_deadline : o.page_deadline;
    t->max_header_bytes = o.max_header_bytes;
    std::string scheme = url_scheme(t->req.url);
    if (scheme != "http" && scheme != "https") {
      t->result = fail(ErrorCode::invalid_input, "unsupported URL scheme {:?}: {}", scheme, redact_url(t->req.url));
    } else if (t->req.dest) {
      int fd = ::open(t->req.dest->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0)
        t->result = fail_errno(errno, ErrorCode::io, "cannot create {}: {}", t->req.dest->string(), std::strerror(errno));
      t->fd = util::Fd(fd);
      t->hash = std::make_unique<util::Sha256>();
    }
    if (!t->result) waiting.push_back(t.get());
    ts.push_back(std::move(t));
  }
  Finisher finisher;
  for (auto& t : ts) t->finisher = &finisher;
  Attempts run{o, m_impl->multi, m_impl->share, m_impl->ca_file, m_impl->netrc_file, m_impl->rng, m_impl->h1_origins};
  std::size_t active = 0;
  std::vector<Transfer*> running;
  while (!waiting.empty() || active > 0) {
    if (end_on_interrupt(m_impl->multi, ts)) break;
    auto now = Clock::now();
    // Start what may start.
    for (auto it = waiting.begin(); it != waiting.end() && active < std::max<std::size_t>(o.parallel, 1);) {
      if ((*it)->not_before <= now) {
        run.start(**it);
        ++active;
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    int still = 0;
    curl_multi_perform(m_impl->multi, &still);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(m_impl->multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      CURLcode rc = msg->data.result;
      if (long v = 0; curl_easy_getinfo(msg->easy_handle, CURLINFO_HTTP_VERSION, &v) == CURLE_OK &&
                      (v == CURL_HTTP_VERSION_1_0 || v == CURL_HTTP_VERSION_1_1))
        m_impl->h1_origins.insert(t->origin);
      bool done = run.finish(*t, rc);
      curl_multi_remove_handle(m_impl->multi, t->easy);
      curl_easy_cleanup(t->easy);
      t->easy = nullptr;
      --active;
      if (!done)
        waiting.push_back(t);
      else if (t->fd.valid() || t->req.on_done)
        finisher.post([t] { notify_done(*t); });
      else
        notify_done(*t);
    }
    if (waiting.empty() && active == 0) break;
    int timeout_ms = 200;
    if (active == 0 && !waiting.empty()) {
      auto next =
          std::min_element(waiting.begin(), waiting.end(), [](auto* a, auto* b) { return a->not_before < b->not_before; });
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>((*next)->not_before - Clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<long>(wait, 0, 1000));
      if (timeout_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
      continue;
    }
    curl_multi_poll(m_impl->multi, nullptr, 0, timeout_ms, nullptr);
  }

  finisher.drain(); // every on_done has run
  std::vector<Expected<HttpResponse>> out;
  out.reserve(ts.size());
  for (auto& t : ts) {
    if (t->headers) curl_slist_free_all(t->headers);
    notify_done(*t); // the transfers that never started (refused URL, file not creatable)
    out.push_back(std::move(*t->result));
  }
  return out;
}

} // namespace envfix::index
