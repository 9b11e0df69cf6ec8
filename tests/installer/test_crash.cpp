// SIGKILL during a transaction, then recover(): the environment holds the old set or the new
// set, never a mix (docs/architecture.md, The transaction: Rollback, Recover). The transaction runs
// in tests/installer/txn_driver.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include "installer/install_target.hpp"
#include "tests/installer/wheel_factory.hpp"
#include "util/subprocess.hpp"

using namespace envfix;
namespace fs = std::filesystem;

namespace {

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

util::SubprocessResult driver(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {TXN_DRIVER};
  argv.insert(argv.end(), args.begin(), args.end());
  util::SubprocessOptions opt;
  opt.timeout = std::chrono::seconds(60);
  auto r = util::run_process(argv, opt);
  REQUIRE(r);
  return *r;
}

} // namespace

TEST_SUITE("integration") {
TEST_CASE("SIGKILL at random moments, then recover: old set or new set, never a mix") {
  auto root = test::temp_dir("envfix-crash");
  auto venv = root / "venv";
  auto py = installer::create_venv(venv, "python3");
  REQUIRE(py);
  fs::create_directories(root / "old");
  fs::create_directories(root / "new");
  std::vector<std::string> old_args = {"apply", venv.string(), "3.11", "0"};
  std::vector<std::string> new_args = {"apply", venv.string(), "3.11", "200"};
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
  r = driver({"rollback", venv.string(), "3.11"});
  REQUIRE(r.ok());
  REQUIRE(test::manifest(venv) == old_set);

  auto full_us = std::chrono::duration_cast<std::chrono::microseconds>(full).count();
  MESSAGE("an uninterrupted transaction takes " << full_us / 1000 << " ms");
  std::mt19937 rng(12345);
  std::uniform_int_distribution<long> when(0, full_us * 11 / 10);
  int kills = 0, saw_old = 0, saw_new = 0, undone_mid_way = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(100);
  std::vector<std::string> spawn_args = {TXN_DRIVER};
  spawn_args.insert(spawn_args.end(), new_args.begin(), new_args.end());
  for (int k = 0; k < 50 && std::chrono::steady_clock::now() < deadline; ++k) {
    pid_t pid = spawn(spawn_args);
    REQUIRE(pid > 0);
    std::this_thread::sleep_for(std::chrono::microseconds(when(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ++kills;
    auto rec = driver({"recover", venv.string(), "3.11"});
    INFO(rec.err);
    REQUIRE(rec.ok());
    if (rec.out.find("undid interrupted") != std::string::npos) ++undone_mid_way;
    auto now = test::manifest(venv);
    if (now == old_set) {
      ++saw_old;
    } else if (now == new_set) {
      ++saw_new;
      auto back = driver({"rollback", venv.string(), "3.11"});
      INFO(back.err);
      REQUIRE(back.ok());
      REQUIRE(test::manifest(venv) == old_set);
    } else {
      FAIL_CHECK("kill " << k << ": neither the old nor the new set:\n" << test::manifest_diff(old_set, now));
      break;
    }
  }
  MESSAGE(kills << " kills: " << saw_old << " old set, " << saw_new << " new set, " << undone_mid_way
                << " undone mid-transaction");
  CHECK(kills >= 50);
  CHECK(saw_old + saw_new == kills);
  CHECK(undone_mid_way > 0);
  std::error_code ec;
  fs::remove_all(root, ec);
}
}
