// Issue 42 (third security round), the index layer through the real IndexClient against
// tests/reliability/hostile_server.py: a page fetched with credentials never reaches a run without
// them (item 6); slowloris servers end at the page and download deadlines, redirect chains and loops,
// huge and endless headers end in a clean error naming the URL, and a gzip'd PEP 691 page of
// millions of tiny entries is refused at the entry cap with memory bounded (item 7).
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <signal.h>
#include <unistd.h>

#include "index/index_client.hpp"
#include "tests/reliability/hostile_server.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/nginx_server.hpp"
#include "tests/support/peak_rss.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"

using namespace envfix;
using namespace envfix::index;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// The hostile server of tests/reliability/hostile_server.hpp over a one-project index tree.
struct Hostile {
  fs::path root;
  std::optional<testing::HostileServer> server;
  Hostile() {
    root = util::make_temp_dir({}, "envfix-round3-index").value();
    auto s = testing::build_index(root, R"({"packages":[{"name":"demo","version":"1.0"}]})");
    REQUIRE_MESSAGE(s, (s ? "" : s.error().render()));
    server.emplace(root, root / "hostile.log");
  }
  ~Hostile() {
    server.reset();
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  std::string url(std::string_view path, std::string_view userinfo = "") const { return server->url(path, userinfo); }
  std::string log() const { return server->log_text(); }
};

Hostile& hostile() {
  static Hostile h;
  return h;
}

IndexClient client(const fs::path& cache, const std::function<void(IndexClientOptions&)>& tweak = {}) {
  IndexClientOptions o;
  o.cache_dir = cache;
  o.http.retries = 3;
  o.http.backoff = std::chrono::milliseconds(20);
  if (tweak) tweak(o);
  auto c = IndexClient::create(o);
  REQUIRE(c);
  return std::move(*c);
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

using testing::reset_peak_rss;
using testing::status_kib;

} // namespace

TEST_SUITE("integration/reliability/round3_index") {

  TEST_CASE("round3 6: a page fetched with credentials is never served from the cache to a run without them") {
    auto& h = hostile();
    const fs::path cache = h.root / "cache-6";
    // The page answers only with envfix:s3cret-pw and says it is fresh for 600 s.
    const std::string authed = h.url("private-fresh/simple", "envfix:s3cret-pw@");
    const std::string bare = h.url("private-fresh/simple");
    {
      auto c = client(cache);
      auto page = c.project_candidates(authed, "demo");
      REQUIRE_MESSAGE(page, (page ? "" : page.error().render()));
      CHECK(page->size() == 1);
    }
    { // Online without credentials: asked again (401), not answered from the fresh cached page.
      auto c = client(cache);
      auto page = c.project_candidates(bare, "demo");
      REQUIRE_FALSE(page);
      CHECK(page.error().render().find("HTTP 401") != std::string::npos);
      CHECK(c.stats().page_fresh_hits == 0);
    }
    for (const std::string& url : {bare, h.url("private-fresh/simple", "envfix:other-token@")}) {
      CAPTURE(url);
      auto c = client(cache, [](IndexClientOptions& o) { o.offline = true; });
      auto page = c.project_candidates(url, "demo");
      REQUIRE_FALSE(page);
      CHECK(page.error().code == ErrorCode::not_found);
      CHECK(page.error().message.find("offline: no cached copy") != std::string::npos);
    }
    { // The run with the same credentials still has its page offline.
      auto c = client(cache, [](IndexClientOptions& o) { o.offline = true; });
      auto page = c.project_candidates(authed, "demo");
      REQUIRE_MESSAGE(page, (page ? "" : page.error().render()));
      CHECK(page->size() == 1);
    }
  }

  TEST_CASE("round3 7c: a server sending a byte at a time ends at the page or download deadline with a clean error") {
    auto& h = hostile();
    const fs::path cache = h.root / "cache-7c";
    // low_speed_time stays at its 30 s default: the trickle (3 bytes/s) passes it; only the deadline ends it.
    auto c = client(cache, [](IndexClientOptions& o) {
      o.http.page_deadline = std::chrono::seconds(2);
      o.http.download_deadline = std::chrono::seconds(2);
    });
    for (const char* path : {"slow-headers/simple", "slowloris/simple"}) {
      CAPTURE(path);
      const auto t0 = Clock::now();
      auto page = c.project_candidates(h.url(path), "demo");
      const double took = seconds_since(t0);
      REQUIRE_FALSE(page);
      const std::string text = page.error().render();
      CAPTURE(text);
      CHECK(text.find("within 2 s (the page deadline)") != std::string::npos);
      CHECK(text.find(h.url(path)) != std::string::npos);
      CHECK(text.find("ENVFIX_PAGE_DEADLINE") != std::string::npos);
      CHECK(took >= 1.5);
      CHECK(took < 8);
    }
    Candidate w;
    w.project = "demo";
    w.filename = "demo-1.0-py3-none-any.whl";
    w.url = h.url("slowloris/" + w.filename);
    const auto t0 = Clock::now();
    auto d = c.download(w);
    const double took = seconds_since(t0);
    REQUIRE_FALSE(d);
    const std::string text = d.error().render();
    CAPTURE(text);
    CHECK(text.find("(the download deadline)") != std::string::npos);
    CHECK(text.find(w.filename) != std::string::npos);
    CHECK(took < 8);
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(cache, ec); it != fs::recursive_directory_iterator(); it.increment(ec))
      CHECK_FALSE(it->path().filename().string().ends_with(".part"));
  }

  TEST_CASE("issue 36 (7): SIGINT during a download ends it at once with `interrupted`, its partial file removed") {
    auto& h = hostile();
    const fs::path cache = h.root / "cache-sigint";
    // The deadline only keeps a broken build from hanging here: the code checked below says what ended it.
    auto c = client(cache, [](IndexClientOptions& o) { o.http.download_deadline = std::chrono::seconds(120); });
    Candidate w;
    w.project = "demo";
    w.filename = "demo-1.0-py3-none-any.whl";
    w.url = h.url("slowloris/" + w.filename); // 1 GB announced, a byte every 0.3 s: never done by itself
    std::vector<Expected<fs::path>> d;
    {
      // As apply's download holds it (api/apply.cpp, prepare): SIGINT is recorded, not fatal.
      util::InterruptScope interrupts;
      std::thread signaller([&] {
        // The signal lands while the transfer runs: once its partial file exists.
        for (int i = 0; i < 500; ++i) {
          std::error_code ec;
          bool part = false;
          for (auto it = fs::recursive_directory_iterator(cache, ec); !ec && it != fs::recursive_directory_iterator();
               it.increment(ec))
            part = part || it->path().filename().string().ends_with(".part");
          if (part) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        ::kill(::getpid(), SIGINT);
      });
      std::vector<Candidate> one{w};
      d = c.download_many(one);
      signaller.join();
    }
    REQUIRE(d.size() == 1);
    REQUIRE_FALSE(d[0]);
    CAPTURE(d[0].error().render());
    CHECK(d[0].error().code == ErrorCode::interrupted);
    CHECK(d[0].error().render().find("download stopped: envfix was interrupted by signal 2") != std::string::npos);
    CHECK(util::interrupt_signal() == SIGINT);
    // The scope is gone: the signal it recorded stops nothing later in the process.
    CHECK(util::pending_interrupt() == 0);
    auto later = c.project_candidates(h.url("simple"), "demo");
    CHECK_MESSAGE(later, (later ? "" : later.error().render()));
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(cache, ec); it != fs::recursive_directory_iterator(); it.increment(ec))
      CHECK_FALSE(it->path().filename().string().ends_with(".part"));
  }

  TEST_CASE(
      "round3 7d: redirect chains and loops, a 1 MiB header line and 100k header lines end in a clean error naming the URL") {
    auto& h = hostile();
    auto c = client(h.root / "cache-7d");
    auto ok = c.project_candidates(h.url("redirect-chain/3/simple"), "demo"); // within the limit of 10
    REQUIRE_MESSAGE(ok, (ok ? "" : ok.error().render()));
    CHECK(ok->size() == 1);
    struct Case {
      const char* path;
      const char* says;
    };
    for (const auto& [path, says] : {Case{"redirect-chain/50/simple", "Maximum (10) redirects followed"},
                                     Case{"redirect-loop/simple", "Maximum (10) redirects followed"},
                                     Case{"huge-header/simple", "headers are larger than curl accepts"},
                                     Case{"many-headers/simple", "headers are larger than 262144 bytes"}}) {
      CAPTURE(path);
      const auto t0 = Clock::now();
      auto page = c.project_candidates(h.url(path), "demo");
      REQUIRE_FALSE(page);
      const std::string text = page.error().render();
      CAPTURE(text);
      CHECK(page.error().code == ErrorCode::network);
      CHECK(text.find(h.url(path)) != std::string::npos);
      CHECK(text.find(says) != std::string::npos);
      CHECK(text.find("gave up after") == std::string::npos); // not retried: the answer will not change
      CHECK(seconds_since(t0) < 10);
    }
  }

  TEST_CASE("round3 7e: a gzip'd PEP 691 page of 1.4 million tiny entries is refused at the entry cap, memory bounded") {
    auto& h = hostile();
    auto c = client(h.root / "cache-7e");
    const std::string url = h.url("gzip-json/1400000");
    reset_peak_rss();
    const std::size_t before = status_kib("VmRSS:");
    auto page = c.project_page(url, "demo");
    const std::size_t peak = status_kib("VmHWM:");
    REQUIRE_FALSE(page);
    CAPTURE(page.error().render());
    CHECK(page.error().render().find("more than 250000 files") != std::string::npos);
    MESSAGE("peak RSS growth " << (peak - before) / 1024 << " MiB for a 16 MiB JSON page sent gzip'd");
    CHECK((peak - before) < 256u * 1024); // KiB: the body and 250,000 entries, not gigabytes
    // The decompressed size is what the page limit counts.
    auto small = client(h.root / "cache-7e-limit", [](IndexClientOptions& o) { o.max_page_bytes = 1 << 20; });
    auto limited = small.project_page(url, "demo");
    REQUIRE_FALSE(limited);
    CHECK(limited.error().render().find("larger than the limit of 1048576 bytes") != std::string::npos);
  }

} // TEST_SUITE("integration/reliability/round3_index")
