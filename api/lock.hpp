#pragma once
// `lock`: resolve for one or more hosts without installing anything and write envfix.lock
// (docs/lockfile.md); the lock-target helpers apply uses to write the lockfile after a commit.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/options.hpp"
#include "api/plan.hpp"
#include "fetch/fetch.hpp"
#include "lockfile/lockfile.hpp"
#include "lockfile/select.hpp"
#include "util/error.hpp"

namespace envfix::api {

// "envfix 0.1.0"
[[nodiscard]] std::string created_by();

// The host as lockfile::select sees it.
[[nodiscard]] lockfile::HostView host_view(const Host& host);
using LocalFile = fetch::LocalFile; // sha256 and size computed for a file its index published none of
// Write or update the lockfile `path` with this plan's target after a commit; kernels read from
// the binaries just checked (`verified`) win over the old lock's and the matrices'.
[[nodiscard]] Expected<std::string>
update_lockfile(const std::string& path, const PlanContext& ctx, const std::vector<std::string>& request,
                const std::map<std::string, lockfile::LockedKernels>& verified, const std::map<std::string, LocalFile>& local,
                std::vector<util::Message>* warnings = nullptr, std::optional<lockfile::VerifiedOn> verified_here = std::nullopt);

// "gpu=sm_86+sm_120,python=3.10,driver=550.54,platform=manylinux_2_28_x86_64" applied to a copy of
// the options. gpu=none (or no gpu key) is a CPU-only target.
[[nodiscard]] Expected<Options> apply_target_spec(const Options& o, const std::string& spec);

struct LockRequest {
  std::vector<std::string> requirements;
  RequestFiles files;               // -r, -c (api/plan.hpp); the lock records the files' requirements as its request
  std::vector<std::string> targets; // --target specs; empty = this host
  std::string output;               // "" = Options::lockfile
  bool check = false;               // compare with the file instead of writing it
  bool pre = false;
  bool allow_unhashed = false;
};

struct LockedFor {
  std::string id;
  std::size_t resolved = 0;
  double seconds = 0;
};

struct LockReport {
  std::string path;
  lockfile::LockFile lock;
  std::vector<util::Message> notes;
  std::vector<LockedFor> resolved; // one per target, in request order
  Host host;                       // the first target's (interpreter lines)
  bool written = false;
  bool stale = false;                   // --check
  std::vector<std::string> differences; // --check, when stale
};

[[nodiscard]] Expected<LockReport> lock(const Options& o, const LockRequest& r);

} // namespace envfix::api
