// Staged extraction: real wheels written by Python's zipfile, good and hostile.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include "tests/installer/wheel_factory.hpp"
#include "util/fs.hpp"
#include "wheel/staging.hpp"
#include "wheel/wheel_archive.hpp"

namespace wheel_staging_test {

using namespace envfix;
using envfix::test::Member;
using envfix::test::WheelSpec;
namespace fs = std::filesystem;

namespace {

struct Fixture {
  fs::path dir = test::temp_dir("envfix-staging");
  ~Fixture() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  WheelSpec base() {
    WheelSpec s;
    s.name = "demo-pkg";
    s.version = "1.0";
    s.members = {{"demo_pkg/__init__.py", "X = 1\n"}, {"demo_pkg/run.sh", "#!/bin/sh\n", 0755}};
    return s;
  }
  // Stages and expects failure; returns the rendered error.
  std::string refuse(const WheelSpec& s, wheel::StagingOptions opt = {}) {
    auto w = test::make_wheel(s, dir);
    auto out = dir / ("stage-" + std::to_string(counter++));
    auto r = wheel::stage_wheel(w, out, opt);
    REQUIRE_MESSAGE(!r, "staging should have failed for " << w.filename().string());
    CHECK_FALSE(fs::exists(out)); // nothing left behind
    return r.error().render();
  }
  int counter = 0;
};

} // namespace

TEST_SUITE("unit/wheel/staging") {
  TEST_CASE("member names: traversal, absolute, backslash, UTF-8") {
    CHECK(wheel::check_member_name("pkg/__init__.py"));
    CHECK(wheel::check_member_name("pkg/"));
    CHECK(wheel::check_member_name("päckage/ü.py"));
    CHECK_FALSE(wheel::check_member_name("../evil.py"));
    CHECK_FALSE(wheel::check_member_name("pkg/../../evil.py"));
    CHECK_FALSE(wheel::check_member_name("/etc/passwd"));
    CHECK_FALSE(wheel::check_member_name("pkg\\evil.py"));
    CHECK_FALSE(wheel::check_member_name("pkg//x.py"));
    CHECK_FALSE(wheel::check_member_name("./x.py"));
    CHECK_FALSE(wheel::check_member_name("C:/x.py"));
    CHECK_FALSE(wheel::check_member_name("bad\xff\xfe.py"));
    CHECK_FALSE(wheel::check_member_name("overlong\xc0\xaf.py"));
    CHECK_FALSE(wheel::check_member_name(""));
  }

  TEST_CASE("a good wheel stages with modes and RECORD hashes") {
    Fixture f;
    auto s = f.base();
    s.members.push_back({s.data_dir() + "/scripts/tool", "#!python\nprint(1)\n", 0755});
    s.entry_points = "[console_scripts]\ndemo = demo_pkg:main\n";
    auto w = test::make_wheel(s, f.dir);
    auto ar = wheel::WheelArchive::open(w);
    REQUIRE(ar);
    CHECK(ar->find("demo_pkg-1.0.dist-info/RECORD"));
    CHECK(ar->read_member("demo_pkg/__init__.py").value() == "X = 1\n");
    auto r = wheel::stage_wheel(w, f.dir / "st");
    REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
    CHECK(r->name == "demo-pkg");
    CHECK(r->version == "1.0");
    CHECK(r->dist_info == "demo_pkg-1.0.dist-info");
    CHECK(r->data_dir == "demo_pkg-1.0.data");
    CHECK(r->root_is_purelib);
    CHECK(r->entry_points.find("demo = demo_pkg:main") != std::string::npos);
    CHECK(util::read_file(f.dir / "st" / "demo_pkg" / "__init__.py").value() == "X = 1\n");
    struct stat st;
    REQUIRE(::stat((f.dir / "st" / "demo_pkg" / "run.sh").c_str(), &st) == 0);
    CHECK((st.st_mode & 0111) != 0);
    REQUIRE(::stat((f.dir / "st" / "demo_pkg" / "__init__.py").c_str(), &st) == 0);
    CHECK((st.st_mode & 0111) == 0);
    bool found_init = false;
    for (const auto& file : r->files) {
      CHECK(file.member.find("RECORD") == std::string::npos);
      if (file.member == "demo_pkg/__init__.py") {
        found_init = true;
        CHECK(file.hash == wheel::record_hash("X = 1\n"));
        CHECK(file.size == 6);
      }
    }
    CHECK(found_init);
  }

  TEST_CASE("hostile or broken wheels are refused before anything is written, naming the entry") {
    Fixture f;
    SUBCASE("path traversal") {
      auto s = f.base();
      s.members.push_back({"../evil.py", "x"});
      CHECK(f.refuse(s).find("'../evil.py'") != std::string::npos);
    }
    SUBCASE("absolute path") {
      auto s = f.base();
      s.members.push_back({"/tmp/evil.py", "x"});
      CHECK(f.refuse(s).find("absolute") != std::string::npos);
    }
    SUBCASE("backslash") {
      auto s = f.base();
      s.members.push_back({"demo_pkg\\evil.py", "x"});
      CHECK(f.refuse(s).find("backslash") != std::string::npos);
    }
    SUBCASE("symlink") {
      auto s = f.base();
      s.members.push_back({"demo_pkg/link", "/etc/passwd", 0777, true});
      CHECK(f.refuse(s).find("symbolic link") != std::string::npos);
    }
    SUBCASE("duplicate entry") {
      auto s = f.base();
      s.members[0].dup = true;
      CHECK(f.refuse(s).find("duplicate member 'demo_pkg/__init__.py'") != std::string::npos);
    }
    SUBCASE("file missing from RECORD") {
      auto s = f.base();
      Member m{"demo_pkg/sneaky.py", "import os\n"};
      m.in_record = false;
      s.members.push_back(m);
      CHECK(f.refuse(s).find("'demo_pkg/sneaky.py' is not listed in RECORD") != std::string::npos);
    }
    SUBCASE("file listed in RECORD but missing") {
      auto s = f.base();
      s.record_extra = {"demo_pkg/ghost.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0"};
      CHECK(f.refuse(s).find("'demo_pkg/ghost.py' but the archive has no such file") != std::string::npos);
    }
    SUBCASE("content differs from RECORD") {
      auto s = f.base();
      s.members[0].record_hash = wheel::record_hash("X = 2\n");
      auto msg = f.refuse(s);
      CHECK(msg.find("'demo_pkg/__init__.py' does not match its RECORD hash") != std::string::npos);
    }
    SUBCASE("forbidden hash algorithm") {
      auto s = f.base();
      s.members[0].record_hash = "md5=abcdef";
      CHECK(f.refuse(s).find("forbidden or unknown algorithm 'md5'") != std::string::npos);
    }
    SUBCASE("unknown .data scheme") {
      auto s = f.base();
      s.members.push_back({s.data_dir() + "/etc/passwd", "x"});
      CHECK(f.refuse(s).find("unknown .data scheme 'etc'") != std::string::npos);
    }
    SUBCASE("dist-info name does not match the file name") {
      auto s = f.base();
      s.filename = "other_pkg-1.0-py3-none-any.whl";
      CHECK(f.refuse(s).find("METADATA says demo-pkg 1.0, the file name says other_pkg 1.0") != std::string::npos);
    }
    SUBCASE("dist-info version does not match") {
      auto s = f.base();
      s.dist_info = "demo_pkg-2.0.dist-info";
      auto msg = f.refuse(s);
      CHECK(msg.find("demo_pkg-2.0.dist-info") != std::string::npos);
    }
    SUBCASE("Wheel-Version 2.0") {
      auto s = f.base();
      s.wheel_version = "2.0";
      CHECK(f.refuse(s).find("Wheel-Version 2.0 is not supported") != std::string::npos);
    }
    SUBCASE("no RECORD") {
      auto s = f.base();
      s.no_record = true;
      CHECK(f.refuse(s).find("RECORD is missing") != std::string::npos);
    }
    SUBCASE("invalid UTF-8 name") {
      auto s = f.base();
      Member m{"demo_pkg/badXX.py", "x"};
      m.utf8 = true;
      s.members.push_back(m);
      s.utf8_patch = std::make_pair(std::string("badXX"), std::string("6261 64fffe"));
      s.utf8_patch->second = "626164fffe";
      auto msg = f.refuse(s);
      CHECK((msg.find("UTF-8") != std::string::npos || msg.find("ZIP") != std::string::npos));
    }
    SUBCASE("zip bomb: compression ratio") {
      auto s = f.base();
      Member m{"demo_pkg/zeros.bin", ""};
      m.zeros = 64ull << 20;
      s.members.push_back(m);
      CHECK(f.refuse(s).find("zip bomb") != std::string::npos);
    }
    SUBCASE("zip bomb: total size") {
      auto s = f.base();
      Member m{"demo_pkg/zeros.bin", ""};
      m.zeros = 1 << 20;
      s.members.push_back(m);
      wheel::StagingOptions opt;
      opt.limits.max_total_size = 512 << 10;
      CHECK(f.refuse(s, opt).find("exceeds the limit of 524288 bytes (at member 'demo_pkg/zeros.bin')") != std::string::npos);
    }
  }

  TEST_CASE("non-strict RECORD heals instead of failing") {
    Fixture f;
    auto s = f.base();
    Member m{"demo_pkg/unlisted.py", "U = 1\n"};
    m.in_record = false;
    s.members.push_back(m);
    auto w = test::make_wheel(s, f.dir);
    wheel::StagingOptions opt;
    opt.strict_record = false;
    auto r = wheel::stage_wheel(w, f.dir / "st", opt);
    REQUIRE(r);
    CHECK(r->warnings.size() == 1);
    bool listed = false;
    for (const auto& file : r->files) listed = listed || file.member == "demo_pkg/unlisted.py";
    CHECK(listed);
  }

  TEST_CASE("truncated or garbage archives are errors, not crashes") {
    Fixture f;
    auto w = test::make_wheel(f.base(), f.dir);
    auto bytes = util::read_file(w).value();
    for (std::size_t cut : {std::size_t{0}, std::size_t{10}, bytes.size() / 2, bytes.size() - 10}) {
      std::string part = bytes.substr(0, cut);
      std::span<const std::uint8_t> span(reinterpret_cast<const std::uint8_t*>(part.data()), part.size());
      auto ar = wheel::WheelArchive::open_memory(span, "cut.whl");
      if (ar) {
        // The listing may survive a cut in the data; reading must still fail or succeed cleanly.
        for (const auto& e : ar->entries()) (void)ar->read_member(e.name);
      }
    }
    CHECK(true);
  }
}

namespace {
// Text that deflate cannot shrink much (so the zip-bomb ratio stays low) and that differs per seed.
std::string noise(std::size_t bytes, unsigned seed) {
  std::string s(bytes, '0');
  std::uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
  const char* hex = "0123456789abcdef";
  for (auto& c : s) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = hex[x & 15];
  }
  return s;
}
} // namespace

TEST_SUITE("unit/wheel/staging") {
  TEST_CASE("a large wheel split over several readers stages the same bytes, and still checks every hash") {
    Fixture f;
    auto s = f.base();
    const std::size_t big = 6u << 20;
    for (unsigned i = 0; i < 4; ++i) s.members.push_back({"demo_pkg/lib" + std::to_string(i) + ".so", noise(big, i)});
    for (unsigned i = 0; i < 50; ++i)
      s.members.push_back({"demo_pkg/m" + std::to_string(i) + ".py", "V = " + std::to_string(i) + "\n"});
    auto w = test::make_wheel(s, f.dir);

    auto stager = wheel::WheelStager::prepare(w, f.dir / "split");
    REQUIRE_MESSAGE(stager, (stager ? "" : stager.error().render()));
    auto groups = stager->split(4, 4u << 20);
    CHECK(groups >= 3);
    // Groups in reverse order: nothing may depend on the archive order across groups.
    for (std::size_t g = groups; g-- > 0;) REQUIRE(stager->extract(g));
    auto sw = stager->finish();
    REQUIRE_MESSAGE(sw, (sw ? "" : sw.error().render()));
    for (unsigned i = 0; i < 4; ++i)
      CHECK(util::read_file(f.dir / "split" / "demo_pkg" / ("lib" + std::to_string(i) + ".so")).value() == noise(big, i));
    // The single-reader path gives the same files, hashes and sizes.
    auto one = wheel::stage_wheel(w, f.dir / "one");
    REQUIRE(one);
    REQUIRE(one->files.size() == sw->files.size());
    for (std::size_t i = 0; i < sw->files.size(); ++i) {
      CHECK(one->files[i].member == sw->files[i].member);
      CHECK(one->files[i].hash == sw->files[i].hash);
      CHECK(one->files[i].size == sw->files[i].size);
    }
    wheel::StagingOptions threaded;
    threaded.threads = 4;
    CHECK(wheel::stage_wheel(w, f.dir / "threaded", threaded));

    // A member in a later group that disagrees with RECORD still fails the whole wheel.
    auto bad = s;
    bad.members[4].record_hash = "sha256=" + std::string(43, 'A');
    CHECK(f.refuse(bad, threaded).find("'demo_pkg/lib2.so' does not match its RECORD hash") != std::string::npos);
  }
}

TEST_SUITE("unit/wheel/staging") {
  TEST_CASE("a member whose name libarchive cannot decode is refused, not aliased (fuzz finding)") {
    auto bytes = util::read_file(fs::path(ENVFIX_SOURCE_DIR) / "fuzz/corpus/wheel_archive/regress-empty-name.zip");
    REQUIRE(bytes);
    std::span<const std::uint8_t> span(reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size());
    auto ar = wheel::WheelArchive::open_memory(span, "regress.whl");
    REQUIRE_FALSE(ar);
    CHECK(ar.error().message.find("has an empty or undecodable name") != std::string::npos);
  }
}

} // namespace wheel_staging_test
