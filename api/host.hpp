#pragma once
// The host a command acts on or plans for (docs/architecture.md, Pipeline): what the probe read,
// with the planned parts (--gpu, --driver, --python-version, --platform, ENVFIX_GPU, ENVFIX_DRIVER)
// laid over it. The one host builder of every command.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/options.hpp"
#include "index/index_client.hpp"
#include "matrices/knowledge.hpp"
#include "probe/host_facts.hpp"
#include "resolver/framework_selector.hpp"
#include "resolver/plan.hpp"
#include "util/error.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::api {

struct Host {
  std::vector<std::pair<std::string, specs::ComputeCapability>> gpus; // name, cc
  bool gpus_planned = false;                                          // from --gpu / ENVFIX_GPU
  std::string driver;
  std::optional<specs::CudaVersion> driver_cuda; // what libcuda said; unset for a planned driver
  resolver::TargetEnvironment python;
  specs::TagEnvironment tag_env;
  std::string python_text;               // "Python 3.11.7 (cp311, glibc 2.36)"
  std::string python_mm;                 // "3.11"
  std::string platform = "linux_x86_64"; // matrices platform name
  std::string platform_tag;              // --platform as given, "" when probed
  std::vector<resolver::InstalledPackage> installed;
  std::vector<std::string> installed_names;
  // What the probe read, with planned GPUs (gpus_planned) and a planned driver (source "planned",
  // its CUDA from the matrices' driver floors) in place of the probed ones.
  probe::HostFacts facts;
};

struct HostNeeds {
  bool survey_path = false;   // also look at `pip` on PATH (doctor)
  bool require_python = true; // false: a host without an interpreter is a fact to report (doctor)
};

// The GPUs planned with --gpu, else ENVFIX_GPU (a comma list): an arch, or a product name through the
// matrices when `k` is given; nullopt when none is planned, an empty list for `none` (a CPU-only host).
[[nodiscard]] Expected<std::optional<std::vector<probe::GpuInfo>>> planned_gpus(const Options& o, const matrices::Knowledge* k);
[[nodiscard]] Expected<Host> make_host(const Options& o, const matrices::Knowledge* k, HostNeeds needs = {});

// The matrices: embedded, or --matrices / ENVFIX_MATRICES. A broken override the user named is an
// error; a broken embedded set gives null (framework mode off) and, in *why, the reason.
[[nodiscard]] Expected<std::unique_ptr<matrices::Knowledge>> load_knowledge(const Options& o, util::Message* why = nullptr);
[[nodiscard]] Expected<std::unique_ptr<index::IndexClient>> make_index_client(const Options& o);
// <cache>/evidence-v2: the kernel facts read from binaries (wheel/kernel_evidence.hpp).
[[nodiscard]] wheel::EvidenceStore evidence_store(const index::IndexClient& client);
// The same for a cache directory already opened (util::open_cache).
[[nodiscard]] wheel::EvidenceStore evidence_store_at(const std::filesystem::path& cache);
// The cache directory this run uses outside the index client (interpreter probes, evidence): --cache-dir
// or the default, through util::open_cache (another user's cache gives a private temporary one); empty
// when there is none. `create`: make it when missing.
[[nodiscard]] std::filesystem::path run_cache_dir(const Options& o, bool create = true);
// The index of a plain request when none is given: pip's default (README.md, Frameworks).
inline constexpr std::string_view kDefaultIndexUrl = "https://pypi.org/simple";
// --index-url or ENVFIX_INDEX_URL.
[[nodiscard]] std::string plain_index_url(const Options& o);
// --mirror or ENVFIX_MIRROR.
[[nodiscard]] std::string mirror_of(const Options& o);
// --extra-index-url (each occurrence), else ENVFIX_EXTRA_INDEX_URL split at whitespace (as pip reads
// PIP_EXTRA_INDEX_URL). Credentials stay inside: print them through index::redact_url.
[[nodiscard]] std::vector<std::string> extra_index_urls(const Options& o);
// envfix.toml's settings where neither an option nor its ENVFIX_* variable gives one, then the index
// pip or uv is configured with (project/settings.hpp; README.md, Configuration). invalid_input names
// a configuration file envfix cannot read.
[[nodiscard]] Expected<void> configure(Options& o);
// The options that say where builds come from (--mirror, --index-url, --extra-index-url,
// --find-links), as arguments for a command line envfix prints (doctor's fix); credentials redacted.
[[nodiscard]] std::vector<std::string> index_args(const Options& o);

} // namespace envfix::api
