// SIGKILL during a transaction, then recover(): the environment holds the old set or the new
// set, never a mix (docs/architecture.md, The transaction: Rollback, Recover). The transaction runs
// in tests/installer/txn_driver.
//
// The verdict never depends on the machine's speed: the kills that must land in each phase of the
// transaction are chosen from its own progress (the driver SIGKILLs itself at a numbered point of a
// clean run, tests/installer/txn_driver.cpp), and the random-moment kills are a fixed number of
// trials with no deadline, judged only by old set or new set.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "installer/install_target.hpp"
#include "tests/installer/wheel_factory.hpp"
#include "tests/support/txn_journal.hpp"
#include "util/subprocess.hpp"

namespace installer_crash_test {

using namespace envfix;
namespace fs = std::filesystem;

namespace {

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    // The points the driver prints are not wanted here.
    if (int null = ::open("/dev/null", O_WRONLY); null >= 0) ::dup2(null, 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Generous: one driver run takes well under a second; this only ends a hung one.
util::SubprocessResult driver(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {TXN_DRIVER};
  argv.insert(argv.end(), args.begin(), args.end());
  util::SubprocessOptions opt;
  opt.timeout = std::chrono::seconds(300);
  auto r = util::run_process(argv, opt);
  REQUIRE(r);
  return *r;
}

// One hook point of a clean run: "point <n> <step> [index]".
struct Point {
  unsigned long n = 0;
  std::string step;
  std::string phase() const {
    if (step == "unpack" || step == "hash" || step == "kernel-check") return "preparing";
    if (step == "prepared") return "prepared";
    if (step == "remove") return "removing";
    if (step == "install") return "installing";
    if (step == "verify") return "verifying";
    return "committed";
  }
};

std::vector<Point> parse_points(const std::string& out) {
  std::vector<Point> points;
  std::istringstream in(out);
  std::string word;
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    Point p;
    if (l >> word >> p.n >> p.step && word == "point") points.push_back(p);
  }
  return points;
}

// Per phase: its first and last point and up to `per_phase` in between, evenly spread.
std::vector<Point> kill_points(const std::vector<Point>& all, std::size_t per_phase) {
  std::map<std::string, std::vector<Point>> by_phase;
  for (const auto& p : all) by_phase[p.phase()].push_back(p);
  std::vector<Point> chosen;
  for (const auto& [phase, ps] : by_phase) {
    const std::size_t n = std::min(per_phase, ps.size());
    for (std::size_t k = 0; k < n; ++k) chosen.push_back(ps[n == 1 ? 0 : k * (ps.size() - 1) / (n - 1)]);
  }
  std::sort(chosen.begin(), chosen.end(), [](const Point& a, const Point& b) { return a.n < b.n; });
  chosen.erase(std::unique(chosen.begin(), chosen.end(), [](const Point& a, const Point& b) { return a.n == b.n; }),
               chosen.end());
  return chosen;
}

struct Tally {
  std::map<std::string, int> by_phase; // the journal's state at the kill
  int kills = 0, saw_old = 0, saw_new = 0, undone_mid_way = 0;
  std::string summary() const {
    std::string s = fmt::format("{} kills: {} old set, {} new set, {} undone mid-transaction; by phase:", kills, saw_old, saw_new,
                                undone_mid_way);
    for (const auto& [phase, n] : by_phase) s += fmt::format(" {} {}", phase.empty() ? "(none)" : phase, n);
    return s;
  }
};

using Manifest = std::map<std::string, std::string>;

// After a kill: the phase the journal was in, recover, then old set or new set (back to the old
// one for the next trial). Returns the phase, or nullopt on a mix (already reported).
std::optional<std::string> after_kill(const fs::path& venv, const std::vector<std::string>& known, const Manifest& old_set,
                                      const Manifest& new_set, const std::string& label, Tally& t) {
  const std::string phase = testing::txn_phase(venv, known);
  ++t.kills;
  ++t.by_phase[phase];
  auto rec = driver({"recover", venv.string(), "3.11"});
  INFO(label << ", phase " << phase << ": " << rec.err);
  REQUIRE(rec.ok());
  if (rec.out.find("undid interrupted") != std::string::npos) ++t.undone_mid_way;
  auto now = test::manifest(venv);
  if (now == old_set) {
    ++t.saw_old;
  } else if (now == new_set) {
    ++t.saw_new;
    auto back = driver({"rollback", venv.string(), "3.11"});
    INFO(back.err);
    REQUIRE(back.ok());
    REQUIRE(test::manifest(venv) == old_set);
  } else {
    FAIL_CHECK(label << " (phase " << phase << "): neither the old nor the new set:\n" << test::manifest_diff(old_set, now));
    return std::nullopt;
  }
  return phase;
}

} // namespace

TEST_SUITE("integration/installer/crash") {
  TEST_CASE("SIGKILL in every phase of the transaction and at random moments, then recover: old set or new set") {
    auto root = test::temp_dir("envfix-crash");
    auto venv = root / "venv";
    auto py = installer::create_venv(venv, "python3");
    REQUIRE(py);
    fs::create_directories(root / "old");
    fs::create_directories(root / "new");
    std::vector<std::string> old_args = {"apply", venv.string(), "3.11", "0", "0"};
    std::vector<std::string> new_args = {"apply", venv.string(), "3.11", "200", "0"};
    for (int i = 0; i < 3; ++i) {
      old_args.push_back(test::make_wheel(test::demo_spec(i, "1.0", 12), root / "old").string());
      new_args.push_back(test::make_wheel(test::demo_spec(i, "2.0", 12), root / "new").string());
    }
    // The interpreter's own layout must be the one the driver assumes.
    auto t = installer::InstallTarget::from_interpreter(*py);
    REQUIRE(t);
    REQUIRE(t->purelib == installer::InstallTarget::for_venv_layout(venv, 3, 11).purelib);

    auto r = driver(old_args);
    INFO(r.err);
    REQUIRE(r.ok());
    const auto old_set = test::manifest(venv);
    auto t0 = std::chrono::steady_clock::now();
    r = driver(new_args);
    auto full = std::chrono::steady_clock::now() - t0;
    REQUIRE(r.ok());
    const auto new_set = test::manifest(venv);
    REQUIRE(old_set != new_set);
    const auto points = parse_points(r.out);
    r = driver({"rollback", venv.string(), "3.11"});
    REQUIRE(r.ok());
    REQUIRE(test::manifest(venv) == old_set);

    // 1. At chosen points of the transaction's own progress: every phase, whatever the speed.
    const auto chosen = kill_points(points, 6);
    MESSAGE("a clean transaction passes " << points.size() << " points; killing at " << chosen.size() << " of them");
    Tally at_points;
    for (const auto& p : chosen) {
      auto args = new_args;
      args[4] = std::to_string(p.n); // <kill-at>
      args.insert(args.begin(), TXN_DRIVER);
      const auto known = testing::txn_ids(venv);
      pid_t pid = spawn(args);
      REQUIRE(pid > 0);
      int status = 0;
      REQUIRE(::waitpid(pid, &status, 0) == pid);
      const std::string label = fmt::format("kill at point {} ({})", p.n, p.step);
      REQUIRE_MESSAGE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL), label << ": the driver was not killed there");
      auto phase = after_kill(venv, known, old_set, new_set, label, at_points);
      if (!phase) break;
      // The journal says the phase the point belongs to: the kill landed where it was aimed.
      CHECK_MESSAGE(*phase == p.phase(), label);
    }
    MESSAGE("at points: " << at_points.summary());
    for (const char* phase : {"preparing", "prepared", "removing", "installing", "verifying", "committed"})
      CHECK_MESSAGE(at_points.by_phase[phase] > 0, "no kill in phase ", phase);
    CHECK(at_points.saw_old + at_points.saw_new == at_points.kills);
    CHECK(at_points.saw_new == at_points.by_phase["committed"]); // only a committed transaction keeps the new set
    CHECK(at_points.undone_mid_way ==
          at_points.by_phase["removing"] + at_points.by_phase["installing"] + at_points.by_phase["verifying"]);

    // 2. At random moments (SIGKILL from outside: also inside a step, not only between steps). A
    // fixed number of trials, judged only by the set they leave; the phase each landed in is shown.
    auto full_us = std::chrono::duration_cast<std::chrono::microseconds>(full).count();
    MESSAGE("an uninterrupted transaction takes " << full_us / 1000 << " ms");
    std::mt19937 rng(12345);
    std::uniform_int_distribution<long> when(0, full_us * 11 / 10);
    std::vector<std::string> spawn_args = {TXN_DRIVER};
    spawn_args.insert(spawn_args.end(), new_args.begin(), new_args.end());
    Tally random;
    for (int k = 0; k < 30; ++k) {
      const auto known = testing::txn_ids(venv);
      pid_t pid = spawn(spawn_args);
      REQUIRE(pid > 0);
      std::this_thread::sleep_for(std::chrono::microseconds(when(rng)));
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
      if (!after_kill(venv, known, old_set, new_set, fmt::format("random kill {}", k), random)) break;
    }
    MESSAGE("at random moments: " << random.summary());
    CHECK(random.saw_old + random.saw_new == random.kills);
    CHECK(random.kills == 30);
    std::error_code ec;
    fs::remove_all(root, ec);
  }
}

} // namespace installer_crash_test
