// IndexProvider over real local wheels (find-links): local files are hashed only when chosen, and the
// chosen pins still carry their sha256 (plan, lockfile).
#include <doctest/doctest.h>

#include <filesystem>

#include "resolver/index_provider.hpp"
#include "resolver/memory_provider.hpp"
#include "resolver/resolver.hpp"
#include "tests/resolver/resolver_test_support.hpp"
#include "tests/support/nginx_server.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

namespace resolver_index_provider_test {

using namespace envfix;
using namespace envfix::resolver;
namespace fs = std::filesystem;

TEST_SUITE("unit/resolver/index_provider") {

  TEST_CASE("find-links: unhashed local wheels are usable and the chosen ones are hashed") {
    auto root = util::make_temp_dir({}, "envfix-ip").value();
    auto built = testing::build_index(root, R"({"packages":[
    {"name":"app","version":"1.0","requires_dist":["lib>=2"]},
    {"name":"app","version":"0.9"},
    {"name":"lib","version":"1.0"},
    {"name":"lib","version":"2.0"}]})");
    REQUIRE_MESSAGE(built, (built ? "" : built.error().render()));
    index::IndexClientOptions io;
    io.cache_dir = root / "cache";
    auto client = index::IndexClient::create(io);
    REQUIRE(client);
    IndexProvider provider(*client, "", {(root / "files").string()});
    auto files = provider.candidates("lib");
    REQUIRE(files);
    REQUIRE(files->size() == 2);
    for (const auto& f : *files) CHECK_FALSE(f.sha256.has_value()); // not hashed while listing

    ResolveOptions o;
    o.target = test::cpython_linux();
    Resolver r(provider, o);
    auto res = r.resolve(test::reqs({"app"}));
    REQUIRE_MESSAGE(res, (res ? "" : res.error().render()));
    CHECK(test::pins_text(*res) == "app==1.0 lib==2.0");
    for (const auto& p : res->pins) {
      CAPTURE(p.file.filename);
      REQUIRE(p.file.sha256.has_value());
      CHECK(*p.file.sha256 == util::sha256_file_hex(root / "files" / p.file.filename).value());
    }
    fs::remove_all(root);
  }
}

TEST_SUITE("unit/resolver/index_provider") {

  // FirstIndexProvider (resolver/index_provider.hpp): uv's first-index strategy over two in-memory indexes.
  TEST_CASE("first-index: a project comes whole from the first index that has it; pinned ones only from the first") {
    MemoryProvider fw("framework-index"), pypi("pypi-like");
    fw.add_wheel("fwpkg-1.0-py3-none-any.whl", {"dep>=1", "shared"});
    fw.add_wheel("shared-1.0-py3-none-any.whl");
    pypi.add_wheel("fwpkg-9.0-py3-none-any.whl");    // dependency confusion: a higher version elsewhere
    pypi.add_wheel("fwplugin-9.0-py3-none-any.whl"); // a framework package the first index lacks
    pypi.add_wheel("shared-2.0-py3-none-any.whl");   // never merged with the first index's shared
    pypi.add_wheel("dep-1.5-py3-none-any.whl");
    FirstIndexProvider p({&fw, &pypi}, [](const std::string& n) { return n == "fwpkg" || n == "fwplugin"; });

    auto fwpkg = p.candidates("fwpkg");
    REQUIRE(fwpkg);
    REQUIRE(fwpkg->size() == 1);
    CHECK(fwpkg->front().filename == "fwpkg-1.0-py3-none-any.whl");
    auto plugin = p.candidates("fwplugin");
    REQUIRE(plugin);
    CHECK(plugin->empty());
    CHECK(p.missing_detail("fwplugin").find("taken only from framework-index, never from an extra index") != std::string::npos);
    auto shared = p.candidates("shared");
    REQUIRE(shared);
    REQUIRE(shared->size() == 1);
    CHECK(shared->front().filename == "shared-1.0-py3-none-any.whl");
    CHECK(p.served_by("shared") == 0u);
    auto dep = p.candidates("dep");
    REQUIRE(dep);
    REQUIRE(dep->size() == 1);
    CHECK(p.served_by("dep") == 1u);
    CHECK(p.describe() == "framework-index, then extra index pypi-like");

    // Resolved: metadata is read from the index that served each file.
    ResolveOptions o;
    o.target = test::cpython_linux();
    Resolver r(p, o);
    auto res = r.resolve({*specs::Requirement::parse("fwpkg")});
    REQUIRE_MESSAGE(res, (res ? "" : res.error().render()));
    REQUIRE(res->find("fwpkg"));
    CHECK(res->find("fwpkg")->version.to_string() == "1.0");
    CHECK(res->find("shared")->version.to_string() == "1.0");
    CHECK(res->find("dep")->version.to_string() == "1.5");
  }

} // TEST_SUITE("unit/resolver/index_provider")

TEST_SUITE("integration/resolver/index_provider") {

  // Issue 42 item 8 (dependency confusion): with an extra index, a first index that fails for a project
  // (503 after the retries, a page that does not parse) or lists it with no files keeps the project:
  // the extra index's "malicious" higher version is never chosen. Only a 404/410 moves on.
  TEST_CASE("round3 8: a first index that answers 5xx, garbage or an empty page never hands a project to the extra index") {
    auto root = util::make_temp_dir({}, "envfix-i8").value();
    auto first = testing::build_index(root / "first", R"({"packages":[
    {"name":"app","version":"1.0","requires_dist":["evil"]},
    {"name":"evil","version":"1.0"}]})");
    REQUIRE_MESSAGE(first, (first ? "" : first.error().render()));
    auto extra = testing::build_index(root / "extra", R"({"packages":[{"name":"evil","version":"99.0"}]})");
    REQUIRE_MESSAGE(extra, (extra ? "" : extra.error().render()));
    // One first index per case (the same tree), its page for `evil` answered as the case says.
    for (const char* c : {"f503", "fempty", "fgarbage", "f404", "f410"}) fs::create_directory_symlink(root / "first", root / c);
    auto nginx = testing::NginxServer::start({.root = root, .extra_server_conf = R"X(
    location = /f503/simple/evil/ { return 503; }
    location = /fempty/simple/evil/ { default_type text/html; return 200 "<html><body><h1>Links for evil</h1></body></html>"; }
    location = /fgarbage/simple/evil/ { default_type application/vnd.pypi.simple.v1+json; return 200 "{not json"; }
    location = /f404/simple/evil/ { return 404; }
    location = /f410/simple/evil/ { return 410; }
  )X"});
    REQUIRE_MESSAGE(nginx, (nginx ? "" : nginx.error().render()));
    const std::string base = (*nginx)->https_url();
    struct Case {
      std::string first;
      bool falls_through; // only "not on this index"
      std::string says;   // in the error
    };
    for (const Case& c : {Case{"f503", false, "HTTP 503"}, Case{"fempty", false, "with no usable file"},
                          Case{"fgarbage", false, "fgarbage/simple/evil/"}, Case{"f404", true, ""}, Case{"f410", true, ""}}) {
      CAPTURE(c.first);
      index::IndexClientOptions io;
      io.cache_dir = root / ("cache-" + c.first);
      io.http.ca_file = (*nginx)->ca_file();
      io.http.retries = 1;
      io.http.backoff = std::chrono::milliseconds(20);
      auto client = index::IndexClient::create(io);
      REQUIRE(client);
      IndexProvider one(*client, base + "/" + c.first + "/simple"), two(*client, base + "/extra/simple");
      FirstIndexProvider p({&one, &two}, {});
      ResolveOptions o;
      o.target = test::cpython_linux();
      Resolver r(p, o);
      auto res = r.resolve(test::reqs({"app"}));
      if (c.falls_through) {
        REQUIRE_MESSAGE(res, (res ? "" : res.error().render()));
        CHECK(test::pins_text(*res) == "app==1.0 evil==99.0");
        continue;
      }
      REQUIRE_FALSE(res);
      const std::string text = res.error().render();
      CAPTURE(text);
      CHECK(text.find(c.says) != std::string::npos);
      CHECK(text.find("evil") != std::string::npos);
      CHECK(text.find(base + "/" + c.first + "/simple") != std::string::npos); // names the first index
      CHECK(text.find("99.0") == std::string::npos);
      CHECK((*nginx)->access_log_text().find("/extra/simple/evil/") == std::string::npos); // never asked
    }
    nginx->reset();
    fs::remove_all(root);
  }

} // TEST_SUITE("integration/resolver/index_provider")

} // namespace resolver_index_provider_test
