// SIGKILL at random moments of a real three-wheel `envfix apply` (bulk 3.0.0 + helper + tail over
// bulk 1.0.0), then `envfix recover`: the venv holds the old set or the new set, never a mix
// (docs/reliability.md, §6; docs/architecture.md, The transaction). Unlike SIGINT/SIGTERM
// (tests/reliability/test_apply_faults.cpp) nothing of envfix runs after the kill: only the journal
// and the next run's recovery decide. ENVFIX_KILL_TRIALS sets the count (CI: 8; the documented run: 20).
#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "tests/reliability/apply_harness.hpp"

namespace reliability_apply_kill_test {

using namespace envfix;
using namespace envfix::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

int trial_count() {
  const char* v = std::getenv("ENVFIX_KILL_TRIALS");
  int n = v ? std::atoi(v) : 0;
  return n > 0 ? n : 8;
}

// Wall time of one uninterrupted apply of the new set (then rolled back to the old one).
std::chrono::microseconds timed_apply(ApplyWorld& w, const fs::path& ve, const fs::path& cache, const Manifest& old_set) {
  auto t0 = std::chrono::steady_clock::now();
  auto r = w.run(w.apply_argv(ve, "3.0.0", cache), {});
  auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  REQUIRE(w.run(w.envfix_argv({"rollback", "--python", (ve / "bin/python").string()})).rc == 0);
  REQUIRE(manifest(ve) == old_set);
  return took;
}

} // namespace

TEST_SUITE("integration/reliability/apply_kill") {
  TEST_CASE("round3 kill: SIGKILL at random moments of a three-wheel apply, then recover: old set or new set") {
    ApplyWorld w;
    auto ve = w.venv("venv");
    const auto py = (ve / "bin/python").string();
    REQUIRE(w.run(w.apply_argv(ve, "1.0.0")).rc == 0);
    const auto old_set = manifest(ve);
    REQUIRE(w.run(w.apply_argv(ve, "3.0.0")).rc == 0);
    const auto new_set = manifest(ve);
    for (const char* d : {"bulk-3.0.0+cu128.dist-info", "helper-1.0.dist-info", "tail-1.0.dist-info"}) {
      bool found = false;
      for (const auto& [k, v] : new_set) found = found || k.find(d) != std::string::npos;
      REQUIRE_MESSAGE(found, d);
    }
    REQUIRE(w.run(w.envfix_argv({"rollback", "--python", py})).rc == 0);
    REQUIRE(manifest(ve) == old_set);
    const auto warm = timed_apply(w, ve, w.cache(), old_set);
    const auto cold = timed_apply(w, ve, w.root() / "cache-timing", old_set);
    MESSAGE("uninterrupted apply: warm " << warm.count() / 1000 << " ms, cold " << cold.count() / 1000 << " ms");

    const int trials = trial_count();
    std::mt19937 rng(20261203);
    int saw_old = 0, saw_new = 0, mixed = 0;
    for (int k = 0; k < trials; ++k) {
      // Every third trial starts from an empty cache, so the kill can land in a download or an unpack.
      const bool is_cold = k % 3 == 2;
      const auto span = (is_cold ? cold : warm).count();
      const auto delay = std::chrono::microseconds(std::uniform_int_distribution<long>(0, span * 11 / 10)(rng));
      auto cache = is_cold ? w.root() / fmt::format("cache-kill-{}", k) : w.cache();
      auto child = w.spawn(w.apply_argv(ve, "3.0.0", cache));
      std::this_thread::sleep_for(delay);
      const std::string phase = txn_phase(ve);
      if (!child->exited()) ::kill(child->pid(), SIGKILL); // never a reaped (maybe reused) pid
      auto r = child->wait(60s);
      const std::string label =
          fmt::format("trial {} ({}, kill at {} ms, phase '{}', {})", k, is_cold ? "cold" : "warm", delay.count() / 1000, phase,
                      r.term_signal == SIGKILL ? "killed" : fmt::format("exit {}", r.rc));
      auto rec = w.run(w.envfix_argv({"recover", "--python", py}));
      CHECK_MESSAGE(rec.rc == 0, label << ": recover: " << rec.err);
      auto now = manifest(ve);
      std::string outcome;
      if (now == old_set) {
        outcome = "old set";
        ++saw_old;
      } else if (now == new_set) {
        outcome = "new set";
        ++saw_new;
      } else {
        ++mixed;
        FAIL_CHECK(label << ": neither the old nor the new set:\n" << manifest_diff(old_set, now));
        break;
      }
      MESSAGE(label << " -> recover: " << outcome);
      CHECK_MESSAGE((txn_phase(ve).empty() || txn_phase(ve) == "committed"), label);
      // The venv must still work as the set it holds, and the next apply must run normally.
      auto next = w.run(w.apply_argv(ve, "3.0.0"));
      CHECK_MESSAGE(next.rc == 0, label << ": the next apply: " << next.err);
      CHECK_MESSAGE(manifest(ve) == new_set, label);
      REQUIRE(w.run(w.envfix_argv({"rollback", "--python", py})).rc == 0);
      REQUIRE(manifest(ve) == old_set);
    }
    MESSAGE(trials << " SIGKILL trials: " << saw_old << " old set, " << saw_new << " new set, " << mixed << " mixed");
    CHECK(saw_old + saw_new == trials);
    CHECK(mixed == 0);
  }
}

} // namespace reliability_apply_kill_test
