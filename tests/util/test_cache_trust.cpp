// util/cache_trust.hpp on real directories: what makes a cache this user's alone (issue 60, 7).
#include <doctest/doctest.h>

#include <sys/file.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <cstdlib>
#include <unistd.h>

#include <filesystem>

#include "util/cache_trust.hpp"
#include "util/fs.hpp"

using namespace envfix;
namespace fs = std::filesystem;

namespace {

mode_t mode_of(const fs::path& p) {
  struct stat st = {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// Runs `fn` under `umask 000`, as a shell with that umask would run envfix.
template <class Fn>
void with_umask_000(Fn fn) {
  const mode_t old = ::umask(0);
  fn();
  ::umask(old);
}

} // namespace

TEST_SUITE("unit/util/cache_trust") {
  TEST_CASE("a cache made under umask 000 is this user's alone, and what it holds is trusted on the next look") {
    auto root = util::make_temp_dir({}, "envfix-trust").value();
    const auto cache = root / "cache";
    with_umask_000([&] {
      REQUIRE(util::open_cache(cache).value() == cache); // used, not a private temporary cache
      CHECK(mode_of(cache) == 0700);
      // What later runs write into it under the same umask: 0777 directories, 0666 files.
      REQUIRE(util::create_directories(cache / "pages"));
      ::chmod((cache / "pages").c_str(), 0777);
      REQUIRE(util::write_file_atomic(cache / "pages" / "entry.json", "{}"));
      ::chmod((cache / "pages" / "entry.json").c_str(), 0666);
    });
    // The next run (another spelling of the path, which open_cache has not seen): no other user can
    // enter the cache, so the write bits of what it holds reach no one.
    CHECK(util::open_cache(cache / ".").value() == cache / ".");
    CHECK(util::read_trusted(cache / "." / "pages" / "entry.json") == std::optional<std::string>("{}"));
    // The same cache opened to others (0755): its 0777 entry is refused, as before.
    ::chmod(cache.c_str(), 0755);
    CHECK(util::open_cache(cache / "pages" / "..").value() != cache / "pages" / "..");
    fs::remove_all(root);
  }

  TEST_CASE("a symlinked entry is judged by its owner and by what it points to, not by the link's own 0777") {
    auto root = util::make_temp_dir({}, "envfix-trust").value();
    // root/<cache> (0755) whose `wheels` is a symlink to root/<target>, a directory of `target_mode`.
    auto cache_linking_to = [&](const std::string& cache, const std::string& target, mode_t target_mode) {
      REQUIRE(util::create_directories(root / cache));
      ::chmod((root / cache).c_str(), 0755);
      REQUIRE(util::create_directories(root / target));
      ::chmod((root / target).c_str(), target_mode);
      fs::create_directory_symlink(root / target, root / cache / "wheels");
      return root / cache;
    };
    const auto cache = cache_linking_to("cache", "elsewhere", 0755);
    CHECK(util::open_cache(cache).value() == cache);
    // A link to a directory anyone may write: refused, naming the target.
    const auto cache2 = cache_linking_to("cache2", "open", 0777);
    CHECK(util::open_cache(cache2).value() != cache2);
    CHECK(util::untrusted_because(root / "open").has_value());
    fs::remove_all(root);
  }

  // Issue 60, 7: a run SIGKILLed (or stopped by a signal outside an interrupt scope) never reaches its
  // exit handler, and its private temporary cache stayed in $TMPDIR. The next run that needs one
  // removes what a dead run left (its owner mark no longer locked), not a live run's, nor a
  // directory without a mark.
  TEST_CASE("a private cache a dead run left in TMPDIR is removed by the next run; a live run's stays") {
    auto root = util::make_temp_dir({}, "envfix-trust").value();
    const auto tmp = root / "tmp";
    REQUIRE(util::create_directories(tmp));
    auto made = [&](const std::string& name, bool mark) {
      REQUIRE(util::create_directories(tmp / name / "wheels"));
      REQUIRE(util::write_file_atomic(tmp / name / "wheels" / "x.whl", "bytes"));
      if (mark) REQUIRE(util::write_file_atomic(tmp / name / ".envfix-private-owner", ""));
      return tmp / name;
    };
    const auto dead = made("envfix-private-cache-dead01", true);
    const auto live = made("envfix-private-cache-live01", true);
    const auto unmarked = made("envfix-private-cache-nomark", false);
    // The live run holds its mark (another open file description: the sweep's flock conflicts with it).
    const int held = ::open((live / ".envfix-private-owner").c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(held >= 0);
    REQUIRE(::flock(held, LOCK_EX) == 0);
    // A cache others may write: this run needs a private one.
    const auto open = root / "open";
    REQUIRE(util::create_directories(open));
    ::chmod(open.c_str(), 0777);
    const char* old = std::getenv("TMPDIR");
    const std::string saved = old ? old : "";
    ::setenv("TMPDIR", tmp.c_str(), 1);
    const auto used = util::open_cache(open);
    if (old)
      ::setenv("TMPDIR", saved.c_str(), 1);
    else
      ::unsetenv("TMPDIR");
    REQUIRE(used);
    CHECK(used->parent_path() == tmp);
    CHECK(fs::exists(*used / ".envfix-private-owner"));
    CHECK_FALSE(fs::exists(dead));
    CHECK(fs::exists(live / "wheels" / "x.whl"));
    CHECK(fs::exists(unmarked / "wheels" / "x.whl"));
    ::close(held);
    fs::remove_all(root);
  }
}
