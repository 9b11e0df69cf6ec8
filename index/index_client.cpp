#include "index/index_client.hpp"

#include <charconv>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>
#include <set>
#include <unordered_map>
#include <random>
#include <thread>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include "index/cache.hpp"
#include "index/page_cache.hpp"
#include "index/page_memo.hpp"
#include "index/url.hpp"
#include "index/zip_metadata.hpp"
#include "util/cache_trust.hpp"
#include "util/env.hpp"
#include "util/fs.hpp"
#include "util/text.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"

// ENVFIX_TRY for Expected<void>.
namespace envfix::index {

namespace fs = std::filesystem;

const char* to_string(MetadataSource s) {
  switch (s) {
  case MetadataSource::cache: return "cache";
  case MetadataSource::pep658: return "pep658";
  case MetadataSource::range_requests: return "range-requests";
  case MetadataSource::full_download: return "full-download";
  case MetadataSource::local_file: return "local-file";
  }
  return "?";
}

Expected<fs::path> default_cache_dir() {
  if (auto v = util::get_env(util::Env::cache_dir); v && !v->empty()) return fs::path(*v);
  if (auto x = util::get_env(util::Env::xdg_cache_home); x && !x->empty()) return fs::path(*x) / "envfix";
  if (auto h = util::get_env(util::Env::home); h && !h->empty()) return fs::path(*h) / ".cache" / "envfix";
  return make_error(ErrorCode::invalid_input, util::msg("cannot find a cache directory: HOME is not set"),
                    util::msg("set ENVFIX_CACHE_DIR or pass --cache-dir"));
}

namespace {

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Cache-Control: max-age / no-cache / no-store.
struct CachePolicy {
  std::optional<std::int64_t> max_age;
  bool no_cache = false;
  bool no_store = false;
};
CachePolicy parse_cache_control(std::string_view v) {
  CachePolicy p;
  const std::string s = util::lower(v);
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t comma = s.find(',', pos);
    std::string part = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    part.erase(0, part.find_first_not_of(" \t"));
    if (part.starts_with("max-age=")) {
      try {
        p.max_age = std::stoll(part.substr(8));
      } catch (...) {
      }
    } else if (part.starts_with("no-cache") || part.starts_with("must-revalidate")) {
      p.no_cache = part.starts_with("no-cache");
    } else if (part.starts_with("no-store")) {
      p.no_store = true;
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return p;
}

// A digest of the URL's "user:password@" ("" when it has none). What was fetched with credentials is
// cached under a key that holds this digest, and its stored entry records it: a run without them
// (or with others, or --offline) never reads it, since a private page must not reach a run that could
// not fetch it (docs/reliability.md, security model). Pages fetched through ~/.netrc carry no
// credentials in the URL and are keyed as public.
std::string credentials_digest(std::string_view url) {
  const std::string bare = strip_credentials(url);
  if (bare.size() == url.size()) return {};
  const std::size_t at = url.find("://") + 3; // strip_credentials removes exactly the userinfo after it
  return util::sha256_hex(url.substr(at, url.size() - bare.size()));
}

// The cache key of a URL: its hash without credentials, with their digest when it had some.
std::string cache_key_of(std::string_view url) {
  const std::string cred = credentials_digest(url);
  const std::string bare = strip_credentials(url);
  return util::sha256_hex(cred.empty() ? bare : bare + "\ncredentials " + cred);
}

// A page the server gave no lifetime (no max-age, no no-cache) but a Last-Modified date is fresh for
// a tenth of its age when stored (RFC 9111 section 4.2.2, heuristic freshness, as browsers and uv's
// HTTP cache do), at most 600 s (PyPI's own max-age for its simple pages). Static file servers
// (download.pytorch.org, a mirror, python -m http.server) send only Last-Modified: without this every
// plan revalidated every page, one round trip each.
std::optional<std::int64_t> heuristic_lifetime(const std::string& last_modified, std::int64_t date) {
  if (last_modified.empty()) return std::nullopt;
  const std::int64_t lm = curl_getdate(last_modified.c_str(), nullptr);
  if (lm < 0 || lm > date) return std::nullopt;
  return std::min<std::int64_t>((date - lm) / 10, 600);
}

// A local file (a file: URL of a lockfile or page) copied into the cache: a regular file only, and
// at most `max_bytes` read whatever it claims (one more byte is the proof it is larger), within
// `deadline`: a FIFO or /dev/zero named by a lockfile blocked forever or filled the disk.
Expected<void> copy_hashing(const fs::path& from, const fs::path& to, std::uint64_t max_bytes, std::chrono::milliseconds deadline,
                            std::string& hex, std::uint64_t& size) {
  util::Fd in = ENVFIX_TRY(util::open_local_file(from, max_bytes));
  util::Fd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out.valid()) return fail_errno(errno, ErrorCode::io, "cannot create {}: {}", to.string(), std::strerror(errno));
  const auto until = std::chrono::steady_clock::now() + deadline;
  util::Sha256 h;
  std::vector<char> buf(1 << 20);
  size = 0;
  for (;;) {
    const std::uint64_t left = max_bytes - size; // size <= max_bytes here
    const std::size_t want = left >= buf.size() ? buf.size() : static_cast<std::size_t>(left + 1);
    ssize_t n = ::read(in.get(), buf.data(), want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail_errno(errno, ErrorCode::io, "reading {}: {}", from.string(), std::strerror(errno));
    if (n == 0) break;
    size += static_cast<std::uint64_t>(n);
    if (size > max_bytes)
      return make_error(
          ErrorCode::invalid_input,
          fmt::format("refusing to read {}: it is larger than the {} bytes expected of it", from.string(), max_bytes),
          "the lockfile or page that names it gives another size: regenerate it, or replace the file");
    if (std::chrono::steady_clock::now() > until)
      return fail(ErrorCode::io, "reading {} took longer than {} s", from.string(),
                  std::chrono::duration_cast<std::chrono::seconds>(deadline).count());
    h.update(buf.data(), static_cast<std::size_t>(n));
    if (int e = util::write_all(out.get(), std::string_view(buf.data(), static_cast<std::size_t>(n))); e != 0)
      return fail_errno(e, ErrorCode::io, "writing {}: {}", to.string(), std::strerror(e));
  }
  if (::fsync(out.get()) != 0) return fail_errno(errno, ErrorCode::io, "fsync {}: {}", to.string(), std::strerror(errno));
  hex = h.hex_digest();
  return {};
}

// A local index or find-links page: a regular file of at most `max_bytes` (the page limit), checked
// on the descriptor it is read from, not on the path before (which a FIFO could replace in between).
Expected<std::string> read_local_page(const fs::path& path, std::uint64_t max_bytes) {
  util::Fd fd = ENVFIX_TRY(util::open_local_file(path, max_bytes));
  auto out = ENVFIX_TRY(util::read_fd(fd, path, max_bytes));
  if (out.size() > max_bytes)
    return fail(ErrorCode::invalid_input, "{}: the page is larger than {} bytes", path.string(), max_bytes);
  return out;
}

std::string random_suffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}", rng());
}

// Cache entries are written to a temp file and renamed, without fsync: losing one on power loss only
// costs a refetch, and readers validate what they read (page bodies against their recorded sha256,
// metadata against its published hash or its header). Two fsyncs per page and per metadata file were
// most of a cold resolve's wall time.
Expected<void> write_cache_file(const fs::path& path, std::string_view content) {
  fs::path tmp = path;
  tmp += "." + random_suffix() + ".tmp";
  util::Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return fail_errno(errno, ErrorCode::io, "cannot create {}: {}", tmp.string(), std::strerror(errno));
  for (std::size_t off = 0; off < content.size();) {
    ssize_t w = ::write(fd.get(), content.data() + off, content.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      int err = errno;
      std::error_code ec;
      fs::remove(tmp, ec);
      return fail_errno(err, ErrorCode::io, "writing {}: {}", tmp.string(), std::strerror(err));
    }
    off += static_cast<std::size_t>(w);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return fail(ErrorCode::io, "cannot rename into {}: {}", path.string(), ec.message());
  }
  return {};
}

// A cached METADATA file is used only when it is whole: its published hash matches, or (no hash) it
// has the header every METADATA starts with.
bool cached_metadata_ok(const Candidate& c, const std::string& text) {
  if (c.metadata_sha256) return util::sha256_hex(text) == *c.metadata_sha256;
  return text.starts_with("Metadata-Version:") && text.find("\nName:") != std::string::npos;
}

// "scheme://host:port" of an http(s) URL, lower case, without credentials; "" for anything else.
std::string http_origin_of(std::string_view url) {
  const std::string bare = util::lower(strip_credentials(url));
  if (!bare.starts_with("http://") && !bare.starts_with("https://")) return {};
  const std::size_t host = bare.find("://") + 3;
  return bare.substr(0, bare.find_first_of("/?#", host));
}

// Local path named by a location that is not http(s): "file://…" or a plain path.
std::optional<fs::path> local_path_of(std::string_view location) {
  std::string scheme = url_scheme(location);
  if (scheme == "file") {
    if (auto p = file_url_to_path(location)) return fs::path(*p);
    return std::nullopt;
  }
  if (scheme == "http" || scheme == "https") return std::nullopt;
  // "C:" style or bare paths: anything else without "://" is a path.
  if (location.find("://") != std::string_view::npos) return std::nullopt;
  std::error_code ec;
  return fs::absolute(fs::path(location), ec);
}

// A candidate's file is local only through a file: URL; anything else that is not http(s)
// ("javascript:…", a bare path from an untrusted page or lockfile) is refused by the HTTP layer.
std::optional<fs::path> candidate_local_path(std::string_view url) {
  if (url_scheme(url) != "file") return std::nullopt;
  return local_path_of(url);
}

// A download lands in <cache>/wheels/<sha>/<filename>, so the file name must be one plain path
// component: a lockfile or page that says "../../x" or "/etc/x" would otherwise choose where the
// bytes go, and which local file the cache lookup reads (docs/reliability.md).
Expected<void> check_cache_filename(const Candidate& c) {
  std::string_view f = c.filename;
  bool ok =
      !f.empty() && f != "." && f != ".." && f.find('/') == std::string_view::npos && f.find('\\') == std::string_view::npos;
  for (char ch : f) ok = ok && static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f;
  if (ok) return {};
  return make_error(ErrorCode::invalid_input,
                    util::msg("refusing to download {}: its file name '{}' is not a plain file name", redact_url(c.url),
                              util::escape_control(f)),
                    util::msg("the page or lockfile that named it is broken or hostile"));
}

Candidate local_candidate(const fs::path& file, std::string_view project, std::string_view index_url) {
  Candidate c;
  c.project = normalize_project_name(project);
  c.filename = file.filename().string();
  c.url = path_to_file_url(file.string());
  c.index_url = strip_credentials(index_url);
  std::error_code ec;
  auto sz = fs::file_size(file, ec);
  if (!ec) c.size = sz;
  return c;
}

} // namespace

Expected<std::string> read_local_metadata(const fs::path& wheel) { return read_local_dist_info(wheel, "METADATA"); }

Expected<std::string> read_local_dist_info(const fs::path& wheel, std::string_view member) {
  // A regular file only (a FIFO named by a file: URL blocked here); the zip reader bounds what it reads.
  util::Fd fd = ENVFIX_TRY(util::open_local_file(wheel, std::numeric_limits<std::uint64_t>::max()));
  struct stat st = {};
  if (::fstat(fd.get(), &st) != 0) return fail(ErrorCode::io, "cannot stat {}", wheel.string());
  int raw = fd.get();
  RangeReader reader = [raw, &wheel](std::uint64_t off, std::uint64_t len) -> Expected<std::string> {
    std::string buf(len, '\0');
    std::uint64_t got = 0;
    while (got < len) {
      ssize_t n = ::pread(raw, buf.data() + got, len - got, static_cast<off_t>(off + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail(ErrorCode::io, "reading {}: unexpected end of file", wheel.string());
      got += static_cast<std::uint64_t>(n);
    }
    return buf;
  };
  return read_wheel_dist_info(static_cast<std::uint64_t>(st.st_size), reader, member, wheel.string());
}

struct IndexClient::Impl {
  IndexClientOptions options;
  HttpClient http;
  fs::path cache;
  std::mutex stats_mutex;
  IndexStats stats;

  // The page memo (index/page_memo.hpp). Page calls come from one thread (the resolver's).
  std::optional<std::string> memo_key; // set by the run's first page call
  PageMemo memo_last;                  // what the last run that began the same way asked for
  PageMemo memo_now;                   // what this run asks for
  bool companions_sent = false;
  std::set<std::string> memo_origins; // http_origin_of this run's index URLs and its first page call's
  // Pages the server answered this run, as stored: fresh for the rest of it, and not read from disk again.
  std::unordered_map<std::string, CachedPage> validated;
  std::unordered_map<std::string, Error> gone; // page keys the server answered 404 this run
  // A companion's changed page, parsed once: the caller's request takes it (same index and project).
  struct Prefetched {
    PageContext ctx;
    ProjectPage page;
  };
  std::unordered_map<std::string, Prefetched> prefetched;

  explicit Impl(IndexClientOptions o) : options(std::move(o)), http(options.http) {}
  ~Impl() { save_memo(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  std::vector<util::Message> warnings; // under stats_mutex; each text once

  void warn(util::Message text) {
    std::lock_guard lock(stats_mutex);
    if (std::find(warnings.begin(), warnings.end(), text) == warnings.end()) warnings.push_back(std::move(text));
  }

  // A counter of IndexStats, as &IndexStats::page_rounds (spelled through decltype: clang-format 14 and 19
  // lay out a written pointer-to-member type differently).
  using Counter = decltype(&IndexStats::page_requests);
  void bump(Counter field, std::uint64_t by = 1) {
    std::lock_guard lock(stats_mutex);
    stats.*field += by;
  }

  fs::path page_dir() const { return cache / "http-v1" / "pages"; }
  fs::path wheel_path(const std::string& sha, const std::string& filename) const {
    return cache / "wheels" / sha.substr(0, 2) / sha / filename;
  }
  fs::path url_map_path(std::string_view url) const { return cache / "wheels" / "by-url" / cache_key_of(url); }
  fs::path metadata_path(const Candidate& c) const {
    // Keyed by the wheel's hash when known (immutable), else by its URL (cache_key_of).
    std::string key = c.sha256 ? "sha256-" + *c.sha256 : "url-" + cache_key_of(c.url);
    return cache / "metadata" / (key + ".metadata");
  }
  fs::path tmp_dir() const { return cache / "tmp"; }

  // ---- pages -------------------------------------------------------------------------------
  // `credentials`: credentials_digest() of the URL asked for; an entry stored for others is not
  // this run's (nor is one written before entries recorded it).
  std::optional<CachedPage> load_page(const std::string& key, const std::string& credentials) {
    // Read back only when this user's alone (util/cache_trust.hpp): the body decides what is installed.
    const fs::path meta_path = page_dir() / (key + ".json");
    auto meta_text = util::read_trusted(meta_path);
    if (!meta_text) return std::nullopt;
    auto p = parse_page_headers(*meta_text);
    if (!p) { // damaged: refetched, and said so (the file is overwritten when the page is stored)
      warn(util::msg("ignoring the damaged cache file {}: {}", meta_path.string(), p.error().said_message()));
      return std::nullopt;
    }
    if (p->credentials != credentials) return std::nullopt;
    auto body = util::read_trusted(page_dir() / (key + ".body"));
    if (!body || p->body_sha256 != util::sha256_hex(*body)) return std::nullopt; // torn or tampered
    p->body = std::move(*body);
    return std::move(*p);
  }

  // The body, then its headers (which name the body's hash). `body_too` false after a 304: the
  // stored body is the same bytes, only the times change (rewriting a 3 MB torch page on every
  // revalidation cost a warm plan more than parsing it).
  Expected<void> store_page(const std::string& key, const CachedPage& p, bool body_too = true) {
    ENVFIX_TRY_VOID(util::create_directories(page_dir()));
    if (body_too) ENVFIX_TRY_VOID(write_cache_file(page_dir() / (key + ".body"), p.body));
    ENVFIX_TRY_VOID(write_cache_file(page_dir() / (key + ".json"), page_headers_json(p)));
    return {};
  }

  Expected<ProjectPage> parse_page(const CachedPage& p, const std::string& request_url, const PageContext& base_ctx) {
    PageContext ctx = base_ctx;
    // The stored final URL has no credentials; when there was no redirect, resolve against the
    // request URL so that same-host file URLs keep the index's credentials (in memory only).
    ctx.page_url = strip_credentials(request_url) == p.final_url || p.final_url.empty() ? request_url : p.final_url;
    PageFormat f = page_format_from_content_type(p.content_type);
    if (f == PageFormat::unknown) {
      std::string_view b = p.body;
      auto first = b.find_first_not_of(" \t\r\n");
      if (p.content_type.empty() && first != std::string_view::npos && b[first] == '{')
        f = PageFormat::json;
      else if (p.content_type.empty())
        f = PageFormat::html;
      else
        return fail(ErrorCode::invalid_input, "{}: unexpected Content-Type {:?} for a project page", redact_url(request_url),
                    p.content_type);
    }
    return f == PageFormat::json ? parse_json_page(p.body, ctx) : parse_html_page(p.body, ctx);
  }

  // A page fetch in two halves so that many can share one multi handle (project_candidates_many).
  struct PageFetch {
    std::string url, key;
    PageContext ctx;
    std::optional<CachedPage> cached;
    std::optional<Expected<ProjectPage>> done; // answered from the cache (or failed) without a request
    bool companion = false;                    // asked for by the memo, not by the caller
  };

  fs::path memo_path(const std::string& key) const { return page_dir() / "memo" / (key + ".json"); }

  // Every page call starts here: the first names the memo to use, all are remembered for the next run.
  void note_page_call(const std::vector<PageMemo::Entry>& call) {
    if (options.offline) return;
    if (!memo_key) {
      std::vector<std::string> urls;
      for (const auto& e : call) urls.push_back(strip_credentials(e.url));
      memo_key = PageMemo::key_of(std::move(urls));
      for (const auto& u : options.index_urls) memo_origins.insert(http_origin_of(u));
      for (const auto& e : call) memo_origins.insert(http_origin_of(e.index_url));
      memo_origins.erase(""); // local locations: their pages are never companions
      if (auto text = util::read_trusted(memo_path(*memo_key))) {
        auto m = PageMemo::parse(*text);
        if (m)
          memo_last = std::move(*m);
        else // a bad memo is only a lost hint; this run's replaces it
          warn(util::msg("ignoring the damaged cache file {}: {}", memo_path(*memo_key).string(), m.error().said_message()));
      }
    }
    for (const auto& e : call) // pages behind credentials are not remembered: the memo holds none
      if (strip_credentials(e.url) == e.url && strip_credentials(e.index_url) == e.index_url) memo_now.add(e);
  }

  // Joins the pages the memo names, and that are not fresh, to the run's first request round.
  void add_companions(std::vector<PageFetch>& fetches, std::vector<HttpRequest>& reqs) {
    if (companions_sent || options.offline) return;
    companions_sent = true;
    for (const auto& e : memo_last.entries) {
      // A memo is a file in the cache: what it names is fetched only on this run's index hosts.
      if (!memo_origins.contains(http_origin_of(e.url)) || !memo_origins.contains(http_origin_of(e.index_url))) continue;
      if (std::any_of(fetches.begin(), fetches.end(), [&](const PageFetch& f) { return f.url == e.url; })) continue;
      PageContext ctx{.page_url = "", .project = e.project, .index_url = e.index_url, .filter_by_project = e.find_links};
      PageFetch f = begin_page(e.url, ctx);
      if (f.done) continue;
      f.companion = true;
      bump(&IndexStats::page_companions);
      reqs.push_back(page_request(f));
      fetches.push_back(std::move(f));
    }
  }

  // One round of page requests, the memo's companions with the first; results for the caller's
  // fetches, in order (a companion's answer is stored by finish_page, or dropped when it failed).
  std::vector<Expected<ProjectPage>> fetch_round(std::vector<PageFetch> fetches) {
    std::vector<HttpRequest> reqs;
    for (const auto& f : fetches) reqs.push_back(page_request(f));
    add_companions(fetches, reqs);
    bump(&IndexStats::page_rounds);
    auto results = http.perform_many(std::move(reqs)); // one multi handle: HTTP/2 streams on one connection
    std::vector<Expected<ProjectPage>> out;
    for (std::size_t k = 0; k < results.size(); ++k) {
      auto page = finish_page(fetches[k], std::move(results[k]));
      if (!fetches[k].companion) out.push_back(std::move(page));
    }
    return out;
  }

  void save_memo() noexcept {
    if (!memo_key || options.offline || memo_now.entries.empty() || memo_now == memo_last) return;
    try {
      if (util::create_directories(page_dir() / "memo")) (void)write_cache_file(memo_path(*memo_key), memo_now.to_json());
    } catch (...) {
      // a memo that cannot be written is a hint lost, not a failure
    }
  }

  PageFetch begin_page(const std::string& url, const PageContext& ctx) {
    PageFetch f{url, cache_key_of(url), ctx, std::nullopt, std::nullopt};
    if (answered_this_run(f)) return f;
    f.cached = load_page(f.key, credentials_digest(url));
    if (options.offline) {
      if (!f.cached)
        f.done = make_error(ErrorCode::not_found, util::msg("offline: no cached copy of {}", redact_url(url)),
                            util::msg("run once without --offline to fill the cache, or use --find-links with local wheels"));
      else {
        bump(&IndexStats::page_offline_hits);
        f.done = parse_page(*f.cached, url, ctx);
      }
      return f;
    }
    const auto lifetime = f.cached ? (f.cached->max_age ? f.cached->max_age : f.cached->heuristic_max_age) : std::nullopt;
    if (f.cached && !options.refresh && !f.cached->no_cache && lifetime && now_seconds() - f.cached->stored_at < *lifetime) {
      bump(&IndexStats::page_fresh_hits);
      f.done = parse_page(*f.cached, url, ctx);
    }
    return f;
  }

  // One answer per page and run (online runs only fill these): a 404, a companion's parsed page, a
  // page the server confirmed. Sets f.done and returns true when the run already has the answer.
  bool answered_this_run(PageFetch& f) {
    if (auto it = gone.find(f.key); it != gone.end()) {
      f.done = std::unexpected(it->second);
      return true;
    }
    if (auto it = prefetched.find(f.key); it != prefetched.end()) {
      const PageContext& c = it->second.ctx;
      if (c.index_url == f.ctx.index_url && c.filter_by_project == f.ctx.filter_by_project &&
          normalize_project_name(c.project) == normalize_project_name(f.ctx.project)) {
        bump(&IndexStats::page_fresh_hits);
        f.done = std::move(it->second.page);
        prefetched.erase(it);
        return true;
      }
    }
    if (auto it = validated.find(f.key); it != validated.end()) {
      bump(&IndexStats::page_fresh_hits);
      f.done = parse_page(it->second, f.url, f.ctx);
      return true;
    }
    return false;
  }

  HttpRequest page_request(const PageFetch& f) {
    HttpRequest req;
    req.url = f.url;
    req.headers.emplace_back(accept_header);
    req.accept_compressed = true;
    req.max_body = options.max_page_bytes;
    if (f.cached && !f.cached->etag.empty()) req.headers.push_back("If-None-Match: " + f.cached->etag);
    if (f.cached && !f.cached->last_modified.empty()) req.headers.push_back("If-Modified-Since: " + f.cached->last_modified);
    bump(&IndexStats::page_requests);
    return req;
  }

  Expected<ProjectPage> finish_page(PageFetch& f, Expected<HttpResponse> resp) {
    const std::string& url = f.url;
    const PageContext& ctx = f.ctx;
    if (!resp)
      return std::unexpected(std::move(resp.error()).context(util::msg("fetching the project page {}", redact_url(url))));
    if (resp->status == 304 && f.cached) {
      bump(&IndexStats::page_revalidated);
      f.cached->stored_at = now_seconds();
      if (f.cached->heuristic_max_age)
        f.cached->heuristic_max_age = heuristic_lifetime(f.cached->last_modified, f.cached->stored_at);
      (void)store_page(f.key, *f.cached, false); // refreshing the timestamp is best effort
      const CachedPage& kept = validated.insert_or_assign(f.key, std::move(*f.cached)).first->second;
      if (f.companion) return ProjectPage{}; // parsed when it is asked for: once per page and run
      return parse_page(kept, url, ctx);
    }
    if (resp->status == 404 || resp->status == 410) { // 410 Gone: not on this index either (PEP 503 servers use both)
      auto e = Error::made(ErrorCode::not_found,
                           util::msg("project {} not found on {} (HTTP {} for {})", fmt::format("{:?}", ctx.project),
                                     redact_url(ctx.index_url), resp->status, redact_url(url)),
                           {}, util::msg("check the package name and the index URL"));
      gone.emplace(f.key, e);
      return std::unexpected(std::move(e));
    }
    if (resp->status == 406)
      return make_error(ErrorCode::network, util::msg("{} refused every page format envfix reads (HTTP 406)", redact_url(url)));
    if (!resp->ok()) return std::unexpected(http_status_error(*resp, url));
    CachedPage p;
    p.body = std::move(resp->body);
    p.content_type = resp->header("content-type").value_or("");
    p.etag = resp->header("etag").value_or("");
    p.last_modified = resp->header("last-modified").value_or("");
    p.final_url = strip_credentials(resp->url);
    p.credentials = credentials_digest(url);
    p.stored_at = now_seconds();
    auto policy = parse_cache_control(resp->header("cache-control").value_or(""));
    p.max_age = policy.max_age;
    p.no_cache = policy.no_cache;
    if (!p.max_age && !p.no_cache && !resp->header("expires"))
      p.heuristic_max_age = heuristic_lifetime(p.last_modified, p.stored_at);
    auto page = parse_page(p, strip_credentials(resp->url) == strip_credentials(url) ? url : resp->url, ctx);
    // An unwritable cache must not fail the run; a page that was stored is fresh for the rest of it.
    if (page && !policy.no_store && store_page(f.key, p)) validated.insert_or_assign(f.key, std::move(p));
    if (page && f.companion) prefetched[f.key] = Prefetched{ctx, *page};
    return page;
  }

  Expected<ProjectPage> remote_page(const std::string& url, const PageContext& ctx) {
    note_page_call({{url, ctx.index_url, ctx.project, ctx.filter_by_project}});
    PageFetch f = begin_page(url, ctx);
    if (f.done) return std::move(*f.done);
    if (!companions_sent && !memo_last.entries.empty()) {
      std::vector<PageFetch> one;
      one.push_back(std::move(f));
      return std::move(fetch_round(std::move(one)).front());
    }
    companions_sent = true; // no memo: the first round has gone out alone
    bump(&IndexStats::page_rounds);
    return finish_page(f, http.perform(page_request(f)));
  }

  Expected<ProjectPage> local_index(fs::path root, const std::string& location, const std::string& project) {
    std::error_code ec;
    std::string norm = normalize_project_name(project);
    PageContext ctx{.page_url = "", .project = project, .index_url = location, .filter_by_project = false};
    if (fs::is_regular_file(root, ec)) {
      ProjectPage page;
      std::string name = root.filename().string();
      if (name.ends_with(".html") || name.ends_with(".htm")) {
        auto text = ENVFIX_TRY(read_local_page(root, options.max_page_bytes));
        ctx.page_url = path_to_file_url(root.string());
        ctx.filter_by_project = true;
        return parse_html_page(text, ctx);
      }
      if (project_of_filename(name) == norm) page.candidates.push_back(local_candidate(root, project, location));
      return page;
    }
    if (!fs::is_directory(root, ec))
      return make_error(ErrorCode::not_found, util::msg("index location {} does not exist", root.string()),
                        util::msg("pass an existing directory, a file:// URL or an http(s) index URL"));
    fs::path proj = root / norm;
    if (fs::is_directory(proj, ec)) {
      ctx.page_url = path_to_file_url(proj.string()) + "/";
      for (const char* name : {"index.html", "index.json"}) {
        if (fs::is_regular_file(proj / name, ec)) {
          auto text = ENVFIX_TRY(read_local_page(proj / name, options.max_page_bytes));
          return std::string_view(name) == "index.json" ? parse_json_page(text, ctx) : parse_html_page(text, ctx);
        }
      }
      root = proj; // a bare directory per project: list it below
      ctx.filter_by_project = false;
    }
    ProjectPage page;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      if (!entry.is_regular_file()) continue;
      std::string name = entry.path().filename().string();
      if (project_of_filename(name) == norm) files.push_back(entry.path());
    }
    if (ec) return fail(ErrorCode::io, "listing {}: {}", root.string(), ec.message());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) page.candidates.push_back(local_candidate(f, project, location));
    return page;
  }

  Expected<ProjectPage> project_page(const std::string& location, const std::string& project, bool find_links) {
    if (auto local = local_path_of(location)) return local_index(*local, location, project);
    std::string scheme = url_scheme(location);
    if (scheme != "http" && scheme != "https")
      return fail(ErrorCode::invalid_input, "unsupported index URL {}", redact_url(location));
    PageContext ctx{.page_url = "", .project = project, .index_url = location, .filter_by_project = find_links};
    return remote_page(find_links ? location : project_page_url(location, project), ctx);
  }

  // ---- downloads ---------------------------------------------------------------------------
  std::optional<fs::path> cached_wheel(const Candidate& c) {
    std::string sha;
    if (c.sha256)
      sha = *c.sha256;
    else if (auto m = util::read_trusted(url_map_path(c.url)))
      sha = *m;
    if (sha.size() != 64) return std::nullopt;
    fs::path p = wheel_path(sha, c.filename);
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return std::nullopt;
    // Never trusted without its hash: a corrupted cache entry is dropped and fetched again.
    auto actual = util::sha256_file_hex(p);
    if (!actual || *actual != sha) {
      fs::remove(p, ec);
      return std::nullopt;
    }
    return p;
  }

  // Who recorded the hash the download failed: the index's page, or the lockfile (apply --locked).
  static std::string mismatch_hint(const Candidate& c) {
    if (c.recorded == Candidate::Recorded::by_lockfile)
      return "the file behind this URL is not the one the lockfile recorded (the index replaced it, or --mirror or "
             "--find-links serve another build); the file was deleted and nothing was installed. Re-lock with `envfix "
             "lock` if the change is expected";
    return "the index published a different hash than the file it serves; the file was deleted. Retry later or report "
           "it to the index maintainers";
  }

  Expected<fs::path> commit_download(const Candidate& c, const fs::path& tmp, const std::string& actual, std::uint64_t size) {
    std::error_code ec;
    if (c.sha256 && *c.sha256 != actual) {
      fs::remove(tmp, ec);
      return make_error(ErrorCode::hash_mismatch,
                        fmt::format("sha256 mismatch for {} ({})\n  expected {}\n  got      {}", c.filename, redact_url(c.url),
                                    *c.sha256, actual),
                        mismatch_hint(c));
    }
    if (c.size && *c.size != size) {
      fs::remove(tmp, ec);
      return make_error(
          ErrorCode::hash_mismatch,
          fmt::format("size mismatch for {} ({}): expected {} bytes, got {}", c.filename, redact_url(c.url), *c.size, size),
          mismatch_hint(c));
    }
    fs::path dest = wheel_path(actual, c.filename);
    ENVFIX_TRY_VOID(util::create_directories(dest.parent_path()));
    fs::rename(tmp, dest, ec);
    if (ec) {
      fs::remove(tmp, ec);
      return fail(ErrorCode::io, "cannot move the download into {}: {}", dest.string(), ec.message());
    }
    (void)util::fsync_path(dest.parent_path());
    if (!c.sha256) {
      ENVFIX_TRY_VOID(util::create_directories(url_map_path(c.url).parent_path()));
      (void)util::write_file_atomic(url_map_path(c.url), actual);
    }
    return dest;
  }

  // Each partial download is held under its flock until it is moved into the cache or removed
  // (index/cache.hpp): the next run removes only the .part files of dead writers.
  std::mutex parts_mutex;
  std::unordered_map<std::string, util::Fd> parts;
  Expected<fs::path> prepare_tmp(fs::path& tmp) {
    auto part = ENVFIX_TRY(create_part(tmp_dir(), random_suffix()));
    tmp = part.path;
    std::lock_guard lock(parts_mutex);
    parts.insert_or_assign(tmp.string(), std::move(part.lock));
    return tmp;
  }
  struct PartRelease { // at the end of a download's last step, whatever its outcome
    Impl* impl;
    const fs::path& tmp;
    ~PartRelease() {
      std::lock_guard lock(impl->parts_mutex);
      impl->parts.erase(tmp.string());
    }
  };

  Expected<fs::path> download_local(const Candidate& c, const fs::path& src) {
    fs::path tmp;
    ENVFIX_TRY(prepare_tmp(tmp));
    PartRelease release{this, tmp};
    std::string hex;
    std::uint64_t size = 0;
    const std::uint64_t limit = c.size ? *c.size : options.max_download_bytes;
    if (auto r = copy_hashing(src, tmp, limit, options.http.download_deadline, hex, size); !r) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return std::unexpected(r.error());
    }
    return commit_download(c, tmp, hex, size);
  }

  HttpRequest download_request(const Candidate& c, const fs::path& tmp, ProgressFn progress) {
    HttpRequest req;
    req.url = c.url;
    req.dest = tmp;
    req.max_file = c.size ? *c.size : options.max_download_bytes;
    req.progress = std::move(progress);
    return req;
  }

  Expected<fs::path> finish_download(const Candidate& c, const fs::path& tmp, Expected<HttpResponse> resp) {
    PartRelease release{this, tmp};
    std::error_code ec;
    if (!resp) {
      fs::remove(tmp, ec);
      return std::unexpected(std::move(resp.error()).context(util::msg("downloading {}", c.filename)));
    }
    if (!resp->ok()) {
      fs::remove(tmp, ec);
      return std::unexpected(http_status_error(*resp, c.url).context(util::msg("downloading {}", c.filename)));
    }
    bump(&IndexStats::downloads);
    bump(&IndexStats::bytes_downloaded, resp->bytes);
    return commit_download(c, tmp, resp->sha256, resp->bytes);
  }

  Expected<fs::path> download(HttpClient& client, const Candidate& c, ProgressFn progress) {
    ENVFIX_TRY_VOID(check_cache_filename(c));
    if (auto p = cached_wheel(c)) {
      bump(&IndexStats::download_cache_hits);
      return *p;
    }
    if (auto local = candidate_local_path(c.url)) return download_local(c, *local);
    if (options.offline)
      return make_error(ErrorCode::not_found, util::msg("offline: {} is not in the cache ({})", c.filename, redact_url(c.url)),
                        util::msg("run once without --offline to download it"));
    fs::path tmp;
    ENVFIX_TRY(prepare_tmp(tmp));
    return finish_download(c, tmp, client.perform(download_request(c, tmp, std::move(progress))));
  }

  // ---- metadata ----------------------------------------------------------------------------
  Expected<std::string> metadata_by_range(HttpClient& client, const Candidate& c) {
    return dist_info_by_range(client, c, "METADATA");
  }

  Expected<std::string> dist_info_by_range(HttpClient& client, const Candidate& c, std::string_view member) {
    HttpRequest head;
    head.url = c.url;
    head.head = true;
    auto h = ENVFIX_TRY(client.perform(std::move(head)));
    auto len = h.header("content-length");
    auto ranges = h.header("accept-ranges");
    if (!h.ok() || !len || !ranges || ranges->find("bytes") == std::string::npos)
      return fail(ErrorCode::network, "{}: the server does not offer range requests", redact_url(c.url));
    std::uint64_t size = 0;
    try {
      size = std::stoull(*len);
    } catch (...) {
      return fail(ErrorCode::network, "{}: bad Content-Length {:?}", redact_url(c.url), *len);
    }
    RangeReader reader = [&](std::uint64_t off, std::uint64_t n) -> Expected<std::string> {
      HttpRequest r;
      r.url = c.url;
      r.range = std::make_pair(off, off + n - 1);
      bump(&IndexStats::range_requests);
      auto resp = ENVFIX_TRY(client.perform(std::move(r)));
      auto cr = resp.header("content-range").value_or("");
      if (resp.status != 206 || !cr.starts_with(fmt::format("bytes {}-", off)))
        return fail(ErrorCode::network, "{}: range request answered with HTTP {} {:?}", redact_url(c.url), resp.status, cr);
      return std::move(resp.body);
    };
    return read_wheel_dist_info(size, reader, member, redact_url(c.url), nullptr, options.range_tail_bytes);
  }

  Expected<std::string> metadata_pep658(HttpClient& client, const Candidate& c, bool& unavailable) {
    HttpRequest req;
    req.url = c.metadata_url();
    auto resp = ENVFIX_TRY(client.perform(std::move(req)));
    if (resp.status == 404 || resp.status == 410) {
      unavailable = true;
      return fail(ErrorCode::not_found, "{} is missing", redact_url(c.metadata_url()));
    }
    if (!resp.ok()) return std::unexpected(http_status_error(resp, c.metadata_url()));
    return check_metadata_hash(c, std::move(resp.body));
  }

  Expected<std::string> check_metadata_hash(const Candidate& c, std::string body) {
    if (c.metadata_sha256) {
      std::string actual = util::sha256_hex(body);
      if (actual != *c.metadata_sha256)
        return make_error(ErrorCode::hash_mismatch,
                          util::msg("sha256 mismatch for {}\n  expected {}\n  got      {}", redact_url(c.metadata_url()),
                                    *c.metadata_sha256, actual),
                          util::msg("the index's data-core-metadata hash does not match the file it serves"));
    }
    return body;
  }

  Expected<std::string> fetch_metadata(HttpClient& client, const Candidate& c, MetadataSource* source) {
    auto set = [&](MetadataSource s) {
      if (source) *source = s;
    };
    fs::path mpath = metadata_path(c);
    if (auto m = util::read_trusted(mpath); m && cached_metadata_ok(c, *m)) {
      bump(&IndexStats::metadata_cache);
      set(MetadataSource::cache);
      return *m;
    }
    auto remember = [&](std::string text) -> Expected<std::string> {
      if (util::create_directories(mpath.parent_path())) (void)write_cache_file(mpath, text);
      return text;
    };
    if (auto local = candidate_local_path(c.url)) {
      bump(&IndexStats::metadata_local);
      set(MetadataSource::local_file);
      return read_local_metadata(*local);
    }
    if (auto p = cached_wheel(c)) {
      bump(&IndexStats::metadata_local);
      set(MetadataSource::local_file);
      return remember(ENVFIX_TRY(read_local_metadata(*p)));
    }
    if (options.offline)
      return make_error(ErrorCode::not_found, util::msg("offline: no cached metadata for {} ({})", c.filename, redact_url(c.url)),
                        util::msg("run once without --offline to fetch it"));
    if (!c.is_wheel()) return fail(ErrorCode::invalid_input, "{}: metadata can only be read from wheels", c.filename);
    std::vector<std::string> tried;
    if (c.has_metadata) {
      bool unavailable = false;
      auto m = metadata_pep658(client, c, unavailable);
      if (m) {
        bump(&IndexStats::metadata_pep658);
        set(MetadataSource::pep658);
        return remember(std::move(*m));
      }
      if (m.error().code == ErrorCode::hash_mismatch) return std::unexpected(m.error());
      tried.push_back(m.error().message);
    }
    if (options.use_range_requests) {
      auto m = metadata_by_range(client, c);
      if (m) {
        bump(&IndexStats::metadata_range);
        set(MetadataSource::range_requests);
        return remember(std::move(*m));
      }
      tried.push_back(m.error().message);
    }
    auto path = download(client, c, {});
    if (!path) {
      Error e = std::move(path.error());
      for (auto& t : tried) e.causes.push_back(std::move(t));
      return std::unexpected(std::move(e).context(util::msg("reading the metadata of {}", c.filename)));
    }
    bump(&IndexStats::metadata_full);
    set(MetadataSource::full_download);
    return remember(ENVFIX_TRY(read_local_metadata(*path)));
  }
};

Expected<IndexClient> IndexClient::create(IndexClientOptions options) {
  if (options.cache_dir.empty()) options.cache_dir = ENVFIX_TRY(default_cache_dir());
  // Another user's cache is not used (util/cache_trust.hpp); a private temporary one is, for this run.
  options.cache_dir = ENVFIX_TRY(util::open_cache(options.cache_dir, !options.offline));
  if (!options.offline) ENVFIX_TRY_VOID(util::create_directories(options.cache_dir));
  remove_dead_parts(options.cache_dir / "tmp"); // downloads a killed run left
  options.http.parallel = std::max<std::size_t>(options.parallelism, 1);
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->cache = impl->options.cache_dir;
  return IndexClient(std::move(impl));
}

IndexClient::IndexClient(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
IndexClient::IndexClient(IndexClient&&) noexcept = default;
IndexClient& IndexClient::operator=(IndexClient&&) noexcept = default;
IndexClient::~IndexClient() = default;

Expected<ProjectPage> IndexClient::project_page(const std::string& index_url, const std::string& project) {
  return m_impl->project_page(index_url, project, false);
}

bool IndexClient::offline() const { return m_impl->options.offline; }

Expected<std::vector<Candidate>> IndexClient::project_candidates(const std::string& index_url, const std::string& project) {
  auto page = ENVFIX_TRY(m_impl->project_page(index_url, project, false));
  return std::move(page.candidates);
}

std::vector<Expected<std::vector<Candidate>>> IndexClient::project_candidates_many(const std::string& index_url,
                                                                                   std::span<const std::string> projects) {
  std::vector<std::optional<Expected<std::vector<Candidate>>>> slots(projects.size());
  std::string scheme = url_scheme(index_url);
  if (local_path_of(index_url) || (scheme != "http" && scheme != "https")) {
    for (std::size_t i = 0; i < projects.size(); ++i) slots[i] = project_candidates(index_url, projects[i]);
  } else {
    std::vector<Impl::PageFetch> fetches;
    std::vector<std::size_t> which;
    std::vector<PageMemo::Entry> call;
    for (const auto& p : projects) call.push_back({project_page_url(index_url, p), index_url, p, false});
    m_impl->note_page_call(call);
    for (std::size_t i = 0; i < projects.size(); ++i) {
      PageContext ctx{.page_url = "", .project = projects[i], .index_url = index_url, .filter_by_project = false};
      auto f = m_impl->begin_page(call[i].url, ctx);
      if (f.done) {
        slots[i] = f.done->has_value() ? Expected<std::vector<Candidate>>(std::move((*f.done)->candidates))
                                       : std::unexpected(f.done->error());
        continue;
      }
      fetches.push_back(std::move(f));
      which.push_back(i);
    }
    if (!fetches.empty()) {
      auto pages = m_impl->fetch_round(std::move(fetches));
      for (std::size_t k = 0; k < pages.size(); ++k)
        slots[which[k]] =
            pages[k] ? Expected<std::vector<Candidate>>(std::move(pages[k]->candidates)) : std::unexpected(pages[k].error());
    }
  }
  std::vector<Expected<std::vector<Candidate>>> out;
  out.reserve(slots.size());
  for (auto& s : slots) out.push_back(std::move(*s));
  return out;
}

Expected<std::vector<Candidate>> IndexClient::find_links_candidates(const std::string& location, const std::string& project) {
  auto page = ENVFIX_TRY(m_impl->project_page(location, project, true));
  return std::move(page.candidates);
}

Expected<std::string> IndexClient::fetch_metadata(const Candidate& c, MetadataSource* source) {
  return m_impl->fetch_metadata(m_impl->http, c, source);
}

Expected<std::string> IndexClient::fetch_record(const Candidate& c) {
  if (!c.is_wheel()) return fail(ErrorCode::invalid_input, "{} is not a wheel: it has no RECORD", c.filename);
  if (auto p = m_impl->cached_wheel(c)) return read_local_dist_info(*p, "RECORD");
  if (auto local = candidate_local_path(c.url)) return read_local_dist_info(*local, "RECORD");
  if (m_impl->options.offline)
    return fail(ErrorCode::not_found, "offline: {} is not in the cache, so its RECORD cannot be read", c.filename);
  if (!m_impl->options.use_range_requests)
    return fail(ErrorCode::network, "{}: range requests are off, so its RECORD cannot be read", redact_url(c.url));
  return m_impl->dist_info_by_range(m_impl->http, c, "RECORD");
}

void IndexClient::forget_metadata(const Candidate& c) {
  std::error_code ec;
  fs::remove(m_impl->metadata_path(c), ec); // a stale entry left behind is only re-checked, and refused, again
}

Expected<fs::path> IndexClient::download(const Candidate& c, ProgressFn progress) {
  return m_impl->download(m_impl->http, c, std::move(progress));
}

std::vector<Expected<std::string>> IndexClient::fetch_metadata_many(std::span<const Candidate> cs) {
  // Each metadata fetch is a short chain of dependent requests; run chains on worker threads, each
  // with its own client (curl handles are not shared across threads).
  std::vector<std::optional<Expected<std::string>>> slots(cs.size());
  // PEP 658 files first, as one batch on the shared multi handle (reused connections, HTTP/2 streams);
  // whatever that does not answer takes the per-candidate chain below.
  if (!m_impl->options.offline) {
    std::vector<HttpRequest> reqs;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const Candidate& c = cs[i];
      if (!c.has_metadata || !c.is_wheel() || candidate_local_path(c.url)) continue;
      fs::path mpath = m_impl->metadata_path(c);
      if (auto m = util::read_trusted(mpath); m && cached_metadata_ok(c, *m)) {
        m_impl->bump(&IndexStats::metadata_cache);
        slots[i] = std::move(*m);
        continue;
      }
      HttpRequest req;
      req.url = c.metadata_url();
      reqs.push_back(std::move(req));
      which.push_back(i);
    }
    auto results = m_impl->http.perform_many(std::move(reqs));
    for (std::size_t k = 0; k < results.size(); ++k) {
      const Candidate& c = cs[which[k]];
      if (!results[k] || !results[k]->ok()) continue;
      auto body = m_impl->check_metadata_hash(c, std::move(results[k]->body));
      if (!body) {
        slots[which[k]] = std::unexpected(body.error());
        continue;
      }
      m_impl->bump(&IndexStats::metadata_pep658);
      fs::path mpath = m_impl->metadata_path(c);
      if (util::create_directories(mpath.parent_path())) (void)write_cache_file(mpath, *body);
      slots[which[k]] = std::move(*body);
    }
  }
  std::vector<std::size_t> rest;
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (!slots[i]) rest.push_back(i);
  std::atomic<std::size_t> next{0};
  std::size_t workers = std::min(std::max<std::size_t>(m_impl->options.parallelism, 1), rest.size());
  auto work = [&] {
    HttpOptions ho = m_impl->options.http;
    ho.parallel = 1;
    HttpClient client(ho);
    for (std::size_t k; (k = next.fetch_add(1)) < rest.size();)
      slots[rest[k]] = m_impl->fetch_metadata(client, cs[rest[k]], nullptr);
  };
  std::vector<std::thread> threads;
  for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  if (workers > 0) work();
  for (auto& t : threads) t.join();
  std::vector<Expected<std::string>> out;
  out.reserve(cs.size());
  for (auto& s : slots) out.push_back(std::move(*s));
  return out;
}

std::vector<Expected<fs::path>> IndexClient::download_many(std::span<const Candidate> cs, ManyProgressFn progress,
                                                           ReadyFn ready) {
  std::vector<std::optional<Expected<fs::path>>> slots(cs.size());
  std::vector<HttpRequest> reqs;
  std::vector<std::size_t> which;
  std::vector<fs::path> tmps;
  // Largest first: the longest transfers start at once, and the big wheels, whose unpacking takes
  // longest, are done (and unpacking) while the small ones still download, not last.
  std::vector<std::size_t> order(cs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return cs[a].size.value_or(0) > cs[b].size.value_or(0); });
  for (std::size_t i : order) {
    const Candidate& c = cs[i];
    if (auto ok = check_cache_filename(c); !ok) {
      slots[i] = std::unexpected(ok.error());
    } else if (auto p = m_impl->cached_wheel(c)) {
      m_impl->bump(&IndexStats::download_cache_hits);
      slots[i] = *p;
    } else if (candidate_local_path(c.url) || m_impl->options.offline) {
      slots[i] = m_impl->download(m_impl->http, c, {});
    } else {
      fs::path tmp;
      if (auto r = m_impl->prepare_tmp(tmp); !r) {
        slots[i] = std::unexpected(r.error());
        continue;
      }
      ProgressFn pf;
      if (progress) pf = [progress, i](std::uint64_t d, std::optional<std::uint64_t> t) { progress(i, d, t); };
      reqs.push_back(m_impl->download_request(c, tmp, std::move(pf)));
      // Verified and moved into the cache the moment it completes (finish_download), so that
      // `ready` can start on it while the others download.
      reqs.back().on_done = [this, &slots, &ready, &cs, i, tmp](const Expected<HttpResponse>& r) {
        slots[i] = m_impl->finish_download(cs[i], tmp, r);
        if (*slots[i] && ready) ready(i, **slots[i]);
      };
      which.push_back(i);
      tmps.push_back(tmp);
    }
  }
  if (ready)
    for (std::size_t i = 0; i < cs.size(); ++i)
      if (slots[i] && *slots[i]) ready(i, **slots[i]);
  auto results = m_impl->http.perform_many(std::move(reqs)); // parallel on one multi handle
  for (std::size_t k = 0; k < results.size(); ++k)
    if (!slots[which[k]]) slots[which[k]] = m_impl->finish_download(cs[which[k]], tmps[k], std::move(results[k]));
  std::vector<Expected<fs::path>> out;
  out.reserve(cs.size());
  for (auto& s : slots) out.push_back(std::move(*s));
  return out;
}

IndexStats IndexClient::stats() const {
  std::lock_guard lock(m_impl->stats_mutex);
  return m_impl->stats;
}
std::vector<util::Message> IndexClient::warnings() const {
  std::lock_guard lock(m_impl->stats_mutex);
  return m_impl->warnings;
}
std::optional<std::uint64_t> IndexClient::file_size(const Candidate& c) {
  if (c.size) return c.size;
  std::error_code ec;
  if (auto p = m_impl->cached_wheel(c)) {
    auto n = fs::file_size(*p, ec);
    if (!ec) return n;
  }
  if (auto local = candidate_local_path(c.url)) {
    auto n = fs::file_size(*local, ec);
    return ec ? std::nullopt : std::optional<std::uint64_t>(n);
  }
  if (m_impl->options.offline) return std::nullopt;
  // HEAD first; a server that answers HEAD without a length may still give the total of a one-byte
  // range ("Content-Range: bytes 0-0/TOTAL", https://www.rfc-editor.org/rfc/rfc9110#section-14.4).
  HttpRequest head;
  head.url = c.url;
  head.head = true;
  if (auto h = m_impl->http.perform(std::move(head)); h && h->ok())
    if (auto len = h->header("content-length")) {
      std::uint64_t n = 0;
      auto [end, err] = std::from_chars(len->data(), len->data() + len->size(), n);
      if (err == std::errc() && end == len->data() + len->size() && n > 0) return n;
    }
  HttpRequest r;
  r.url = c.url;
  r.range = std::make_pair(std::uint64_t{0}, std::uint64_t{0});
  if (auto resp = m_impl->http.perform(std::move(r)); resp && resp->status == 206)
    if (auto cr = resp->header("content-range"); cr && cr->find('/') != std::string::npos) {
      std::string total = cr->substr(cr->find('/') + 1);
      std::uint64_t n = 0;
      auto [end, err] = std::from_chars(total.data(), total.data() + total.size(), n);
      if (err == std::errc() && n > 0) return n;
    }
  return std::nullopt;
}

const fs::path& IndexClient::cache_dir() const { return m_impl->cache; }
const IndexClientOptions& IndexClient::options() const { return m_impl->options; }

} // namespace envfix::index
