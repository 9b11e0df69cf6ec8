// IndexProvider over real local wheels (find-links): local files are hashed only when chosen, and the
// chosen pins still carry their sha256 (plan, lockfile).
#include <doctest/doctest.h>

#include <filesystem>

#include "resolver/index_provider.hpp"
#include "resolver/resolver.hpp"
#include "tests/resolver/resolver_test_support.hpp"
#include "tests/support/nginx_server.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

using namespace envfix;
using namespace envfix::resolver;
namespace fs = std::filesystem;

TEST_SUITE("unit") {

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
