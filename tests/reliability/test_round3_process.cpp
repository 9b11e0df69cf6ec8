// Issue 42, items 4a, 5 and 6b: the real envfix binary against the nginx-served "bulk" index
// (tests/reliability/apply_harness.hpp): two concurrent applies on one venv, the child processes of
// `verify --app` and of the smoke test (their session, the grandchildren they leave, SIGTERM to
// envfix), and the index credentials those children must not see.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "tests/reliability/apply_harness.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"

namespace reliability_round3_process_test {

namespace {

namespace fs = std::filesystem;
using namespace envfix::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Alive = in /proc and not a zombie (an orphan's zombie waits for whoever reaps in this container).
bool alive(pid_t pid) {
  auto stat = envfix::util::read_file(fmt::format("/proc/{}/stat", pid));
  if (!stat) return false;
  auto close = stat->rfind(')');
  return close != std::string::npos && close + 2 < stat->size() && (*stat)[close + 2] != 'Z';
}

// Polls for up to `bound` until the process is gone.
bool gone_within(pid_t pid, std::chrono::milliseconds bound) {
  auto end = Clock::now() + bound;
  while (alive(pid)) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// The pid a child wrote to `file`, once it has (0 after `bound`).
pid_t pid_from(const fs::path& file, std::chrono::milliseconds bound) {
  auto end = Clock::now() + bound;
  while (Clock::now() < end) {
    if (auto t = envfix::util::read_file(file); t && !t->empty() && t->back() != ' ') {
      try {
        return static_cast<pid_t>(std::stol(*t));
      } catch (...) {
      }
    }
    std::this_thread::sleep_for(20ms);
  }
  return 0;
}

bool contains(const std::string& hay, std::string_view needle) { return hay.find(needle) != std::string::npos; }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<std::string> verify_argv(const ApplyWorld& w, const fs::path& venv, const std::string& app, int timeout_s) {
  return w.envfix_argv({"verify", "--framework", "bulk", "--matrices", (w.root() / "matrices").string(), "--gpu", "sm_90",
                        "--driver", "580.65.06", "--python", (venv / "bin/python").string(), "--layers", "app", "--app", app,
                        "--timeout", std::to_string(timeout_s)});
}

// Kills what a failing run of the test left (so a red test does not leave `sleep 1000` behind).
void reap(pid_t pid) {
  if (pid > 0 && alive(pid)) ::kill(pid, SIGKILL);
}

} // namespace

TEST_CASE("round3 5: verify --app and the smoke test run in their own session, which envfix ends on exit, SIGTERM and failure" *
          doctest::test_suite("integration/reliability/round3_process")) {
  ApplyWorld w;
  auto ve = w.venv("venv");
  REQUIRE(w.run(w.apply_argv(ve, "1.0.0")).rc == 0);

  SUBCASE("an app whose background grandchild keeps stdout open: the app's exit ends the wait, the grandchild is stopped") {
    const auto pidfile = w.root() / "grandchild.pid";
    const std::string app = fmt::format("sh -c 'echo $$ > {}; exec sleep 1000' & echo started", pidfile.string());
    // Had verify waited for the grandchild's stdout, the app would time out (--timeout 120, far
    // beyond the app's own instant) and verify fail: rc 0 and no timeout say the exit ended it,
    // whatever the machine's speed.
    auto t0 = Clock::now();
    auto r = w.run(verify_argv(w, ve, app, 120), {}, 400s);
    const double took = seconds_since(t0);
    const pid_t grandchild = pid_from(pidfile, 60s);
    INFO("verify took " << took << " s; grandchild " << grandchild << "\n" << r.err);
    CHECK(r.rc == 0);
    CHECK_FALSE(contains(r.err + r.out, "timed out"));
    REQUIRE(grandchild > 0);
    CHECK(gone_within(grandchild, 60s)); // killed before verify returned; the bound only allows for reaping
    reap(grandchild);
  }

  // Issue 60, 6: a descendant that leaves the app's session (setsid) is orphaned when the app exits;
  // envfix is the subreaper that adopts it, and stops it with the session's leftovers.
  SUBCASE("an app whose grandchild leaves its session (setsid) and outlives it: adopted and stopped") {
    const auto pidfile = w.root() / "escaped.pid";
    const std::string app = fmt::format(
        "setsid sh -c 'echo $$ > {}; exec sleep 1000' </dev/null >/dev/null 2>&1 & sleep 1; echo started", pidfile.string());
    auto r = w.run(verify_argv(w, ve, app, 120), {}, 400s);
    const pid_t escaped = pid_from(pidfile, 60s);
    INFO(r.err);
    CHECK(r.rc == 0);
    REQUIRE(escaped > 0);
    CHECK(gone_within(escaped, 60s));
    reap(escaped);
  }

  // SIGTERM: envfix kills the app's group and exits 143. Issue 60, 6: no handler runs when envfix
  // is SIGKILLed (the OOM killer, `kill -9`, a CI job's timeout): its children get SIGKILL from the
  // kernel (PR_SET_PDEATHSIG) instead of running on as orphans that hold the GPU.
  SUBCASE("SIGTERM or SIGKILL to envfix during verify --app: the app ends with it") {
    for (const int sig : {SIGTERM, SIGKILL}) {
      const auto pidfile = w.root() / fmt::format("app-{}.pid", sig);
      auto b = w.spawn(verify_argv(w, ve, fmt::format("echo $$ > {}; exec sleep 1000", pidfile.string()), 120));
      const pid_t app = pid_from(pidfile, 300s);
      REQUIRE(app > 0);
      REQUIRE(::kill(b->pid(), sig) == 0);
      auto r = b->wait(300s);
      INFO("signal " << sig << ": " << r.err);
      CHECK(r.rc == (sig == SIGTERM ? 143 : -1));
      CHECK(r.term_signal == (sig == SIGTERM ? 0 : SIGKILL));
      CHECK(gone_within(app, 60s));
      reap(app);
    }
  }

  SUBCASE("a failed smoke test's grandchild is reported (pid, command) and stopped before the rollback completes") {
    const auto before = manifest(ve);
    const auto pidfile = w.root() / "smoke-grandchild.pid";
    // Had envfix waited for the grandchild (it sleeps 1000 s), the step would time out at 300 s: the
    // failure's own text, not a time bound, tells that it did not.
    auto t0 = Clock::now();
    auto r = w.run(w.apply_argv(ve, "2.0.0", {}, {"--smoke-timeout", "300"}),
                   {.env = {{"SMOKE_GRANDCHILD", pidfile.string()}, {"SMOKE_FAIL", "1"}}}, 500s);
    const double took = seconds_since(t0);
    const pid_t grandchild = pid_from(pidfile, 60s);
    INFO("apply took " << took << " s; grandchild " << grandchild << "\n" << r.err);
    CHECK(r.rc == 2);
    CHECK(contains(r.err, "smoke fixture failure"));
    CHECK_FALSE(contains(r.err, "timed out"));
    REQUIRE(grandchild > 0);
    CHECK(r.err.find(fmt::format("pid {}", grandchild)) != std::string::npos);
    CHECK(r.err.find("sleep 1000") != std::string::npos);
    CHECK(r.err.find("rolled back") != std::string::npos);
    CHECK_FALSE(alive(grandchild));
    CHECK(manifest(ve) == before);
    reap(grandchild);
  }
}

TEST_CASE(
    "issue 60 (6): SIGTERM and SIGINT to envfix doctor during its repro end the repro's interpreter; envfix exits 128 + the signal" *
    doctest::test_suite("integration/reliability/round3_process")) {
  ApplyWorld w;
  auto ve = w.venv("venv");
  REQUIRE(w.run(w.apply_argv(ve, "1.0.0")).rc == 0);
  for (int sig : {SIGTERM, SIGINT}) {
    CAPTURE(sig);
    const auto pidfile = w.root() / fmt::format("repro-{}.pid", sig);
    // Step A writes its pid, then sleeps far beyond any run: only the signal can end it.
    auto b = w.spawn(w.envfix_argv({"doctor", "--framework", "bulk", "--matrices", (w.root() / "matrices").string(), "--gpu",
                                    "sm_90", "--driver", "580.65.06", "--python", (ve / "bin/python").string()}),
                     {.env = {{"SMOKE_PIDFILE", pidfile.string()}, {"SMOKE_SLEEP", "3600"}}});
    const pid_t repro = pid_from(pidfile, 300s);
    REQUIRE(repro > 0);
    REQUIRE(::kill(b->pid(), sig) == 0);
    auto r = b->wait(300s);
    INFO(r.err);
    CHECK(r.rc == 128 + sig);
    CHECK(r.term_signal == 0); // envfix ended itself, after stopping the repro
    CHECK(contains(r.err, "interrupted"));
    CHECK(gone_within(repro, 60s));
    reap(repro);
  }
}

TEST_CASE("round3 6: the smoke test and verify --app see no index credentials from envfix's environment" *
          doctest::test_suite("integration/reliability/round3_process")) {
  ApplyWorld w;
  auto ve = w.venv("venv");
  const std::map<std::string, std::string> creds{
      {"ENVFIX_MIRROR", "https://user:secret1@mirror.invalid/"},
      {"PIP_INDEX_URL", "https://u:secret2@pypi.invalid/simple"},
      {"PIP_EXTRA_INDEX_URL", "https://plain.invalid/simple https://t:secret3@extra.invalid/simple"},
      {"UV_DEFAULT_INDEX", "https://__token__:secret4@uv.invalid/simple"},
      {"ROUND3_KEEP", "kept"}};
  SpawnOptions so{.env = creds};
  so.env["SMOKE_ENV_OUT"] = (w.root() / "smoke-env.txt").string();
  REQUIRE(w.run(w.apply_argv(ve, "1.0.0"), so).rc == 0);
  const auto smoke_env = envfix::util::read_file(w.root() / "smoke-env.txt").value_or("");
  INFO(smoke_env);
  CHECK(smoke_env.find("ROUND3_KEEP") != std::string::npos);
  CHECK(smoke_env.find("secret") == std::string::npos);

  const auto app_env_file = w.root() / "app-env.txt";
  auto r = w.run(verify_argv(w, ve, "env > " + app_env_file.string(), 60), {.env = creds});
  CHECK(r.rc == 0);
  const auto app_env = envfix::util::read_file(app_env_file).value_or("");
  INFO(app_env);
  CHECK(app_env.find("ROUND3_KEEP=kept") != std::string::npos);
  CHECK(app_env.find("secret") == std::string::npos);
}

TEST_CASE("round3 4: a second apply on the same venv waits for the lock, then plans on the state the first left" *
          doctest::test_suite("integration/reliability/round3_process")) {
  ApplyWorld w;
  auto ve = w.venv("venv");
  REQUIRE(w.run(w.apply_argv(ve, "1.0.0")).rc == 0);
  // The first apply installs 2.0.0, holds the lock through its smoke test (SMOKE_SLEEP), which fails:
  // it rolls back to 1.0.0. The second starts during that smoke test, when 2.0.0's files are in place;
  // planned then, it would say "nothing to do" and leave 1.0.0 behind.
  const auto pidfile = w.root() / "smoke.pid";
  auto first = w.spawn(w.apply_argv(ve, "2.0.0"),
                       {.env = {{"SMOKE_PIDFILE", pidfile.string()}, {"SMOKE_SLEEP", "4"}, {"SMOKE_FAIL", "1"}}});
  REQUIRE(pid_from(pidfile, 60s) > 0);
  auto second = w.spawn(w.apply_argv(ve, "2.0.0"));
  auto r1 = first->wait(120s);
  auto r2 = second->wait(120s);
  INFO("first:\n" << r1.err << "\nsecond:\n" << r2.out << r2.err);
  CHECK(r1.rc == 2);
  CHECK(r2.rc == 0);
  const std::string both = r2.out + r2.err;
  CHECK(both.find(fmt::format("waiting for the lock on {} held by pid {}", ve.string(), first->pid())) != std::string::npos);
  CHECK(both.find("Nothing to do") == std::string::npos);
  auto version = envfix::util::run_process({(ve / "bin/python").string(), "-c", "import bulk; print(bulk.VERSION)"});
  REQUIRE(version);
  CHECK(version->out == "2\n");
  auto check = envfix::util::run_process({"python3", "-m", "pip", "--python", (ve / "bin/python").string(), "check"},
                                         {.timeout = std::chrono::seconds(600)});
  REQUIRE(check);
  CHECK_MESSAGE(check->ok(), (check->out + check->err));
}

} // namespace reliability_round3_process_test
