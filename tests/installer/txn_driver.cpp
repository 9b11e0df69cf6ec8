// Test driver: runs one installer operation on a venv-layout prefix, so a test can SIGKILL it at
// any moment, or have it SIGKILL itself at a chosen point of the transaction's own progress.
// Usage:
//   txn_driver apply <prefix> <X.Y> <step-delay-us> <kill-at> <wheel>...
//   txn_driver recover <prefix> <X.Y>
//   txn_driver rollback <prefix> <X.Y>
// apply prints "point <n> <step> <index>" on stdout for every fault-hook call of the transaction
// (staging's unpack/hash, kernel-check, each remove and install step, verify) and "point <n> commit"
// after the commit; with <kill-at> = n > 0 it raises SIGKILL on itself at point n instead of going
// on, so that a test reaches every point whatever the machine's speed (tests/installer/test_crash.cpp).
// Exit 0 on success, 1 on a failed operation (error on stderr).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "installer/transaction.hpp"

using namespace envfix::installer;

namespace {

InstallTarget target_for(const std::string& prefix, const std::string& xy) {
  auto dot = xy.find('.');
  return InstallTarget::for_venv_layout(prefix, std::stoi(xy.substr(0, dot)), std::stoi(xy.substr(dot + 1)));
}

// Counts the points; at `kill_at` nothing after it runs, as with a SIGKILL from outside.
struct Points {
  unsigned long kill_at = 0;
  unsigned long n = 0;
  void reach(std::string_view step, long index) {
    ++n;
    if (index >= 0)
      std::printf("point %lu %.*s %ld\n", n, static_cast<int>(step.size()), step.data(), index);
    else
      std::printf("point %lu %.*s\n", n, static_cast<int>(step.size()), step.data());
    std::fflush(stdout);
    if (n == kill_at) ::raise(SIGKILL);
  }
};

} // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: txn_driver apply|recover|rollback <prefix> ...\n");
    return 2;
  }
  std::string cmd = argv[1], prefix = argv[2];
  if (cmd == "recover" && argc == 4) {
    auto r = recover(target_for(prefix, argv[3]));
    if (!r) {
      std::fprintf(stderr, "%s", r.error().render().c_str());
      return 1;
    }
    for (const auto& a : r->actions) std::printf("%s\n", a.text.c_str());
    return 0;
  }
  if (cmd == "rollback" && argc == 4) {
    TransactionOptions opt;
    opt.durable = false;
    auto r = rollback(target_for(prefix, argv[3]), opt);
    if (!r) {
      std::fprintf(stderr, "%s", r.error().render().c_str());
      return 1;
    }
    return 0;
  }
  if (cmd == "apply" && argc >= 6) {
    TransactionOptions opt;
    opt.durable = false; // SIGKILL safety needs atomic renames only; skip fsync on a busy test disk
    useconds_t delay = static_cast<useconds_t>(std::stoul(argv[4]));
    Points points{std::stoul(argv[5])};
    // Slow each environment step down so that random kills land inside the remove/install phases too.
    opt.fault = [delay, &points](std::string_view step, std::size_t index) -> envfix::Expected<void> {
      points.reach(step, static_cast<long>(index));
      if (delay && (step == "remove" || step == "install")) ::usleep(delay);
      return {};
    };
    Transaction txn(target_for(prefix, argv[3]), opt);
    for (int i = 6; i < argc; ++i) txn.install({argv[i]});
    auto r = txn.run();
    if (!r) {
      std::fprintf(stderr, "%s", r.error().render().c_str());
      return 1;
    }
    points.reach("commit", -1);
    for (const auto& a : r->recovered) std::printf("recovered: %s\n", a.text.c_str());
    return 0;
  }
  std::fprintf(stderr, "bad arguments\n");
  return 2;
}
