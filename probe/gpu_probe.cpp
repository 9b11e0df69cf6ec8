// GPU and driver probing: thin I/O shells over driver_parsers.hpp. NVML and libcuda are dlopen'ed
// (never linked) so envfix runs on machines without a driver; every missing piece becomes a note.
#include <dlfcn.h>

#include <array>
#include <cstring>
#include <filesystem>

#include <atomic>
#include <mutex>
#include <thread>
#include <fmt/format.h>

#include "probe/driver_parsers.hpp"
#include "probe/base_env.hpp"
#include "probe/host_facts.hpp"
#include "probe/text.hpp"
#include "util/env.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"

namespace envfix::probe {

namespace {

namespace fs = std::filesystem;

constexpr const char* kWslLibDir = "/usr/lib/wsl/lib";

void note(std::vector<util::Message>* notes, util::Message text) {
  if (notes) notes->push_back(std::move(text));
}

bool nvml_disabled() { return util::get_env(util::Env::no_nvml).value_or("") == "1"; }

// dlopen by soname, then from WSL's library folder (WSL2 puts the driver's user-space libraries
// there and not always on the loader path).
class Library {
public:
  explicit Library(const char* soname) {
    m_handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!m_handle) {
      const char* err = dlerror(); // dlerror() clears itself: read it once
      m_error = err ? err : "";
      auto wsl = fs::path(kWslLibDir) / soname;
      std::error_code ec;
      if (fs::exists(wsl, ec)) {
        m_handle = dlopen(wsl.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (m_handle) m_from_wsl = true;
      }
    }
    if (!m_handle && m_error.empty()) m_error = fmt::format("{} not found", soname);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library() {
    if (m_handle) dlclose(m_handle);
  }
  explicit operator bool() const { return m_handle != nullptr; }
  template <class F>
  F sym(const char* name) const {
    return m_handle ? reinterpret_cast<F>(dlsym(m_handle, name)) : nullptr;
  }
  const std::string& error() const { return m_error; }
  bool from_wsl() const { return m_from_wsl; }

private:
  void* m_handle = nullptr;
  std::string m_error;
  bool m_from_wsl = false;
};

// The few NVML/CUDA driver API entry points we call (ABI from nvml.h / cuda.h; stable for years).
using nvmlDevice_t = void*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlGetDriverVersion = int (*)(char*, unsigned);
using NvmlGetCudaDriverVersion = int (*)(int*);
using NvmlDeviceGetCount = int (*)(unsigned*);
using NvmlDeviceGetHandleByIndex = int (*)(unsigned, nvmlDevice_t*);
using NvmlDeviceGetName = int (*)(nvmlDevice_t, char*, unsigned);
using NvmlDeviceGetUuid = int (*)(nvmlDevice_t, char*, unsigned);
using NvmlDeviceGetCc = int (*)(nvmlDevice_t, int*, int*);
using NvmlDeviceGetMemoryInfo = int (*)(nvmlDevice_t, NvmlMemory*);
using NvmlDeviceGetMigMode = int (*)(nvmlDevice_t, unsigned*, unsigned*);
using NvmlDeviceGetMaxMigDeviceCount = int (*)(nvmlDevice_t, unsigned*);
using NvmlDeviceGetMigDeviceHandleByIndex = int (*)(nvmlDevice_t, unsigned, nvmlDevice_t*);
constexpr unsigned kNvmlMigEnable = 1;

using CuInit = int (*)(unsigned);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
using CuDeviceTotalMem = int (*)(std::size_t*, int);
using CuDeviceGetUuid = int (*)(char*, int); // CUuuid is 16 bytes
constexpr int kCuAttrCcMajor = 75, kCuAttrCcMinor = 76;
constexpr int kCudaErrorNoDevice = 100;

struct Nvml {
  Library lib{"libnvidia-ml.so.1"};
  bool initialized = false;
  Nvml() {
    if (!lib) return;
    auto init = lib.sym<NvmlInit>("nvmlInit_v2");
    if (!init) init = lib.sym<NvmlInit>("nvmlInit");
    initialized = init && init() == 0;
  }
  ~Nvml() {
    if (initialized)
      if (auto sd = lib.sym<NvmlShutdown>("nvmlShutdown")) sd();
  }
};

std::string uuid_to_string(const unsigned char* b) {
  return fmt::format("GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-"
                     "{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

// The MIG devices of a GPU in MIG mode (what CUDA_VISIBLE_DEVICES=MIG-… selects). NVML names a
// MIG device "<GPU name> MIG <profile>".
void mig_devices(Nvml& nvml, nvmlDevice_t dev, GpuInfo& g) {
  auto mode_fn = nvml.lib.sym<NvmlDeviceGetMigMode>("nvmlDeviceGetMigMode");
  auto max_fn = nvml.lib.sym<NvmlDeviceGetMaxMigDeviceCount>("nvmlDeviceGetMaxMigDeviceCount");
  auto handle_fn = nvml.lib.sym<NvmlDeviceGetMigDeviceHandleByIndex>("nvmlDeviceGetMigDeviceHandleByIndex");
  auto uuid_fn = nvml.lib.sym<NvmlDeviceGetUuid>("nvmlDeviceGetUUID");
  auto name_fn = nvml.lib.sym<NvmlDeviceGetName>("nvmlDeviceGetName");
  auto mem_fn = nvml.lib.sym<NvmlDeviceGetMemoryInfo>("nvmlDeviceGetMemoryInfo");
  unsigned current = 0, pending = 0, count = 0;
  if (!mode_fn || !max_fn || !handle_fn || !uuid_fn || mode_fn(dev, &current, &pending) != 0 || current != kNvmlMigEnable ||
      max_fn(dev, &count) != 0)
    return;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t mig = nullptr;
    if (handle_fn(dev, i, &mig) != 0) continue; // no compute instance at this slot
    std::array<char, 256> buf{};
    if (uuid_fn(mig, buf.data(), buf.size()) != 0) continue;
    MigDevice m{buf.data(), "", 0};
    buf.fill(0);
    if (name_fn && name_fn(mig, buf.data(), buf.size()) == 0) {
      std::string_view n = buf.data();
      if (auto at = n.rfind(" MIG "); at != std::string_view::npos) m.profile = std::string(n.substr(at + 5));
    }
    NvmlMemory mem{};
    if (mem_fn && mem_fn(mig, &mem) == 0) m.memory_bytes = mem.total;
    g.mig.push_back(std::move(m));
  }
}

std::optional<std::vector<GpuInfo>> gpus_from_nvml(Nvml& nvml, std::vector<util::Message>* notes) {
  if (!nvml.initialized) return std::nullopt;
  auto count_fn = nvml.lib.sym<NvmlDeviceGetCount>("nvmlDeviceGetCount_v2");
  auto handle_fn = nvml.lib.sym<NvmlDeviceGetHandleByIndex>("nvmlDeviceGetHandleByIndex_v2");
  auto name_fn = nvml.lib.sym<NvmlDeviceGetName>("nvmlDeviceGetName");
  auto uuid_fn = nvml.lib.sym<NvmlDeviceGetUuid>("nvmlDeviceGetUUID");
  auto cc_fn = nvml.lib.sym<NvmlDeviceGetCc>("nvmlDeviceGetCudaComputeCapability");
  auto mem_fn = nvml.lib.sym<NvmlDeviceGetMemoryInfo>("nvmlDeviceGetMemoryInfo");
  if (!count_fn || !handle_fn || !name_fn || !cc_fn) {
    note(notes, util::msg("NVML lacks nvmlDeviceGetCudaComputeCapability (driver older than 410?)"));
    return std::nullopt;
  }
  unsigned count = 0;
  if (count_fn(&count) != 0) return std::nullopt;
  std::vector<GpuInfo> out;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    if (handle_fn(i, &dev) != 0) {
      note(notes, util::msg("NVML: device {} not accessible (permissions?)", i));
      continue;
    }
    GpuInfo g;
    g.physical_index = static_cast<int>(i);
    std::array<char, 256> buf{};
    if (name_fn(dev, buf.data(), buf.size()) == 0) g.name = buf.data();
    buf.fill(0);
    if (uuid_fn && uuid_fn(dev, buf.data(), buf.size()) == 0) g.uuid = buf.data();
    int major = 0, minor = 0;
    if (cc_fn(dev, &major, &minor) == 0) g.cc = {major, minor};
    NvmlMemory mem{};
    if (mem_fn && mem_fn(dev, &mem) == 0) g.memory_bytes = mem.total;
    mig_devices(nvml, dev, g);
    out.push_back(std::move(g));
  }
  return out;
}

// libcuda enumerates only what CUDA_VISIBLE_DEVICES lets through, already renumbered.
std::optional<std::vector<GpuInfo>> gpus_from_cuda(Library& cuda, std::vector<util::Message>* notes) {
  auto init = cuda.sym<CuInit>("cuInit");
  auto count_fn = cuda.sym<CuDeviceGetCount>("cuDeviceGetCount");
  auto get_fn = cuda.sym<CuDeviceGet>("cuDeviceGet");
  auto name_fn = cuda.sym<CuDeviceGetName>("cuDeviceGetName");
  auto attr_fn = cuda.sym<CuDeviceGetAttribute>("cuDeviceGetAttribute");
  auto mem_fn = cuda.sym<CuDeviceTotalMem>("cuDeviceTotalMem_v2");
  auto uuid_fn = cuda.sym<CuDeviceGetUuid>("cuDeviceGetUuid");
  if (!init || !count_fn || !get_fn || !attr_fn) return std::nullopt;
  int rc = init(0);
  if (rc == kCudaErrorNoDevice) {
    note(notes, util::msg("libcuda: cuInit reports no CUDA-capable device (check CUDA_VISIBLE_DEVICES)"));
    return std::vector<GpuInfo>{};
  }
  if (rc != 0) {
    note(notes, util::msg("libcuda: cuInit failed with CUDA error {}", rc));
    return std::nullopt;
  }
  int count = 0;
  if (count_fn(&count) != 0) return std::nullopt;
  std::vector<GpuInfo> out;
  for (int i = 0; i < count; ++i) {
    int dev = 0;
    if (get_fn(&dev, i) != 0) continue;
    GpuInfo g;
    g.index = i;
    std::array<char, 256> buf{};
    if (name_fn && name_fn(buf.data(), static_cast<int>(buf.size()), dev) == 0) g.name = buf.data();
    int major = 0, minor = 0;
    attr_fn(&major, kCuAttrCcMajor, dev);
    attr_fn(&minor, kCuAttrCcMinor, dev);
    g.cc = {major, minor};
    // CU_DEVICE_ATTRIBUTE_INTEGRATED (18): an integrated (Tegra) GPU, with its own SASS rule.
    if (int integrated = 0; attr_fn(&integrated, 18, dev) == 0 && integrated) g.cc.tegra = true;
    std::size_t mem = 0;
    if (mem_fn && mem_fn(&mem, dev) == 0) g.memory_bytes = mem;
    std::array<unsigned char, 16> u{};
    if (uuid_fn && uuid_fn(reinterpret_cast<char*>(u.data()), dev) == 0) g.uuid = uuid_to_string(u.data());
    out.push_back(std::move(g));
  }
  return out;
}

std::optional<std::string> run_nvidia_smi(const std::vector<std::string>& extra_args, std::vector<util::Message>* notes) {
  auto smi = util::find_in_path("nvidia-smi");
  if (!smi) return std::nullopt;
  std::vector<std::string> argv = extra_args;
  argv.insert(argv.begin(), smi->string());
  util::SubprocessOptions opt;
  opt.timeout = std::chrono::seconds(20);
  auto r = util::run_process(argv, opt);
  if (!r) {
    note(notes, util::msg("nvidia-smi could not be started: {}", r.error().said_message()));
    return std::nullopt;
  }
  if (!r->ok()) {
    auto msg = trim(r->out.empty() ? r->err : r->out);
    note(notes, util::msg("nvidia-smi failed: {}", msg.substr(0, 200)));
    return std::nullopt;
  }
  return r->out;
}

bool looks_like_wsl() { return probe_platform().is_wsl(); }

} // namespace

Expected<std::vector<GpuInfo>> probe_gpus(std::vector<util::Message>* notes) {
  if (nvml_disabled()) {
    note(notes, util::msg("ENVFIX_NO_NVML=1: GPUs not probed"));
    return std::vector<GpuInfo>{};
  }
  auto cvd = util::get_env(util::Env::cuda_visible_devices);
  {
    Nvml nvml;
    if (nvml.lib.from_wsl()) note(notes, util::msg("WSL: NVML loaded from {}", kWslLibDir));
    if (auto all = gpus_from_nvml(nvml, notes)) return apply_cuda_visible_devices(*all, cvd);
    if (!nvml.lib)
      note(notes, util::msg("NVML not loadable: {}", nvml.lib.error()));
    else
      note(notes, util::msg("NVML loaded but nvmlInit failed (driver/library version mismatch?)"));
  }
  {
    Library cuda("libcuda.so.1");
    if (cuda) {
      if (auto gpus = gpus_from_cuda(cuda, notes)) return *gpus;
    } else {
      note(notes, util::msg("libcuda not loadable: {}", cuda.error()));
    }
  }
  // Last resort: nvidia-smi (also what a test puts on PATH).
  if (auto out = run_nvidia_smi({"--query-gpu=index,name,uuid,compute_cap,driver_version,memory.total", "--format=csv"}, notes)) {
    auto rows = parse_nvidia_smi_csv(*out);
    if (!rows) {
      note(notes, util::msg("nvidia-smi output not understood: {}", rows.error().said_message()));
    } else {
      std::vector<GpuInfo> all;
      for (auto& r : *rows) {
        GpuInfo g;
        g.physical_index = r.index;
        g.name = r.name;
        g.uuid = r.uuid;
        g.memory_bytes = r.memory_bytes;
        if (r.cc)
          g.cc = *r.cc;
        else
          note(notes, util::msg("nvidia-smi gives no compute capability for GPU {} (driver < 510)", r.index));
        all.push_back(std::move(g));
      }
      // MIG devices are listed only by `nvidia-smi -L`; needed only when CUDA_VISIBLE_DEVICES names one.
      if (cvd && cvd->find("MIG-") != std::string::npos)
        if (auto list = run_nvidia_smi({"-L"}, notes))
          if (auto gpus = parse_nvidia_smi_list(*list))
            for (auto& lg : *gpus)
              for (auto& g : all)
                if (g.uuid == lg.uuid) g.mig = lg.mig;
      return apply_cuda_visible_devices(all, cvd);
    }
  }
  if (looks_like_wsl()) note(notes, util::msg("WSL detected: the GPU driver lives on Windows; check /usr/lib/wsl/lib"));
  return std::vector<GpuInfo>{};
}

Expected<DriverInfo> probe_driver(std::vector<util::Message>* notes) {
  DriverInfo info;
  std::optional<specs::CudaVersion> cuda;
  if (!nvml_disabled()) {
    Nvml nvml;
    if (nvml.initialized) {
      std::array<char, 96> buf{};
      if (auto f = nvml.lib.sym<NvmlGetDriverVersion>("nvmlSystemGetDriverVersion"); f && f(buf.data(), buf.size()) == 0) {
        info.version = buf.data();
        info.source = "nvml";
      }
      int v = 0;
      if (auto f = nvml.lib.sym<NvmlGetCudaDriverVersion>("nvmlSystemGetCudaDriverVersion_v2"); f && f(&v) == 0 && v > 0)
        cuda = cuda_version_from_int(v);
    }
    Library lib("libcuda.so.1");
    int v = 0;
    if (auto f = lib.sym<CuDriverGetVersion>("cuDriverGetVersion"); f && f(&v) == 0 && v > 0)
      cuda = cuda_version_from_int(v); // the authoritative answer when libcuda loads
  }
  if (info.version.empty()) {
    if (auto t = read_host_file("/sys/module/nvidia/version")) {
      if (auto v = parse_sys_module_version(*t)) {
        info.version = *v;
        info.source = "sysfs";
      } else {
        note(notes,
             util::msg("the driver version in {} is not understood: {}", "/sys/module/nvidia/version", v.error().said_message()));
      }
    }
  }
  if (info.version.empty()) {
    if (auto t = read_host_file("/proc/driver/nvidia/version")) {
      if (auto v = parse_proc_driver_version(*t)) {
        info.version = *v;
        info.source = "procfs";
      } else {
        note(notes, util::msg("the driver version in {} is not understood: {}", "/proc/driver/nvidia/version",
                              v.error().said_message()));
      }
    }
  }
  if (info.version.empty() || !cuda) {
    // nvidia-smi -q gives both the version and "CUDA Version".
    if (auto out = run_nvidia_smi({"-q"}, notes)) {
      if (auto rep = parse_nvidia_smi_q(*out)) {
        if (info.version.empty()) {
          info.version = rep->driver_version;
          info.source = "nvidia-smi";
        }
        if (!cuda) cuda = rep->cuda;
      }
    }
  }
  if (info.version.empty()) {
    return make_error(ErrorCode::not_found,
                      "no NVIDIA driver found (no NVML, no /sys/module/nvidia, "
                      "no /proc/driver/nvidia, no nvidia-smi)",
                      looks_like_wsl() ? "on WSL, install the NVIDIA driver on Windows, not in Linux"
                                       : "install the NVIDIA driver (and reboot), then run `nvidia-smi`");
  }
  info.cuda = cuda;
  return info;
}

struct GpuMemorySampler::State {
  Nvml nvml;
  std::vector<nvmlDevice_t> devices;
  NvmlDeviceGetMemoryInfo mem = nullptr;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> peak; // {peak, baseline}
  mutable std::mutex mutex;
  std::atomic<bool> stop{false};
  std::thread thread;
  void sample() {
    std::lock_guard lock(mutex);
    for (std::size_t i = 0; i < devices.size(); ++i) {
      NvmlMemory m{};
      if (mem(devices[i], &m) == 0) peak[i].first = std::max<std::uint64_t>(peak[i].first, m.used);
    }
  }
};

GpuMemorySampler::GpuMemorySampler(std::chrono::milliseconds period) {
  if (nvml_disabled()) {
    m_why = "NVML disabled (ENVFIX_NO_NVML=1)";
    return;
  }
  auto st = std::make_unique<State>();
  if (!st->nvml.initialized) {
    m_why = st->nvml.lib ? "NVML loaded but nvmlInit failed" : "NVML not loadable: " + st->nvml.lib.error();
    return;
  }
  auto count_fn = st->nvml.lib.sym<NvmlDeviceGetCount>("nvmlDeviceGetCount_v2");
  auto handle_fn = st->nvml.lib.sym<NvmlDeviceGetHandleByIndex>("nvmlDeviceGetHandleByIndex_v2");
  st->mem = st->nvml.lib.sym<NvmlDeviceGetMemoryInfo>("nvmlDeviceGetMemoryInfo");
  unsigned n = 0;
  if (!count_fn || !handle_fn || !st->mem || count_fn(&n) != 0) {
    m_why = "NVML lacks the memory queries";
    return;
  }
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t d = nullptr;
    if (handle_fn(i, &d) != 0) continue;
    NvmlMemory m{};
    std::uint64_t used = st->mem(d, &m) == 0 ? m.used : 0;
    st->devices.push_back(d);
    st->peak.emplace_back(used, used);
  }
  auto* raw = st.get();
  st->thread = std::thread([raw, period] {
    while (!raw->stop.load()) {
      raw->sample();
      std::this_thread::sleep_for(period);
    }
  });
  m_state = std::move(st);
}

void GpuMemorySampler::stop() {
  if (!m_state || !m_state->thread.joinable()) return;
  m_state->stop = true;
  m_state->thread.join();
  m_state->sample();
}

GpuMemorySampler::~GpuMemorySampler() { stop(); }

std::vector<std::pair<std::uint64_t, std::uint64_t>> GpuMemorySampler::peak() const {
  if (!m_state) return {};
  std::lock_guard lock(m_state->mutex);
  return m_state->peak;
}

} // namespace envfix::probe
