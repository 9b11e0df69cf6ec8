// Integration tests: a real nginx (HTTPS with a test CA, HTTP), the fault-injecting server, real
// wheels from tests/support/index_builder.py, and the on-disk cache.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "index/index_client.hpp"
#include "index/url.hpp"
#include "tests/support/nginx_server.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

using namespace envfix;
using namespace envfix::index;
namespace fs = std::filesystem;

namespace {

struct Fixture {
  fs::path root;          // served tree
  nlohmann::json summary; // index_builder output
  std::unique_ptr<testing::NginxServer> nginx;
  fs::path cache;
  std::vector<std::string> log;

  explicit Fixture(const std::string& spec) {
    root = util::make_temp_dir({}, "envfix-index-it").value();
    auto s = testing::build_index(root, spec);
    REQUIRE_MESSAGE(s, (s ? "" : s.error().render()));
    summary = nlohmann::json::parse(*s);
    cache = root / "cache";
    // Pages dated an hour ahead have no heuristic lifetime (a tenth of their age), however slowly
    // this machine runs: every second fetch revalidates. The heuristic's own test dates them back.
    const auto ahead = std::chrono::file_clock::now() + std::chrono::hours(1);
    for (const auto& e : fs::recursive_directory_iterator(root))
      if (e.is_regular_file() && e.path().filename().string().starts_with("index.")) fs::last_write_time(e.path(), ahead);
  }
  ~Fixture() {
    nginx.reset();
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void start_nginx() {
    auto n = testing::NginxServer::start({.root = root});
    REQUIRE_MESSAGE(n, (n ? "" : n.error().render()));
    nginx = std::move(*n);
  }
  IndexClient client(bool offline = false, std::function<void(IndexClientOptions&)> tweak = {}) {
    IndexClientOptions o;
    o.cache_dir = cache;
    o.offline = offline;
    o.http.ca_file = nginx ? std::optional<fs::path>(nginx->ca_file()) : std::nullopt;
    o.http.backoff = std::chrono::milliseconds(50);
    o.http.low_speed_time = std::chrono::seconds(2);
    o.http.log = [this](std::string_view line) { log.emplace_back(line); };
    if (tweak) tweak(o);
    auto c = IndexClient::create(o);
    REQUIRE(c);
    return std::move(*c);
  }
  std::string sha_of(std::string_view filename) const {
    for (const auto& f : summary["files"])
      if (f["filename"] == filename) return f["sha256"];
    FAIL("no such file in the fixture: " << filename);
    return {};
  }
};

const Candidate& find(const std::vector<Candidate>& cs, std::string_view filename) {
  for (const auto& c : cs)
    if (c.filename == filename) return c;
  FAIL("candidate not found: " << filename);
  return cs.front();
}

std::size_t count(const std::string& text, std::string_view needle) {
  std::size_t n = 0;
  for (std::size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// Every file under `dir`: names and contents.
std::string all_names_and_contents(const fs::path& dir) {
  std::string out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    out += e.path().string() + "\n";
    if (e.is_regular_file()) out += util::read_file(e.path()).value_or("");
  }
  return out;
}

const char* standard_spec = R"({"packages":[
  {"name":"demo","version":"1.0","requires_dist":["numpy>=1.21"],"requires_python":">=3.8"},
  {"name":"demo","version":"2.0+cu128","tags":["cp311-cp311-manylinux_2_28_x86_64","py3-none-any"],
   "yanked":"broken build"},
  {"name":"nometa","version":"1.0","metadata_file":false,"pad_bytes":400000},
  {"name":"nohash","version":"1.0","omit_hash":true},
  {"name":"badmeta","version":"1.0","wrong_metadata_hash":true},
  {"name":"badhash","version":"1.0","wrong_hash":true},
  {"name":"htmlonly","version":"1.0"}
]})";

} // namespace

TEST_SUITE("integration/index/client") {
  TEST_CASE("nginx over HTTPS: JSON and HTML pages give the same candidates; 304 revalidation; offline") {
    Fixture fx(standard_spec);
    fs::remove(fx.root / "simple" / "htmlonly" / "index.json");
    fx.start_nginx();
    auto client = fx.client();
    const std::string index = fx.nginx->https_url() + "/simple";

    auto json_page = client.project_candidates(index, "Demo");
    REQUIRE_MESSAGE(json_page, (json_page ? "" : json_page.error().render()));
    REQUIRE(json_page->size() == 3);
    // The same page as HTML, parsed through the same client, from a file:// view of the tree.
    auto html_text = util::read_file(fx.root / "simple" / "demo" / "index.html").value();
    auto html_page = parse_html_page(html_text, {.page_url = index + "/demo/", .project = "demo", .index_url = index});
    REQUIRE(html_page);
    auto json_copy = *json_page;
    for (auto& c : json_copy) {
      CHECK(c.size.has_value());
      c.size.reset();
    }
    CHECK(json_copy == html_page->candidates);
    const auto& d1 = find(*json_page, "demo-1.0-py3-none-any.whl");
    CHECK(d1.sha256 == fx.sha_of("demo-1.0-py3-none-any.whl"));
    CHECK(d1.requires_python == ">=3.8");
    CHECK(d1.url == fx.nginx->https_url() + "/files/demo-1.0-py3-none-any.whl");
    CHECK(d1.index_url == index);
    const auto& d2 = find(*json_page, "demo-2.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl");
    CHECK(d2.yanked);
    CHECK(d2.yanked_reason == "broken build");
    CHECK(d2.url.find("%2Bcu128") != std::string::npos);

    // HTML-only project: nginx falls back to index.html; the client dispatches on Content-Type.
    auto h = client.project_candidates(index, "htmlonly");
    REQUIRE(h);
    CHECK(h->size() == 1);

    // Within a run a page is asked for once; the next run revalidates with If-None-Match and gets a 304.
    REQUIRE(client.project_candidates(index, "demo"));
    CHECK(client.stats().page_requests == 2);
    auto next = fx.client();
    auto again = next.project_candidates(index, "demo");
    REQUIRE(again);
    CHECK(*again == *json_page);
    CHECK(next.stats().page_revalidated == 1);
    // nginx logs a request after it has sent the response: give the line a moment to land.
    for (int i = 0; i < 50 && count(fx.nginx->access_log_text(), "\" 304 ") == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(count(fx.nginx->access_log_text(), "\" 304 ") == 1);
    // HTTP/2 over TLS (ALPN), and the page requests share connections.
    CHECK(fx.nginx->access_log_text().find("HTTP/2.0\"") != std::string::npos);

    // Offline: pages come from the cache; what is missing is named.
    auto off = fx.client(true);
    auto cached = off.project_candidates(index, "demo");
    REQUIRE(cached);
    CHECK(*cached == *json_page);
    auto missing = off.project_candidates(index, "never-fetched");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == ErrorCode::not_found);
    CHECK(missing.error().message.find("offline") != std::string::npos);
    CHECK(missing.error().message.find("/simple/never-fetched/") != std::string::npos);
    auto dl = off.download(d1);
    REQUIRE_FALSE(dl);
    CHECK(dl.error().message.find("demo-1.0-py3-none-any.whl") != std::string::npos);

    // Unknown project: 404 -> not_found naming the project.
    auto nf = client.project_candidates(index, "does-not-exist");
    REQUIRE_FALSE(nf);
    CHECK(nf.error().code == ErrorCode::not_found);
    CHECK(nf.error().message.find("does-not-exist") != std::string::npos);
  }

  TEST_CASE("a page with only Last-Modified is fresh for a tenth of its age (heuristic freshness), --refresh revalidates") {
    Fixture fx(standard_spec);
    // Both page files an hour old: nginx sends that Last-Modified, no Cache-Control.
    const auto hour_ago = std::chrono::file_clock::now() - std::chrono::hours(1);
    for (const char* f : {"index.json", "index.html"}) fs::last_write_time(fx.root / "simple" / "demo" / f, hour_ago);
    fx.start_nginx();
    const std::string index = fx.nginx->https_url() + "/simple";
    {
      auto client = fx.client();
      auto first = client.project_candidates(index, "demo");
      REQUIRE_MESSAGE(first, (first ? "" : first.error().render()));
      auto again = client.project_candidates(index, "demo");
      REQUIRE(again);
      CHECK(*again == *first);
      CHECK(client.stats().page_fresh_hits == 1); // 360 s of freshness: no request at all
      CHECK(client.stats().page_requests == 1);
      REQUIRE(client.project_candidates(index, "htmlonly"));
    }
    // A page without a usable Last-Modified age (htmlonly, dated ahead) gets none: the next run
    // revalidates it (within one run a page the server answered is not asked for again).
    {
      auto next = fx.client();
      REQUIRE(next.project_candidates(index, "htmlonly"));
      REQUIRE(next.project_candidates(index, "htmlonly"));
      CHECK(next.stats().page_revalidated == 1);
      CHECK(next.stats().page_fresh_hits == 1);
    }
    auto refreshing = fx.client(false, [](IndexClientOptions& o) { o.refresh = true; });
    REQUIRE(refreshing.project_candidates(index, "demo"));
    // A 304 for demo and for htmlonly, which the first run asked for after demo (the page memo):
    // nginx's log can lag the response, the client's count cannot.
    CHECK(refreshing.stats().page_companions == 1);
    CHECK(refreshing.stats().page_revalidated == 2);
    CHECK(refreshing.stats().page_rounds == 1);
  }

  TEST_CASE("page memo: the pages a run asked for are revalidated in the next run's first round") {
    Fixture fx(standard_spec); // pages dated ahead: every run revalidates every page
    fx.start_nginx();
    const std::string index = fx.nginx->https_url() + "/simple";
    const std::vector<std::string> later = {"nohash", "htmlonly", "does-not-exist"};
    auto run = [&](IndexClient& c) {
      auto demo = c.project_candidates(index, "demo");
      REQUIRE_MESSAGE(demo, (demo ? "" : demo.error().render()));
      CHECK(demo->size() == 3);
      auto rest = c.project_candidates_many(index, later);
      REQUIRE(rest.size() == 3);
      CHECK(rest[0]);
      CHECK(rest[1]);
      REQUIRE_FALSE(rest[2]);
      CHECK(rest[2].error().code == ErrorCode::not_found);
      return c.stats();
    };
    {
      auto first = fx.client();
      auto s = run(first);
      CHECK(s.page_rounds == 2); // demo, then what it led to: one round per level
      CHECK(s.page_companions == 0);
    }
    const fs::path memo_dir = fx.cache / "http-v1" / "pages" / "memo";
    REQUIRE(fs::is_directory(memo_dir));
    {
      // The same beginning: demo's round carries the three others (the 404 among them, harmlessly).
      auto second = fx.client();
      auto s = run(second);
      CHECK(s.page_rounds == 1);
      CHECK(s.page_companions == 3);
      CHECK(s.page_revalidated == 3); // demo, nohash, htmlonly: 304s
      CHECK(s.page_requests == 4);
    }
    {
      // Another beginning has its own memo: htmlonly alone first, no companions.
      auto other = fx.client();
      REQUIRE(other.project_candidates(index, "htmlonly"));
      CHECK(other.stats().page_companions == 0);
    }
    // A memo that does not parse is a lost hint, not an error: one round per level again, and the run
    // writes a good memo in its place.
    std::size_t broken = 0;
    for (const auto& e : fs::directory_iterator(memo_dir)) {
      REQUIRE(util::write_file_atomic(e.path(), "{not json"));
      ++broken;
    }
    CHECK(broken == 2);
    {
      auto third = fx.client();
      auto s = run(third);
      CHECK(s.page_rounds == 2);
      CHECK(s.page_companions == 0);
    }
    auto fourth = fx.client();
    CHECK(run(fourth).page_rounds == 1);
    // Offline runs neither read nor write memos.
    auto off = fx.client(true);
    REQUIRE(off.project_candidates(index, "demo"));
    CHECK(off.stats().page_companions == 0);
    CHECK(off.stats().page_rounds == 0);
  }

  TEST_CASE("metadata: PEP 658 file, range reads, full download; hashes checked; cached") {
    Fixture fx(standard_spec);
    fx.start_nginx();
    auto client = fx.client();
    const std::string index = fx.nginx->https_url() + "/simple";
    auto expect_meta = [&](std::string_view wheel) {
      return util::read_file(fx.root / "files" / (std::string(wheel) + ".metadata")).value_or("");
    };

    auto demo = client.project_candidates(index, "demo").value();
    const auto& d1 = find(demo, "demo-1.0-py3-none-any.whl");
    MetadataSource src{};
    auto m1 = client.fetch_metadata(d1, &src);
    REQUIRE_MESSAGE(m1, (m1 ? "" : m1.error().render()));
    CHECK(src == MetadataSource::pep658);
    CHECK(*m1 == expect_meta("demo-1.0-py3-none-any.whl"));
    auto m1b = client.fetch_metadata(d1, &src);
    REQUIRE(m1b);
    CHECK(src == MetadataSource::cache);

    // No .metadata file: HEAD + Range requests, a small part of a 400 KB wheel.
    auto nometa = client.project_candidates(index, "nometa").value();
    REQUIRE(nometa.size() == 1);
    CHECK_FALSE(nometa[0].has_metadata);
    auto before = client.stats();
    auto m2 = client.fetch_metadata(nometa[0], &src);
    REQUIRE_MESSAGE(m2, (m2 ? "" : m2.error().render()));
    CHECK(src == MetadataSource::range_requests);
    CHECK(m2->starts_with("Metadata-Version: 2.1\nName: nometa\nVersion: 1.0\n"));
    CHECK(client.stats().range_requests - before.range_requests >= 2);
    CHECK(client.stats().bytes_downloaded == before.bytes_downloaded);
    CHECK(count(fx.nginx->access_log_text(), "\" 206 ") >= 2);

    // Range reads switched off: the whole wheel is downloaded (and lands in the cache).
    auto no_range = fx.client(false, [](IndexClientOptions& o) {
      o.use_range_requests = false;
      o.cache_dir /= "other";
    });
    auto m3 = no_range.fetch_metadata(nometa[0], &src);
    REQUIRE(m3);
    CHECK(src == MetadataSource::full_download);
    CHECK(*m3 == *m2);
    CHECK(no_range.stats().downloads == 1);

    // A .metadata whose published hash is wrong is refused, naming both hashes.
    auto badmeta = client.project_candidates(index, "badmeta").value();
    auto m4 = client.fetch_metadata(badmeta[0]);
    REQUIRE_FALSE(m4);
    CHECK(m4.error().code == ErrorCode::hash_mismatch);
    CHECK(m4.error().message.find(std::string(64, 'f')) != std::string::npos);

    // Many at once (parallel workers).
    std::vector<Candidate> all = demo;
    all.push_back(nometa[0]);
    auto many = client.fetch_metadata_many(all);
    REQUIRE(many.size() == all.size());
    for (const auto& r : many) CHECK(r.has_value());
  }

  TEST_CASE("downloads: verified, content-addressed, cached; wrong published hash fails and leaves nothing") {
    Fixture fx(standard_spec);
    fx.start_nginx();
    auto client = fx.client();
    const std::string index = fx.nginx->https_url() + "/simple";
    auto demo = client.project_candidates(index, "demo").value();
    std::uint64_t last_progress = 0;
    auto p = client.download(find(demo, "demo-1.0-py3-none-any.whl"),
                             [&](std::uint64_t done, std::optional<std::uint64_t>) { last_progress = done; });
    REQUIRE_MESSAGE(p, (p ? "" : p.error().render()));
    std::string sha = fx.sha_of("demo-1.0-py3-none-any.whl");
    CHECK(*p == fx.cache / "wheels" / sha.substr(0, 2) / sha / "demo-1.0-py3-none-any.whl");
    CHECK(util::sha256_file_hex(*p).value() == sha);
    CHECK(last_progress == fs::file_size(*p));
    auto again = client.download(find(demo, "demo-1.0-py3-none-any.whl"));
    REQUIRE(again);
    CHECK(client.stats().download_cache_hits == 1);

    // A corrupted cache entry is not trusted: it is fetched again.
    util::write_file_atomic(*p, "garbage").value();
    auto healed = client.download(find(demo, "demo-1.0-py3-none-any.whl"));
    REQUIRE(healed);
    CHECK(util::sha256_file_hex(*healed).value() == sha);

    auto bad = client.project_candidates(index, "badhash").value();
    auto b = client.download(bad[0]);
    REQUIRE_FALSE(b);
    CHECK(b.error().code == ErrorCode::hash_mismatch);
    CHECK(b.error().message.find(std::string(64, '0')) != std::string::npos);
    CHECK(b.error().message.find(fx.sha_of(bad[0].filename)) != std::string::npos);
    for (const auto& e : fs::recursive_directory_iterator(fx.cache)) CHECK(e.path().filename() != bad[0].filename);

    // Missing hash: still downloaded (download.pytorch.org has such entries, pytorch/pytorch#153469),
    // stored under its computed hash, found again by URL.
    auto nohash = client.project_candidates(index, "nohash").value();
    REQUIRE_FALSE(nohash[0].sha256);
    auto n1 = client.download(nohash[0]);
    REQUIRE(n1);
    auto hits = client.stats().download_cache_hits;
    auto n2 = client.download(nohash[0]);
    REQUIRE(n2);
    CHECK(*n1 == *n2);
    CHECK(client.stats().download_cache_hits == hits + 1);

    // Parallel downloads on one multi handle.
    auto fresh = fx.client(false, [](IndexClientOptions& o) {
      o.cache_dir /= "parallel";
      o.parallelism = 4;
    });
    auto results = fresh.download_many(demo);
    for (const auto& r : results) CHECK(r.has_value());

    // Largest first, each reported through `ready` with its cache path the moment it is done (off the
    // transfer loop: index/http_client.cpp's Finisher). One transfer at a time, so the access log
    // shows the order in which they started.
    auto many = demo;
    for (const char* project : {"nometa", "htmlonly"}) {
      auto more = client.project_candidates(index, project).value();
      many.insert(many.end(), more.begin(), more.end());
    }
    std::set<std::uint64_t> sizes;
    for (auto& c : many) {
      if (!c.size) c.size = fs::file_size(fx.root / "files" / c.filename);
      sizes.insert(*c.size);
    }
    REQUIRE(sizes.size() >= 3); // distinct sizes: the order means something
    auto serial = fx.client(false, [](IndexClientOptions& o) {
      o.cache_dir /= "serial";
      o.parallelism = 1;
    });
    const auto log_from = fx.nginx->access_log_text().size();
    std::mutex ready_mutex;
    std::map<std::size_t, fs::path> readied;
    auto ordered = serial.download_many(many, {}, [&](std::size_t i, const fs::path& path) {
      std::lock_guard lock(ready_mutex);
      readied[i] = path;
    });
    REQUIRE(ordered.size() == many.size());
    std::vector<std::pair<std::size_t, std::uint64_t>> seen; // (log position, size)
    const auto log = fx.nginx->access_log_text().substr(log_from);
    for (std::size_t i = 0; i < many.size(); ++i) {
      REQUIRE_MESSAGE(ordered[i], (ordered[i] ? "" : ordered[i].error().render()));
      CHECK(readied.at(i) == *ordered[i]);
      CHECK(util::sha256_file_hex(*ordered[i]).value() == fx.sha_of(many[i].filename));
      std::string logged = many[i].filename; // as requested: a local version's '+' is %2B in the URL
      for (std::size_t plus; (plus = logged.find('+')) != std::string::npos;) logged.replace(plus, 1, "%2B");
      auto at = log.find("/" + logged + " ");
      REQUIRE_MESSAGE(at != std::string::npos, many[i].filename);
      seen.emplace_back(at, *many[i].size);
    }
    std::sort(seen.begin(), seen.end());
    for (std::size_t k = 1; k < seen.size(); ++k) CHECK(seen[k - 1].second >= seen[k].second);
  }

  TEST_CASE("find-links: nginx autoindex, local folder, file:// index, a local wheel path") {
    Fixture fx(standard_spec);
    fx.start_nginx();
    auto client = fx.client();
    auto remote = client.find_links_candidates(fx.nginx->https_url() + "/files/", "demo");
    REQUIRE_MESSAGE(remote, (remote ? "" : remote.error().render()));
    CHECK(remote->size() == 3); // .metadata files and other projects are filtered out
    auto local = client.find_links_candidates((fx.root / "files").string(), "demo");
    REQUIRE(local);
    CHECK(local->size() == 3);
    for (const auto& c : *local) {
      CHECK(c.url.starts_with("file://"));
      CHECK(c.size.has_value());
    }
    auto file_index = client.project_candidates(path_to_file_url((fx.root / "simple").string()), "demo");
    REQUIRE(file_index);
    CHECK(file_index->size() == 3);
    const auto& c = find(*file_index, "demo-1.0-py3-none-any.whl");
    CHECK(c.url == path_to_file_url((fx.root / "files" / "demo-1.0-py3-none-any.whl").string()));
    MetadataSource src{};
    auto m = client.fetch_metadata(c, &src);
    REQUIRE(m);
    CHECK(src == MetadataSource::local_file);
    auto p = client.download(c);
    REQUIRE(p);
    CHECK(util::sha256_file_hex(*p).value() == fx.sha_of("demo-1.0-py3-none-any.whl"));
    auto single = client.project_candidates((fx.root / "files" / "demo-1.0-py3-none-any.whl").string(), "demo");
    REQUIRE(single);
    CHECK(single->size() == 1);
    auto none = client.project_candidates((fx.root / "nowhere").string(), "demo");
    REQUIRE_FALSE(none);
    CHECK(none.error().message.find("nowhere") != std::string::npos);
  }

  TEST_CASE("credentials in URLs and netrc: used, never in errors, logs or the cache") {
    Fixture fx(standard_spec);
    fx.start_nginx();
    const std::string pw = fx.nginx->options().basic_password;
    std::string base = fx.nginx->https_url();
    std::string authed = "https://" + fx.nginx->options().basic_user + ":" + pw + "@" + base.substr(8) + "/private/simple";
    auto client = fx.client();
    auto unauth = client.project_candidates(base + "/private/simple", "demo");
    REQUIRE_FALSE(unauth);
    CHECK(unauth.error().message.find("401") != std::string::npos);
    CHECK(unauth.error().hint.find("netrc") != std::string::npos);

    auto cs = client.project_candidates(authed, "demo");
    REQUIRE_MESSAGE(cs, (cs ? "" : cs.error().render()));
    REQUIRE(cs->size() == 3);
    const auto& d1 = find(*cs, "demo-1.0-py3-none-any.whl");
    CHECK(d1.index_url.find(pw) == std::string::npos);
    CHECK(redact_url(d1.url).find(pw) == std::string::npos);
    auto m = client.fetch_metadata(d1);
    REQUIRE_MESSAGE(m, (m ? "" : m.error().render()));
    auto p = client.download(d1);
    REQUIRE(p);
    auto nf = client.project_candidates(authed, "no-such-project");
    REQUIRE_FALSE(nf);
    CHECK(nf.error().render().find(pw) == std::string::npos);
    CHECK(nf.error().render().find("***@") != std::string::npos);
    Candidate broken = d1;
    broken.url = "https://envfix:" + pw + "@127.0.0.1:1/files/x-1.0-py3-none-any.whl"; // connection refused
    broken.filename = "x-1.0-py3-none-any.whl";
    broken.sha256.reset();
    auto e = client.download(broken);
    REQUIRE_FALSE(e);
    CHECK(e.error().render().find(pw) == std::string::npos);
    for (const auto& line : fx.log) CHECK(line.find(pw) == std::string::npos);
    CHECK_FALSE(fx.log.empty());
    CHECK(all_names_and_contents(fx.cache).find(pw) == std::string::npos);

    // ~/.netrc style: NETRC points at a file with the machine's credentials.
    fs::path netrc = fx.root / "netrc";
    util::write_file_atomic(netrc, fmt::format("machine 127.0.0.1 login {} password {}\n", fx.nginx->options().basic_user, pw))
        .value();
    ::setenv("NETRC", netrc.c_str(), 1);
    auto with_netrc = fx.client(false, [](IndexClientOptions& o) { o.cache_dir /= "netrc"; });
    ::unsetenv("NETRC");
    auto n = with_netrc.project_candidates(base + "/private/simple", "demo");
    REQUIRE_MESSAGE(n, (n ? "" : n.error().render()));
    CHECK(n->size() == 3);
  }

  TEST_CASE("redirects: followed within https, never https -> http; page size limit") {
    Fixture fx(standard_spec);
    fx.start_nginx();
    auto client = fx.client();
    auto ok = client.project_candidates(fx.nginx->https_url() + "/redirect/simple", "demo");
    REQUIRE_MESSAGE(ok, (ok ? "" : ok.error().render()));
    CHECK(ok->size() == 3);
    auto down = client.project_candidates(fx.nginx->https_url() + "/redirect-http/simple", "demo");
    REQUIRE_FALSE(down);
    CHECK(down.error().render().find("https to http") != std::string::npos);
    auto small = fx.client(false, [](IndexClientOptions& o) {
      o.max_page_bytes = 100;
      o.cache_dir /= "small";
    });
    auto big = small.project_candidates(fx.nginx->https_url() + "/simple", "demo");
    REQUIRE_FALSE(big);
    CHECK(big.error().render().find("larger than the limit") != std::string::npos);
  }

  TEST_CASE("faults: every injected failure ends in success after retry or a clear error") {
    Fixture fx(R"({"packages":[{"name":"big","version":"1.0","pad_bytes":1500000,"metadata_file":false}]})");
    auto server = testing::FaultServer::start(fx.root, 600);
    REQUIRE_MESSAGE(server, (server ? "" : server.error().render()));
    auto& srv = **server;
    const std::string file = fx.summary["files"][0]["filename"];
    const std::string sha = fx.summary["files"][0]["sha256"];
    const std::uint64_t size = fx.summary["files"][0]["size"];
    int n = 0;
    auto candidate = [&](std::string_view spec) {
      Candidate c;
      c.project = "big";
      c.filename = file;
      c.url = srv.fault_url(spec, "files/" + file);
      c.sha256 = sha;
      return c;
    };
    auto fresh = [&] {
      return fx.client(false, [&](IndexClientOptions& o) { o.cache_dir = fx.root / fmt::format("cache{}", n++); });
    };
    auto no_wrong_file = [&] {
      for (const auto& e : fs::recursive_directory_iterator(fx.root)) {
        if (e.path().filename() == file && e.path().string().find("/wheels/") != std::string::npos)
          CHECK(util::sha256_file_hex(e.path()).value() == sha);
        CHECK(e.path().extension() != ".part");
      }
    };

    SUBCASE("dropped connection: resumed with Range, right hash") {
      auto c = fresh();
      auto p = c.download(candidate("drop=500000"));
      REQUIRE_MESSAGE(p, (p ? "" : p.error().render()));
      CHECK(util::sha256_file_hex(*p).value() == sha);
      CHECK(srv.log_text().find("206 bytes=500000-") != std::string::npos);
    }
    SUBCASE("resume answered from offset 0 (bad Content-Range) restarts cleanly") {
      auto c = fresh();
      auto p = c.download(candidate("drop=300000,badrange"));
      REQUIRE_MESSAGE(p, (p ? "" : p.error().render()));
      CHECK(util::sha256_file_hex(*p).value() == sha);
    }
    SUBCASE("server ignores Range on resume: starts over") {
      auto c = fresh();
      auto p = c.download(candidate("drop=300000,norange"));
      REQUIRE(p);
      CHECK(util::sha256_file_hex(*p).value() == sha);
    }
    SUBCASE("503 twice, then success") {
      auto c = fresh();
      auto p = c.download(candidate("status=503,times=2"));
      REQUIRE(p);
      CHECK(count(srv.log_text(), " 503 ") == 2);
    }
    SUBCASE("500 always: clear error after the retries") {
      auto c = fresh();
      auto p = c.download(candidate("status=500,times=0"));
      REQUIRE_FALSE(p);
      CHECK(p.error().code == ErrorCode::network);
      CHECK(p.error().render().find("HTTP 500") != std::string::npos);
      CHECK(p.error().render().find("4 attempts") != std::string::npos);
    }
    SUBCASE("429 with Retry-After is honoured") {
      auto c = fresh();
      auto t0 = std::chrono::steady_clock::now();
      auto p = c.download(candidate("status=429,retry-after=1"));
      REQUIRE(p);
      CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(950));
    }
    SUBCASE("stalled transfer: low-speed timeout, then resume") {
      auto c = fresh();
      auto p = c.download(candidate("stall=6"));
      REQUIRE_MESSAGE(p, (p ? "" : p.error().render()));
      CHECK(util::sha256_file_hex(*p).value() == sha);
    }
    SUBCASE("Content-Length too large: the short body is resumed") {
      auto c = fresh();
      auto p = c.download(candidate("cl=+1000"));
      REQUIRE_MESSAGE(p, (p ? "" : p.error().render()));
      CHECK(util::sha256_file_hex(*p).value() == sha);
    }
    SUBCASE("Content-Length too small: hash mismatch, nothing kept") {
      auto c = fresh();
      auto p = c.download(candidate("cl=-1000,times=0"));
      REQUIRE_FALSE(p);
      CHECK(p.error().code == ErrorCode::hash_mismatch);
    }
    SUBCASE("wrong bytes: hash mismatch names both hashes, nothing kept") {
      auto c = fresh();
      auto p = c.download(candidate("wrong"));
      REQUIRE_FALSE(p);
      CHECK(p.error().code == ErrorCode::hash_mismatch);
      CHECK(p.error().message.find(sha) != std::string::npos);
      CHECK(p.error().message.find(srv.url()) != std::string::npos);
    }
    SUBCASE("slow trickle still completes") {
      Fixture small(R"({"packages":[{"name":"tiny","version":"1.0","pad_bytes":60000}]})");
      auto s2 = testing::FaultServer::start(small.root, 600);
      REQUIRE(s2);
      auto c = fresh();
      Candidate t;
      t.project = "tiny";
      t.filename = small.summary["files"][0]["filename"];
      t.sha256 = small.summary["files"][0]["sha256"].get<std::string>();
      t.url = (*s2)->fault_url("trickle=100000", "files/" + t.filename);
      auto p = c.download(t);
      REQUIRE(p);
    }
    SUBCASE("metadata by range reads through the fault server; falls back to download without ranges") {
      auto c = fresh();
      Candidate plain = candidate("times=0");
      MetadataSource src{};
      auto m = c.fetch_metadata(plain, &src);
      REQUIRE_MESSAGE(m, (m ? "" : m.error().render()));
      CHECK(src == MetadataSource::range_requests);
      auto c2 = fresh();
      auto m2 = c2.fetch_metadata(candidate("norange"), &src);
      REQUIRE_MESSAGE(m2, (m2 ? "" : m2.error().render()));
      CHECK(src == MetadataSource::full_download);
      CHECK(*m2 == *m);
    }
    SUBCASE("http_proxy is honoured, no_proxy bypasses it") {
      // The fault server answers absolute-form proxy requests ("GET http://host/path") from its root.
      Candidate via = candidate("");
      via.url = "http://envfix-proxy-test.invalid/files/" + file;
      ::setenv("http_proxy", srv.url().c_str(), 1);
      auto c = fresh();
      auto p = c.download(via);
      REQUIRE_MESSAGE(p, (p ? "" : p.error().render()));
      CHECK(util::sha256_file_hex(*p).value() == sha);
      CHECK(srv.log_text().find("GET http://envfix-proxy-test.invalid/files/") != std::string::npos);
      ::setenv("no_proxy", "envfix-proxy-test.invalid", 1);
      auto c2 = fresh();
      auto q = c2.download(via);
      ::unsetenv("no_proxy");
      ::unsetenv("http_proxy");
      REQUIRE_FALSE(q); // bypassing the proxy, the .invalid host does not resolve
      CHECK(q.error().code == ErrorCode::network);
    }
    SUBCASE("connection refused: clear network error after retries") {
      auto c = fresh();
      Candidate dead = candidate("");
      dead.url = "http://127.0.0.1:1/files/" + file;
      auto p = c.download(dead);
      REQUIRE_FALSE(p);
      CHECK(p.error().code == ErrorCode::network);
      CHECK(p.error().render().find("127.0.0.1") != std::string::npos);
    }
    no_wrong_file();
    (void)size;
  }

  TEST_CASE("a batch to a plain-HTTP (HTTP/1) index goes out at once, not one request at a time") {
    Fixture fx(standard_spec);
    auto server = testing::FaultServer::start(fx.root, 600);
    REQUIRE_MESSAGE(server, (server ? "" : server.error().render()));
    // together=3: the server holds each request until all three are in flight (else a 504), so
    // transfers queued behind one connection (curl's PIPEWAIT towards an HTTP/1 server) fail here.
    const std::string index = (*server)->fault_url("together=3", "simple");
    auto client = fx.client(false, [](IndexClientOptions& o) { o.http.retries = 0; });
    const std::vector<std::string> projects = {"demo", "nohash", "htmlonly"};
    auto pages = client.project_candidates_many(index, projects);
    REQUIRE(pages.size() == 3);
    for (std::size_t i = 0; i < pages.size(); ++i) {
      CAPTURE(projects[i]);
      CHECK_MESSAGE(pages[i], (pages[i] ? "" : pages[i].error().render()));
    }
    CHECK(client.stats().page_rounds == 1);
  }

  TEST_CASE("many pages and metadata at once: one batch on the shared connection, same answers as one by one") {
    Fixture fx(standard_spec);
    fx.start_nginx();
    const std::string index = fx.nginx->https_url() + "/simple";
    std::vector<std::string> projects{"demo", "nohash", "ghost", "htmlonly"};
    auto many_client = fx.client();
    auto many = many_client.project_candidates_many(index, projects);
    REQUIRE(many.size() == projects.size());
    CHECK(many_client.stats().page_requests == 4);
    auto one_client = fx.client();
    for (std::size_t i = 0; i < projects.size(); ++i) {
      CAPTURE(projects[i]);
      auto one = one_client.project_candidates(index, projects[i]);
      REQUIRE(one.has_value() == many[i].has_value());
      if (one)
        CHECK(*one == *many[i]);
      else
        CHECK(one.error().code == many[i].error().code);
    }
    CHECK_FALSE(many[2].has_value()); // ghost: 404
    CHECK(many[2].error().code == ErrorCode::not_found);
    // Fresh pages come from the cache without a request.
    auto again = many_client.project_candidates_many(index, projects);
    CHECK(again[0].has_value());

    // Metadata of every demo file and nometa (no PEP 658 file: falls back to range reads) in one call.
    std::vector<Candidate> files = *many[0];
    auto nometa = many_client.project_candidates(index, "nometa");
    REQUIRE(nometa);
    files.push_back(nometa->front());
    auto texts = many_client.fetch_metadata_many(files);
    REQUIRE(texts.size() == files.size());
    for (std::size_t i = 0; i < files.size(); ++i) {
      CAPTURE(files[i].filename);
      REQUIRE(texts[i].has_value());
      CHECK(texts[i]->find("Name: ") != std::string::npos);
    }
    auto st = many_client.stats();
    CHECK(st.metadata_pep658 >= 2);
    CHECK(st.metadata_range == 1);
    CHECK(fx.nginx->access_log_text().find("HTTP/2.0") != std::string::npos);
  }
}
