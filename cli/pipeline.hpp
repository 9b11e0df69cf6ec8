#pragma once
// The pipeline shared by plan, apply and lock (docs/architecture.md, Pipeline): probe the host (or
// take the planned one from --gpu/--driver/--python-version/--platform), load the matrices, resolve
// over one index or the framework's indexes, and diff against the installed set. cli/ only: it
// wires modules, it does not print.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <map>

#include <nlohmann/json_fwd.hpp>

#include "cli/globals.hpp"
#include "index/index_client.hpp"
#include "lockfile/lockfile.hpp"
#include "matrices/knowledge.hpp"
#include "probe/host_facts.hpp"
#include "resolver/framework_selector.hpp"
#include "resolver/plan.hpp"
#include "util/error.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::cli {

[[nodiscard]] std::vector<std::string> split_commas(const std::string& s);
[[nodiscard]] std::string human_size(std::uint64_t n);
[[nodiscard]] std::string human_duration(double seconds); // "812ms", "3.41s"

struct Host {
  std::vector<std::pair<std::string, specs::ComputeCapability>> gpus; // name, cc
  bool gpus_planned = false;  // from --gpu / ENVFIX_GPU
  std::string driver;
  std::optional<specs::CudaVersion> driver_cuda;
  resolver::TargetEnvironment python;
  specs::TagEnvironment tag_env;
  std::string python_text;    // "Python 3.11.7 (cp311, glibc 2.36)"
  std::string python_mm;      // "3.11"
  std::string platform = "linux_x86_64"; // matrices platform name
  std::string platform_tag;   // --platform as given, "" when probed
  std::vector<resolver::InstalledPackage> installed;
  std::vector<std::string> installed_names;
  probe::HostFacts facts;     // what the probe read (python, installed dist-infos)
};

[[nodiscard]] Expected<Host> make_host(const Globals& g, const matrices::Knowledge* k);

struct PlanFlags {
  bool pre = false;
  bool allow_unhashed = false;
  // Installed distributions outside the request stay when they satisfy every requirement on them
  // (resolver/installed.hpp). Off for `lock`: a lock describes a set for any machine.
  bool prefer_installed = true;
  std::vector<resolver::Rejection>* rejected_out = nullptr; // on a failed plan: every rejected candidate (--explain)
};

struct PlanContext {
  std::unique_ptr<matrices::Knowledge> knowledge; // null when the matrices failed to load (plain mode only)
  Host host;
  std::unique_ptr<index::IndexClient> client;
  std::unique_ptr<resolver::FrameworkSpec> spec;  // framework mode only (refers to *knowledge)
  std::optional<resolver::FrameworkIndex> framework_index;
  std::vector<specs::Requirement> request;
  resolver::Resolution resolution;
  resolver::Plan plan;
  std::size_t resolved = 0;
  double seconds = 0;
  [[nodiscard]] bool framework_mode() const { return spec != nullptr; }
};

[[nodiscard]] Expected<std::unique_ptr<matrices::Knowledge>> load_knowledge(const Globals& g);
[[nodiscard]] Expected<std::unique_ptr<index::IndexClient>> make_index_client(const Globals& g);
// <cache>/evidence-v1: the kernel facts read from binaries (wheel/kernel_evidence.hpp).
[[nodiscard]] wheel::EvidenceStore evidence_store(const index::IndexClient& client);
// --index-url or ENVFIX_INDEX_URL.
[[nodiscard]] std::string plain_index_url(const Globals& g);

// Probe, resolve and diff: everything `envfix plan` shows.
[[nodiscard]] Expected<PlanContext> build_plan(const Globals& g, const std::vector<std::string>& requests,
                                               PlanFlags flags = {});

// pip check over the environment as it will be after the plan (resolver::check_environment): an
// error naming each installed package and the requirement the plan would break, unless allow_breaking
// (then the broken requirements come back as warnings, in ctx.plan.warnings too).
// A plan that removes or overwrites a package conda owns is refused (naming it, with the conda way as
// hint) unless allow_conda_overwrite; then each is a warning in plan.warnings.
[[nodiscard]] Expected<void> check_conda(const std::vector<resolver::InstalledPackage>& installed, resolver::Plan& plan,
                                         bool allow_conda_overwrite);
// The pip check part alone, for any plan (apply --locked builds one from the lockfile).
[[nodiscard]] Expected<std::vector<std::string>> check_breaking(const std::vector<resolver::InstalledPackage>& installed,
                                                                resolver::Plan& plan, const specs::MarkerEnvironment& env,
                                                                bool allow_breaking);
// Also refuses a plan that removes or overwrites a package conda owns, unless allow_conda_overwrite.
[[nodiscard]] Expected<std::vector<std::string>> check_installed(PlanContext& ctx, bool allow_breaking,
                                                                 bool allow_conda_overwrite = false);

// The plan/apply JSON fields of docs/json.md (channel, index, variant, install[], remove[], …).
[[nodiscard]] nlohmann::json plan_json(const resolver::Plan& p, const Host& h);
// "host: NVIDIA H200 (sm_90); driver 580.1; Python 3.11.7 (cp311, glibc 2.36)"
// followed by "\ninterpreter: /w/venv/bin/python (from $VIRTUAL_ENV)".
[[nodiscard]] std::string host_line(const Host& h);
[[nodiscard]] std::string interpreter_line(const Host& h);

// --- lockfile targets (docs/lockfile.md, "Fields of a target") ---
// The host part of a lock target: GPUs as sorted sm names, python X.Y, the platform tag the set needs
// (--platform when given, else the most demanding manylinux tag among the wheels, else linux_ARCH),
// driver-min from the matrices for the chosen CUDA variant ("" for plain sets).
[[nodiscard]] lockfile::LockedHost lock_host(const PlanContext& ctx);
// The kernels the matrices claim for the main package of a framework set (verified: false).
[[nodiscard]] std::map<std::string, lockfile::LockedKernels> claimed_kernels(const PlanContext& ctx);
struct LocalFile {
  std::string sha256;
  std::uint64_t size = 0;
};
// A target from the resolution. `kernels` by normalized name; `local` gives sha256/size of
// downloaded files for pins whose index did not publish them. Fails naming a pin without a sha256.
[[nodiscard]] Expected<lockfile::LockTarget> make_lock_target(const PlanContext& ctx,
                                                              const std::map<std::string, lockfile::LockedKernels>& kernels,
                                                              const std::map<std::string, LocalFile>& local = {});
// "envfix 0.1.0"
[[nodiscard]] std::string created_by();

} // namespace envfix::cli
