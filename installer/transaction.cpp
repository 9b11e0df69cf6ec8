#include "installer/transaction.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <system_error>

#include <fmt/format.h>

#include "installer/env_lock.hpp"
#include "installer/txn_meta.hpp"
#include "installer/uninstall.hpp"
#include "installer/verify_guard.hpp"
#include "specs/name.hpp"
#include "util/fs.hpp"
#include "util/parallel.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"

namespace envfix::installer {

namespace fs = std::filesystem;

const char* to_string(TxnState s) {
  switch (s) {
  case TxnState::prepared: return "prepared";
  case TxnState::removing: return "removing";
  case TxnState::installing: return "installing";
  case TxnState::verifying: return "verifying";
  case TxnState::committed: return "committed";
  case TxnState::rolled_back: return "rolled-back";
  }
  return "?";
}

const char* to_string(TxnPhase p) {
  switch (p) {
  case TxnPhase::unpack: return "unpack";
  case TxnPhase::kernel_check: return "kernel-check";
  case TxnPhase::remove: return "remove";
  case TxnPhase::install: return "install";
  case TxnPhase::verify: return "verify";
  case TxnPhase::rolling_back: return "rolling-back";
  }
  return "?";
}

std::optional<TxnState> parse_txn_state(std::string_view t) {
  for (auto s : {TxnState::prepared, TxnState::removing, TxnState::installing, TxnState::verifying, TxnState::committed,
                 TxnState::rolled_back})
    if (t == to_string(s)) return s;
  return std::nullopt;
}

namespace {

// ---- small helpers --------------------------------------------------------------------------

using util::exists_nofollow;

using util::current_umask;

std::uint64_t tree_bytes(const fs::path& dir) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += static_cast<std::uint64_t>(st.st_size);
  }
  return total;
}

void remove_tree(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
}

std::string new_txn_id() {
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%S", &tm);
  // Sortable: the newest transaction has the greatest id.
  return fmt::format("{}.{:06d}-{}", buf, micros, ::getpid());
}

// What new_txn_id() makes: YYYYMMDDTHHMMSS.uuuuuu-PID. Only directories named so are transactions
// (and only .envfix-txn-<that id> directories their auxiliaries): a journal that names any other
// path is not envfix's own and deletes nothing.
bool is_txn_id(std::string_view id) {
  auto digits = [&](std::size_t from, std::size_t n) {
    if (from + n > id.size()) return false;
    for (std::size_t i = from; i < from + n; ++i)
      if (id[i] < '0' || id[i] > '9') return false;
    return true;
  };
  if (id.size() < 24 || id.size() > 40) return false;
  if (!digits(0, 8) || id[8] != 'T' || !digits(9, 6) || id[15] != '.' || !digits(16, 6) || id[22] != '-') return false;
  return digits(23, id.size() - 23);
}

bool is_real_dir(const fs::path& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// ---- signals --------------------------------------------------------------------------------

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_signal(int sig) { g_interrupted = sig; }

class SignalGuard {
public:
  explicit SignalGuard(bool enable) : m_enabled(enable) {
    if (!m_enabled) return;
    g_interrupted = 0;
    struct sigaction sa = {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &m_old_int);
    ::sigaction(SIGTERM, &sa, &m_old_term);
  }
  ~SignalGuard() {
    if (!m_enabled) return;
    ::sigaction(SIGINT, &m_old_int, nullptr);
    ::sigaction(SIGTERM, &m_old_term, nullptr);
  }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

private:
  bool m_enabled;
  struct sigaction m_old_int = {}, m_old_term = {};
};

Expected<void> check_interrupted() {
  if (g_interrupted)
    return fail(ErrorCode::interrupted, "interrupted by signal {} ({})", static_cast<int>(g_interrupted),
                g_interrupted == SIGINT ? "SIGINT" : "SIGTERM");
  return {};
}

// ---- the environment lock: installer/env_lock.hpp (re-entrant: apply holds it already) ----------

// ---- journal files --------------------------------------------------------------------------

// The journal's header and steps (installer/txn_meta.hpp); `with_ops` false reads the header only.
Expected<TxnMeta> read_meta(const fs::path& txn_dir, bool with_ops = true) {
  const auto path = txn_dir / "ops.json";
  auto text = ENVFIX_TRY(util::read_file(path));
  return parse_txn_meta(text, path, with_ops);
}

// The scheme directories of the target, where AuxDirs places auxiliary directories (in a root, or
// beside a file inside one). Built from the target, never from a journal, which a crash or a
// hostile wheel may have left.
using Roots = std::vector<fs::path>;
Roots scheme_roots(const InstallTarget& target) {
  Roots out;
  for (const auto& r : target.prune_stops()) out.push_back(r.lexically_normal());
  return out;
}

bool within_roots(const fs::path& dir, const Roots& roots) {
  return std::any_of(roots.begin(), roots.end(), [&](const fs::path& r) { return util::is_within(dir, r); });
}

// An auxiliary directory the journal of transaction `id` may own: absolute, normal, a real
// directory named .envfix-txn-<id> whose parent is a scheme directory or lies inside one.
bool is_own_aux(const fs::path& a, std::string_view id, const Roots& roots) {
  return a.is_absolute() && a == a.lexically_normal() && a.filename() == ".envfix-txn-" + std::string(id) &&
         within_roots(a.parent_path(), roots) && is_real_dir(a);
}

// The journal's auxiliary directories that are really this transaction's (see is_own_aux).
std::vector<fs::path> own_aux(const TxnMeta& meta, const fs::path& txn_dir, const Roots& roots) {
  std::vector<fs::path> out;
  if (meta.id != txn_dir.filename().string()) return out;
  for (const auto& a : meta.aux)
    if (is_own_aux(a, meta.id, roots)) out.push_back(a);
  return out;
}

// Deletes a transaction: its directory and the auxiliary directories its journal names.
void discard_txn(const fs::path& txn_dir, const Roots& roots) {
  if (!is_txn_id(txn_dir.filename().string()) || !is_real_dir(txn_dir)) return;
  if (auto meta = read_meta(txn_dir, false))
    for (const auto& a : own_aux(*meta, txn_dir, roots)) remove_tree(a);
  remove_tree(txn_dir);
}

// Disk held by a transaction's backup, wherever it lives.
std::uint64_t backup_bytes_of(const fs::path& txn_dir, const Roots& roots) {
  std::uint64_t n = tree_bytes(txn_dir / "backup");
  if (auto meta = read_meta(txn_dir, false))
    for (const auto& a : own_aux(*meta, txn_dir, roots)) n += tree_bytes(a / "backup");
  return n;
}

// rename() cannot cross filesystems. A file on another filesystem than <prefix>/.envfix (a
// site-packages or bin/ mounted or symlinked elsewhere) gets its backup, and a new file its
// staged copy, in <scheme root>/.envfix-txn-<id>/ on its own filesystem, so that every step of
// the transaction is still one rename.
class AuxDirs {
public:
  AuxDirs(const InstallTarget& target, const fs::path& txn_dir, std::string id) : m_txn_dir(txn_dir), m_id(std::move(id)) {
    m_txn_dev = device_of(txn_dir);
    m_roots = scheme_roots(target);
    // Longest first: the most specific root wins.
    std::sort(m_roots.begin(), m_roots.end(),
              [](const fs::path& a, const fs::path& b) { return a.string().size() > b.string().size(); });
  }
  // Where backup number i of `file` goes.
  fs::path backup_for(const fs::path& file, std::size_t i) {
    auto dev = device_of(file.parent_path());
    if (!dev || dev == m_txn_dev) return m_txn_dir / "backup" / std::to_string(i);
    return aux_for(file, *dev) / "backup" / std::to_string(i);
  }
  // Where a staged file must be copied before it can be renamed to `dest`, if anywhere.
  std::optional<fs::path> stage_for(const fs::path& dest, std::size_t k) {
    auto dev = device_of(dest.parent_path());
    if (!dev || dev == m_txn_dev) return std::nullopt;
    return aux_for(dest, *dev) / "stage" / std::to_string(k);
  }
  [[nodiscard]] std::vector<fs::path> dirs() const { return {m_used.begin(), m_used.end()}; }

private:
  // Device of the nearest existing ancestor, `dir` included (stat follows a symlinked
  // site-packages), remembered per directory and through it every ancestor on the way up: a fresh
  // install asks for each of 12,000 files, each under directories that do not exist yet.
  std::optional<dev_t> device_of(const fs::path& dir) {
    std::string key = dir.lexically_normal().string();
    if (auto it = m_devs.find(key); it != m_devs.end()) return it->second;
    std::optional<dev_t> dev;
    struct stat st;
    if (::stat(key.c_str(), &st) == 0)
      dev = st.st_dev;
    else if (auto parent = fs::path(key).parent_path(); !key.empty() && parent != fs::path(key))
      dev = device_of(parent);
    m_devs.emplace(std::move(key), dev);
    return dev;
  }
  fs::path aux_for(const fs::path& p, dev_t dev) {
    fs::path base;
    auto n = p.lexically_normal().string();
    for (const auto& r : m_roots) {
      auto rs = r.string();
      if (n.size() > rs.size() && n.compare(0, rs.size(), rs) == 0 && n[rs.size()] == '/' && device_of(r) == dev) {
        base = r;
        break;
      }
    }
    if (base.empty()) base = p.parent_path(); // outside every scheme root: next to the file
    auto dir = base / (".envfix-txn-" + m_id);
    m_used.insert(dir);
    return dir;
  }
  fs::path m_txn_dir;
  std::string m_id;
  std::optional<dev_t> m_txn_dev;
  std::vector<fs::path> m_roots;
  std::set<fs::path> m_used;
  std::unordered_map<std::string, std::optional<dev_t>> m_devs;
};

// Creates the auxiliary directories and copies staged files across filesystems. Runs after the
// journal says "prepared" (a crash here is discarded by recovery, aux directories included).
Expected<void> prepare_aux(const std::vector<fs::path>& aux, const std::vector<std::pair<fs::path, fs::path>>& copies) {
  for (const auto& a : aux) {
    ENVFIX_TRY_VOID(util::create_directories(a / "backup"));
    ENVFIX_TRY_VOID(util::create_directories(a / "stage"));
  }
  for (const auto& [from, to] : copies) {
    struct stat st;
    if (::stat(from.c_str(), &st) != 0)
      return fail_errno(errno, ErrorCode::io, "cannot read {}: {}", from.string(), std::strerror(errno));
    if (int err = util::copy_file_exclusive(from, to, st.st_mode & 07777); err != 0)
      return with_errno(make_error(ErrorCode::io,
                                   fmt::format("cannot copy {} → {}: {}", from.string(), to.string(), std::strerror(err)),
                                   err == ENOSPC || err == EDQUOT ? "the disk is full; free space and retry" : ""),
                        err);
  }
  return {};
}

// Temp file + rename; fsync'd (file and directory) when durable.
Expected<void> write_journal_file(const fs::path& path, std::string_view text, bool durable) {
  if (durable) return util::write_file_atomic(path, text);
  auto tmp = path;
  tmp += ".tmp";
  {
    util::Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd.valid()) return fail_errno(errno, ErrorCode::io, "cannot write {}: {}", tmp.string(), std::strerror(errno));
    if (int err = util::write_all(fd.get(), text); err != 0)
      return fail_errno(err, ErrorCode::io, "cannot write {}: {}", tmp.string(), std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return fail_errno(errno, ErrorCode::io, "cannot rename {}: {}", tmp.string(), std::strerror(errno));
  return {};
}

Expected<void> write_meta(const fs::path& txn_dir, const TxnMeta& m, bool durable = true) {
  const std::string text = ENVFIX_TRY(txn_meta_json(m));
  return write_journal_file(txn_dir / "ops.json", text, durable);
}

Expected<void> write_state(const fs::path& txn_dir, TxnState s, bool durable = true) {
  return write_journal_file(txn_dir / "journal", std::string(to_string(s)) + "\n", durable);
}

std::optional<TxnState> read_state(const fs::path& txn_dir) {
  auto text = util::read_file(txn_dir / "journal");
  if (!text) return std::nullopt;
  auto t = *text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  return parse_txn_state(t);
}

void sync_fs(const fs::path& any) {
  util::Fd fd(::open(any.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.valid()) ::syncfs(fd.get());
}

// ---- executing and undoing steps ------------------------------------------------------------

Expected<void> do_op(const TxnOp& op) {
  switch (op.kind) {
  case TxnOp::Kind::move:
    if (::rename(op.path.c_str(), op.dest.c_str()) != 0)
      return fail_errno(errno, ErrorCode::io, "rename {} → {}: {}", op.path, op.dest, std::strerror(errno));
    return {};
  case TxnOp::Kind::mkdir:
    if (::mkdir(op.path.c_str(), 0700) != 0)
      return fail_errno(errno, ErrorCode::io, "mkdir {}: {}", op.path, std::strerror(errno));
    if (::chmod(op.path.c_str(), op.mode) != 0)
      return fail_errno(errno, ErrorCode::io, "chmod {}: {}", op.path, std::strerror(errno));
    return {};
  case TxnOp::Kind::rmdir:
    if (::rmdir(op.path.c_str()) != 0) return fail_errno(errno, ErrorCode::io, "rmdir {}: {}", op.path, std::strerror(errno));
    return {};
  }
  return {};
}

// Byte-code the interpreter wrote after the transaction started (a verify step imports the new
// packages): generated, so deleted rather than restored.
void drop_new_bytecode(const fs::path& py_file, std::int64_t since) {
  auto cache = py_file.parent_path() / "__pycache__";
  auto stem = py_file.stem().string();
  std::error_code ec;
  for (fs::directory_iterator it(cache, ec), end; !ec && it != end; it.increment(ec)) {
    auto n = it->path().filename().string();
    struct stat st;
    if (n.starts_with(stem + ".") && n.ends_with(".pyc") && ::lstat(it->path().c_str(), &st) == 0 && st.st_mtime >= since)
      ::unlink(it->path().c_str());
  }
  struct stat st;
  if (::lstat(cache.c_str(), &st) == 0 && st.st_mtime >= since && fs::is_empty(cache, ec)) ::rmdir(cache.c_str());
}

// Empties __pycache__ folders (only .pyc inside) in a directory about to be removed again.
void drop_bytecode_dirs(const fs::path& dir) {
  std::error_code ec;
  auto cache = dir / "__pycache__";
  if (!fs::is_directory(cache, ec)) return;
  for (fs::directory_iterator it(cache, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".pyc") ::unlink(it->path().c_str());
  ::rmdir(cache.c_str());
}

Expected<void> undo_one(const TxnOp& op, std::int64_t since) {
  switch (op.kind) {
  case TxnOp::Kind::move: {
    bool src = exists_nofollow(op.path), dst = exists_nofollow(op.dest);
    if (src || !dst) return {}; // never done (or already undone)
    if (::rename(op.dest.c_str(), op.path.c_str()) != 0)
      return fail_errno(errno, ErrorCode::rollback_failed, "cannot move {} back to {}: {}", op.dest, op.path,
                        std::strerror(errno));
    if (op.dest.ends_with(".py")) drop_new_bytecode(op.dest, since);
    return {};
  }
  case TxnOp::Kind::mkdir: {
    if (!exists_nofollow(op.path)) return {};
    drop_bytecode_dirs(op.path);
    if (::rmdir(op.path.c_str()) != 0 && errno != ENOENT)
      return fail_errno(errno, ErrorCode::rollback_failed, "cannot remove directory {} again: {}", op.path, std::strerror(errno));
    return {};
  }
  case TxnOp::Kind::rmdir: {
    if (exists_nofollow(op.path)) return {};
    if (::mkdir(op.path.c_str(), 0700) != 0 || ::chmod(op.path.c_str(), op.mode) != 0)
      return fail_errno(errno, ErrorCode::rollback_failed, "cannot recreate directory {}: {}", op.path, std::strerror(errno));
    return {};
  }
  }
  return {};
}

Expected<void> undo_range(const std::vector<TxnOp>& ops, std::size_t end, std::int64_t since) {
  std::vector<util::Message> failures;
  for (std::size_t i = std::min(end, ops.size()); i-- > 0;)
    if (auto r = undo_one(ops[i], since); !r) failures.push_back(r.error().said_message());
  if (failures.empty()) return {};
  return std::unexpected(
      Error::made(ErrorCode::rollback_failed, util::msg("{} step(s) could not be undone", failures.size()), failures));
}

// Appends the seconds since the last mark under `name` (TransactionResult::steps).
struct StepClock {
  std::vector<std::pair<std::string, double>>* out = nullptr;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  void mark(const char* name) {
    auto now = std::chrono::steady_clock::now();
    if (out) out->emplace_back(name, std::chrono::duration<double>(now - last).count());
    last = now;
  }
};

struct ExecHooks {
  std::function<Expected<void>()> verify;
  std::function<Expected<void>(std::string_view, std::size_t)> fault;
  std::function<void(const TxnEvent&)> progress;
  bool handle_signals = true;
  bool durable = true;
  std::function<void()> installed; // right after the last rename, before verify
  StepClock* clock = nullptr;
};

// Runs prepared → removing → installing → verifying → committed; on any failure undoes and
// journals rolled-back (or reports rollback_failed naming the journal).
// The files and directories the install phase put in place: the rollback takes them away again.
std::set<std::string> installed_paths(const TxnMeta& meta) {
  std::set<std::string> out;
  for (std::size_t i = meta.split; i < meta.ops.size(); ++i)
    out.insert(meta.ops[i].kind == TxnOp::Kind::move ? meta.ops[i].dest : meta.ops[i].path);
  return out;
}

// The error of a rolled-back transaction, with what a failed verify step left (verify_guard.hpp):
// "unchanged" only when it is.
Error rolled_back_error(Error err, const std::optional<VerifyGuard::Aftermath>& after) {
  if (err.code == ErrorCode::rollback_failed) return err;
  if (!after || after->restored()) {
    auto e = std::move(err).context(util::msg("the transaction was rolled back; the environment is unchanged"));
    if (after && !after->removed.empty())
      e.add_cause(util::msg("removed what the smoke test wrote under the prefix: {}", util::join(after->removed, ", ")));
    return e;
  }
  auto e = std::move(err).context(
      util::msg("the transaction was rolled back, but the smoke test changed files the rollback cannot restore"));
  for (const auto& c : after->changed) e.add_cause(util::msg("changed in place by the smoke test: {}", c));
  for (const auto& v : after->vanished) e.add_cause(util::msg("deleted by the smoke test: {}", v));
  for (const auto& f : after->failed) e.add_cause(util::msg("written by the smoke test, could not be removed: {}", f));
  if (!after->removed.empty())
    e.add_cause(util::msg("removed what the smoke test wrote under the prefix: {}", util::join(after->removed, ", ")));
  e.advise(util::msg("the build that failed its smoke test ran code in this environment: reinstall the packages named above "
                     "(or recreate the environment) before trusting it"));
  return e;
}

Expected<void> execute(const fs::path& txn_dir, const TxnMeta& meta, const fs::path& sync_at, const Roots& roots,
                       const ExecHooks& hooks) {
  SignalGuard signals(hooks.handle_signals);
  std::size_t done = 0;
  std::optional<VerifyGuard> guard; // taken right before the verify step runs the new set's code
  auto mark = [&](const char* name) {
    if (hooks.clock) hooks.clock->mark(name);
  };
  auto step = [&]() -> Expected<void> {
    mark("journal");
    if (hooks.fault) ENVFIX_TRY_VOID(hooks.fault("prepared", 0)); // the journal says prepared
    ENVFIX_TRY_VOID(write_state(txn_dir, TxnState::removing, hooks.durable));
    if (hooks.progress) hooks.progress({TxnPhase::remove, meta.split, 0});
    for (; done < meta.split; ++done) {
      ENVFIX_TRY_VOID(check_interrupted());
      if (hooks.fault) ENVFIX_TRY_VOID(hooks.fault("remove", done));
      ENVFIX_TRY_VOID(do_op(meta.ops[done]));
    }
    mark("remove");
    ENVFIX_TRY_VOID(write_state(txn_dir, TxnState::installing, hooks.durable));
    if (hooks.progress) hooks.progress({TxnPhase::install, meta.ops.size() - meta.split, 0});
    for (; done < meta.ops.size(); ++done) {
      ENVFIX_TRY_VOID(check_interrupted());
      if (hooks.fault) ENVFIX_TRY_VOID(hooks.fault("install", done - meta.split));
      ENVFIX_TRY_VOID(do_op(meta.ops[done]));
    }
    mark("install");
    if (hooks.installed) hooks.installed();
    mark("stamps");
    ENVFIX_TRY_VOID(write_state(txn_dir, TxnState::verifying, hooks.durable));
    ENVFIX_TRY_VOID(check_interrupted());
    if (hooks.fault) ENVFIX_TRY_VOID(hooks.fault("verify", 0));
    if (hooks.verify) {
      if (hooks.progress) hooks.progress({TxnPhase::verify, 0, 0});
      guard = VerifyGuard::take(roots, txn_dir.parent_path().parent_path());
      if (auto v = hooks.verify(); !v) {
        ENVFIX_TRY_VOID(check_interrupted()); // a verify cut short by the signal fails because of it
        return std::unexpected(std::move(v.error()).context(util::msg("verification failed")));
      }
    }
    ENVFIX_TRY_VOID(check_interrupted());
    mark("verify");
    // Undo decides per step from what exists, so renames need not be durable before the journal
    // moves on, except here: "committed" must never outlive renames lost in a power cut.
    if (hooks.durable) sync_fs(sync_at);
    auto committed = write_state(txn_dir, TxnState::committed, hooks.durable);
    mark("sync");
    return committed;
  };
  auto r = step();
  if (r) return {};
  Error err = std::move(r.error());
  if (hooks.progress) hooks.progress({TxnPhase::rolling_back, 0, 0});
  // What the verify step wrote goes first, so that the rollback finds the new set's directories as it made them.
  std::optional<VerifyGuard::Aftermath> after;
  if (guard) after = guard->clean_up(installed_paths(meta));
  // The failing step may or may not have happened; undo decides per step.
  auto u = undo_range(meta.ops, done + 1, meta.started);
  if (!u) {
    Error e = std::move(u.error());
    e.say(util::msg("rollback incomplete after: {}", err.message));
    e.causes.insert(e.causes.end(), err.causes.begin(), err.causes.end());
    e.advise(util::msg("the journal is {}; run 'envfix recover' to retry", (txn_dir / "journal").string()));
    return std::unexpected(std::move(e));
  }
  (void)write_state(txn_dir, TxnState::rolled_back, hooks.durable);
  discard_txn(txn_dir, roots);
  return std::unexpected(rolled_back_error(std::move(err), after));
}

// ---- recovery -------------------------------------------------------------------------------

std::vector<fs::path> txn_dirs(const fs::path& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(prefix / ".envfix" / "txn", ec), end; !ec && it != end; it.increment(ec))
    if (is_txn_id(it->path().filename().string()) && is_real_dir(it->path())) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

Expected<std::vector<util::Message>> recover_locked(const InstallTarget& target) {
  const auto& prefix = target.prefix;
  const Roots roots = scheme_roots(target);
  std::vector<util::Message> actions;
  // Pass 1: unfinished transactions are undone; finished rollbacks clean up after themselves.
  for (const auto& dir : txn_dirs(prefix)) {
    auto id = dir.filename().string();
    auto state = read_state(dir);
    // The steps are needed only to undo; a committed journal (the usual case) is read without them.
    const bool undo = state && (*state == TxnState::removing || *state == TxnState::installing || *state == TxnState::verifying);
    auto meta = read_meta(dir, undo);
    // The environment was being changed: without its steps the change cannot be undone, and
    // discarding the journal would throw the way back away with it.
    if (!meta && undo && fs::exists(dir / "ops.json"))
      return std::unexpected(std::move(meta.error()).context(util::msg("cannot undo interrupted transaction {}", id)));
    if (!meta || !state) {
      // Crashed while preparing: nothing in the environment was touched yet.
      discard_txn(dir, roots);
      actions.push_back(util::msg("discarded unfinished preparation {}", id));
      continue;
    }
    switch (*state) {
    case TxnState::prepared:
    case TxnState::rolled_back:
      discard_txn(dir, roots);
      actions.push_back(util::msg("discarded transaction {} ({})", id, to_string(*state)));
      break;
    case TxnState::removing:
    case TxnState::installing:
    case TxnState::verifying: {
      auto u = undo_range(meta->ops, meta->ops.size(), meta->started);
      if (!u) {
        Error e = std::move(u.error());
        e.say(util::msg("cannot undo interrupted transaction {}: {}", id, e.message));
        e.advise(util::msg("inspect {} and the backup next to it", (dir / "journal").string()));
        return std::unexpected(std::move(e));
      }
      ENVFIX_TRY_VOID(write_state(dir, TxnState::rolled_back));
      discard_txn(dir, roots);
      actions.push_back(util::msg("undid interrupted {} {} (it was {})", meta->kind, id, to_string(*state)));
      break;
    }
    case TxnState::committed:
      if (meta->kind == "rollback") {
        if (!meta->rolls_back.empty()) discard_txn(dir.parent_path() / meta->rolls_back, roots);
        discard_txn(dir, roots);
        actions.push_back(util::msg("finished rollback {}", id));
      } else {
        remove_tree(dir / "staging");
        for (const auto& a : own_aux(*meta, dir, roots)) remove_tree(a / "stage");
      }
      break;
    }
  }
  // What is left are committed applies: the rollback stack, which each commit bounds
  // (TransactionOptions::keep_backups).
  return actions;
}

Expected<std::string> archive_sha256(const fs::path& p) { return util::sha256_file_hex(p); }

} // namespace

int interrupt_signal() { return static_cast<int>(g_interrupted); }

Expected<void> undo_ops(const std::vector<TxnOp>& ops) { return undo_range(ops, ops.size(), 0); }

// ---- Transaction ------------------------------------------------------------------------------

Transaction::Transaction(InstallTarget target, TransactionOptions options)
    : m_target(std::move(target)), m_options(std::move(options)) {}

void Transaction::install(WheelToInstall wheel) { m_install.push_back(std::move(wheel)); }
void Transaction::remove(fs::path dist_info) { m_remove.push_back(std::move(dist_info)); }

namespace {

using StagedSlots = std::vector<std::optional<wheel::StagedWheel>>;

std::string wheel_name(const WheelToInstall& w) {
  return w.cached ? w.cached->wheel.filename().string() : w.wheel.filename().string();
}

// stage_all (a): what each wheel needs, a cache entry to link or an archive to unpack; archives
// are checked against the size and sha256 the index published.
Expected<StagedSlots> look_up(const std::vector<WheelToInstall>& wheels, UnpackedCache* cache, unsigned threads,
                              TransactionResult& result) {
  const std::size_t n = wheels.size();
  StagedSlots from_cache(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& w = wheels[i];
    if (w.cached)
      from_cache[i] = w.cached;
    else if (cache && w.sha256)
      from_cache[i] = cache->find(*w.sha256, threads);
    if (from_cache[i]) {
      if (!w.unpacked_now) ++result.cache_hits;
      for (const auto& text : from_cache[i]->warnings) result.warnings.push_back(util::plain(text)); // as the wheel recorded it
    }
  }
  ENVFIX_TRY_VOID(util::parallel_for(n, threads, [&](std::size_t i) -> Expected<void> {
    const auto& w = wheels[i];
    if (from_cache[i]) return {};
    const auto wname = wheel_name(w);
    if (w.size) {
      std::error_code ec;
      auto sz = fs::file_size(w.wheel, ec);
      if (ec) return fail(ErrorCode::not_found, "{}: {}", w.wheel.string(), ec.message());
      if (sz != *w.size) return fail(ErrorCode::hash_mismatch, "{}: size {} differs from the expected {}", wname, sz, *w.size);
    }
    if (w.sha256 && !w.sha256_verified) {
      auto h = ENVFIX_TRY(archive_sha256(w.wheel));
      if (h != *w.sha256)
        return make_error(ErrorCode::hash_mismatch, util::msg("{}: sha256 {} differs from the expected {}", wname, h, *w.sha256),
                          util::msg("the file is corrupt or was replaced; clear it from the cache and download it again"));
    }
    return {};
  }));
  return from_cache;
}

struct Unpack {
  std::size_t index;
  wheel::WheelStager stager;
  fs::path cache_temp; // empty: staged straight into the transaction
};
using Unpacks = std::vector<std::optional<Unpack>>;

void remove_temp(const fs::path& temp) {
  std::error_code ec;
  if (!temp.empty()) fs::remove_all(temp, ec);
}

// stage_all (b1): validate each archive that is not cached and make its staging directory (in the
// unpacked cache when the wheel has a sha256 and there is a cache, else in the transaction).
Expected<Unpacks> prepare_unpacks(const std::vector<WheelToInstall>& wheels, const StagedSlots& from_cache, UnpackedCache* cache,
                                  const TransactionOptions& options, const fs::path& staging_root, unsigned threads) {
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < wheels.size(); ++i)
    if (!from_cache[i]) todo.push_back(i);
  Unpacks unpacks(todo.size());
  ENVFIX_TRY_VOID(util::parallel_for(todo.size(), threads, [&](std::size_t k) -> Expected<void> {
    std::size_t i = todo[k];
    const auto& w = wheels[i];
    auto sopt = options.staging;
    if (options.fault) {
      auto outer = options.fault;
      sopt.fault = [outer, i](std::string_view step) { return outer(step, i); };
    }
    fs::path temp, tree;
    if (cache && w.sha256) {
      temp = ENVFIX_TRY(cache->make_temp());
      tree = temp / "tree";
    } else {
      tree = staging_root / std::to_string(i) / "tree";
    }
    auto stager = wheel::WheelStager::prepare(w.wheel, tree, sopt);
    if (!stager) {
      remove_temp(temp);
      return std::unexpected(std::move(stager.error()));
    }
    unpacks[k].emplace(Unpack{i, std::move(*stager), temp});
    return {};
  }));
  return unpacks;
}

// stage_all (b2): extract all groups of all wheels over one set of threads (a 1 GB wheel is
// split, a dozen small ones run side by side), biggest first so that the large wheel does not
// start last.
Expected<void> extract_all(Unpacks& unpacks, const TransactionOptions& options, unsigned threads) {
  struct Group {
    std::size_t unpack, group;
  };
  std::vector<Group> groups;
  std::vector<std::uint64_t> group_bytes(unpacks.size()); // for progress: a wheel's bytes over its groups
  std::uint64_t unpack_bytes = 0;
  for (std::size_t k = 0; k < unpacks.size(); ++k) {
    unpack_bytes += unpacks[k]->stager.payload_bytes();
    std::size_t g = unpacks[k]->stager.split(threads, 16ull << 20);
    group_bytes[k] = unpacks[k]->stager.payload_bytes() / g;
    for (std::size_t j = 0; j < g; ++j) groups.push_back({k, j});
  }
  std::stable_sort(groups.begin(), groups.end(), [&](const Group& a, const Group& b) {
    return unpacks[a.unpack]->stager.payload_bytes() > unpacks[b.unpack]->stager.payload_bytes();
  });
  if (!unpacks.empty() && options.progress) options.progress({TxnPhase::unpack, unpacks.size(), unpack_bytes});
  std::atomic<std::uint64_t> unpacked{0};
  return util::parallel_for(groups.size(), threads, [&](std::size_t k) -> Expected<void> {
    ENVFIX_TRY_VOID(unpacks[groups[k].unpack]->stager.extract(groups[k].group));
    auto done = unpacked.fetch_add(group_bytes[groups[k].unpack]) + group_bytes[groups[k].unpack];
    if (options.unpack_progress) options.unpack_progress(done, unpack_bytes);
    return {};
  });
}

// stage_all (b3): check every hash against RECORD; a wheel staged for the cache becomes a cache
// entry (from_cache), one staged into the transaction is done (staged).
Expected<void> finish_unpacks(Unpacks& unpacks, const std::vector<WheelToInstall>& wheels, UnpackedCache* cache,
                              StagedSlots& staged, StagedSlots& from_cache, TransactionResult& result) {
  for (auto& u : unpacks) {
    auto sw = u->stager.finish();
    if (!sw) {
      remove_temp(u->cache_temp);
      return std::unexpected(std::move(sw.error()));
    }
    for (const auto& text : sw->warnings) result.warnings.push_back(util::plain(text)); // as read from the wheel
    const std::size_t index = u->index;
    const fs::path cache_temp = u->cache_temp;
    u.reset(); // the spent stager's archive directory and RECORD map
    if (cache_temp.empty())
      staged[index] = std::move(*sw);
    else
      from_cache[index] = ENVFIX_TRY(cache->add(*wheels[index].sha256, std::move(*sw), cache_temp));
  }
  return {};
}

// stage_all (c): cached trees into the staging directory, on the environment's filesystem.
Expected<void> link_cached(StagedSlots& from_cache, StagedSlots& staged, const fs::path& staging_root, LinkMode mode,
                           unsigned threads, LinkStamps& stamps, TransactionResult& result) {
  std::vector<std::size_t> links;
  for (std::size_t i = 0; i < staged.size(); ++i)
    if (!staged[i]) links.push_back(i);
  std::vector<std::optional<LinkResult>> linked(links.size());
  unsigned per_wheel = std::max(1u, threads / static_cast<unsigned>(std::max<std::size_t>(1, links.size())));
  ENVFIX_TRY_VOID(util::parallel_for(links.size(), threads, [&](std::size_t k) -> Expected<void> {
    std::size_t i = links[k];
    linked[k] = ENVFIX_TRY(link_tree(std::move(*from_cache[i]), staging_root / std::to_string(i) / "tree", mode, per_wheel));
    return {};
  }));
  for (std::size_t k = 0; k < links.size(); ++k) {
    auto& r = *linked[k];
    if (r.fallback && std::find(result.warnings.begin(), result.warnings.end(), *r.fallback) == result.warnings.end())
      result.warnings.push_back(*r.fallback);
    // The weakest mode used is the one to report.
    if (!result.link_mode || static_cast<int>(r.used) > static_cast<int>(*result.link_mode)) result.link_mode = r.used;
    stamps.add(r);
    staged[links[k]] = std::move(r.staged);
  }
  return {};
}

} // namespace

// Prepares every wheel's staged tree without touching the environment: archive size and hash
// checks, then unpacking (into the unpacked cache when there is one, else straight into staging)
// with large wheels split over several readers, then linking cached trees into staging. Runs on
// `threads` threads; with a fault hook everything runs in order on one thread so that tests can
// aim at a precise step.
Expected<std::vector<wheel::StagedWheel>> Transaction::stage_all(const fs::path& staging_root, TransactionResult& result) {
  unsigned threads = m_options.threads ? m_options.threads : util::default_threads();
  if (m_options.fault) threads = 1;
  std::optional<UnpackedCache> cache;
  if (!m_options.unpacked_cache.empty()) cache.emplace(m_options.unpacked_cache);
  UnpackedCache* cache_ptr = cache ? &*cache : nullptr;

  StepClock clock{&result.steps};
  auto from_cache = ENVFIX_TRY(look_up(m_install, cache_ptr, threads, result));
  clock.mark("lookup");
  auto unpacks = ENVFIX_TRY(prepare_unpacks(m_install, from_cache, cache_ptr, m_options, staging_root, threads));
  ENVFIX_TRY_VOID(extract_all(unpacks, m_options, threads));
  StagedSlots staged(m_install.size());
  ENVFIX_TRY_VOID(finish_unpacks(unpacks, m_install, cache_ptr, staged, from_cache, result));
  clock.mark("unpack");
  ENVFIX_TRY_VOID(link_cached(from_cache, staged, staging_root, m_options.link_mode, threads, m_stamps, result));
  clock.mark("link");
  std::vector<wheel::StagedWheel> out;
  for (auto& s : staged) out.push_back(std::move(*s));
  return out;
}

namespace {

// Step 1b of run(): every staged shared object to the kernel check (apply's KernelGate).
Expected<void> check_kernels(const std::vector<wheel::StagedWheel>& staged, const TransactionOptions& options) {
  std::vector<StagedObject> sos;
  for (std::size_t i = 0; i < staged.size(); ++i)
    for (const auto* f : staged[i].shared_objects()) sos.push_back({i, f->member, f->staged, f->hash});
  if (options.fault) ENVFIX_TRY_VOID(options.fault("kernel-check", 0));
  if (options.kernel_check) {
    if (options.progress) options.progress({TxnPhase::kernel_check, sos.size(), 0});
    if (auto k = options.kernel_check(sos); !k)
      return std::unexpected(std::move(k.error()).context(util::msg("refusing to install: kernel check failed")));
  }
  return {};
}

// The .dist-info directories that leave: those asked for, and every installed version of a
// project being installed.
Expected<std::vector<fs::path>> removals_for(const std::vector<fs::path>& asked, const std::vector<WheelInstallPlan>& plans,
                                             const InstallTarget& target) {
  std::vector<fs::path> removals;
  auto add_removal = [&](const fs::path& d) {
    auto n = d.lexically_normal();
    if (std::find(removals.begin(), removals.end(), n) == removals.end()) removals.push_back(n);
  };
  for (const auto& d : asked) add_removal(d);
  for (const auto& p : plans)
    for (const auto& d : ENVFIX_TRY(find_dist_infos(target, p.name))) add_removal(d);
  return removals;
}

// The files a transaction moves away and the paths it installs. Per-file bookkeeping is plain
// strings (FileMove::to is already lexically normal): peak memory stays a few hundred bytes per file.
struct FileSets {
  std::vector<std::string> remove_files, install_dests;
};

// Every file of the removed distributions, then every destination of the plans: two plans may not
// install one path, a directory or the interpreter is never replaced, and a file no removed
// distribution owns is stashed like the others so that rollback restores it.
Expected<FileSets> collect_files(const std::vector<WheelInstallPlan>& plans, const std::vector<fs::path>& removals,
                                 const InstallTarget& target, TxnMeta& meta, TransactionResult& result) {
  FileSets out;
  std::unordered_set<std::string> remove_set;
  for (const auto& d : removals) {
    UninstallOptions uo;
    uo.also_removing = removals;
    auto up = ENVFIX_TRY(plan_uninstall(d, target, uo));
    meta.removed.push_back({up.name, up.version});
    result.warnings.insert(result.warnings.end(), up.warnings.begin(), up.warnings.end());
    for (auto& f : up.files)
      if (remove_set.insert(f).second) out.remove_files.push_back(std::move(f));
  }
  std::unordered_map<std::string_view, std::size_t> dest_owner; // views into plans' moves
  for (std::size_t pi = 0; pi < plans.size(); ++pi) {
    const auto& p = plans[pi];
    meta.installed.push_back({p.name, p.version});
    for (const auto& m : p.moves) {
      const std::string& to = m.to;
      auto [it, inserted] = dest_owner.emplace(to, pi);
      if (!inserted) return fail(ErrorCode::invalid_input, "{} and {} both install {}", plans[it->second].name, p.name, to);
      out.install_dests.push_back(to);
      struct stat st;
      if (::lstat(to.c_str(), &st) != 0) continue;
      if (S_ISDIR(st.st_mode))
        return fail(ErrorCode::invalid_input, "{} installs the file {}, which exists as a directory", p.name, to);
      if (target.is_interpreter(to))
        return fail(ErrorCode::invalid_input, "{} would replace {}, the environment's interpreter", p.name, to);
      if (remove_set.insert(to).second) {
        out.remove_files.push_back(to);
        result.warnings.push_back(util::msg("{} replaces {}, which no removed distribution owned", p.name, to));
      }
    }
  }
  return out;
}

// The journal's steps: files into the backup, directories left empty removed (meta.split marks
// the end of this part), then for each installed file its missing parents and the move itself.
// Files bound for another filesystem go through an auxiliary directory there (aux_copies).
void journal_ops(FileSets files, std::vector<WheelInstallPlan>& plans, const InstallTarget& target, AuxDirs& aux, TxnMeta& meta,
                 std::vector<std::pair<fs::path, fs::path>>& aux_copies) {
  const unsigned dir_mode = 0777 & ~current_umask();
  meta.ops.reserve(files.remove_files.size() + files.install_dests.size());
  for (std::size_t i = 0; i < files.remove_files.size(); ++i)
    meta.ops.push_back({TxnOp::Kind::move, files.remove_files[i], aux.backup_for(files.remove_files[i], i).string(), 0});
  for (const auto& d : dirs_left_empty(files.remove_files, target.prune_stops(), files.install_dests)) {
    struct stat st;
    unsigned mode = ::lstat(d.c_str(), &st) == 0 ? (st.st_mode & 07777) : dir_mode;
    meta.ops.push_back({TxnOp::Kind::rmdir, d.string(), {}, mode});
  }
  meta.split = meta.ops.size();
  files = {};
  std::unordered_set<std::string> made;
  for (auto& p : plans) {
    for (auto& m : p.moves) {
      // Parents that do not exist yet, created before the file (nearest existing one stops the walk).
      std::vector<std::string_view> missing;
      std::string_view to(m.to);
      for (auto slash = to.rfind('/'); slash != std::string_view::npos && slash > 0; slash = to.rfind('/', slash - 1)) {
        auto d = to.substr(0, slash);
        if (made.contains(std::string(d)) || exists_nofollow(std::string(d))) break;
        missing.push_back(d);
      }
      for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        made.emplace(*it);
        meta.ops.push_back({TxnOp::Kind::mkdir, std::string(*it), {}, dir_mode});
      }
      std::string from = std::move(m.from);
      if (auto copy = aux.stage_for(m.to, aux_copies.size())) {
        aux_copies.emplace_back(from, *copy);
        from = copy->string();
      }
      meta.ops.push_back({TxnOp::Kind::move, std::move(from), std::move(m.to), 0});
    }
    p.moves = {};
  }
  meta.aux = aux.dirs();
}

// Step 4 of run(), after commit: drop staging, keep (or drop) the backup, forget backups older
// than the newest `keep` (this one included).
void clean_up_committed(const fs::path& txn_dir, const TxnMeta& meta, const Roots& roots, const fs::path& prefix,
                        bool keep_backup, unsigned keep, TransactionResult& result) {
  remove_tree(txn_dir / "staging");
  for (const auto& a : meta.aux) {
    remove_tree(a / "stage");
    std::error_code ec;
    if (fs::is_empty(a / "backup", ec)) remove_tree(a); // nothing kept there: no clutter in site-packages
  }
  if (!keep_backup)
    discard_txn(txn_dir, roots);
  else
    result.backup_bytes = backup_bytes_of(txn_dir, roots);
  unsigned kept = keep_backup ? 1 : 0;
  // Without a backup of this step, none older is kept either: rollback undoes the stack newest
  // first, and an older backup cannot be reached past a step that has none (transaction.hpp).
  const unsigned limit = keep_backup ? keep : 0;
  auto dirs = txn_dirs(prefix);
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    if (it->filename() == meta.id) continue;
    if (kept < limit && read_state(*it) == TxnState::committed) {
      ++kept;
      continue;
    }
    discard_txn(*it, roots);
  }
}

} // namespace

Expected<TransactionResult> Transaction::run() {
  ENVFIX_TRY_VOID(check_externally_managed(m_target, m_options.break_system_packages));
  m_target.unify_aliases(); // lib64 and lib: one directory, one spelling of every path
  auto lock = ENVFIX_TRY(EnvLock::acquire(m_target.prefix, m_options.wait_for_lock));
  TransactionResult result;
  result.recovered = ENVFIX_TRY(recover_locked(m_target));
  const Roots roots = scheme_roots(m_target);

  TxnMeta meta;
  meta.id = new_txn_id();
  meta.started = static_cast<std::int64_t>(std::time(nullptr));
  result.id = meta.id;
  const fs::path txn_dir = m_target.prefix / ".envfix" / "txn" / meta.id;
  result.txn_dir = txn_dir;
  ENVFIX_TRY_VOID(util::create_directories(txn_dir / "backup"));
  // Until the journal exists, nothing in the environment has changed: failing = deleting txn_dir.
  struct Discard {
    fs::path dir;
    bool armed = true;
    ~Discard() {
      if (armed) remove_tree(dir);
    }
  } discard{txn_dir};

  // 1. Hash, stage (RECORD verified), kernel check.
  std::vector<wheel::StagedWheel> staged = ENVFIX_TRY(stage_all(txn_dir / "staging", result));
  StepClock clock{&result.steps};
  ENVFIX_TRY_VOID(check_kernels(staged, m_options));
  clock.mark("kernel-check");

  // 2. Plan: what goes where, what leaves, which directories appear and disappear.
  std::vector<WheelInstallPlan> plans;
  for (std::size_t i = 0; i < staged.size(); ++i) {
    InstallOptions io;
    io.requested = m_install[i].requested;
    io.direct_url = m_install[i].direct_url;
    plans.push_back(ENVFIX_TRY(plan_wheel_install(staged[i], m_target, io)));
  }
  std::unordered_map<std::string, std::string> linked_dest; // staged hard link → final path (LinkStamps)
  if (!m_stamps.empty())
    for (const auto& p : plans)
      for (const auto& m : p.moves) linked_dest.emplace(m.from, m.to);
  const auto removals = ENVFIX_TRY(removals_for(m_remove, plans, m_target));
  auto files = ENVFIX_TRY(collect_files(plans, removals, m_target, meta, result));
  result.files_removed = files.remove_files.size();
  result.files_installed = files.install_dests.size();
  AuxDirs aux(m_target, txn_dir, meta.id);
  std::vector<std::pair<fs::path, fs::path>> aux_copies;
  journal_ops(std::move(files), plans, m_target, aux, meta, aux_copies);
  result.installed = meta.installed;
  result.removed = meta.removed;
  for (const auto& p : plans) result.warnings.insert(result.warnings.end(), p.warnings.begin(), p.warnings.end());
  plans = {}; // the staged wheels and plans are released once the journal's steps exist
  staged = {};

  clock.mark("plan");
  // 3. Journal, then change the environment.
  ENVFIX_TRY_VOID(write_meta(txn_dir, meta, m_options.durable));
  ENVFIX_TRY_VOID(write_state(txn_dir, TxnState::prepared, m_options.durable));
  discard.armed = false;
  if (!meta.aux.empty()) {
    if (auto a = prepare_aux(meta.aux, aux_copies); !a) {
      discard_txn(txn_dir, roots);
      return std::unexpected(std::move(a.error()).context(util::msg("preparing files on another filesystem")));
    }
  }
  ExecHooks hooks{m_options.verify, m_options.fault, m_options.progress, m_options.handle_signals, m_options.durable, {}, &clock};
  const unsigned threads = m_options.threads ? m_options.threads : util::default_threads();
  if (!m_stamps.empty()) {
    m_stamps.before_install(
        [&](const std::string& s) -> const std::string* {
          auto it = linked_dest.find(s);
          return it == linked_dest.end() ? nullptr : &it->second;
        },
        threads);
    linked_dest = {};
    hooks.installed = [&] { m_stamps.after_install(threads); };
  }
  ENVFIX_TRY_VOID(execute(txn_dir, meta, m_target.prefix, roots, hooks));

  // 4. Committed.
  clean_up_committed(txn_dir, meta, roots, m_target.prefix, m_options.keep_backup, m_options.keep_backups, result);
  clock.mark("cleanup");
  return result;
}

Expected<RecoverResult> recover(const InstallTarget& target, bool wait_for_lock) {
  const auto& prefix = target.prefix;
  RecoverResult r;
  std::error_code ec;
  if (!fs::exists(prefix / ".envfix" / "txn", ec)) return r;
  auto lock = ENVFIX_TRY(EnvLock::acquire(prefix, wait_for_lock));
  r.actions = ENVFIX_TRY(recover_locked(target));
  return r;
}

Expected<std::vector<BackupInfo>> kept_backups(const InstallTarget& target) {
  const Roots roots = scheme_roots(target);
  auto dirs = txn_dirs(target.prefix);
  std::vector<BackupInfo> out;
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    if (read_state(*it) != TxnState::committed) continue;
    auto meta = read_meta(*it, false);
    if (!meta || meta->kind != "apply") continue;
    BackupInfo b;
    b.id = meta->id;
    b.txn_dir = *it;
    b.bytes = backup_bytes_of(*it, roots);
    b.installed = meta->installed;
    b.removed = meta->removed;
    out.push_back(std::move(b));
  }
  return out;
}

Expected<std::optional<BackupInfo>> last_backup(const InstallTarget& target) {
  auto all = ENVFIX_TRY(kept_backups(target));
  if (all.empty()) return std::optional<BackupInfo>{};
  return std::optional<BackupInfo>(std::move(all.front()));
}

Expected<std::uint64_t> drop_backups(const InstallTarget& target) {
  const auto& prefix = target.prefix;
  const Roots roots = scheme_roots(target);
  std::error_code ec;
  if (!fs::exists(prefix / ".envfix" / "txn", ec)) return std::uint64_t{0};
  auto lock = ENVFIX_TRY(EnvLock::acquire(prefix, true));
  (void)ENVFIX_TRY(recover_locked(target));
  std::uint64_t freed = 0;
  for (const auto& d : txn_dirs(prefix)) {
    freed += tree_bytes(d);
    if (auto meta = read_meta(d, false))
      for (const auto& a : own_aux(*meta, d, roots)) freed += tree_bytes(a);
    discard_txn(d, roots);
  }
  return freed;
}

namespace {

// rollback's journal: the old transaction reversed and inverted. What it installed moves into
// this rollback's backup, directories it created go, directories it removed come back, and its
// backup returns to its places (meta.split between the two parts). Refuses, removing txn_dir,
// when the environment changed since in a way that would lose a file.
Expected<void> invert_ops(const TxnMeta& old, const fs::path& old_backup, const fs::path& txn_dir, AuxDirs& aux, TxnMeta& meta) {
  std::size_t n = 0;
  auto trash = [&](const fs::path& file) { return aux.backup_for(file, n++).string(); };
  std::set<fs::path> old_backups{old_backup};
  for (const auto& a : old.aux) old_backups.insert((a / "backup").lexically_normal());
  auto is_backup = [&](const fs::path& p) { return old_backups.contains(p.lexically_normal().parent_path()); };
  std::unordered_set<std::string> created, installed_paths;
  for (const auto& op : old.ops) {
    if (op.kind == TxnOp::Kind::mkdir) created.insert(op.path);
    if (op.kind == TxnOp::Kind::move && !is_backup(op.dest))
      installed_paths.insert(fs::path(op.dest).lexically_normal().string());
  }

  // Reverse and invert: what was installed moves into this rollback's backup, created directories
  // go, removed directories come back, and the old backup returns to its places.
  std::vector<TxnOp> undo_part, restore_part;
  std::unordered_set<std::string> trashed;
  auto trash_once = [&](const std::string& path) {
    if (trashed.insert(fs::path(path).lexically_normal().string()).second)
      undo_part.push_back({TxnOp::Kind::move, path, trash(path), 0});
  };
  // Byte-code the interpreter wrote since the transaction (`import` of the new set regenerates
  // __pycache__/*.pyc where the old set's were): derived, so it goes with the new set.
  auto is_bytecode = [](const std::string& p) { return p.ends_with(".pyc") && p.find("/__pycache__/") != std::string::npos; };
  for (auto it = old.ops.rbegin(); it != old.ops.rend(); ++it) {
    const auto& op = *it;
    switch (op.kind) {
    case TxnOp::Kind::move:
      if (is_backup(op.dest)) {
        if (exists_nofollow(op.path) && is_bytecode(op.path) &&
            !installed_paths.contains(fs::path(op.path).lexically_normal().string()))
          trash_once(op.path);
        else if (exists_nofollow(op.path) && !installed_paths.contains(fs::path(op.path).lexically_normal().string())) {
          remove_tree(txn_dir);
          return make_error(ErrorCode::invalid_input, util::msg("cannot roll back {}: {} exists again", old.id, op.path),
                            util::msg("something changed the environment after that transaction"));
        }
        restore_part.push_back({TxnOp::Kind::move, op.dest, op.path, 0});
      } else {
        if (!exists_nofollow(op.dest)) {
          remove_tree(txn_dir);
          return make_error(ErrorCode::invalid_input, util::msg("cannot roll back {}: {} is gone", old.id, op.dest),
                            util::msg("something changed the environment after that transaction"));
        }
        trash_once(op.dest);
        if (op.dest.ends_with(".py")) {
          // Byte-code compiled from the new sources since.
          std::error_code ec;
          const fs::path dest(op.dest);
          auto stem = dest.stem().string();
          for (fs::directory_iterator d(dest.parent_path() / "__pycache__", ec), end; !ec && d != end; d.increment(ec)) {
            auto nm = d->path().filename().string();
            if (nm.starts_with(stem + ".") && nm.ends_with(".pyc")) trash_once(d->path().string());
          }
        }
      }
      break;
    case TxnOp::Kind::mkdir: {
      auto cache = op.path + "/__pycache__";
      std::error_code ec;
      if (!created.contains(cache) && fs::is_directory(cache, ec)) {
        struct stat st;
        unsigned mode = ::lstat(cache.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0755;
        undo_part.push_back({TxnOp::Kind::rmdir, cache, {}, mode});
      }
      undo_part.push_back({TxnOp::Kind::rmdir, op.path, {}, op.mode});
      break;
    }
    case TxnOp::Kind::rmdir: {
      // A __pycache__ the interpreter made again since (running the new set) is there already.
      std::error_code ec;
      if (op.path.ends_with("/__pycache__") && fs::is_directory(op.path, ec) && !fs::is_symlink(op.path, ec)) break;
      restore_part.push_back({TxnOp::Kind::mkdir, op.path, {}, op.mode});
      break;
    }
    }
  }
  // Restores run parents first: directories in the order they were removed, reversed, then files.
  std::stable_partition(restore_part.begin(), restore_part.end(), [](const TxnOp& o) { return o.kind == TxnOp::Kind::mkdir; });
  meta.ops = std::move(undo_part);
  meta.split = meta.ops.size();
  meta.ops.insert(meta.ops.end(), restore_part.begin(), restore_part.end());
  meta.aux = aux.dirs();
  return {};
}

} // namespace

Expected<RollbackResult> rollback(const InstallTarget& target, TransactionOptions options) {
  auto lock = ENVFIX_TRY(EnvLock::acquire(target.prefix, options.wait_for_lock));
  (void)ENVFIX_TRY(recover_locked(target));
  const Roots roots = scheme_roots(target);
  auto last = ENVFIX_TRY(last_backup(target));
  if (!last)
    return make_error(ErrorCode::not_found, util::msg("nothing to roll back in {}", target.prefix.string()),
                      util::msg("only transactions applied with a backup can be rolled back (apply --keep-backups N keeps N)"));
  auto old = ENVFIX_TRY(read_meta(last->txn_dir));
  old.aux = own_aux(old, last->txn_dir, roots);
  const fs::path old_backup = (last->txn_dir / "backup").lexically_normal();

  TxnMeta meta;
  meta.id = new_txn_id();
  meta.kind = "rollback";
  meta.rolls_back = old.id;
  meta.started = static_cast<std::int64_t>(std::time(nullptr));
  meta.installed = old.removed;
  meta.removed = old.installed;
  const fs::path txn_dir = target.prefix / ".envfix" / "txn" / meta.id;
  ENVFIX_TRY_VOID(util::create_directories(txn_dir / "backup"));
  AuxDirs aux(target, txn_dir, meta.id);
  ENVFIX_TRY_VOID(invert_ops(old, old_backup, txn_dir, aux, meta));
  {
    struct Discard {
      fs::path dir;
      bool armed = true;
      ~Discard() {
        if (armed) remove_tree(dir);
      }
    } discard{txn_dir};
    ENVFIX_TRY_VOID(write_meta(txn_dir, meta, options.durable));
    ENVFIX_TRY_VOID(write_state(txn_dir, TxnState::prepared, options.durable));
    discard.armed = false;
  }
  if (auto a = prepare_aux(meta.aux, {}); !a) {
    discard_txn(txn_dir, roots);
    return std::unexpected(std::move(a.error()));
  }
  ExecHooks hooks{options.verify, options.fault, options.progress, options.handle_signals, options.durable, {}, nullptr};
  ENVFIX_TRY_VOID(execute(txn_dir, meta, target.prefix, roots, hooks));
  RollbackResult r;
  r.id = old.id;
  r.restored = old.removed;
  r.removed = old.installed;
  r.freed_bytes = tree_bytes(last->txn_dir) + tree_bytes(txn_dir);
  for (const auto& a : old.aux) r.freed_bytes += tree_bytes(a);
  for (const auto& a : meta.aux) r.freed_bytes += tree_bytes(a);
  (void)write_state(last->txn_dir, TxnState::rolled_back);
  discard_txn(last->txn_dir, roots);
  discard_txn(txn_dir, roots);
  return r;
}

} // namespace envfix::installer
