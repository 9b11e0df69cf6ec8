// Issue 10, hostile indexes and responses, through the real IndexClient against a real nginx
// (HTTPS with a test CA) and tests/reliability/hostile_server.py: odd anchor schemes, redirects to
// http:/file:, huge and endless bodies, wrong hashes, bytes that change between the metadata and the
// download, and credentials that must never reach error text, logs or the cache.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "index/index_client.hpp"
#include "index/url.hpp"
#include "tests/reliability/hostile_server.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/nginx_server.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "wheel/staging.hpp"

using namespace envfix;
using namespace envfix::index;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string names_and_contents(const fs::path& dir) {
  std::string out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    out += it->path().string() + "\n";
    if (it->is_regular_file()) out += util::read_file(it->path()).value_or("");
  }
  return out;
}

std::vector<std::string> files_under(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file()) out.push_back(it->path().filename().string());
  return out;
}

using testing::HostileServer;

// One index tree, one nginx (HTTPS, test CA) and one hostile server for the whole suite: starting
// them (openssl keys, Python) costs seconds each on a loaded machine. Each test case writes its own
// pages under distinct project names and uses its own cache directories.
struct Shared {
  fs::path root;
  nlohmann::json summary;
  std::unique_ptr<HostileServer> hostile;
  std::unique_ptr<testing::NginxServer> nginx;
  Shared() {
    root = util::make_temp_dir({}, "envfix-hostile-index").value();
    auto s = testing::build_index(root, R"({"packages":[
      {"name":"demo","version":"1.0"},
      {"name":"mut","version":"1.0","metadata_file":false,"pad_bytes":300000}]})");
    REQUIRE_MESSAGE(s, (s ? "" : s.error().render()));
    summary = nlohmann::json::parse(*s);
    hostile = std::make_unique<HostileServer>(root, root / "hostile.log");
    std::string h = hostile->url("");
    h.pop_back();
    auto n = testing::NginxServer::start({.root = root,
                                          .extra_server_conf = fmt::format(R"X(
      location /to-file/ {{ return 302 file:///etc/passwd; }}
      location /to-js/ {{ return 302 "javascript:alert(1)"; }}
      location /to-hostile/ {{ return 302 {}/redirect-file/x; }}
    )X",
                                                                           h)});
    REQUIRE_MESSAGE(n, (n ? "" : n.error().render()));
    nginx = std::move(*n);
  }
  ~Shared() {
    nginx.reset();
    hostile.reset();
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

Shared& shared() {
  static Shared s;
  return s;
}

struct Fixture {
  fs::path root; // the served tree (shared)
  fs::path dir;  // this test's private directory (caches, staging)
  const nlohmann::json& summary;
  testing::NginxServer* nginx;
  HostileServer& hostile;
  std::vector<std::string> log;
  int caches = 0;

  Fixture()
      : root(shared().root), dir(util::make_temp_dir(root, "case").value()), summary(shared().summary),
        nginx(shared().nginx.get()), hostile(*shared().hostile) {}
  ~Fixture() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path new_cache() { return dir / fmt::format("cache{}", caches++); }
  IndexClient client(const fs::path& cache, std::function<void(IndexClientOptions&)> tweak = {}) {
    IndexClientOptions o;
    o.cache_dir = cache;
    o.http.ca_file = nginx->ca_file();
    o.http.retries = 1;
    o.http.backoff = std::chrono::milliseconds(20);
    o.http.low_speed_time = std::chrono::seconds(3);
    o.http.log = [this](std::string_view line) { log.emplace_back(line); };
    if (tweak) tweak(o);
    auto c = IndexClient::create(o);
    REQUIRE(c);
    return std::move(*c);
  }
  nlohmann::json file(std::string_view project) const {
    for (const auto& f : summary["files"])
      if (f["project"] == project) return f;
    FAIL("no file for " << project);
    return {};
  }
};

} // namespace

TEST_SUITE("integration/reliability/hostile_index") {
  TEST_CASE("hostile anchors: javascript:, data:, ftp:, file: on a remote page are skipped, never fetched") {
    Fixture fx;
    // A real wheel on local disk that a remote page must not be able to make envfix read.
    fs::path secret_dir = fx.dir / "not-served";
    fs::create_directories(secret_dir);
    const std::string demo = fx.file("demo")["filename"];
    fs::copy_file(fx.root / "files" / demo, secret_dir / demo);
    const std::string local = path_to_file_url((secret_dir / demo).string());
    fs::create_directories(fx.root / "simple" / "hostile");
    fs::create_directories(fx.root / "simple" / "hostilebase");
    fs::create_directories(fx.root / "simple" / "hostilejson");
    util::write_file_atomic(fx.root / "simple" / "hostile" / "index.html", fmt::format(R"X(<!DOCTYPE html><html><body>
<a href="javascript:fetch('/steal')//{0}">{0}</a>
<a href="JavaScript:alert(1)">{0}</a>
<a href="data:application/zip;base64,UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA==#{0}">{0}</a>
<a href="ftp://127.0.0.1/{0}">{0}</a>
<a href="vbscript:msgbox">{0}</a>
<a href="{1}">{0}</a>
<a href="/files/{0}">{0}</a>
</body></html>)X",
                                                                                       demo, local))
        .value();
    util::write_file_atomic(fx.root / "simple" / "hostilebase" / "index.html",
                            fmt::format(R"(<html><head><base href="file:///"></head><body>
<a href="{0}">{1}</a></body></html>)",
                                        (secret_dir / demo).string().substr(1), demo))
        .value();
    util::write_file_atomic(
        fx.root / "simple" / "hostilejson" / "index.json",
        nlohmann::json{{"meta", {{"api-version", "1.0"}}},
                       {"name", "hostilejson"},
                       {"files",
                        {{{"filename", demo}, {"url", "javascript:alert(1)"}, {"hashes", nlohmann::json::object()}},
                         {{"filename", demo}, {"url", local}, {"hashes", nlohmann::json::object()}},
                         {{"filename", demo}, {"url", "/files/" + demo}, {"hashes", nlohmann::json::object()}}}}}
            .dump())
        .value();
    const fs::path cache = fx.new_cache();
    auto client = fx.client(cache);
    const std::string index = fx.nginx->https_url() + "/simple";
    for (const char* project : {"hostile", "hostilebase", "hostilejson"}) {
      CAPTURE(project);
      auto page = client.project_page(index, project);
      REQUIRE_MESSAGE(page, (page ? "" : page.error().render()));
      for (const auto& c : page->candidates) {
        CAPTURE(c.url);
        CHECK(c.url.starts_with(fx.nginx->https_url() + "/")); // only same-origin https survives
      }
      // <base href="file:///"> is ignored, so its anchor resolves against the https page itself.
      CHECK(page->candidates.size() == 1);
      CHECK_FALSE(page->warnings.empty());
      if (std::string_view(project) == "hostilebase") continue;
      for (const auto& c : page->candidates) {
        auto p = client.download(c);
        REQUIRE_MESSAGE(p, (p ? "" : p.error().render()));
      }
    }
    // Nothing but the pages and the one real file was requested; the secret copy was never read
    // into the cache under its own path.
    auto access = fx.nginx->access_log_text();
    CHECK(access.find("steal") == std::string::npos);
    CHECK(access.find("ftp") == std::string::npos);
    for (const auto& line : fx.log) {
      CHECK(line.find("javascript") == std::string::npos);
      CHECK(line.find("file:") == std::string::npos);
    }
    std::string all_log;
    for (const auto& line : fx.log) all_log += line + "\n";
    CAPTURE(all_log);
    CHECK(fx.log.size() == 8); // three pages and one download, a start and an end line each

    // A Candidate that carries such a URL anyway is refused before any I/O.
    Candidate js;
    js.project = "demo";
    js.filename = demo;
    js.url = "javascript:alert(1)";
    auto r = client.download(js);
    REQUIRE_FALSE(r);
    CAPTURE(r.error().render());
    CHECK(r.error().render().find("unsupported URL scheme") != std::string::npos);
  }

  TEST_CASE("redirects: https -> http, -> file:, -> javascript: are refused for pages and downloads") {
    Fixture fx;
    auto& hostile = fx.hostile;
    const fs::path cache = fx.new_cache();
    auto client = fx.client(cache);
    const std::string https = fx.nginx->https_url();
    const std::string demo = fx.file("demo")["filename"];
    struct Case {
      std::string url;
      std::string expect;
    };
    std::vector<Case> pages = {
        {https + "/redirect-http/simple", "https to http"},
        {https + "/to-file/simple", "file"},
        {https + "/to-js/simple", "javascript"},
        {https + "/to-hostile/simple", "127.0.0.1"},   // https -> http hop, refused at the first step
        {hostile.url("redirect-file/simple"), "file"}, // plain http -> file:
        {hostile.url("redirect-scheme/simple"), "javascript"},
    };
    for (const auto& c : pages) {
      CAPTURE(c.url);
      fx.log.clear();
      auto r = client.project_candidates(c.url, "demo");
      REQUIRE_FALSE(r);
      // Refused, not retried: the client's own log says so (a time bound would judge the machine).
      for (const auto& line : fx.log) CHECK_MESSAGE(!line.starts_with("retry "), line);
      const auto text = r.error().render();
      CAPTURE(text);
      CHECK(r.error().code == ErrorCode::network);
      CHECK((text.find("redirect") != std::string::npos || text.find("protocol") != std::string::npos ||
             text.find("Protocol") != std::string::npos));
      CHECK(text.find("root:") == std::string::npos);
    }
    for (const auto& c : pages) {
      Candidate cand;
      cand.project = "demo";
      cand.filename = demo;
      cand.url = c.url + "/" + demo;
      cand.sha256 = fx.file("demo")["sha256"].get<std::string>();
      auto r = client.download(cand);
      CAPTURE(cand.url);
      REQUIRE_FALSE(r);
    }
    // Nothing from /etc/passwd anywhere in the cache; no partial files left.
    CHECK(names_and_contents(cache).find("root:") == std::string::npos);
    for (const auto& f : files_under(cache)) CHECK_FALSE(f.ends_with(".part"));
  }

  // The bodies below never end: a bound this wide fails only when the limit does not stop the read,
  // not on a slow or loaded machine (the reads themselves take well under a second).
  constexpr auto kHang = std::chrono::seconds(120);

  TEST_CASE("huge and endless bodies: page size limit, endless chunked page and download end") {
    Fixture fx;
    auto& hostile = fx.hostile;
    // A 3 MiB static page through nginx over https, read with a 1 MiB limit.
    fs::create_directories(fx.root / "simple" / "huge");
    std::string big = "<html><body>\n";
    while (big.size() < (3u << 20))
      big += "<a href=\"/files/huge-1.0-py3-none-any.whl#sha256=00\">huge-1.0-py3-none-any.whl</a>\n";
    util::write_file_atomic(fx.root / "simple" / "huge" / "index.html", big).value();
    const fs::path cache = fx.new_cache();
    auto limited = fx.client(cache, [](IndexClientOptions& o) { o.max_page_bytes = 1 << 20; });
    auto t0 = Clock::now();
    auto huge = limited.project_candidates(fx.nginx->https_url() + "/simple", "huge");
    REQUIRE_FALSE(huge);
    CHECK(huge.error().render().find("larger than the limit") != std::string::npos);
    auto endless_page = limited.project_candidates(hostile.url("endless/simple"), "demo");
    REQUIRE_FALSE(endless_page);
    CHECK(endless_page.error().render().find("larger than the limit") != std::string::npos);
    CHECK(Clock::now() - t0 < kHang);

    // Endless download of a wheel whose size the index published: stops at that size.
    Candidate c;
    c.project = "demo";
    c.filename = "demo-1.0-py3-none-any.whl";
    c.url = hostile.url("endless/" + c.filename);
    c.size = 100000;
    t0 = Clock::now();
    auto d = limited.download(c);
    REQUIRE_FALSE(d);
    CHECK(Clock::now() - t0 < kHang);
    CHECK(d.error().render().find(c.filename) != std::string::npos);
    // No published size: the client-wide download limit ends it.
    auto capped = fx.client(fx.new_cache(), [](IndexClientOptions& o) { o.max_download_bytes = 4 << 20; });
    c.size.reset();
    t0 = Clock::now();
    d = capped.download(c);
    REQUIRE_FALSE(d);
    CHECK(Clock::now() - t0 < kHang);
    CHECK(d.error().render().find("limit") != std::string::npos);
    for (const auto& f : files_under(cache)) CHECK_FALSE(f.ends_with(".part"));
    for (const auto& f : files_under(capped.cache_dir())) CHECK_FALSE(f.ends_with(".part"));
  }

  TEST_CASE("wrong hash and bytes that change between metadata and download: refused, nothing cached") {
    Fixture fx;
    auto& hostile = fx.hostile;
    const auto mut = fx.file("mut");
    const std::string fname = mut["filename"];
    const std::string sha = mut["sha256"];
    // The "other" bytes: the same wheel with one byte flipped in the middle of its stored member.
    auto bytes = util::read_file(fx.root / "files" / fname).value();
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
    util::write_file_atomic(fx.root / "files" / (fname + ".other"), bytes).value();
    const std::string other_sha = util::sha256_hex(bytes);

    Candidate c;
    c.project = "mut";
    c.filename = fname;
    c.url = hostile.url("mutate/files/" + fname);
    c.sha256 = sha;
    const fs::path cache = fx.new_cache();
    auto client = fx.client(cache);
    MetadataSource src{};
    auto md = client.fetch_metadata(c, &src);
    REQUIRE_MESSAGE(md, (md ? "" : md.error().render()));
    CHECK(src == MetadataSource::range_requests); // read from the original bytes
    CHECK(md->find("Name: mut") != std::string::npos);
    auto d = client.download(c);
    REQUIRE_FALSE(d);
    CHECK(d.error().code == ErrorCode::hash_mismatch);
    const auto text = d.error().render();
    CHECK(text.find(sha) != std::string::npos);       // expected
    CHECK(text.find(other_sha) != std::string::npos); // got
    CHECK(text.find(fname) != std::string::npos);
    for (const auto& f : files_under(cache)) {
      CHECK(f != fname);
      CHECK_FALSE(f.ends_with(".part"));
    }

    // Without a published hash the download cannot be judged by the index layer; the staged
    // extraction still refuses the corrupted wheel (CRC / RECORD), naming the member.
    c.sha256.reset();
    auto nohash = fx.client(fx.new_cache());
    auto p = nohash.download(c);
    REQUIRE_MESSAGE(p, (p ? "" : p.error().render()));
    CHECK(util::sha256_file_hex(*p).value() == other_sha);
    auto staged = wheel::stage_wheel(*p, fx.dir / "staging");
    REQUIRE_FALSE(staged);
    CHECK(staged.error().render().find("mut/_pad.bin") != std::string::npos);
    CHECK_FALSE(fs::exists(fx.dir / "staging"));
  }

  TEST_CASE("credentials in URLs never reach errors, logs, or the cache (names or contents)") {
    Fixture fx;
    const std::string user = fx.nginx->options().basic_user;
    const std::string pw = fx.nginx->options().basic_password;
    const std::string host = fx.nginx->https_url().substr(8);
    const std::string authed = "https://" + user + ":" + pw + "@" + host + "/private";
    const fs::path cache = fx.new_cache();
    auto client = fx.client(cache);
    std::vector<std::string> errors;
    auto cs = client.project_candidates(authed + "/simple", "demo");
    REQUIRE_MESSAGE(cs, (cs ? "" : cs.error().render()));
    REQUIRE(cs->size() == 1);
    auto m = client.fetch_metadata((*cs)[0]);
    REQUIRE_MESSAGE(m, (m ? "" : m.error().render()));
    auto p = client.download((*cs)[0]);
    REQUIRE_MESSAGE(p, (p ? "" : p.error().render()));
    // Failure paths that print URLs: 404 page, wrong hash, refused redirect, connection refused.
    if (auto r = client.project_candidates(authed + "/simple", "nope"); !r) errors.push_back(r.error().render());
    Candidate bad = (*cs)[0];
    bad.sha256 = std::string(64, 'a');
    if (auto r = client.download(bad); !r) errors.push_back(r.error().render());
    if (auto r = client.project_candidates("https://" + user + ":" + pw + "@" + host + "/redirect-http/simple", "demo"); !r)
      errors.push_back(r.error().render());
    Candidate refused = (*cs)[0];
    refused.sha256.reset();
    refused.url = "http://" + user + ":" + pw + "@127.0.0.1:1/files/x.whl";
    if (auto r = client.download(refused); !r) errors.push_back(r.error().render());
    REQUIRE(errors.size() == 4);
    for (const auto& e : errors) {
      CAPTURE(e);
      CHECK(e.find(pw) == std::string::npos);
      CHECK(e.find(user + ":") == std::string::npos);
    }
    REQUIRE_FALSE(fx.log.empty());
    for (const auto& line : fx.log) CHECK(line.find(pw) == std::string::npos);
    CHECK(names_and_contents(cache).find(pw) == std::string::npos);
    CHECK(names_and_contents(cache).find(user + ":") == std::string::npos);
    // And the candidate's index_url (which callers write to lockfiles) is clean.
    CHECK((*cs)[0].index_url.find(pw) == std::string::npos);
  }
}
