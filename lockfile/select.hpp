#pragma once
// Which lockfile target fits a host (docs/lockfile.md, "Fields of a target"): one rule for
// `apply --locked` and `export` alike, with the reason each other target does not fit.
#include <set>
#include <string>
#include <vector>

#include "lockfile/lockfile.hpp"

namespace envfix::lockfile {

// The host as a lock target describes one: GPUs as sm names, python X.Y, the platform tags its
// interpreter accepts, the driver version ("" = none).
struct HostView {
  std::set<std::string> gpus;
  std::string python;
  std::vector<std::string> platforms;
  std::string driver;
};

struct TargetFit {
  const LockTarget* target = nullptr;
  std::vector<std::string> mismatches; // empty: it fits ("gpus sm_90 (host: sm_86)", "driver >= 570.26 (host: 535.1)")
};

// Why `t` does not fit `host` (empty when it does): GPUs set-equal, python equal, platform among the
// host's, driver at least driver_min.
[[nodiscard]] std::vector<std::string> mismatches(const LockTarget& t, const HostView& host);

struct Selection {
  const LockTarget* chosen = nullptr; // the first target (by id) that fits; null when none does
  std::vector<TargetFit> considered;  // every target up to and including the chosen one
  // "target ID needs gpus …; python …" for each target that does not fit.
  [[nodiscard]] std::vector<std::string> reasons() const;
};

[[nodiscard]] Selection select(const LockFile& lock, const HostView& host);

} // namespace envfix::lockfile
