// Issue 42, items 1, 3 and 4b for the unpacked-wheel cache (installer/unpacked_cache.hpp): entries made by
// real applies (tests/reliability/apply_harness.hpp), then damaged, misfiled, or replaced while another
// process holds one.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "installer/unpacked_cache.hpp"
#include "tests/reliability/apply_harness.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"

namespace reliability_round3_unpacked_test {

namespace {

namespace fs = std::filesystem;
using namespace envfix::testing;
using json = nlohmann::json;

// sha256 -> the entry's manifest, for every entry of the cache.
std::map<std::string, json> entries(const fs::path& cache) {
  std::map<std::string, json> out;
  for (const auto& e : fs::directory_iterator(cache / "unpacked-v1")) {
    const auto name = e.path().filename().string();
    if (name.size() != 64) continue;
    out[name] = json::parse(envfix::util::read_file(e.path() / "manifest.json").value());
  }
  return out;
}

std::string sha_of(const std::map<std::string, json>& all, const std::string& filename_prefix) {
  for (const auto& [sha, m] : all)
    if (m["filename"].get<std::string>().starts_with(filename_prefix)) return sha;
  FAIL("no entry for " << filename_prefix);
  return {};
}

std::string bulk_version(const fs::path& venv) {
  auto r = envfix::util::run_process({(venv / "bin/python").string(), "-c", "import bulk; print(bulk.VERSION)"});
  REQUIRE(r);
  return r->out;
}

fs::path wheel_in(const fs::path& cache, const std::string& filename) {
  for (const auto& e : fs::recursive_directory_iterator(cache / "wheels"))
    if (e.path().filename() == filename) return e.path();
  FAIL("no downloaded " << filename);
  return {};
}

} // namespace

TEST_CASE("round3 1: a damaged unpacked-cache manifest (wrong JSON types) is ignored with a warning naming it, never an abort" *
          doctest::test_suite("integration/reliability/round3_unpacked")) {
  ApplyWorld w;
  REQUIRE(w.run(w.apply_argv(w.venv("a"), "1.0.0")).rc == 0);
  const auto sha = sha_of(entries(w.cache()), "bulk-1.0.0");
  const auto manifest = w.cache() / "unpacked-v1" / sha / "manifest.json";
  auto j = json::parse(envfix::util::read_file(manifest).value());
  j["files"][0][2] = "twelve"; // a size that is a string
  j["name"] = 5;
  REQUIRE(envfix::util::write_file_atomic(manifest, j.dump(), 0644));
  auto ve = w.venv("b");
  auto r = w.run(w.apply_argv(ve, "1.0.0"));
  CHECK(r.rc == 0);
  CHECK(r.term_signal == 0);
  CHECK(r.err.find(manifest.string()) != std::string::npos);
  CHECK(bulk_version(ve) == "1\n");
}

TEST_CASE("round3 3: an unpacked-cache entry filed under another package's sha256 is not used" *
          doctest::test_suite("integration/reliability/round3_unpacked")) {
  ApplyWorld w;
  REQUIRE(w.run(w.apply_argv(w.venv("a"), "1.0.0")).rc == 0);
  REQUIRE(w.run(w.apply_argv(w.venv("b"), "2.0.0")).rc == 0);
  const auto all = entries(w.cache());
  const auto one = w.cache() / "unpacked-v1" / sha_of(all, "bulk-1.0.0");
  const auto two = w.cache() / "unpacked-v1" / sha_of(all, "bulk-2.0.0");
  // bulk 1.0.0's intact entry, planted under bulk 2.0.0's sha256.
  fs::remove_all(two);
  REQUIRE(envfix::util::run_process({"cp", "-a", one.string(), two.string()})->ok());
  auto ve = w.venv("c");
  auto r = w.run(w.apply_argv(ve, "2.0.0"));
  CHECK(r.rc == 0);
  CHECK(bulk_version(ve) == "2\n");
  CHECK(r.err.find((two / "manifest.json").string()) != std::string::npos);
}

TEST_CASE("round3 4: replacing an unpacked-cache entry while another process holds it leaves the holder's files in place" *
          doctest::test_suite("integration/reliability/round3_unpacked")) {
  ApplyWorld w;
  REQUIRE(w.run(w.apply_argv(w.venv("a"), "1.0.0")).rc == 0);
  const auto all = entries(w.cache());
  const auto sha = sha_of(all, "bulk-1.0.0");
  const auto wheel = wheel_in(w.cache(), all.at(sha)["filename"].get<std::string>());
  const fs::path root = w.cache() / "unpacked-v1";
  int ready[2], go[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(go) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The holder: another envfix that found the entry and is linking from it.
    envfix::installer::UnpackedCache cache(root);
    auto found = cache.find(sha);
    if (!found || found->files.empty()) ::_exit(3);
    struct stat before = {};
    ::stat(found->files.front().staged.c_str(), &before);
    (void)!::write(ready[1], "r", 1);
    char c;
    (void)!::read(go[0], &c, 1);
    struct stat after = {};
    const bool same = ::stat(found->files.front().staged.c_str(), &after) == 0 && after.st_ino == before.st_ino;
    ::_exit(same ? 0 : 1);
  }
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  envfix::installer::UnpackedCache cache(root);
  auto replaced = cache.stage(wheel, sha, {}); // a second run unpacking the same wheel
  CHECK(replaced);
  REQUIRE(::write(go[1], "g", 1) == 1);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0); // 1: the holder's file was replaced under it
}

} // namespace reliability_round3_unpacked_test
