#pragma once
// `apply`: plan, prepare (download + hash), one transaction with the kernel gate and the smoke test,
// then the lockfile, written right after the commit (docs/architecture.md, The transaction;
// docs/lockfile.md). `apply --locked` installs exactly a lockfile target instead.
#include <optional>
#include <string>
#include <vector>

#include "api/options.hpp"
#include "api/plan.hpp"
#include "api/reporter.hpp"
#include "smoke/smoke.hpp"
#include "installer/transaction.hpp"
#include "util/error.hpp"

namespace envfix::api {

struct ApplyRequest {
  std::vector<std::string> requirements; // empty = the framework packages installed (not with --locked)
  RequestFiles files;                    // -r, -c (api/plan.hpp)
  bool dry_run = false;                  // plan and stop: nothing downloaded or changed
  bool no_verify = false;
  bool no_rollback = false; // keep the new set when the smoke test fails
  bool no_backup = false;
  unsigned keep_backups = 2; // --keep-backups: rollback steps kept (installer/transaction.hpp)
  bool break_system_packages = false;
  bool allow_unhashed = false;
  bool pre = false;
  bool upgrade = false;   // PlanRequest::upgrade
  bool reinstall = false; // PlanRequest::reinstall
  bool allow_breaking = false;
  bool allow_conda_overwrite = false;
  std::string venv;      // create (or reuse) a venv there and install into it
  std::string link_mode; // "" = $ENVFIX_LINK_MODE, else auto
  int smoke_timeout_s = 600;
  std::string smoke_layers = "repro,model"; // envfix verify's layers 1 and 2
};

// What apply tells its caller while it runs, beyond progress: each plan (the first and every one
// after a kernel-gate refusal), and the one question before anything changes.
class ApplyReporter : public virtual Reporter {
public:
  virtual void planned(const PlanContext& /*ctx*/, bool /*first*/) {}
  // false: stop, nothing changed. Asked once, after the first plan that has something to do.
  [[nodiscard]] virtual bool proceed(const PlanContext& /*ctx*/) { return true; }
  // --locked: the host probed, then the lockfile target chosen for it; then proceed_locked().
  virtual void locked_host(const Host& /*host*/) {}
  virtual void locked_target(const std::string& /*target_id*/, const std::string& /*lockfile*/) {}
  [[nodiscard]] virtual bool proceed_locked() { return true; }
};

struct Timings {
  double download = 0;           // downloads (or cache lookups)
  double stage = 0, kernels = 0; // inside the transaction, before the environment changes
  double uninstall = 0, install = 0;
  [[nodiscard]] double prepare() const { return download + stage + kernels; }
};

struct Smoke {
  std::vector<std::string> passed;      // step names, in order
  util::Message cpu_why;                // "no GPU" | "CPU build" when it ran on the CPU
  util::Message note;                   // why it was skipped, or where it ran
  std::optional<Error> failure_kept;    // --no-rollback: the failure, the new set left installed
  std::vector<smoke::StepTime> seconds; // each step run, in order (smoke/smoke.hpp)
  int interpreters = 0;                 // Python processes the steps ran in
};

struct Applied {
  installer::TransactionResult txn;
  Timings timings;
  Smoke smoke;
  std::vector<util::Message> gate_warnings, gate_notes; // the kernel gate's (installer/kernel_gate.hpp)
  std::size_t unpacked_while_downloading = 0; // wheels unpacked as their download completed (installer/early_unpack.hpp)
};

struct ApplyReport {
  enum class Outcome { nothing_to_do, aborted, dry_run, applied };
  Outcome outcome = Outcome::applied;
  std::optional<PlanContext> plan; // plain apply: the plan that was applied
  std::string locked_target;       // --locked: the target id installed
  std::optional<Applied> applied;
  std::vector<std::string> kernel_refusals;     // "<package> … (<channel> <variant>)", one per fall-through
  std::optional<std::string> lockfile;          // written path
  std::optional<Error> lockfile_error;          // not written, and why (the install stands)
  std::vector<util::Message> lockfile_warnings; // packages kept as installed, no index serves (lockfile::installed_only_warning)
};

[[nodiscard]] Expected<ApplyReport> apply(const Options& o, const ApplyRequest& r, ApplyReporter& rep);
[[nodiscard]] Expected<ApplyReport> apply_locked(const Options& o, const ApplyRequest& r, ApplyReporter& rep);

// The signal (SIGINT/SIGTERM) that interrupted the last transaction (apply, rollback) or, failing
// that, a command's children (verify, the smoke test: util::InterruptScope); 0 for none.
[[nodiscard]] int interrupt_signal();

} // namespace envfix::api
