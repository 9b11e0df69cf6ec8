// Issue 42, the on-disk half (items 1, 3, 7 last part, 10): files envfix reads back (cache entries,
// conda-meta records, transaction journals, lockfiles) are inputs someone else may have written.
// The real envfix binary against nginx (tests/apply/apply_world.hpp) and real venvs; each case failed
// before its fix.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/apply/apply_world.hpp"
#include "tests/reliability/hostile_server.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"

namespace apply_round3_ondisk_test {

using namespace envfix;
namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace envfix::apply_test;

namespace {

struct Outcome {
  int rc = -1;
  int signal = 0;
  bool timed_out = false;
  double seconds = 0;
  std::string out, err;
};

// envfix as World::envfix runs it, with a short timeout and the signal kept: an abort (SIGABRT) or a
// hang must show as such, not as a generic failure.
Outcome run_envfix(World& w, std::vector<std::string> args, std::chrono::seconds timeout = std::chrono::seconds(600)) {
  std::vector<std::string> argv{envfix_bin().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--cache-dir");
  argv.push_back(w.cache().string());
  auto o = w.envfix_options();
  o.timeout = timeout;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = util::run_process(argv, o);
  REQUIRE(r);
  Outcome out{r->exit_code, r->term_signal,
              r->timed_out, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
              r->out,       r->err};
  std::string cmd;
  for (const auto& a : args) cmd += " " + a;
  MESSAGE("envfix" << cmd << " -> rc " << out.rc << " signal " << out.signal << std::string(out.timed_out ? " TIMED OUT" : "")
                   << " in " << out.seconds << " s\n"
                   << out.err);
  return out;
}

std::vector<fs::path> json_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path());
  return out;
}

// The value of the first "key: value" in `text` whose key follows a space (an indent), replaced.
void set_field(std::string& text, const std::string& key, const std::string& value) {
  const auto at = text.find(" " + key + ": ") + 1;
  REQUIRE_MESSAGE(at != 0, key);
  const auto eol = text.find('\n', at);
  text.replace(at, eol - at, key + ": " + value);
}

// A lock of alpha for this host, written by envfix itself.
std::string make_lock(World& w, const std::string& py) {
  REQUIRE(run_envfix(w, {"lock", "alpha", "--index-url", w.index_url(), "--python", py, "-o", w.lockfile().string()}).rc == 0);
  return slurp(w.lockfile());
}

} // namespace

TEST_SUITE("integration/apply/round3_ondisk") {

  TEST_CASE(
      "round3 1: damaged cache entries, conda-meta records and journals are skipped or refused naming the file, never an abort") {
    World w(kAlphaIndex);
    auto ve = w.venv("venv");
    const std::string py = (ve / "bin/python").string();
    // A first plan fills the page cache: headers (<key>.json) and the page memo (memo/<key>.json).
    REQUIRE(run_envfix(w, {"plan", "alpha", "--index-url", w.index_url(), "--python", py}).rc == 0);
    const fs::path pages = w.cache() / "http-v1" / "pages";
    const auto headers = json_files(pages);
    const auto memos = json_files(pages / "memo");
    REQUIRE_FALSE(headers.empty());
    REQUIRE_FALSE(memos.empty());
    // Each hostile shape: a number where a string belongs, an array where an object does, null, deep nesting.
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    const std::vector<std::string> hostile_headers = {
        R"({"credentials": "", "content_type": 5, "etag": "", "body_sha256": "x", "stored_at": 1})",
        R"({"credentials": "", "stored_at": "yesterday", "no_cache": "no"})",
        R"({"credentials": "", "content_type": null, "etag": [], "max_age": {}})", deep};
    const std::vector<std::string> hostile_memos = {
        R"({"version": "1", "pages": []})",
        R"({"version": 1, "pages": [{"url": "u", "index_url": "i", "project": "p", "find_links": "yes"}]})",
        R"({"version": 1, "pages": {"url": 5}})", deep};
    for (std::size_t k = 0; k < hostile_headers.size(); ++k) {
      CAPTURE(k);
      for (const auto& h : headers) write(h, hostile_headers[k]);
      for (const auto& m : memos) write(m, hostile_memos[k]);
      auto r = run_envfix(w, {"plan", "alpha", "--index-url", w.index_url(), "--python", py});
      CHECK(r.signal == 0);
      CHECK(r.rc == 0); // the damaged entries were refetched
      CHECK((r.out + r.err).find("alpha==1.0") != std::string::npos);
      if (k < 3) { // deep nesting is valid JSON of the wrong shape; a wrong type is named
        CHECK_MESSAGE(r.err.find(headers.front().string()) != std::string::npos, "no warning names the header file");
        CHECK_MESSAGE(r.err.find(memos.front().string()) != std::string::npos, "no warning names the memo file");
      }
    }

    // conda-meta: one hostile record among good ones; doctor reads every record of the prefix (its notes
    // are shown with -v).
    const fs::path meta = ve / "conda-meta";
    const std::vector<std::string> hostile_records = {
        R"({"name": 5, "version": "1.0", "files": ["lib/python3/site-packages/alpha-1.0.dist-info/METADATA"]})",
        R"({"name": "alpha", "version": ["1.0"], "build": {}, "channel": null})",
        R"({"name": "alpha", "version": "1.0", "files": "lib/libx.so", "depends": {"a": 1}})", deep};
    write(meta / "good-1.0-0.json", R"({"name": "good", "version": "1.0", "build": "0", "channel": "c", "files": []})");
    for (std::size_t k = 0; k < hostile_records.size(); ++k) {
      CAPTURE(k);
      write(meta / "hostile-1.0-0.json", hostile_records[k]);
      auto r = run_envfix(w, {"doctor", "-v", "--python", py, "--gpu", "sm_90", "--driver", "580.65.06", "--no-repro"});
      CHECK(r.signal == 0);
      CHECK((r.rc >= 0 && r.rc <= 3));
      CHECK_MESSAGE((r.out + r.err).find("hostile-1.0-0.json") != std::string::npos, "no note names the record");
    }
    fs::remove_all(meta);

    // A journal whose steps file is damaged while its state says the environment was being changed:
    // recover refuses, naming the file, and keeps the journal (its backup is the way back).
    const fs::path txn = ve / ".envfix" / "txn" / "20261203T141500.000000-1234";
    write(txn / "journal", "installing\n");
    const std::vector<std::string> hostile_journals = {
        R"({"format": 1, "id": 5, "kind": "apply", "rolls_back": "", "started": 1, "split": 0, "installed": [], "removed": [], "ops": []})",
        R"({"format": 1, "id": "20261203T141500.000000-1234", "kind": "apply", "rolls_back": "", "started": "x", "split": -1,
          "installed": [{"name": 1, "version": null}], "removed": {}, "ops": [["move", 1, 2]]})",
        R"({"format": 1, "id": "20261203T141500.000000-1234", "kind": "apply", "rolls_back": "", "started": 1, "split": 0,
          "installed": [], "removed": [], "ops": [["mkdir", "/x", "0755"], null]})",
        deep};
    for (std::size_t k = 0; k < hostile_journals.size(); ++k) {
      CAPTURE(k);
      write(txn / "ops.json", hostile_journals[k]);
      auto r = run_envfix(w, {"recover", "--python", py});
      CHECK(r.signal == 0);
      CHECK(r.rc != 0);
      CHECK(r.err.find((txn / "ops.json").string()) != std::string::npos);
      CHECK(r.err.find("hint:") != std::string::npos);
      CHECK(fs::exists(txn / "journal")); // not discarded as an unfinished preparation
    }
    fs::remove_all(ve / ".envfix" / "txn");

    // A lockfile with a wrong-typed node is an error naming the file, not an exception.
    auto lock = make_lock(w, py);
    for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
             {"size", "[1, 2]"}, {"version", "{a: 1}"}, {"sha256", "null"}, {"url", "[" + std::string(5000, '[')}}) {
      CAPTURE(key);
      auto bad = lock;
      set_field(bad, key, value);
      const auto f = w.root() / "bad.lock";
      write(f, bad);
      auto r = run_envfix(w, {"export", "--as", "requirements", "--lockfile", f.string(), "-o", "-"});
      CHECK(r.signal == 0);
      CHECK(r.rc == 1);
      CHECK(r.err.find("bad.lock") != std::string::npos);
    }
  }

  TEST_CASE("round3 3: a locked file: URL naming a FIFO, /dev/zero or a file larger than its lock fails fast naming the path") {
    World w(kAlphaIndex);
    auto ve = w.venv("venv");
    const std::string py = (ve / "bin/python").string();
    const auto lock = make_lock(w, py);
    const auto before = manifest(ve);
    const std::string name = "alpha-1.0-py3-none-any.whl";
    // The locked size, as lock recorded it.
    std::uint64_t locked_size = 0;
    if (auto at = lock.find(" size: "); at != std::string::npos) locked_size = std::stoull(lock.substr(at + 7));
    CHECK(locked_size > 0);
    const fs::path dir = w.root() / "local";
    fs::create_directories(dir);
    const fs::path fifo = dir / "fifo" / name;
    fs::create_directories(fifo.parent_path());
    REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
    const fs::path big = dir / "big" / name; // sparse: 1 GiB more than the lock says
    fs::create_directories(big.parent_path());
    write(big, "PK");
    fs::resize_file(big, locked_size + (1ull << 30));
    const fs::path zero_link = dir / "zero" / name;
    fs::create_directories(zero_link.parent_path());
    fs::create_symlink("/dev/zero", zero_link);
    for (const fs::path& p : {fifo, fs::path("/dev/zero"), zero_link, big, dir}) {
      CAPTURE(p);
      auto text = lock;
      set_field(text, "url", "file://" + p.string());
      const auto f = w.root() / "local.lock";
      write(f, text);
      fs::remove_all(w.cache() / "wheels");
      fs::remove_all(w.cache() / "tmp");
      // A FIFO or /dev/zero read as a wheel would never end: the bound catches that, not slowness.
      auto r = run_envfix(w, {"apply", "--locked", "--lockfile", f.string(), "--python", py, "--yes"}, std::chrono::seconds(300));
      CHECK_FALSE(r.timed_out);
      CHECK(r.signal == 0);
      CHECK((r.rc == 1 || r.rc == 2));
      CHECK(r.err.find(p.string()) != std::string::npos);
      const bool refused =
          r.err.find("not a regular file") != std::string::npos || r.err.find("larger than") != std::string::npos;
      CHECK_MESSAGE(refused, "the error does not say why the file was refused");
      std::uintmax_t tmp_bytes = 0;
      std::error_code ec;
      for (const auto& e : fs::recursive_directory_iterator(w.cache(), ec))
        if (e.is_regular_file(ec)) tmp_bytes += e.file_size(ec);
      CHECK(tmp_bytes < (64u << 20)); // nothing like a gigabyte was copied into the cache
      CHECK(manifest(ve) == before);
    }
  }

  TEST_CASE("round3 7: a planted page memo naming another host gets no request") {
    World w(kAlphaIndex);
    auto ve = w.venv("venv");
    const std::string py = (ve / "bin/python").string();
    REQUIRE(run_envfix(w, {"plan", "alpha", "--index-url", w.index_url(), "--python", py}).rc == 0);
    const fs::path pages = w.cache() / "http-v1" / "pages";
    const auto memos = json_files(pages / "memo");
    REQUIRE(memos.size() == 1);
    // A listening server that logs every request: the memo's planted entries point at it, one under
    // its own index URL, one claiming this run's index URL.
    const fs::path empty = w.root() / "elsewhere";
    fs::create_directories(empty);
    testing::HostileServer other(empty, w.root() / "elsewhere.log");
    auto memo = json::parse(slurp(memos.front()));
    memo["pages"].push_back({{"url", other.url("simple/beta/")}, {"index_url", other.url("simple")}, {"project", "beta"}});
    memo["pages"].push_back({{"url", other.url("simple/gamma/")}, {"index_url", w.index_url()}, {"project", "gamma"}});
    memo["pages"].push_back({{"url", "file:///etc/passwd"}, {"index_url", "file:///etc"}, {"project", "passwd"}});
    write(memos.front(), memo.dump());
    for (const auto& h : json_files(pages)) fs::remove(h); // the first page is fetched again: companions go with it
    auto r = run_envfix(w, {"plan", "alpha", "--index-url", w.index_url(), "--python", py});
    CHECK(r.rc == 0);
    CHECK_MESSAGE(other.log_text().empty(), "requests to the planted host:\n" << other.log_text());
  }

  TEST_CASE("round3 10: export refuses lockfile strings that would inject lines or paths, and writes no file") {
    World w(kAlphaIndex);
    auto ve = w.venv("venv");
    const std::string py = (ve / "bin/python").string();
    const auto lock = make_lock(w, py);
    const fs::path out = w.root() / "requirements.txt";
    struct Case {
      std::string key, value, field;
    };
    for (const Case& c :
         {Case{"version", R"("1.0\n--extra-index-url http://evil.example/simple")", "version"},
          Case{"url", R"("https://x.example/alpha-1.0-py3-none-any.whl\n--trusted-host evil.example")", "url"},
          Case{"index", R"("https://x.example/simple\r--extra-index-url http://evil.example/")", "index"},
          Case{"name", R"("alpha ; os_name == 'posix'")", "name"}, Case{"version", R"("1.0 --no-deps")", "version"}}) {
      CAPTURE(c.key);
      CAPTURE(c.value);
      auto text = lock;
      set_field(text, c.key, c.value);
      const auto f = w.root() / "evil.lock";
      write(f, text);
      for (const std::string as : {"requirements", "pylock"}) {
        CAPTURE(as);
        fs::remove(out);
        auto r = run_envfix(w, {"export", "--as", as, "--lockfile", f.string(), "-o", out.string()});
        CHECK(r.signal == 0);
        CHECK(r.rc == 1);
        CHECK_FALSE(fs::exists(out));
        CHECK(r.err.find(c.field) != std::string::npos);
        CHECK(r.err.find("evil.lock") != std::string::npos);
      }
    }
    // --all names one file per target from its id: an id with a path in it is refused, nothing written.
    const fs::path dir = w.root() / "exports";
    fs::create_directories(dir / "requirements-..");
    fs::create_directories(dir / "pylock...");
    for (const std::string id : {"../../escaped", "a/b", "x\\u001b]0;t\\u0007"}) {
      CAPTURE(id);
      auto text = lock;
      set_field(text, "id", "\"" + id + "\"");
      const auto f = w.root() / "evil.lock";
      write(f, text);
      for (const std::string as : {"requirements", "pylock"}) {
        CAPTURE(as);
        auto r = run_envfix(w, {"export", "--as", as, "--all", "--lockfile", f.string(), "-o", dir.string()});
        CHECK(r.rc == 1);
        CHECK(r.err.find("id '") != std::string::npos); // the id is named: refused as a file name or a string
        CHECK_FALSE(fs::exists(w.root() / "escaped.txt"));
        CHECK_FALSE(fs::exists(w.root() / "escaped.toml"));
        std::size_t files = 0;
        for (const auto& e : fs::recursive_directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
        CHECK(files == 0);
      }
    }
    // The control: the lock as written exports.
    auto ok = run_envfix(w, {"export", "--as", "requirements", "--lockfile", w.lockfile().string(), "-o", out.string()});
    CHECK(ok.rc == 0);
    CHECK(slurp(out).find("alpha==1.0") != std::string::npos);
  }

} // TEST_SUITE

} // namespace apply_round3_ondisk_test
