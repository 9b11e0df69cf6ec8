#pragma once
// What envfix knows without asking the network: frameworks (packages, companions, index URL templates,
// variants and the kernels each release ships), CUDA toolkits (minimum drivers, targets) and GPU products.
// The data is YAML (matrices/data/*.yaml, schema in matrices/README.md), compiled into the binary and
// overridable/extendable from a directory (--matrices DIR / ENVFIX_MATRICES).
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specs/cuda_version.hpp"
#include "specs/gpu_arch.hpp"
#include "specs/specifier.hpp"
#include "specs/version.hpp"
#include "util/error.hpp"

namespace envfix::matrices {

// How a row was established (matrices/README.md, "`confidence` and `source`"). Only `verified`
// rows count as verified; the resolver treats the others as "arch-unverified" and checks the
// downloaded binary.
enum class Confidence { verified, secondary, unverified };
[[nodiscard]] const char* to_string(Confidence c);

struct SourceLocation {
  std::string file;                            // "embedded:torch.yaml" or the override path
  int line = 0;                                // 1-based
  int column = 0;                              // 1-based
  [[nodiscard]] std::string to_string() const; // "file:line:column"
  // Every row type compares member by member: the compiled knowledge must equal the YAML (tests).
  bool operator==(const SourceLocation&) const = default;
};

struct CudaToolkit {
  specs::CudaVersion version;
  std::string min_driver_linux;   // GA driver of that toolkit, e.g. "570.26"
  std::string min_driver_windows; // "" where NVIDIA says N/A (13.x)
  // Update releases: "12.8.1" -> {linux, windows}.
  std::map<std::string, std::pair<std::string, std::string>> updates;
  std::string minor_compat_linux; // floor of minor-version compatibility for this CUDA major
  std::string minor_compat_windows;
  std::string ptx_isa;              // "8.7"; "" when unknown
  std::vector<specs::GpuArch> sass; // SASS targets nvcc can emit offline
  Confidence confidence = Confidence::unverified;
  std::string source;
  SourceLocation where;
  // Can this toolkit produce `arch`? SASS: listed; PTX compute_XY[a|f]: sm_XY[a|f] listed; LTO: as SASS.
  [[nodiscard]] bool can_target(const specs::GpuArch& arch) const;
  bool operator==(const CudaToolkit&) const = default;
};

// A `--gpu` value (or one of ENVFIX_GPU's) understood: an arch ("sm_120", "12.0") or a product name.
struct ResolvedGpu {
  std::string query;
  std::string name;   // the product's name; "planned sm_XX" for a bare arch
  std::string family; // "" when unknown (for a bare arch: the family of any product of that cc)
  specs::ComputeCapability cc;
  bool bare_arch = false;
  std::string source; // the product row's source and confidence ("" for a bare arch)
};

struct GpuProduct {
  std::string name; // as NVIDIA writes it, e.g. "GeForce RTX 5090"
  std::vector<std::string> aliases;
  specs::ComputeCapability cc;
  std::string family;  // "blackwell", "hopper", …
  std::string segment; // "consumer", "datacenter", "workstation", "jetson"
  Confidence confidence = Confidence::unverified;
  std::string source;
  std::vector<std::string> socs; // Tegra SoCs of the device tree ("tegra234"): how a Jetson is found
  bool operator==(const GpuProduct&) const = default;
};

// A Jetson Linux (L4T) release (jetson.yaml): on a Jetson the CUDA comes with it, not with a desktop
// driver branch, and the wheels that carry the SoC's own arch come from JetPack-specific indexes.
struct L4tRelease {
  std::string release;                        // "36.4": matches L4T 36.4 and every 36.4.x
  std::string jetpack;                        // "6.2"
  specs::CudaVersion cuda;                    // 12.6
  std::string driver;                         // the driver nvidia-smi reports there ("540.4.0"); may be empty
  std::vector<std::string> socs;              // "tegra234"
  std::map<std::string, std::string> indexes; // framework → the JetPack index that serves its SoC arch
  Confidence confidence = Confidence::unverified;
  std::string source;
  bool operator==(const L4tRelease&) const = default;
};

struct Variant {
  std::string name;                       // "cu128", "cpu", "rocm6.4", "cuda12"
  std::string kind = "cuda";              // cuda | cpu | rocm | xpu
  std::optional<specs::CudaVersion> cuda; // set for kind == cuda
  std::string rocm;                       // "6.4" for kind == rocm
  std::string extra;                      // pip extra selecting it ("cuda12" for jax[cuda12]); may be empty
  // The variant's GPU package set (matrices/README.md, `variants`): the main package when it differs
  // from the framework's (paddle's cpu variant is `paddlepaddle`), the packages that belong to the set
  // beside the main package and its companions (jax[cuda13]: jaxlib, jax-cuda13-plugin,
  // jax-cuda13-pjrt; they come from the same index and share its evidence vetoes), and the packages
  // that carry the GPU kernels (empty: the main package and its companions).
  std::string main_package;
  std::vector<std::string> packages;
  std::vector<std::string> kernels;
  SourceLocation where;
  bool operator==(const Variant&) const = default;
};

// The kernels of one variant of one release row on one platform.
struct ArchBuild {
  std::string platform;                            // linux_x86_64 | linux_aarch64 | windows_x86_64
  std::optional<std::vector<specs::GpuArch>> sass; // nullopt: unknown
  std::optional<std::vector<specs::GpuArch>> ptx;  // nullopt: unknown
  Confidence confidence = Confidence::unverified;
  std::string source;
  SourceLocation where;
  [[nodiscard]] bool known() const { return sass.has_value() || ptx.has_value(); }
  bool operator==(const ArchBuild&) const = default;
};

struct ReleaseVariant {
  std::string variant;
  std::vector<ArchBuild> platforms;
  SourceLocation where;
  [[nodiscard]] const ArchBuild* platform(std::string_view name) const;
  bool operator==(const ReleaseVariant&) const = default;
};

// One row of releases sharing the same builds: exact versions, a nightly line, or a version range.
struct Release {
  std::vector<specs::Version> versions;     // exact releases ("2.7.0", "2.7.1")
  std::optional<specs::Version> nightly;    // "2.15.0": every 2.15.0.devN
  std::optional<specs::SpecifierSet> range; // ">=2.18,<2.21"
  std::vector<std::string> channels;        // default: [stable]
  std::vector<std::string> python;          // cp tags: cp310, cp314t
  std::string pypi_default;                 // variant pypi.org serves; may be empty
  std::vector<ReleaseVariant> variants;
  std::string source;
  SourceLocation where;
  // Local labels are ignored: 2.7.0+cu128 matches a 2.7.0 row.
  [[nodiscard]] bool matches(const specs::Version& v) const;
  [[nodiscard]] std::string label() const; // "2.7.0, 2.7.1" | "2.15.0.dev*" | ">=2.18,<2.21"
  [[nodiscard]] const ReleaseVariant* variant(std::string_view name) const;
  bool operator==(const Release&) const = default;
};

// Version coupling of companions: for `version` (or every nightly of `nightly`), the companions' versions.
struct Coupling {
  std::optional<specs::Version> version;
  std::optional<specs::Version> nightly;
  std::string date;
  std::map<std::string, std::string> companions;
  std::string source;
  SourceLocation where;
  bool operator==(const Coupling&) const = default;
};

struct SmokeTest {
  std::string step_a;                            // Python source: the device is visible, memory moves
  std::string step_b;                            // Python source: a real kernel runs
  std::map<std::string, std::string> companions; // companion -> Python source running its own GPU kernel
  // Hosts without a GPU, and CPU builds: the framework computes on the CPU and each companion runs its
  // own CPU op. Optional: without it a CPU-only apply says that no smoke test ran.
  std::string cpu;
  std::map<std::string, std::string> cpu_companions;
  // `envfix verify`'s model layer: name -> Python source building a small model in code (no
  // downloads) and running its forward/backward on the device named by $ENVFIX_DEVICE ("cuda" or
  // "cpu"); it prints "OP <operator>" before each step so a failure names its operator. A name
  // "<companion>: …" runs only when that companion is installed.
  std::map<std::string, std::string> model;
  bool operator==(const SmokeTest&) const = default;
};

// A framework's announced end of support for old GPUs: releases from `from` on have no build with code
// for compute capabilities below `below` (PyTorch 2.15 dropped cu126 and with it Maxwell, Pascal and
// Volta: pytorch/pytorch#190385). `variant` names the last variant that still had them.
struct SupportEnd {
  specs::Version from;            // "2.15.0"
  specs::ComputeCapability below; // "7.5"
  std::string variant;            // "cu126"; may be empty
  Confidence confidence = Confidence::unverified;
  std::string source;
  SourceLocation where;
  bool operator==(const SupportEnd&) const = default;
};

struct Framework {
  std::string name;
  std::string main_package;
  std::vector<std::string> companions;                  // installed with the main package by default
  std::vector<std::string> optional_companions;         // coupled when present
  std::map<std::string, std::string> channel_templates; // stable|test|nightly -> "{mirror}/…/{variant}"
  std::string default_mirror;
  std::string nightly_coupling; // "same-build-date" or ""
  std::vector<Variant> variants;
  std::vector<Release> releases;
  std::vector<Coupling> coupling;
  std::vector<SupportEnd> support_ends;
  SmokeTest smoke;
  std::string source;
  SourceLocation where;

  [[nodiscard]] const Variant* variant(std::string_view name) const;
  // The main package of a variant's build (the variant's own when it names one).
  [[nodiscard]] std::string main_package_of(std::string_view variant) const;
  // The packages whose binaries hold a variant's GPU kernels: the variant's `kernels`, else the main
  // package and its companions (torch, torchvision, torchaudio).
  [[nodiscard]] std::vector<std::string> kernel_packages(std::string_view variant) const;
  // Exact rows first, then nightly lines, then ranges; nullptr when no row matches.
  [[nodiscard]] const Release* release(const specs::Version& v) const;
  // The index URL of (channel, variant); `mirror` replaces default_mirror when not empty.
  [[nodiscard]] Expected<std::string> index_url(std::string_view channel, std::string_view variant,
                                                std::string_view mirror = {}) const;
  // The mirror `index` was made from as index_url(channel, variant, mirror) builds it (no trailing
  // '/'); "" when `index` is not such a URL.
  [[nodiscard]] std::string mirror_of_index(std::string_view index, std::string_view channel, std::string_view variant) const;
  // The framework's set, normalized: the main package, its companions and, with `optional`, the
  // optional companions (coupled when present).
  [[nodiscard]] std::vector<std::string> family(bool optional = false) const;
  bool operator==(const Framework&) const = default;
};

// Will the kernels of a build run on a device?
enum class RunKind { native, jit, none, unknown };
[[nodiscard]] const char* to_string(RunKind k); // "native", "jit", "none", "unknown"

// variants_for(): one variant of one release on one platform, flattened for the resolver.
struct VariantBuild {
  std::string variant;
  std::string kind; // cuda | cpu | rocm | xpu
  std::optional<specs::CudaVersion> cuda;
  std::string platform;
  std::optional<std::vector<specs::GpuArch>> sass; // nullopt: unknown
  std::optional<std::vector<specs::GpuArch>> ptx;
  bool verified = false; // confidence == verified
  Confidence confidence = Confidence::unverified;
  std::string source;
  std::vector<std::string> channels;
  // native: a SASS entry runs; jit: only PTX does; none; unknown: no arch data (or not CUDA).
  [[nodiscard]] RunKind runs_on(specs::ComputeCapability cc) const;
  // The entry that makes it run (best SASS, else newest runnable PTX).
  [[nodiscard]] std::optional<specs::GpuArch> runnable_arch(specs::ComputeCapability cc) const;
};

// The first CUDA toolkit with code for a GPU (first_toolkit_for()).
struct FirstToolkit {
  const CudaToolkit* toolkit = nullptr;
  // True when the toolkit targets the GPU's own arch (sm_121 for 12.1); false when it only emits SASS
  // of an earlier arch of the same major that runs there (CUDA 12.8's sm_120 on a GB10).
  bool own_arch = false;
  // True when it is the oldest toolkit in the matrices: older toolkits may have had code for it too.
  bool oldest_listed = false;
};

// The lowest driver known to run builds of a CUDA version (driver_floor()).
struct DriverFloor {
  std::string version;
  // true: the toolkit's own GA driver; false: only the minor-version-compatibility floor of its major
  // (the toolkit is unknown to the matrices, or its GA driver is not confirmed).
  bool exact = false;
  bool toolkit_known = false;
};

// A variant name understood without a matrices row: "cu134" → CUDA 13.4 (understand_variant()).
struct VariantGuess {
  Variant variant;
  bool known = false; // listed under the framework's `variants`
};

// The newest stable release still carrying code for an old GPU, and whether the framework said
// later releases dropped it (last_release_for()).
struct LastRelease {
  specs::Version version;
  std::string variant;
  const SupportEnd* end = nullptr; // set when an announced end of support covers the GPU
};

// The newest stable release whose build of one variant runs natively on every GPU of a host
// (stable_covering()): the way back from a nightly or test install.
struct StableCover {
  specs::Version version;
  std::string variant;
  bool verified = false; // the row's arch data is confirmed (confidence verified)
};

class Knowledge {
public:
  struct SourceFile {
    std::string name; // used in error locations
    std::string text;
  };

  // The data compiled into the binary.
  [[nodiscard]] static Expected<Knowledge> load_embedded();
  // Embedded data, then every *.yaml/*.yml file of `override_dir` in name order.
  [[nodiscard]] static Expected<Knowledge> load(const std::filesystem::path& override_dir);
  // --matrices DIR if given, else $ENVFIX_MATRICES if set, else embedded only.
  [[nodiscard]] static Expected<Knowledge> load_default(const std::string& cli_dir);
  // Exactly these files, in order (tests, fuzzing). Reports every problem at once.
  [[nodiscard]] static Expected<Knowledge> load_from(const std::vector<SourceFile>& files);
  [[nodiscard]] static const std::vector<SourceFile>& embedded_files();
  // The embedded YAML as the build compiled it (matrices/compiled.hpp): what load_embedded() reads.
  [[nodiscard]] static std::string_view compiled_json();

  [[nodiscard]] const Framework* framework(std::string_view name) const;
  [[nodiscard]] const std::vector<Framework>& frameworks() const { return m_frameworks; }
  [[nodiscard]] const CudaToolkit* toolkit(specs::CudaVersion v) const;
  [[nodiscard]] const std::vector<CudaToolkit>& toolkits() const { return m_toolkits; }
  [[nodiscard]] const std::vector<GpuProduct>& gpus() const { return m_gpus; }
  [[nodiscard]] const std::vector<L4tRelease>& l4t_releases() const { return m_l4t; }
  // The product whose `soc` list holds this Tegra SoC ("tegra234"); nullopt when none.
  [[nodiscard]] std::optional<GpuProduct> gpu_for_soc(std::string_view soc) const;
  // The L4T row for a release read from /etc/nv_tegra_release ("36.4.3"): the longest `release`
  // that is it or a dotted prefix of it; nullptr when none.
  [[nodiscard]] const L4tRelease* l4t(std::string_view release) const;
  // The L4T releases for the Jetsons of this (integrated) compute capability, oldest first.
  [[nodiscard]] std::vector<const L4tRelease*> l4t_for(specs::ComputeCapability cc) const;

  // GA minimum driver for a toolkit ("linux" or "windows"); nullopt when unknown or N/A.
  [[nodiscard]] std::optional<std::string> min_driver(specs::CudaVersion cuda, std::string_view os = "linux") const;
  // Floor of minor-version compatibility (any 12.x build on >= 525.60.13); nullopt when unknown.
  [[nodiscard]] std::optional<std::string> minor_compat_driver(specs::CudaVersion cuda, std::string_view os = "linux") const;
  // Can a driver run builds of this CUDA version? With minor compatibility the family floor is
  // enough (not for JIT of newer PTX); without it the toolkit's own minimum is needed.
  [[nodiscard]] bool driver_supports(std::string_view driver_version, specs::CudaVersion cuda, bool allow_minor_compat = true,
                                     std::string_view os = "linux") const;
  // The lowest driver for builds of `cuda`: the toolkit's GA driver, else the minor-version floor of
  // its major (a toolkit newer than the data: cu136 → the 13.x floor, exact=false); nullopt when
  // nothing of that major is known.
  [[nodiscard]] std::optional<DriverFloor> driver_floor(specs::CudaVersion cuda, std::string_view os = "linux") const;
  // The lowest driver a lock records for a set of CUDA `cuda` chosen for a host whose driver is
  // `host_driver` ("" unknown): the toolkit's own release driver, unless that host runs the set below
  // it through minor-version compatibility; then the major's floor, which the host meets (a lock made
  // on driver 535 for a CUDA 12.8 set records 525.60.13, not 570.26, so that it applies there).
  [[nodiscard]] std::optional<std::string> set_driver_floor(specs::CudaVersion cuda, std::string_view host_driver,
                                                            std::string_view os = "linux") const;
  // "RTX 5090", "NVIDIA GeForce RTX 5090", "NVIDIA H100 80GB HBM3", "A100-SXM4-80GB", an alias, and
  // names as people type them: words in order ("Jetson Thor" → Jetson AGX Thor), spacing ("rtx5090").
  // An ambiguous short form (two compute capabilities) resolves to nothing.
  [[nodiscard]] std::optional<GpuProduct> gpu(std::string_view name_or_alias) const;
  // The one rule for "arch or GPU name" (plan, apply, lock, doctor, matrix): an arch first, then a
  // product name; an error naming the query and how to add a product otherwise.
  [[nodiscard]] Expected<ResolvedGpu> resolve_gpu(std::string_view query) const;
  // The highest CUDA whose GA driver floor `driver` meets (for a planned driver, when libcuda was not
  // there to ask); nullopt when no toolkit's floor is met.
  [[nodiscard]] std::optional<specs::CudaVersion> cuda_for_driver(std::string_view driver) const;
  // The first (lowest) toolkit with code for `cc`: one targeting its own arch wins over an older one
  // whose earlier-arch SASS merely runs there (sm_121 → 12.9, not 12.8).
  [[nodiscard]] FirstToolkit first_toolkit_for(specs::ComputeCapability cc) const;
  // A variant by name: the framework's row, else one understood from the name ("cu134" → CUDA 13.4,
  // "cpu"); nullopt when the name means nothing.
  [[nodiscard]] std::optional<VariantGuess> understand_variant(std::string_view framework, std::string_view name) const;
  // The announced end of support covering `cc`, if any.
  [[nodiscard]] const SupportEnd* support_end(std::string_view framework, specs::ComputeCapability cc) const;
  // The newest stable release row version whose build runs natively on `cc` on `platform`, with the
  // support end that makes it the last one (nullptr when none is announced).
  [[nodiscard]] std::optional<LastRelease> last_release_for(std::string_view framework, specs::ComputeCapability cc,
                                                            std::string_view platform = "linux_x86_64") const;

  // The newest stable release row version with one variant whose SASS runs natively on every `ccs`
  // and whose CUDA `driver` runs (empty driver: not checked), the newest such CUDA variant; nullopt when there is none. Rows
  // without arch data never count: a claim is needed before envfix suggests the move. `vetoed(version, variant)` true drops a
  // build the binaries contradicted (the evidence store).
  [[nodiscard]] std::optional<StableCover>
  stable_covering(std::string_view framework, const std::vector<specs::ComputeCapability>& ccs, std::string_view driver,
                  std::string_view platform = "linux_x86_64",
                  const std::function<bool(const specs::Version&, std::string_view)>& vetoed = {}) const;

  // The variants of a framework release on a platform; empty when the release is unknown.
  [[nodiscard]] std::vector<VariantBuild> variants_for(std::string_view framework, const specs::Version& version,
                                                       std::string_view platform = "linux_x86_64") const;
  // The companion version coupled to `version` ("0.22.0" for torchvision with torch 2.7.0; for a
  // nightly with same-build-date coupling, "0.30.0.dev20260801"); nullopt when unknown.
  [[nodiscard]] std::optional<std::string> companion_version(std::string_view framework, const specs::Version& version,
                                                             std::string_view companion) const;

private:
  friend class Loader;
  friend struct KnowledgeCodec; // matrices/compiled.cpp
  std::vector<Framework> m_frameworks;
  std::vector<CudaToolkit> m_toolkits;
  std::vector<GpuProduct> m_gpus;
  std::vector<L4tRelease> m_l4t;
};

// Numeric comparison of dotted driver versions ("570.26" < "570.124.06"); missing parts count as 0.
[[nodiscard]] int compare_driver_versions(std::string_view a, std::string_view b);
// True when `text` is a dotted driver version ("580", "570.26", "580.65.06").
[[nodiscard]] bool is_driver_version(std::string_view text);
// --driver as the user gave it: a driver version as nvidia-smi prints it. A CUDA version in its place
// ("12.8": what nvidia-smi's header calls "CUDA Version") is named as one, with the driver that CUDA
// needs from `k`'s toolkit table when there is one (issue 36, item 6).
[[nodiscard]] Expected<void> check_driver_text(const std::string& driver, const Knowledge* k);
// Lower-case, single spaces, leading "NVIDIA"/"GeForce"/"Tesla"/"Quadro" words dropped.
[[nodiscard]] std::string normalize_gpu_name(std::string_view name);

} // namespace envfix::matrices
