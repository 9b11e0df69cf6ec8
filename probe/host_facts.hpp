#pragma once
// HostFacts: what probe/ reads about the machine (docs/architecture.md, Pipeline). probe/ decides
// nothing: it reports GPUs, the driver, the target interpreter and what is installed in it;
// resolver/ and cli/command_doctor.cpp draw the conclusions.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "specs/cuda_version.hpp"
#include "specs/gpu_arch.hpp"
#include "specs/marker.hpp"
#include "specs/requirement.hpp"
#include "specs/tag.hpp"
#include "specs/version.hpp"
#include "util/error.hpp"

namespace envfix::probe {

// A MIG device (compute instance) of a GPU in MIG mode: CUDA sees it, by its MIG UUID, as a device
// with its parent's compute capability.
struct MigDevice {
  std::string uuid;    // "MIG-c6d4f1ef-…"
  std::string profile; // "1g.18gb"; "" when unknown
  std::uint64_t memory_bytes = 0;
};

struct GpuInfo {
  int index = 0;               // CUDA ordinal as the framework sees it (after CUDA_VISIBLE_DEVICES)
  std::string name;            // "NVIDIA H200"; "NVIDIA H200 MIG 1g.18gb" for a MIG device
  specs::ComputeCapability cc; // 9.0
  std::string uuid;            // "GPU-db0235f6-…" ("MIG-…" for a MIG device)
  std::uint64_t memory_bytes = 0;
  int physical_index = -1;    // NVML / nvidia-smi index; -1 when unknown
  std::vector<MigDevice> mig; // the GPU's MIG devices (MIG mode on); empty otherwise
  std::string mig_of;         // for a MIG device: its GPU's UUID
};

struct DriverInfo {
  std::string version;                    // "580.159.04"
  std::optional<specs::CudaVersion> cuda; // highest CUDA the driver supports (cuDriverGetVersion)
  std::string source;                     // "nvml", "sysfs", "procfs", "nvidia-smi", "planned"
};

struct PythonInfo {
  std::filesystem::path executable;
  specs::Version version;     // 3.12.3
  std::string implementation; // "cpython"
  std::filesystem::path prefix, base_prefix;
  bool is_venv = false;                                // prefix != base_prefix
  bool is_conda = false;                               // conda-meta/ in prefix
  std::map<std::string, std::filesystem::path> scheme; // purelib platlib scripts headers data (+stdlib)
  specs::MarkerEnvironment markers;
  specs::TagEnvironment tag_env;
  std::string soabi;               // "cpython-312-x86_64-linux-gnu"
  bool externally_managed = false; // PEP 668 marker, ignored inside a venv
  std::string externally_managed_message;
  std::vector<std::filesystem::path> site_paths; // sys.path entries that are directories (scanned too)
};

// A conda-meta/<name>-<version>-<build>.json record (https://docs.conda.io/projects/conda/en/latest/
// user-guide/concepts/pkg-specs.html): the conda package that owns a dist-info. Its name may differ
// from the Python project's (pytorch owns torch); its build string carries the variant
// ("cuda129_…", "py3.11_cuda12.4_cudnn9.1.0_0", "cpu_…").
struct CondaRecord {
  std::string name, version, build, channel;
  std::filesystem::path record; // the conda-meta file ("" when only INSTALLER said conda)
  // Shared objects the record installs outside site-packages ($PREFIX/lib/libtorch_cuda.so): conda
  // puts a package's kernels there, where RECORD never points.
  std::vector<std::filesystem::path> prefix_objects;
};
// The framework variant a conda build string names: "cuda129_…" → cu129, "py3.11_cuda12.4_…" → cu124,
// "cpu_…" → cpu; nullopt when it names none.
[[nodiscard]] std::optional<std::string> conda_build_variant(std::string_view build);

struct InstalledDist {
  std::string name;                      // as written in METADATA (or the folder name)
  specs::Version version;                // with local label: 2.7.0+cu128
  std::filesystem::path dist_info;       // …/site-packages/torch-2.7.0+cu128.dist-info
  std::string installer;                 // INSTALLER content, trimmed ("pip", "uv", "envfix"), may be empty
  std::optional<std::string> direct_url; // raw direct_url.json text
  std::vector<specs::Requirement> requires_dist;
  bool has_record = false;
  bool requested = false;           // REQUESTED present
  std::optional<CondaRecord> conda; // owned by conda (a conda-meta record lists it, or INSTALLER=conda)
  [[nodiscard]] std::string normalized_name() const;
  [[nodiscard]] std::string local() const { return version.local(); } // "cu128" or ""
};

// Another interpreter found on PATH (the "pip installs into another environment" trap).
struct PathInterpreter {
  std::filesystem::path path;     // as found on PATH
  std::filesystem::path resolved; // realpath
};

// An NVIDIA Tegra system (Jetson): its integrated GPU is found through the device tree, its CUDA
// comes with L4T (not a desktop driver branch), and NVML is often absent. probe/ reports the files;
// api/host.cpp maps the SoC and the L4T release through the matrices (gpus.yaml `soc`, jetson.yaml).
struct TegraInfo {
  std::string model;                   // /proc/device-tree/model: "NVIDIA Jetson AGX Orin Developer Kit"
  std::vector<std::string> compatible; // /proc/device-tree/compatible: "nvidia,p3737-0000", …, "nvidia,tegra234"
  std::string soc;                     // the "nvidia,tegraNNN" entry without "nvidia,": "tegra234"; "" when none
  std::string l4t;                     // /etc/nv_tegra_release "# R36 (release), REVISION: 4.3" → "36.4.3"
  std::string kernel;                  // /proc/sys/kernel/osrelease: "5.15.148-tegra"
  std::string power_mode;              // nvpmodel: "MAXN (0)"; "" when unknown
  std::vector<std::string> evidence;   // the files that said so
};

struct HostFacts {
  std::vector<GpuInfo> gpus;
  std::optional<TegraInfo> tegra; // a Jetson (device tree, nv_tegra_release or a -tegra kernel)
  std::optional<DriverInfo> driver;
  std::optional<PythonInfo> python;
  std::vector<InstalledDist> installed;
  std::vector<util::Message> notes; // why a fact is missing ("libnvidia-ml.so.1 not found", …)
  // PATH survey.
  std::vector<PathInterpreter> path_interpreters;
  std::optional<std::filesystem::path> pip_on_path;     // `pip` found on PATH
  std::optional<std::filesystem::path> pip_interpreter; // interpreter from pip's shebang
  bool gpus_planned = false;                            // gpus/driver come from --gpu/--driver, not the machine
  std::string python_from;                              // how the interpreter was chosen (InterpreterChoice::how)
};

struct ProbeOptions {
  std::optional<std::filesystem::path> python; // --python; else default_interpreter()
  std::filesystem::path cache_dir;             // interpreter-probe cache; empty: no cache
  bool gpus = true;                            // probe GPUs and driver
  bool interpreter = true;                     // probe the interpreter
  bool installed = true;                       // scan dist-infos (needs interpreter)
  bool survey_path = true;                     // other interpreters and pip on PATH
  std::chrono::milliseconds python_timeout{std::chrono::seconds(60)};
};

// GPUs through NVML + the CUDA driver API (dlopen'ed), honouring CUDA_VISIBLE_DEVICES. No driver or
// no device is not an error: an empty list; `notes` (if given) says why.
[[nodiscard]] Expected<std::vector<GpuInfo>> probe_gpus(std::vector<util::Message>* notes = nullptr);

// Samples every GPU's used memory through NVML in a thread, from construction until stop(), for
// `envfix verify --app`. Without NVML (or with ENVFIX_NO_NVML=1) it samples nothing and peak()
// is empty; why() says so.
class GpuMemorySampler {
public:
  explicit GpuMemorySampler(std::chrono::milliseconds period = std::chrono::milliseconds(100));
  ~GpuMemorySampler();
  GpuMemorySampler(const GpuMemorySampler&) = delete;
  GpuMemorySampler& operator=(const GpuMemorySampler&) = delete;
  void stop();
  // Per GPU index (NVML order): the highest used bytes seen, and the used bytes at the start.
  [[nodiscard]] std::vector<std::pair<std::uint64_t, std::uint64_t>> peak() const; // {peak, baseline}
  [[nodiscard]] const std::string& why() const { return m_why; }

private:
  struct State;
  std::unique_ptr<State> m_state;
  std::string m_why;
};
// Driver version: NVML, /sys/module/nvidia/version, /proc/driver/nvidia/version, nvidia-smi.
// not_found when there is no driver at all.
[[nodiscard]] Expected<DriverInfo> probe_driver(std::vector<util::Message>* notes = nullptr);
// Run the interpreter once with the embedded probe script. cache_dir empty: no cache.
[[nodiscard]] Expected<PythonInfo> probe_python(const std::filesystem::path& python, const std::filesystem::path& cache_dir = {},
                                                std::chrono::milliseconds timeout = std::chrono::seconds(60));
// Every *.dist-info in the scheme's purelib/platlib (deduplicated), sorted by normalized name.
[[nodiscard]] Expected<std::vector<InstalledDist>> scan_installed(const PythonInfo& python);
// Which interpreter a command targets and which rule chose it, so that output can name both.
struct InterpreterChoice {
  std::filesystem::path path;
  std::string how; // "--python", "$ENVFIX_PYTHON", "$VIRTUAL_ENV", "$CONDA_PREFIX", "python3 on PATH"
};
[[nodiscard]] Expected<InterpreterChoice> choose_interpreter(const std::optional<std::filesystem::path>& explicit_python);
// The default interpreter: --python, then $VIRTUAL_ENV, then $CONDA_PREFIX, then python3 on PATH.
[[nodiscard]] Expected<std::filesystem::path> default_interpreter(const std::optional<std::filesystem::path>& explicit_python);
// One conda-meta/*.json record as read_conda_meta uses it.
struct CondaMetaRecord {
  CondaRecord record;                  // prefix_objects: the $PREFIX/lib/*.so files it installs
  std::vector<std::string> dist_infos; // "lib/python3.12/site-packages/x-1.0.dist-info": where it installs files
  std::set<std::string> depends;       // the names of its dependencies
  std::vector<std::string> skipped;    // `files` entries that leave the prefix (absolute, ../): ignored, said
};
// `text` of the record `path` under `prefix`, every field checked for its type (the file lies in an
// environment someone else may have written): an error naming the file for a wrong type or a
// non-object, never an exception. A file path that leaves the prefix is skipped (in `skipped`), and
// the record still owns what else it lists: one odd entry must not hand a conda package to pip.
[[nodiscard]] Expected<CondaMetaRecord> parse_conda_record(std::string_view text, const std::filesystem::path& path,
                                                           const std::filesystem::path& prefix);
// Marks the dists conda owns: a conda-meta record under `prefix` whose `files` lie in the dist-info,
// or INSTALLER "conda". A prefix without conda-meta/ changes nothing.
void read_conda_meta(const std::filesystem::path& prefix, std::vector<InstalledDist>& dists,
                     std::vector<util::Message>* notes = nullptr);
// The Tegra facts of this machine (under $ENVFIX_SYSFS_ROOT in tests); nullopt on any other host.
[[nodiscard]] std::optional<TegraInfo> probe_tegra();
// "# R36 (release), REVISION: 4.3, GCID: …" → "36.4.3"; "" when the text is not an nv_tegra_release.
[[nodiscard]] std::string parse_l4t_release(std::string_view text);
[[nodiscard]] Expected<HostFacts> probe_host(const ProbeOptions& options);

} // namespace envfix::probe
