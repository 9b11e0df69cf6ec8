#include <doctest/doctest.h>

#include <filesystem>

#include "index/zip_metadata.hpp"
#include "tests/support/nginx_server.hpp"
#include "util/fs.hpp"

using namespace envfix;
using namespace envfix::index;
namespace fs = std::filesystem;

namespace {
RangeReader string_reader(const std::string& bytes) {
  return [&bytes](std::uint64_t off, std::uint64_t len) -> Expected<std::string> {
    if (off + len > bytes.size()) return fail(ErrorCode::io, "out of range");
    return bytes.substr(off, len);
  };
}

struct Built {
  fs::path dir;
  std::string wheel, metadata;
};

Built build_one(std::string_view pkg_json) {
  Built b;
  b.dir = util::make_temp_dir({}, "envfix-zip-test").value();
  auto summary = testing::build_index(b.dir, fmt::format(R"({{"packages":[{}]}})", pkg_json));
  REQUIRE_MESSAGE(summary, (summary ? "" : summary.error().render()));
  for (const auto& e : fs::directory_iterator(b.dir / "files")) {
    if (e.path().extension() == ".whl") b.wheel = util::read_file(e.path()).value();
    if (e.path().extension() == ".metadata") b.metadata = util::read_file(e.path()).value();
  }
  return b;
}
} // namespace

TEST_SUITE("unit/index/zip") {
  TEST_CASE("METADATA from a wheel through a range reader: small and padded wheels") {
    auto small = build_one(R"({"name":"demo-pkg","version":"1.0","requires_dist":["numpy>=1.21"]})");
    ZipMetadataStats stats;
    auto m = read_wheel_metadata(small.wheel.size(), string_reader(small.wheel), "demo.whl", &stats);
    REQUIRE_MESSAGE(m, (m ? "" : m.error().render()));
    CHECK(*m == small.metadata);
    CHECK(m->find("Requires-Dist: numpy>=1.21") != std::string::npos);
    CHECK(stats.reads == 3); // tail, local header, member

    // 3 MB of incompressible padding before the directory: only a few KiB are read.
    auto big = build_one(R"({"name":"big","version":"2.0","pad_bytes":3000000,"compress":true})");
    ZipMetadataStats s2;
    auto m2 = read_wheel_metadata(big.wheel.size(), string_reader(big.wheel), "big.whl", &s2, 16 * 1024);
    REQUIRE(m2);
    CHECK(*m2 == big.metadata);
    CHECK(s2.bytes_read < 100 * 1024);
    CHECK(big.wheel.size() > 3000000);
    fs::remove_all(small.dir);
    fs::remove_all(big.dir);
  }

  TEST_CASE("RECORD from a wheel through a range reader: the member asked, named in the error when absent") {
    auto b = build_one(R"({"name":"demo-pkg","version":"1.0","files":{"demo_pkg/__init__.py":"X = 1\n"}})");
    auto r = read_wheel_dist_info(b.wheel.size(), string_reader(b.wheel), "RECORD", "demo.whl");
    REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
    CHECK(r->find("demo_pkg/__init__.py,sha256=") != std::string::npos);
    CHECK(r->find("demo_pkg-1.0.dist-info/METADATA,sha256=") != std::string::npos);
    auto none = read_wheel_dist_info(b.wheel.size(), string_reader(b.wheel), "entry_points.txt", "demo.whl");
    REQUIRE_FALSE(none);
    CHECK(none.error().message == "demo.whl: wheel has no .dist-info/entry_points.txt");
    fs::remove_all(b.dir);
  }

  TEST_CASE("corrupt and hostile zips fail with a clear error, never read out of bounds") {
    auto b = build_one(R"({"name":"demo","version":"1.0","compress":false})");
    const std::string& w = b.wheel;
    auto read = [](const std::string& bytes) { return read_wheel_metadata(bytes.size(), string_reader(bytes), "x.whl"); };
    CHECK_FALSE(read(""));
    CHECK_FALSE(read("PK\x05\x06"));
    auto t = read(w.substr(0, w.size() / 2));
    REQUIRE_FALSE(t);
    CHECK(t.error().message.find("x.whl") != std::string::npos);
    // Flip a byte inside the METADATA data: CRC or inflate must catch it.
    REQUIRE(read(w).value() == b.metadata);
    std::string flipped = w;
    auto pos = flipped.find("Metadata-Version"); // stored (not deflated) member data
    REQUIRE(pos != std::string::npos);
    flipped[pos] = static_cast<char>(flipped[pos] ^ 0x20);
    auto f = read(flipped);
    REQUIRE_FALSE(f);
    CHECK(f.error().message.find("CRC-32") != std::string::npos);
    // Central directory offset pointing past the end.
    std::string off = w;
    auto eocd = off.rfind(std::string("PK\x05\x06", 4));
    REQUIRE(eocd != std::string::npos);
    off[eocd + 16] = '\xff';
    off[eocd + 17] = '\xff';
    off[eocd + 18] = '\xff';
    off[eocd + 19] = '\x7f';
    auto o = read(off);
    REQUIRE_FALSE(o);
    CHECK(o.error().message.find("outside") != std::string::npos);
    // A zip without any dist-info.
    std::string none = w;
    for (std::size_t p; (p = none.find(".dist-info/")) != std::string::npos;) none.replace(p, 11, ".dist-infx/");
    auto n = read(none);
    REQUIRE_FALSE(n);
    CHECK(n.error().message.find("no .dist-info/METADATA") != std::string::npos);
    fs::remove_all(b.dir);
  }
}
