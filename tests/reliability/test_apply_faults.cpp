// Faults during `envfix apply`, end to end with the real binary (issue 10, docs/reliability.md §3):
// a full disk (RLIMIT_FSIZE, and a small tmpfs holding the venv at many fill levels), a file and a
// directory in site-packages that even root cannot change (chattr +i, a read-only bind mount), a smoke
// test that hangs, and SIGINT/SIGTERM at every phase. After each: the venv is byte-identical (paths,
// types, modes, sha256) to before, or — only when the signal came after the commit — to the new set.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "tests/reliability/apply_harness.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"

namespace reliability_apply_faults_test {

using namespace envfix;
using namespace envfix::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& hay, std::string_view needle) { return hay.find(needle) != std::string::npos; }

std::string first_error_line(const std::string& err) {
  auto at = err.find("error: ");
  if (at == std::string::npos) return "(no error line)";
  return err.substr(at, err.find('\n', at) - at);
}

bool dist_installed(const fs::path& venv, const std::string& dist_info) {
  return fs::exists(venv / "lib/python3.11/site-packages" / dist_info);
}

fs::path site(const fs::path& venv) { return venv / "lib/python3.11/site-packages"; }

// The venv is exactly `expect`, and no unfinished transaction is left beside it (a kept backup of a
// committed one may stay).
void check_unchanged(const fs::path& venv, const Manifest& expect, const std::string& what) {
  auto now = manifest(venv);
  CHECK_MESSAGE(now == expect, what << ": venv differs:\n" << manifest_diff(expect, now));
  auto phase = txn_phase(venv);
  CHECK_MESSAGE((phase.empty() || phase == "committed"), what << ": transaction left in state " << phase);
}

struct Statfs {
  unsigned long long used_bytes, used_inodes;
};
Statfs statfs_of(const fs::path& p) {
  struct statvfs s = {};
  REQUIRE(::statvfs(p.c_str(), &s) == 0);
  return {(s.f_blocks - s.f_bfree) * s.f_frsize, s.f_files - s.f_ffree};
}

bool remount(const fs::path& mnt, const std::string& opts) {
  return ::mount("tmpfs", mnt.c_str(), "tmpfs", MS_REMOUNT, opts.c_str()) == 0;
}

} // namespace

TEST_SUITE("integration/reliability/apply_faults") {

  TEST_CASE("full disk: RLIMIT_FSIZE during unpack and during download; the venv is untouched, the next apply works") {
    ApplyWorld w;
    auto ve = w.venv("venv");
    REQUIRE(w.run(w.apply_argv(ve, "1.0.0")).rc == 0);
    const auto before = manifest(ve);
    // The new wheels in the cache, so the limited run gets past the download and fails unpacking.
    auto warm = w.venv("warm");
    REQUIRE(w.run(w.apply_argv(warm, "2.0.0")).rc == 0);
    fs::remove_all(w.cache() / "unpacked-v1"); // but not unpacked: the unpack must write the big member

    SpawnOptions limited;
    limited.fsize_limit = 512 * 1024; // the 1 MiB bulk/_pad.bin cannot be written
    auto r = w.run(w.apply_argv(ve, "2.0.0"), limited);
    CHECK(r.term_signal == 0); // SIGXFSZ ignored: write() failed with EFBIG instead of killing envfix
    CHECK(r.rc == 2);
    CHECK(contains(r.err, "bulk/_pad.bin"));
    CHECK(contains(r.err, "File too large"));
    CHECK(contains(r.err, "hint: "));
    check_unchanged(ve, before, "RLIMIT_FSIZE while unpacking");

    // Cold cache: the wheel itself cannot be downloaded.
    auto d = w.run(w.apply_argv(ve, "2.0.0", w.root() / "cold-cache"), limited);
    CHECK(d.term_signal == 0);
    CHECK(d.rc == 2);
    CHECK(contains(d.err, "bulk-2.0.0+cu128"));
    CHECK(contains(d.err, "File too large"));
    CHECK(contains(d.err, "hint: "));
    check_unchanged(ve, before, "RLIMIT_FSIZE while downloading");

    auto again = w.run(w.apply_argv(ve, "2.0.0", w.root() / "cold-cache"));
    CHECK(again.rc == 0);
    CHECK(dist_installed(ve, "bulk-2.0.0+cu128.dist-info"));
    CHECK(dist_installed(ve, "helper-1.0.dist-info"));
  }

  TEST_CASE("full disk: a small tmpfs under the venv, filled to many levels (bytes and inodes)") {
    if (auto why = enter_private_mount_namespace()) {
      MESSAGE("SKIP tmpfs cases: " << *why);
      return;
    }
    ApplyWorld w;
    auto mnt = w.root() / "disk";
    fs::create_directories(mnt);
    REQUIRE_MESSAGE(::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64m,nr_inodes=100000") == 0, std::strerror(errno));
    struct Unmount {
      fs::path p;
      ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
    } unmount{mnt};

    auto ve = w.make_venv_at(mnt / "venv");
    REQUIRE(w.run(w.apply_argv(ve, "1.0.0")).rc == 0);
    const auto before = manifest(ve);
    // Reference: the new set on unlimited space, then `envfix rollback` back to the old one.
    const auto base = statfs_of(mnt);
    REQUIRE(w.run(w.apply_argv(ve, "2.0.0")).rc == 0);
    const auto after = manifest(ve);
    const auto grown = statfs_of(mnt);
    REQUIRE(w.run(w.envfix_argv({"rollback", "--python", (ve / "bin/python").string()})).rc == 0);
    REQUIRE(manifest(ve) == before);

    int failed = 0, succeeded = 0;
    std::map<std::string, int> where;
    auto attempt = [&](const std::string& opts, const std::string& label, const fs::path& cache = {}) {
      REQUIRE_MESSAGE(remount(mnt, opts), label << ": remount " << opts << ": " << std::strerror(errno));
      auto r = w.run(w.apply_argv(ve, "2.0.0", cache), {}, 600s);
      REQUIRE(remount(mnt, "size=64m,nr_inodes=100000"));
      if (!cache.empty()) fs::remove_all(cache);
      if (r.rc == 0) {
        ++succeeded;
        CHECK_MESSAGE(manifest(ve) == after, label);
        REQUIRE(w.run(w.envfix_argv({"rollback", "--python", (ve / "bin/python").string()})).rc == 0);
        REQUIRE(manifest(ve) == before);
        return;
      }
      ++failed;
      CHECK_MESSAGE(r.rc == 2, label);
      CHECK_MESSAGE(r.term_signal == 0, label);
      CHECK_MESSAGE(contains(r.err, "No space left on device"), label);
      CHECK_MESSAGE(contains(r.err, "hint: "), label);
      CHECK_MESSAGE(contains(r.err, mnt.string()), label << ": the error names the file"); // a path on the full disk
      check_unchanged(ve, before, label);
      // Where it hit: mid-unpack (staging), writing the journal, or mid-install (undone by rollback).
      std::string at = contains(r.err, "rolled back")                                     ? "mid-install, rolled back"
                       : contains(r.err, "/staging/")                                     ? "mid-unpack into staging"
                       : contains(r.err, "unpacked-v1")                                   ? "mid-unpack into the cache"
                       : contains(r.err, "could not download")                            ? "mid-download"
                       : contains(r.err, "ops.json") || contains(r.err, "temporary file") ? "writing the journal"
                                                                                          : first_error_line(r.err);
      where[at]++;
    };

    // Bytes: free space from nothing to a little more than the transaction needs.
    const auto need = grown.used_bytes > base.used_bytes ? grown.used_bytes - base.used_bytes : 0;
    for (unsigned long long k : {0ull, 8192ull, 65536ull, need / 4, need / 2, need * 3 / 4, need, need + need / 4, need * 2}) {
      auto used = statfs_of(mnt).used_bytes;
      attempt(fmt::format("size={}", used + k), fmt::format("bytes free {}", k));
    }
    // Inodes: around what the transaction needs, in steps of 3, so the last staged files, the new
    // directories made while installing and the journal writes each get their turn to fail.
    const auto inodes = grown.used_inodes - base.used_inodes;
    for (long long f = static_cast<long long>(inodes) - 12; f <= static_cast<long long>(inodes) + 30; f += 3) {
      if (f < 0) continue;
      auto used = statfs_of(mnt).used_inodes;
      attempt(fmt::format("nr_inodes={}", used + static_cast<unsigned long long>(f)), fmt::format("inodes free {}", f));
    }
    // The cache on the same small disk: downloads and the unpacked cache run out of room too.
    for (unsigned long long k : {65536ull, 1ull << 20, 3ull << 20}) {
      auto used = statfs_of(mnt).used_bytes;
      attempt(fmt::format("size={}", used + k), fmt::format("cache on the disk, bytes free {}", k), mnt / "cache");
    }
    std::string summary;
    for (const auto& [k, n] : where) summary += fmt::format("  {} x {}\n", n, k);
    MESSAGE("tmpfs sweep: " << failed << " failed cleanly, " << succeeded << " succeeded\n" << summary);
    CHECK(failed >= 8);
    CHECK(succeeded >= 1);
    // The next apply on a disk with room works.
    CHECK(w.run(w.apply_argv(ve, "2.0.0")).rc == 0);
    CHECK(manifest(ve) == after);
  }

  TEST_CASE("a file and a directory in site-packages that root cannot change: refused, rolled back, named") {
    ApplyWorld w;
    auto ve = w.venv("venv");
    REQUIRE(w.run(w.apply_argv(ve, "1.0.0")).rc == 0);
    const auto before = manifest(ve);
    auto attrs = [](const std::string& flag, const fs::path& p) {
      return util::run_process({"chattr", flag, p.string()}).value();
    };
    // chattr works on ext4/xfs/btrfs, not on tmpfs or overlayfs: probe on a scratch file first.
    const auto probe = w.root() / "chattr-probe";
    REQUIRE(util::write_file_atomic(probe, "x", 0644));
    const bool have_chattr = attrs("+i", probe).ok();
    if (have_chattr)
      (void)attrs("-i", probe);
    else
      MESSAGE("SKIP chattr cases: chattr +i is not supported on " << w.root());
    int tried = 0;

    // Each obstacle in turn, on the same venv: the apply fails in the remove phase, rolls back, and
    // names the file; "the next run works" is the apply after the last one.
    if (have_chattr) {
      auto f = site(ve) / "bulk/b/m050.py"; // an immutable file owned by the set being removed
      REQUIRE(attrs("+i", f).ok());
      auto r = w.run(w.apply_argv(ve, "2.0.0"));
      REQUIRE(attrs("-i", f).ok());
      CHECK(r.rc == 2);
      CHECK(contains(r.err, f.string()));
      CHECK(contains(r.err, "Operation not permitted"));
      CHECK(contains(r.err, "chattr -i"));
      CHECK(contains(r.err, "rolled back"));
      check_unchanged(ve, before, "immutable file");
      ++tried;

      auto d = site(ve) / "bulk/c"; // an immutable directory: its entries cannot be renamed away
      REQUIRE(attrs("+i", d).ok());
      r = w.run(w.apply_argv(ve, "2.0.0"));
      REQUIRE(attrs("-i", d).ok());
      CHECK(r.rc == 2);
      CHECK(contains(r.err, d.string() + "/"));
      CHECK(contains(r.err, "Operation not permitted"));
      check_unchanged(ve, before, "immutable directory");
      ++tried;
    }
    if (auto why = enter_private_mount_namespace()) {
      MESSAGE("SKIP read-only bind mount: " << *why);
    } else {
      auto d = site(ve) / "bulk/a"; // a read-only bind mount of one package directory
      REQUIRE(::mount(d.c_str(), d.c_str(), nullptr, MS_BIND, nullptr) == 0);
      REQUIRE(::mount(nullptr, d.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0);
      auto r = w.run(w.apply_argv(ve, "2.0.0"));
      REQUIRE(::umount2(d.c_str(), 0) == 0);
      CHECK(r.rc == 2);
      CHECK(contains(r.err, d.string() + "/"));
      CHECK(contains(r.err, "hint: "));
      check_unchanged(ve, before, "read-only bind mount");
      ++tried;
    }
    // The obstacles gone, the same apply works.
    auto ok = w.run(w.apply_argv(ve, "2.0.0"));
    CHECK(ok.rc == 0);
    CHECK(dist_installed(ve, "bulk-2.0.0+cu128.dist-info"));
    MESSAGE(tried << " obstacles tried");
  }

  // Issue 60, 7: a warm cache mounted read-only (a CI image's baked-in cache, a shared read-only
  // volume) serves read-only: the entry locks it cannot create are not needed where no one can write,
  // and nothing is downloaded again into a private temporary cache.
  TEST_CASE("a warm cache on a read-only mount serves the next apply read-only") {
    ApplyWorld w;
    auto warm = w.venv("warm");
    REQUIRE(w.run(w.apply_argv(warm, "1.0.0")).rc == 0);
    auto ve = w.venv("venv");
    if (auto why = enter_private_mount_namespace()) {
      MESSAGE("SKIP read-only cache: " << *why);
      return;
    }
    const auto c = w.cache();
    REQUIRE(::mount(c.c_str(), c.c_str(), nullptr, MS_BIND, nullptr) == 0);
    REQUIRE(::mount(nullptr, c.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0);
    auto r = w.run(w.apply_argv(ve, "1.0.0"));
    REQUIRE(::umount2(c.c_str(), 0) == 0);
    INFO(r.err);
    CHECK(r.rc == 0);
    CHECK(dist_installed(ve, "bulk-1.0.0+cu128.dist-info"));
    CHECK_FALSE(contains(r.err, "temporary cache"));
    CHECK(contains(r.err, "from the unpacked cache"));
  }

  TEST_CASE("a smoke test that hangs: killed at --smoke-timeout, rolled back, and the next run is clean") {
    ApplyWorld w;
    auto ve = w.venv("venv");
    REQUIRE(w.run(w.apply_argv(ve, "1.0.0")).rc == 0);
    const auto before = manifest(ve);
    const auto pidfile = w.root() / "smoke.pid";
    SpawnOptions hang;
    hang.env = {{"SMOKE_SLEEP", "3600"}, {"SMOKE_PIDFILE", pidfile.string()}};
    // The smoke test would sleep an hour: the bound only catches envfix waiting for it, and leaves a
    // loaded machine all the time it needs for the rest of the apply.
    auto r = w.run(w.apply_argv(ve, "2.0.0", {}, {"--smoke-timeout", "2"}), hang, 400s);
    CHECK(!r.timed_out);
    CHECK(r.rc == 2);
    CHECK(contains(r.err, "smoke test CPU step timed out after 2"));
    CHECK(contains(r.err, "rolled back"));
    check_unchanged(ve, before, "hanging smoke test");
    // The smoke test's interpreter is gone, not left sleeping.
    auto pid_text = util::read_file(pidfile);
    REQUIRE(pid_text);
    pid_t pid = std::stoi(*pid_text);
    CHECK((::kill(pid, 0) != 0 && errno == ESRCH));

    auto rec = w.run(w.envfix_argv({"recover", "--python", (ve / "bin/python").string()}));
    CHECK(rec.rc == 0);
    CHECK(contains(rec.out + rec.err, "Nothing to recover"));
    auto ok = w.run(w.apply_argv(ve, "2.0.0", {}, {"--smoke-timeout", "60"}));
    CHECK(ok.rc == 0);
    CHECK(contains(ok.err, "Smoke test passed on the CPU (planned GPUs (--gpu) are not this machine's): CPU step"));
  }

  TEST_CASE("SIGINT and SIGTERM to envfix apply at every phase: the old set or (after commit) the new set, never a mix") {
    ApplyWorld w;
    auto ve = w.venv("venv");
    const auto py = (ve / "bin/python").string();
    REQUIRE(w.run(w.apply_argv(ve, "1.0.0")).rc == 0);
    const auto old_set = manifest(ve);
    REQUIRE(w.run(w.apply_argv(ve, "2.0.0")).rc == 0);
    const auto new_set = manifest(ve);
    REQUIRE(w.run(w.envfix_argv({"rollback", "--python", py})).rc == 0);
    REQUIRE(manifest(ve) == old_set);

    struct Trial {
      int sig;
      std::string at;    // phase to wait for: "start+<ms>", "preparing", "removing", "installing", "verifying"
      bool cold = false; // empty cache: the signal lands in the download
    };
    std::vector<Trial> trials;
    std::mt19937 rng(20261129);
    for (int sig : {SIGINT, SIGTERM}) {
      trials.push_back({sig, "start+0", true});
      trials.push_back({sig, fmt::format("start+{}", 50 + rng() % 250), true});
      trials.push_back({sig, "preparing", true}); // cold: the unpack into the cache is part of it
      trials.push_back({sig, "removing"});
      trials.push_back({sig, "installing"});
      trials.push_back({sig, "verifying"});
      for (int i = 0; i < 3; ++i) trials.push_back({sig, fmt::format("start+{}", rng() % 1500)});
    }
    std::map<std::string, int> outcomes;
    int n = 0, rolled_back = 0;
    for (const auto& t : trials) {
      ++n;
      const std::string label = fmt::format("trial {}: {} at {}", n, t.sig == SIGINT ? "SIGINT" : "SIGTERM", t.at);
      auto kept = txn_ids(ve);
      const std::string backup_id = kept.empty() ? "" : kept.back();
      SpawnOptions so;
      // The verify phase is made long (a slow smoke test) so a signal can land in it; envfix must not
      // wait for the smoke test to finish before it rolls back (the bound on `took` below).
      so.env = {{"SMOKE_SLEEP", t.at == "verifying" ? "300" : "0.3"}};
      auto cache = t.cold ? w.root() / fmt::format("cache-{}", n) : w.cache();
      auto child = w.spawn(w.apply_argv(ve, "2.0.0", cache), so);
      std::string seen;
      auto t0 = std::chrono::steady_clock::now();
      if (t.at.starts_with("start+")) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(t.at.substr(6))));
        seen = txn_phase(ve, {backup_id});
      } else {
        while (!child->exited() && std::chrono::steady_clock::now() - t0 < 300s) {
          seen = txn_phase(ve, {backup_id});
          if (seen == t.at) break;
          std::this_thread::sleep_for(1ms); // leave the cores to envfix
        }
      }
      if (!child->exited()) ::kill(child->pid(), t.sig); // never a reaped (maybe reused) pid
      auto t_sig = std::chrono::steady_clock::now();
      auto r = child->wait(400s);
      auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_sig).count();
      CHECK_MESSAGE(!r.timed_out, label);
      // Far below the 300 s smoke test of the verifying trials: envfix did not wait for it (a rollback
      // takes about a second; the margin is for a loaded machine, not a verdict on its speed).
      CHECK_MESSAGE(took < 150, label << ": took " << took << " s after the signal");
      auto now = manifest(ve);
      std::string outcome;
      if (now == old_set)
        outcome = "old set";
      else if (now == new_set)
        outcome = "new set";
      else
        FAIL_CHECK(label << ": a mixed environment:\n" << manifest_diff(old_set, now));
      const int interrupted_rc = 128 + t.sig;
      if (r.term_signal == 0 && r.rc == interrupted_rc) {
        // Handled: rolled back and said so.
        CHECK_MESSAGE(outcome == "old set", label);
        CHECK_MESSAGE(contains(r.err, "interrupted"), label);
        outcome += ", exit " + std::to_string(r.rc);
      } else if (r.term_signal == t.sig) {
        // Died of the signal: only before the transaction touched anything, or after its commit.
        outcome += ", killed by the signal";
      } else if (r.rc == 0) {
        CHECK_MESSAGE(outcome == "new set", label);
        outcome += ", finished before the signal";
      } else {
        FAIL_CHECK(label << ": unexpected exit " << r.rc << " signal " << r.term_signal << "\n" << r.err);
      }
      if (r.term_signal == 0 && r.rc == interrupted_rc) ++rolled_back;
      outcomes[fmt::format("{:<10} -> {}", seen.empty() ? "(none)" : seen, outcome)]++;
      MESSAGE(label << ": phase seen " << seen << " -> " << outcome);
      if (seen == "preparing" && r.term_signal == t.sig) {
        // Killed while staging: the next apply finds the half-made transaction, says so, and works.
        auto next = w.run(w.apply_argv(ve, "2.0.0"));
        CHECK_MESSAGE(next.rc == 0, label);
        CHECK_MESSAGE(contains(next.err, "recovered from an interrupted envfix run: discarded unfinished preparation"), label);
        CHECK_MESSAGE(manifest(ve) == new_set, label);
        REQUIRE(w.run(w.envfix_argv({"rollback", "--python", py})).rc == 0);
        REQUIRE(manifest(ve) == old_set);
        now = old_set;
      }
      // The next run says what happened and leaves the result alone.
      auto rec = w.run(w.envfix_argv({"recover", "--python", py}));
      CHECK_MESSAGE(rec.rc == 0, label);
      if (now == old_set)
        CHECK_MESSAGE((contains(rec.err, "Nothing to recover") || contains(rec.err, "discarded") || contains(rec.err, "undid")),
                      label << ": " << rec.err);
      CHECK_MESSAGE(manifest(ve) == now, label);
      CHECK_MESSAGE((txn_phase(ve).empty() || txn_phase(ve) == "committed"), label);
      if (now == new_set) {
        REQUIRE(w.run(w.envfix_argv({"rollback", "--python", py})).rc == 0);
        REQUIRE(manifest(ve) == old_set);
      }
    }
    std::string summary;
    for (const auto& [k, c] : outcomes) summary += fmt::format("  {} x {}\n", c, k);
    MESSAGE("signal trials:\n" << summary);
    CHECK(outcomes.size() >= 3);
    CHECK(rolled_back >= 2); // at least the two "verifying" trials (a 30 s smoke test) land mid-transaction
  }

  TEST_CASE("two envfix apply at once on one venv: the second waits for the lock, then sees the first one's result") {
    ApplyWorld w;
    auto ve = w.venv("venv");
    const auto py = (ve / "bin/python").string();
    REQUIRE(w.run(w.apply_argv(ve, "1.0.0")).rc == 0);
    const auto old_set = manifest(ve);
    // The first apply holds the lock through a smoke test that waits for the gate file; the second
    // starts while it verifies, and the gate opens once the second waits for the lock (or is done):
    // the order comes from the two runs themselves, not from a guessed duration.
    const auto gate = w.root() / "smoke.gate";
    SpawnOptions slow;
    slow.env = {{"SMOKE_GATE", gate.string()}};
    auto first = w.spawn(w.apply_argv(ve, "2.0.0"), slow);
    auto t0 = std::chrono::steady_clock::now();
    std::string seen;
    while (!first->exited() && std::chrono::steady_clock::now() - t0 < 300s && (seen = txn_phase(ve)) != "verifying")
      std::this_thread::sleep_for(2ms);
    REQUIRE(seen == "verifying");
    auto start_second = [&](const std::string& version) {
      auto second = w.spawn(w.apply_argv(ve, version));
      t0 = std::chrono::steady_clock::now();
      while (!second->exited() && !contains(second->err_so_far(), "waiting for the lock") &&
             std::chrono::steady_clock::now() - t0 < 300s)
        std::this_thread::sleep_for(5ms);
      util::write_file_atomic(gate, "open").value();
      return second->wait(300s);
    };
    SUBCASE("the same request") {
      auto second = start_second("2.0.0");
      CHECK(contains(second.err, "waiting for the lock"));
      auto a = first->wait(300s);
      CHECK(a.rc == 0);
      // Planned against the old set, run after the first committed: it must not leave a mix.
      CHECK_MESSAGE((second.rc == 0 || second.rc == 1 || second.rc == 2), second.err);
      auto now = manifest(ve);
      CHECK(dist_installed(ve, "bulk-2.0.0+cu128.dist-info"));
      CHECK(!dist_installed(ve, "bulk-1.0.0+cu128.dist-info"));
      CHECK(now != old_set);
      auto check = util::run_process({py, "-c", "import bulk, bulk.h.m049, helper.b.m019; print(bulk.VERSION)"}).value();
      CHECK(check.out == "2\n");
    }
    SUBCASE("the opposite request") {
      auto second = start_second("1.0.0");
      CHECK(contains(second.err, "waiting for the lock"));
      auto a = first->wait(300s);
      CHECK(a.rc == 0);
      auto now = manifest(ve);
      // Either the second saw "nothing to do" (planned before the first committed) or it went back.
      if (second.rc == 0 && dist_installed(ve, "bulk-1.0.0+cu128.dist-info")) {
        // bulk 1.0.0 exactly as before; helper (installed by the first, required by nobody now) stays,
        // as with pip.
        for (const auto& [k, v] : old_set) CHECK_MESSAGE((now.contains(k) && now.at(k) == v), k);
        for (const auto& [k, v] : now) CHECK_MESSAGE((old_set.contains(k) || contains(k, "helper")), k);
      } else {
        CHECK(dist_installed(ve, "bulk-2.0.0+cu128.dist-info"));
      }
      CHECK((dist_installed(ve, "bulk-1.0.0+cu128.dist-info") != dist_installed(ve, "bulk-2.0.0+cu128.dist-info")));
    }
  }

} // TEST_SUITE

} // namespace reliability_apply_faults_test
