#pragma once
// The install transaction (docs/architecture.md, The transaction). Everything that can fail
// without touching the environment happens first (hash, stage, RECORD check, kernel check,
// planning); then, under an flock on <prefix>/.envfix/lock and with a journal in
// <prefix>/.envfix/txn/<id>/, the old files
// are renamed into the transaction's backup and the staged files renamed into place. Any failure,
// SIGINT/SIGTERM or failed verify undoes the renames in reverse; a crash leaves the journal, and
// recover() (run at the start of every transaction) undoes it. Every step is a rename that is
// either done or not, so undo is decided per step by which side of the rename exists.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "installer/install_target.hpp"
#include "installer/txn_meta.hpp"
#include "installer/txn_result.hpp"
#include "installer/unpacked_cache.hpp"
#include "installer/wheel_install.hpp"
#include "util/error.hpp"
#include "wheel/staging.hpp"

namespace envfix::installer {

enum class TxnState { prepared, removing, installing, verifying, committed, rolled_back };
[[nodiscard]] const char* to_string(TxnState state);
[[nodiscard]] std::optional<TxnState> parse_txn_state(std::string_view text);

struct WheelToInstall {
  std::filesystem::path wheel;       // local .whl (already downloaded); unused when `cached`
  std::optional<std::string> sha256; // hex; checked before staging when given
  bool sha256_verified = false;      // the caller hashed `wheel` already (a verified download)
  std::optional<std::uint64_t> size;
  // The wheel's entry in the unpacked cache (UnpackedCache::find), when the caller looked it up:
  // nothing is read from `wheel` then.
  std::optional<wheel::StagedWheel> cached;
  bool unpacked_now = false;             // `cached` was unpacked by this run (not a cache hit)
  bool requested = true;                 // REQUESTED file
  std::optional<std::string> direct_url; // direct_url.json content (direct URL installs only)
};

// A staged shared object, told to the kernel check with the wheel it came from.
struct StagedObject {
  std::size_t wheel = 0; // index into the wheels given to install(), in order
  std::string member;    // path inside the wheel ("torch/lib/libtorch_cuda.so")
  std::string path;      // the staged bytes
  std::string hash;      // RECORD hash of those bytes ("sha256=…"), verified by staging
};

// The phases of a transaction, in the order run() enters them; rolling_back only after a failure.
enum class TxnPhase { unpack, kernel_check, remove, install, verify, rolling_back };
[[nodiscard]] const char* to_string(TxnPhase phase);

// Sent as a phase begins: the caller times phases and renders progress from these values.
struct TxnEvent {
  TxnPhase phase = TxnPhase::unpack;
  std::size_t count = 0;   // wheels to unpack, shared objects to check, files to remove or install
  std::uint64_t bytes = 0; // unpack: bytes to unpack
};

struct TransactionOptions {
  bool break_system_packages = false;
  bool keep_backup = true; // false: `--no-backup`, nothing to roll back to later
  // How many committed transactions keep their backup, this one included: a stack that `rollback`
  // undoes newest first, one step per call. Without a backup (keep_backup false) none is kept: an
  // older backup cannot be reached past a step that has none.
  unsigned keep_backups = 2;
  bool wait_for_lock = true;  // false: fail at once when another envfix holds it
  bool handle_signals = true; // SIGINT/SIGTERM during the transaction → rollback
  // fsync the journal on every state change (power-loss safety). false keeps crash (SIGKILL)
  // safety, which needs only atomic renames; for tests on slow disks.
  bool durable = true;
  wheel::StagingOptions staging; // limits, strict RECORD
  // <cache>/unpacked-v1: wheels with a sha256 are unpacked there once and linked into staging with
  // `link_mode`. Empty: every wheel is unpacked straight into the staging directory.
  std::filesystem::path unpacked_cache;
  LinkMode link_mode = LinkMode::automatic;
  unsigned threads = 0; // unpack/link/hash threads; 0 = one per core
  // Receives every staged shared object before anything is removed (apply plugs in the
  // KernelGate, installer/kernel_gate.hpp); an error refuses the whole transaction.
  std::function<Expected<void>(const std::vector<StagedObject>&)> kernel_check;
  // Runs after the new files are in place (the GPU smoke test); an error rolls back.
  std::function<Expected<void>()> verify;
  // Test hook: called with ("unpack"|"hash"|"kernel-check"|"prepared"|"remove"|"install"|"verify", index)
  // before each step ("prepared": the journal is written, nothing changed yet); an error is treated
  // like a real failure at that point.
  std::function<Expected<void>(std::string_view step, std::size_t index)> fault;
  // Called as each phase begins; never required.
  std::function<void(const TxnEvent&)> progress;
  // Bytes unpacked so far of the total, from the unpacking threads (the caller serializes).
  std::function<void(std::uint64_t done, std::uint64_t total)> unpack_progress;
};

class Transaction {
public:
  explicit Transaction(InstallTarget target, TransactionOptions options = {});
  void install(WheelToInstall wheel);
  // An installed .dist-info to remove. Installing a project that is already installed removes
  // the installed version implicitly.
  void remove(std::filesystem::path dist_info);
  [[nodiscard]] Expected<TransactionResult> run();

private:
  [[nodiscard]] Expected<std::vector<wheel::StagedWheel>> stage_all(const std::filesystem::path& staging_root,
                                                                    TransactionResult& result);
  InstallTarget m_target;
  TransactionOptions m_options;
  std::vector<WheelToInstall> m_install;
  std::vector<std::filesystem::path> m_remove;
  LinkStamps m_stamps; // hard-linked cache files, to keep their entries fast to use (unpacked_cache.hpp)
};

struct RecoverResult {
  std::vector<util::Message> actions; // "undid txn X (state installing)", …
};
// Finishes or undoes interrupted transactions under <prefix>/.envfix (takes the lock).
[[nodiscard]] Expected<RecoverResult> recover(const InstallTarget& target, bool wait_for_lock = true);

struct BackupInfo {
  std::string id;
  std::filesystem::path txn_dir;
  std::uint64_t bytes = 0;
  std::vector<DistRef> installed, removed; // what that transaction did
};
// The committed transactions that can be rolled back, newest first (the order rollback undoes them).
[[nodiscard]] Expected<std::vector<BackupInfo>> kept_backups(const InstallTarget& target);
// The last committed transaction that can be rolled back, if any.
[[nodiscard]] Expected<std::optional<BackupInfo>> last_backup(const InstallTarget& target);

struct RollbackResult {
  std::string id;                         // the transaction undone
  std::vector<DistRef> restored, removed; // restored = its removed set; removed = its installed set
  std::uint64_t freed_bytes = 0;          // backup space released
};
// Undoes the last committed transaction (itself a journaled transaction: a crash during it is
// recovered to the state before the rollback).
[[nodiscard]] Expected<RollbackResult> rollback(const InstallTarget& target, TransactionOptions options = {});
// Deletes kept backups (frees disk; rollback becomes impossible). Returns the bytes freed.
[[nodiscard]] Expected<std::uint64_t> drop_backups(const InstallTarget& target);

// The signal (SIGINT/SIGTERM) that interrupted the running (or last) transaction, 0 if none. A verify
// hook that waits on a child polls it to stop waiting at once.
[[nodiscard]] int interrupt_signal();

// Executes ops[begin, end) forward / undoes ops[0, end) in reverse. Exposed for tests.
[[nodiscard]] Expected<void> undo_ops(const std::vector<TxnOp>& ops);

} // namespace envfix::installer
