#pragma once
// The planned files on disk, ready for the kernel gate and the transaction (docs/architecture.md,
// Modules): each wheel from the unpacked cache when an entry holds that very file, else downloaded
// in parallel (hash-verified by index/) and unpacked into the cache while the others still download
// (installer/early_unpack.hpp); then each wheel's own METADATA against the core metadata the resolver
// planned from. apply and apply --locked both come through here.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "index/candidate.hpp"
#include "index/index_client.hpp"
#include "installer/kernel_gate.hpp"
#include "installer/transaction.hpp"
#include "resolver/plan.hpp"
#include "resolver/resolver.hpp"
#include "util/error.hpp"

namespace envfix::fetch {

// One file to install, from the plan or from the lock.
struct WantedWheel {
  std::string name, version;
  index::Candidate file;
  bool requested = false; // named by the request (its INSTALLER/REQUESTED marker)
};

// A file's digest computed here, for a file its index published none of (the lockfile needs both).
struct LocalFile {
  std::string sha256;
  std::uint64_t size = 0;
};

// What the kernel gate needs to know of each wheel: its evidence key comes from the file name.
struct GateInput {
  std::string name, version, filename, sha256;
};

// The kernel gate's packages (installer/kernel_gate.hpp): the framework's `family`; a library where
// the framework's set requires it (`libraries`: Resolution::required_through; none known, as a lock
// records no edges: every package outside the family); an extension otherwise, judged as the
// framework is. Each keyed by its file name and the index's `variant` (wheel::build_key).
[[nodiscard]] std::vector<installer::GatePackage> gate_packages(const std::vector<GateInput>& wheels, std::string_view variant,
                                                                const std::set<std::string>& family,
                                                                const std::optional<std::set<std::string>>& libraries);

struct PreparedSet {
  std::vector<installer::WheelToInstall> wheels;
  std::vector<std::string> names; // the planned (or locked) name of each wheel
  std::vector<GateInput> gate_in;
  std::map<std::string, LocalFile> local; // by name: digests computed here
  std::set<std::string> family;           // the framework's packages among them
  double download_seconds = 0;
};

enum class Stage { download, unpack };

// How preparing is told: a stage begins, its bytes so far of all files together, a warning.
struct Progress {
  std::function<void(Stage)> stage;
  // total 0: unknown; files_done of files (0 of 0 where the stage does not count them).
  std::function<void(Stage, std::uint64_t done, std::uint64_t total, std::size_t files_done, std::size_t files)> bytes;
  std::function<void(const util::Message&)> warning;
};

struct FetchOptions {
  unsigned threads = 1;
  bool early_unpack = true; // false (ENVFIX_EARLY_UNPACK=0): all unpacking left to the transaction
};

// <cache>/unpacked-v1: wheels unpacked once, linked into every later install.
[[nodiscard]] std::filesystem::path unpacked_cache_dir(const index::IndexClient& client);

// Every file of `want` ready: found in the unpacked cache, or downloaded (or found in the wheel
// cache) and hash-verified; a digest computed for each file the index gave none. The first failure
// is named by `where(i)`.
[[nodiscard]] Expected<PreparedSet> prepare(index::IndexClient& client, const std::vector<WantedWheel>& want,
                                            std::set<std::string> family, const std::function<std::string(std::size_t)>& where,
                                            const FetchOptions& options, const Progress& progress);

// The plan's dependencies were read from the index's metadata; a downloaded wheel whose own METADATA
// says otherwise (a .metadata file that hides a Requires-Dist) is refused before anything is
// installed, and its cached metadata is dropped: the next run reads the wheel's own (the wheel cache
// comes before PEP 658 in IndexClient::fetch_metadata), so its plan is the true one.
[[nodiscard]] Expected<void> check_metadata_agrees(index::IndexClient& client, const resolver::Resolution& resolution,
                                                   const resolver::Plan& plan,
                                                   const std::vector<installer::WheelToInstall>& wheels);

} // namespace envfix::fetch
