// Issue 42, items 2 and 9 (docs/reliability.md §6): the cache is a trust boundary, and a killed
// download leaves nothing behind. The real envfix binary against nginx (tests/apply/apply_world.hpp),
// real venvs, a real CUDA object for the evidence case; the tests run as root, so "another user" is
// nobody (uid 65534).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/apply/apply_world.hpp"
#include "tests/support/child_process.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

namespace apply_round3_cache_test {

using namespace envfix;
namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace envfix::apply_test;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every interpreter-probe entry of a cache, rewritten by `edit`.
int edit_probe_entries(const fs::path& cache, const std::function<void(json&)>& edit) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(cache / "interpreters")) {
    if (e.path().extension() != ".json") continue;
    auto j = json::parse(slurp(e.path()));
    edit(j);
    write(e.path(), j.dump());
    ++n;
  }
  return n;
}

// A process holding an flock on `file` (shared or exclusive) until it is stopped.
testing::ChildProcess hold_flock(const fs::path& file, bool shared) {
  auto c = testing::ChildProcess::spawn(
      {python3(), "-c",
       fmt::format("import fcntl, sys, time\nf = open({}, 'a')\nfcntl.flock(f, fcntl.{})\nprint('locked', flush=True)\n"
                   "time.sleep(300)\n",
                   json(file.string()).dump(), shared ? "LOCK_SH" : "LOCK_EX")});
  REQUIRE(c);
  REQUIRE(c->read_line(std::chrono::seconds(30)) == std::optional<std::string>("locked"));
  return std::move(*c);
}

std::string site_packages_of(const fs::path& venv) {
  for (const auto& e : fs::directory_iterator(venv / "lib"))
    if (e.path().filename().string().starts_with("python3")) return (e.path() / "site-packages").string();
  FAIL("no site-packages in " << venv);
  return {};
}

// evfw 3.0.0+cu128: its one shared object holds SASS for sm_90; the matrices agree.
constexpr const char* kEvfwMatrices = R"YAML(schema: 1
frameworks:
  evfw:
    main_package: evfw
    default_mirror: "https://evfw.invalid"
    channels:
      stable: "{mirror}/whl/{variant}"
    source: "envfix tests/apply/test_round3_cache.cpp"
    variants:
      cu128: {cuda: "12.8"}
    smoke:
      step_a: "import evfw; print('step A ok')"
      step_b: "import evfw; print('step B ok')"
      cpu:
        step: "import evfw; print('step A ok')"
    releases:
      - versions: ["3.0.0"]
        python: [cp311, cp312, cp313]
        source: "test fixture"
        variants:
          cu128:
            linux_x86_64: {sass: [sm_90], ptx: [], confidence: verified, source: "test claim"}
)YAML";

// A build record as the kernel gate writes it, holding only `arch`, for evfw 3.0.0+cu128 and a file
// whose sha256 is `sha`: in the layout before issue 42 (evidence-v1, keyed by name/version/variant/
// platform) and in evidence-v2 (keyed by the file's sha256), both under the real file's name and its own.
void plant_evidence(const fs::path& cache, const std::string& arch, const std::string& real_sha, const std::string& sha) {
  json key{{"project", "evfw"}, {"version", "3.0.0+cu128"}, {"variant", "cu128"}, {"platform", "manylinux_2_17_x86_64"}};
  json profile{{"zstd", false}, {"groups", json::array({{{"registered", true}, {"count", 1}, {"archs", {arch}}}})}};
  json rec{{"key", key},
           {"sha256", sha},
           {"source", "planted by another user"},
           {"files", json::array({{{"path", "evfw/lib/libevfw_kernels.so"}, {"profile", profile}}})}};
  const std::string key_text = "evfw\n3.0.0+cu128\ncu128\nmanylinux_2_17_x86_64";
  write(cache / "evidence-v1" / "builds" / (util::sha256_hex(key_text) + ".json"), rec.dump());
  write(cache / "evidence-v2" / "builds" / (sha + ".json"), rec.dump());
  write(cache / "evidence-v2" / "builds" / (real_sha + ".json"), rec.dump());
}

// `command` with evfw's framework options for the venv `ve`: the test's matrices and index, planned for sm_90.
std::vector<std::string> evfw_args(std::vector<std::string> command, World& w, const fs::path& ve) {
  command.insert(command.end(), {"--framework", "evfw", "--matrices", (w.root() / "matrices").string(), "--mirror", w.base_url(),
                                 "--gpu", "sm_90", "--driver", "580.65.06", "--python", (ve / "bin/python").string()});
  return command;
}

} // namespace

TEST_SUITE("integration/apply/round3_cache") {

  // Item 2, one case per part: (a) ownership, (b) cache clean, (c) content checked against what it claims.
  TEST_CASE("round3 2a: a cache owned by another user, or an entry of it, is not used: one warning, the planted entry ignored") {
    {
      World w(kAlphaIndex);
      auto ve = w.venv("venv");
      const auto py = (ve / "bin/python").string();
      const auto cache = w.root() / "shared-cache";
      REQUIRE(w.envfix({"doctor", "--format", "json", "--python", py}, {}, cache).rc != -2);
      // What another user planted: the interpreter "is" Python 3.99.1.
      REQUIRE(edit_probe_entries(cache, [](json& j) { j["markers"]["python_full_version"] = "3.99.1"; }) > 0);
      REQUIRE(::chown(cache.c_str(), 65534, 65534) == 0);
      fs::permissions(cache, fs::perms::all);
      auto d = w.envfix({"doctor", "--format", "json", "--python", py}, {}, cache);
      CHECK(count(d.err, fmt::format("the cache directory {} is not used for this run", cache.string())) == 1);
      CHECK(d.err.find("owned by uid 65534") != std::string::npos);
      CHECK(d.out.find("3.99.1") == std::string::npos);
      auto p = w.envfix({"plan", "alpha", "--index-url", w.index_url(), "--python", py}, {}, cache);
      CHECK(p.rc == 0);
      CHECK(count(p.err, "is not used for this run") == 1);
      // The directory is this user's again, but one entry in it belongs to nobody: that entry is ignored.
      REQUIRE(::chown(cache.c_str(), 0, 0) == 0);
      fs::permissions(cache, fs::perms(0755));
      for (const auto& e : fs::directory_iterator(cache / "interpreters")) REQUIRE(::chown(e.path().c_str(), 65534, 65534) == 0);
      auto d2 = w.envfix({"doctor", "--format", "json", "--python", py}, {}, cache);
      CHECK(d2.err.find("is ignored: it is owned by uid 65534") != std::string::npos);
      CHECK(d2.out.find("3.99.1") == std::string::npos);
    }
  }

  TEST_CASE("round3 2b: cache clean refuses a directory that is not an envfix cache, and a cache a run holds") {
    {
      World w(kAlphaIndex);
      const auto other = w.root() / "not-a-cache";
      write(other / "precious.txt", "keep me\n");
      write(other / "sub" / "more.txt", "me too\n");
      auto r = w.envfix({"cache", "clean"}, {}, other);
      CHECK(r.rc == 1);
      CHECK(r.err.find(other.string() + " is not an envfix cache") != std::string::npos);
      CHECK(fs::exists(other / "precious.txt"));
      CHECK(fs::exists(other / "sub" / "more.txt"));

      auto ve = w.venv("venv");
      REQUIRE(w.envfix({"plan", "alpha", "--index-url", w.index_url(), "--python", (ve / "bin/python").string()}).rc == 0);
      REQUIRE(fs::exists(w.cache() / "CACHEDIR.TAG"));
      CHECK(slurp(w.cache() / "CACHEDIR.TAG").starts_with("Signature: 8a477f597d28d172789f06886806bc55"));
      REQUIRE(fs::exists(w.cache() / "http-v1"));
      {
        auto holder = hold_flock(w.cache() / ".lock", true); // what a running apply holds
        auto busy = w.envfix({"cache", "clean"});
        CHECK(busy.rc == 2); // io: try again later
        CHECK(busy.err.find("in use by another envfix run") != std::string::npos);
        CHECK(fs::exists(w.cache() / "http-v1"));
      }
      auto ok = w.envfix({"cache", "clean"});
      CHECK(ok.rc == 0);
      CHECK_FALSE(fs::exists(w.cache() / "http-v1"));
      CHECK(fs::exists(w.cache() / ".envfix-cache")); // still an envfix cache
    }
  }

  TEST_CASE("round3 2c: a planted interpreter-probe entry pointing outside the venv is not used") {
    {
      World w(kAlphaIndex);
      auto ve = w.venv("venv");
      const auto py = (ve / "bin/python").string();
      REQUIRE(w.envfix({"plan", "alpha", "--index-url", w.index_url(), "--python", py}).rc == 0);
      const auto elsewhere = w.root() / "elsewhere";
      fs::create_directories(elsewhere / "site-packages");
      REQUIRE(edit_probe_entries(w.cache(), [&](json& j) {
                for (const char* k : {"purelib", "platlib"}) j["paths"][k] = (elsewhere / "site-packages").string();
                j["paths"]["scripts"] = (elsewhere / "bin").string();
              }) > 0);
      auto a = w.envfix(
          {"apply", "alpha", "--index-url", w.index_url(), "--python", py, "--yes", "--lockfile", w.lockfile().string()});
      CHECK(a.rc == 0);
      CHECK_FALSE(fs::exists(elsewhere / "site-packages" / "alpha"));
      CHECK(fs::exists(fs::path(site_packages_of(ve)) / "alpha" / "__init__.py"));
    }
  }

  TEST_CASE("round3 2c: a planted evidence record of another file neither rules out the build nor makes lock write verified") {
    {
      World w(fmt::format(R"({{"simple_dir": "whl/cu128", "files_dir": "whl/files", "packages": [
      {{"name": "evfw", "version": "3.0.0+cu128", "tags": ["py3-none-manylinux_2_17_x86_64"],
        "files": {{"evfw/__init__.py": "VALUE = 1\n", "evfw/lib/libevfw_kernels.so": {}}}}}]}})",
                          byte_list(arch_shared_object("90"))));
      write(w.root() / "matrices/evfw.yaml", kEvfwMatrices);
      fs::path wheel;
      for (const auto& e : fs::recursive_directory_iterator(w.index_dir()))
        if (e.path().extension() == ".whl") wheel = e.path();
      REQUIRE(!wheel.empty());
      const auto real_sha = util::sha256_file_hex(wheel).value();
      const std::string other_sha(64, 'e');
      auto ve = w.venv("venv");
      auto with = [&](std::vector<std::string> a) { return evfw_args(std::move(a), w, ve); };
      plant_evidence(w.cache(), "sm_80", real_sha, other_sha); // "its binaries hold sm_80 only"
      auto p = w.envfix(with({"plan", "--format", "json"}));
      CHECK(p.rc == 0);
      CHECK(p.err.find("planted by another user") == std::string::npos);
      // issue 33 item 4: the old name-keyed store is migrated (its build record dropped) and said, once.
      CHECK(count(p.err, "note: the kernel evidence store of an older envfix (evidence-v1) was migrated: 0 file records kept") ==
            1);
      CHECK(p.err.find("1 build record keyed by name and version dropped") != std::string::npos);
      CHECK_FALSE(fs::exists(w.cache() / "evidence-v1"));
      plant_evidence(w.cache(), "sm_90", real_sha, other_sha); // "read, and it holds sm_90"
      auto l = w.envfix(with({"lock", "-o", w.lockfile().string()}));
      REQUIRE(l.rc == 0);
      const auto lock = slurp(w.lockfile());
      CHECK(lock.find("verified: true") == std::string::npos);
      CHECK(lock.find("verified: false") != std::string::npos);
    }
  }

  // issue 60, item 5: a file record planted in evidence-v2/files/ (by a same-user tool, or restored
  // with a CI cache from another machine) claiming sm_90 for an sm_80-only library decides nothing:
  // the gate reads the file and refuses. Fails when the record decides (before: the build installed
  // and the lock said verified).
  TEST_CASE("issue 60 (5): a planted file record lets no sm_80-only build through the kernel gate on sm_90") {
    {
      const auto& so = arch_shared_object("80");
      World w(fmt::format(R"({{"simple_dir": "whl/cu128", "files_dir": "whl/files", "packages": [
      {{"name": "evfw", "version": "3.0.0+cu128", "tags": ["py3-none-manylinux_2_17_x86_64"],
        "files": {{"evfw/__init__.py": "VALUE = 1\n", "evfw/lib/libevfw_kernels.so": {}}}}}]}})",
                          byte_list(so)));
      write(w.root() / "matrices/evfw.yaml", kEvfwMatrices); // the matrices claim sm_90: only the bytes can refuse
      auto ve = w.venv("venv");
      auto with = [&](std::vector<std::string> a) { return evfw_args(std::move(a), w, ve); };
      util::Sha256 h;
      h.update(so);
      const auto file_hash = "sha256=" + util::base64url_nopad(h.raw_digest());
      json profile{{"zstd", false}, {"groups", json::array({{{"registered", true}, {"count", 1}, {"archs", {"sm_90"}}}})}};
      write(w.cache() / "evidence-v2" / "files" / (util::sha256_hex(file_hash) + ".json"),
            json{{"hash", file_hash}, {"profile", profile}}.dump());
      auto a = w.envfix(with({"apply", "--yes", "--lockfile", w.lockfile().string()}));
      INFO(a.err);
      CHECK(a.rc != 0);
      CHECK(a.err.find("sm_90") != std::string::npos);
      CHECK_FALSE(fs::exists(fs::path(site_packages_of(ve)) / "evfw"));
      CHECK_FALSE(fs::exists(w.lockfile()));
      // The record is now the file's own reading, signed: sm_80.
      const auto rec = slurp(w.cache() / "evidence-v2" / "files" / (util::sha256_hex(file_hash) + ".json"));
      CHECK(rec.find("sm_80") != std::string::npos);
      CHECK(rec.find("\"mac\"") != std::string::npos);
    }
  }

  // issue 60, item 5: an unpacked entry's manifest decides which files are linked into the venv, so
  // it is read through the cache's trust check like every other entry: one given to another uid is
  // ignored with a warning and the wheel unpacked again. Fails when the manifest is read regardless.
  TEST_CASE("issue 60 (5): an unpacked entry whose manifest belongs to another user is not used") {
    {
      World w(kAlphaIndex);
      auto first = w.venv("first");
      REQUIRE(
          w.envfix({"apply", "alpha", "--index-url", w.index_url(), "--python", (first / "bin/python").string(), "--yes"}).rc ==
          0);
      std::size_t chowned = 0;
      for (const auto& e : fs::recursive_directory_iterator(w.cache() / "unpacked-v1"))
        if (e.path().filename() == "manifest.json") chowned += ::chown(e.path().c_str(), 65534, 65534) == 0;
      REQUIRE(chowned > 0);
      auto second = w.venv("second");
      auto a = w.envfix({"apply", "alpha", "--index-url", w.index_url(), "--python", (second / "bin/python").string(), "--yes"});
      INFO(a.err);
      CHECK(a.rc == 0);
      CHECK(a.err.find("is ignored: it is owned by uid 65534") != std::string::npos);
      CHECK(fs::exists(fs::path(site_packages_of(second)) / "alpha"));
    }
  }

  TEST_CASE("round3 9: the .part file of a killed download is removed by the next run; one a live writer holds stays") {
    World w(kAlphaIndex);
    auto ve = w.venv("venv");
    const auto py = (ve / "bin/python").string();
    REQUIRE(w.envfix({"plan", "alpha", "--index-url", w.index_url(), "--python", py}).rc == 0);
    const auto tmp = w.cache() / "tmp";
    write(tmp / "0123456789abcdef.part", std::string(4096, 'x')); // what a SIGKILLed download left
    write(tmp / "fedcba9876543210.part", std::string(4096, 'y'));
    auto writer = hold_flock(tmp / "fedcba9876543210.part", false); // a download still running
    auto a =
        w.envfix({"apply", "alpha", "--index-url", w.index_url(), "--python", py, "--yes", "--lockfile", w.lockfile().string()});
    CHECK(a.rc == 0);
    CHECK_FALSE(fs::exists(tmp / "0123456789abcdef.part"));
    CHECK(fs::exists(tmp / "fedcba9876543210.part"));
    // No download of this run is left behind either.
    for (const auto& e : fs::directory_iterator(tmp)) CHECK_MESSAGE(e.path().filename() == "fedcba9876543210.part", e.path());
  }

} // TEST_SUITE

} // namespace apply_round3_cache_test
