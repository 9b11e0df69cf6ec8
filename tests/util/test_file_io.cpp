// sha256_file_hex reads in fixed buffers; MappedFile::drop gives back resident pages.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include <unistd.h>

#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/writeback.hpp"

using namespace envfix;
namespace fs = std::filesystem;

namespace {

std::string pattern(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed) % 256);
  return s;
}

long rss_kib() { // current resident set, from /proc/self/statm (pages)
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

} // namespace

TEST_SUITE("unit/util/file_io") {
  TEST_CASE("sha256_file_hex equals sha256_hex for empty, small and multi-buffer files") {
    auto dir = util::make_temp_dir({}, "envfix-sha").value();
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{1} << 20, (std::size_t{1} << 20) + 1, (std::size_t{3} << 20) + 7}) {
      CAPTURE(n);
      const std::string s = pattern(n, static_cast<unsigned>(n));
      auto p = dir / fmt::format("f{}", n);
      REQUIRE(util::write_file_atomic(p, s));
      auto h = util::sha256_file_hex(p);
      REQUIRE(h);
      CHECK(*h == util::sha256_hex(s));
    }
    CHECK(util::sha256_file_hex(dir / "f0").value() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    fs::remove_all(dir);
  }

  TEST_CASE("sha256_file_hex errors name the file") {
    auto dir = util::make_temp_dir({}, "envfix-sha").value();
    auto missing = util::sha256_file_hex(dir / "missing-1.0.whl");
    REQUIRE(!missing);
    CHECK(missing.error().code == ErrorCode::io);
    CHECK(missing.error().message.find("missing-1.0.whl") != std::string::npos);
    auto is_dir = util::sha256_file_hex(dir);
    REQUIRE(!is_dir);
    CHECK(is_dir.error().message.find(dir.string()) != std::string::npos);
    fs::remove_all(dir);
  }

  TEST_CASE("MappedFile::drop releases resident pages and keeps the bytes readable") {
    auto dir = util::make_temp_dir({}, "envfix-map").value();
    const std::size_t size = (std::size_t{32} << 20) + 123; // a partial last page
    const std::string s = pattern(size, 7);
    auto p = dir / "big.bin";
    REQUIRE(util::write_file_atomic(p, s));
    auto map = util::MappedFile::open(p).value();
    REQUIRE(map.size() == size);
    auto touch = [&] {
      unsigned sum = 0;
      for (std::size_t i = 0; i < size; i += 1024) sum += map.data()[i];
      return sum;
    };
    const long before = rss_kib();
    const unsigned sum = touch();
    const long touched = rss_kib();
    CHECK(touched - before > 30 * 1024);
    // Unaligned ends: only whole pages inside go; the tail page of the file goes with the end.
    map.drop(100, size - 100);
    map.drop(0, 0);
    map.drop(size, 10);          // past the end: nothing
    map.drop(size - 1, 1 << 30); // clamped
    const long dropped = rss_kib();
    CHECK(touched - dropped > 30 * 1024);
    CHECK(map.view() == s); // faulted in again from the file, unchanged
    CHECK(touch() == sum);
    fs::remove_all(dir);
  }
} // TEST_SUITE unit

TEST_SUITE("unit/util/file_io") {
  TEST_CASE("WritebackPacer hands each written range to write-back once, only for large files") {
    auto dir = util::make_temp_dir({}, "envfix-writeback").value();
    const std::uint64_t every = 1 << 20;
    auto write_file = [&](const std::string& name, std::size_t size, std::size_t chunk, util::WritebackPacer& p) {
      util::Fd fd(::open((dir / name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
      REQUIRE(fd.valid());
      std::string data = pattern(size, 7);
      std::uint64_t written = 0;
      std::vector<std::uint64_t> seen;
      for (std::size_t off = 0; off < size; off += chunk) {
        auto part = std::string_view(data).substr(off, chunk);
        REQUIRE(util::write_all(fd.get(), part) == 0);
        written += part.size();
        p.wrote(fd.get(), written);
        seen.push_back(p.started());
      }
      p.finish(fd.get(), written);
      CHECK(util::read_file(dir / name).value() == data); // the bytes are untouched
      return seen;
    };
    SUBCASE("a large file: every `every` bytes, then the rest at finish") {
      util::WritebackPacer p(every);
      auto seen = write_file("big", 5 * every + 12345, 256 * 1024, p);
      CHECK(seen[2] == 0);     // 768 KiB written: under the step
      CHECK(seen[3] == every); // 1 MiB: the first range
      CHECK(seen[7] == 2 * every);
      CHECK(seen.back() == 5 * every);         // the last whole step
      CHECK(p.started() == 5 * every + 12345); // finish: the tail
    }
    SUBCASE("a small file costs no call at all") {
      util::WritebackPacer p(every);
      write_file("small", every / 2, 4096, p);
      CHECK(p.started() == 0);
    }
    SUBCASE("a file truncated and written again starts over") {
      util::WritebackPacer p(every);
      util::Fd fd(::open((dir / "retry").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
      REQUIRE(util::write_all(fd.get(), pattern(3 * every, 1)) == 0);
      p.wrote(fd.get(), 3 * every);
      CHECK(p.started() == 3 * every);
      REQUIRE(::ftruncate(fd.get(), 0) == 0);
      REQUIRE(::lseek(fd.get(), 0, SEEK_SET) == 0);
      REQUIRE(util::write_all(fd.get(), pattern(every, 2)) == 0);
      p.wrote(fd.get(), every);
      CHECK(p.started() == every);
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
}

TEST_SUITE("unit/util/file_io") {
  TEST_CASE("ParentResolver answers as resolve_parent does: symlinked, missing, dangling and file components") {
    auto dir = util::make_temp_dir({}, "envfix-resolve").value();
    const std::string root = fs::canonical(dir).string();
    fs::create_directories(dir / "real" / "sub");
    fs::create_directory_symlink(dir / "real", dir / "link");
    std::ofstream(dir / "file.txt") << "x";
    fs::create_symlink(dir / "nowhere", dir / "dangling");
    fs::create_symlink(dir / "file.txt", dir / "linkfile");
    fs::create_directory_symlink("sub", dir / "real" / "rel"); // relative target
    const std::vector<std::string> paths = {
        "real/sub/f",         "real/sub",     "link/sub/f", "link/sub/new/deeper/f", "link/new/f",
        "real/missing/a/b/c", "file.txt/x/y", "file.txt",   "dangling/a/b",          "dangling",
        "linkfile/z",         "linkfile",     "real/rel/f", "link/rel/new/f",        "link/sub/../sub/f",
        "real/./sub/f",       "link",         "missing"};
    util::ParentResolver resolver;
    for (int pass = 0; pass < 2; ++pass) // the second pass answers from what the first remembered
      for (const auto& p : paths) {
        const std::string full = dir.string() + "/" + p;
        CAPTURE(full);
        CHECK(resolver(full) == util::resolve_parent(full));
      }
    // What the answers mean: a symlinked directory is seen through, the last component is not.
    CHECK(resolver(dir.string() + "/link/sub/new/f") == root + "/real/sub/new/f");
    CHECK(resolver(dir.string() + "/real/rel/f") == root + "/real/sub/f");
    CHECK(resolver(dir.string() + "/link") == root + "/link");
    CHECK(resolver(dir.string() + "/dangling/a") == root + "/dangling/a");
    fs::remove_all(dir);
  }
} // TEST_SUITE unit
