// Test driver: runs one installer operation on a venv-layout prefix, so a test can SIGKILL it at
// any moment. Usage:
//   txn_driver apply <prefix> <X.Y> <step-delay-us> <wheel>...
//   txn_driver recover <prefix> <X.Y>
//   txn_driver rollback <prefix> <X.Y>
// Exit 0 on success, 1 on a failed operation (error on stderr).
#include <unistd.h>

#include <cstdio>
#include <string>

#include "installer/transaction.hpp"

using namespace envfix::installer;

static InstallTarget target_for(const std::string& prefix, const std::string& xy) {
  auto dot = xy.find('.');
  return InstallTarget::for_venv_layout(prefix, std::stoi(xy.substr(0, dot)), std::stoi(xy.substr(dot + 1)));
}

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
    for (const auto& a : r->actions) std::printf("%s\n", a.c_str());
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
  if (cmd == "apply" && argc >= 5) {
    TransactionOptions opt;
    opt.durable = false; // SIGKILL safety needs atomic renames only; skip fsync on a busy test disk
    useconds_t delay = static_cast<useconds_t>(std::stoul(argv[4]));
    // Slow each environment step down so that kills land inside the remove/install phases too.
    opt.fault = [delay](std::string_view step, std::size_t) -> envfix::Expected<void> {
      if (delay && (step == "remove" || step == "install")) ::usleep(delay);
      return {};
    };
    Transaction txn(target_for(prefix, argv[3]), opt);
    for (int i = 5; i < argc; ++i) txn.install({argv[i]});
    auto r = txn.run();
    if (!r) {
      std::fprintf(stderr, "%s", r.error().render().c_str());
      return 1;
    }
    for (const auto& a : r->recovered) std::printf("recovered: %s\n", a.c_str());
    return 0;
  }
  std::fprintf(stderr, "bad arguments\n");
  return 2;
}
