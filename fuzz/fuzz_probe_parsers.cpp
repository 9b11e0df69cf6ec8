// libFuzzer target: every probe parser of text envfix reads from the machine (driver files,
// nvidia-smi output, the interpreter probe's JSON, dist-info RECORD and folder names, shebangs,
// CUDA_VISIBLE_DEVICES). The first byte picks the parser; the rest is the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "probe/driver_parsers.hpp"
#include "probe/installed.hpp"
#include "wheel/record.hpp"
#include "probe/python_probe.hpp"

using namespace envfix::probe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > 256 * 1024) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 9) {
  case 0: (void)parse_proc_driver_version(text); break;
  case 1: (void)parse_sys_module_version(text); break;
  case 2: {
    auto rows = parse_nvidia_smi_csv(text);
    if (rows)
      for (auto& r : *rows)
        if (r.name.find('\n') != std::string::npos) __builtin_trap(); // one row per line
    break;
  }
  case 3: (void)parse_nvidia_smi_q(text); break;
  case 4: (void)parse_python_probe(text); break;
  case 5: {
    // An installed RECORD (wheel/record.hpp): rows may lack their trailing empty fields.
    auto rows = envfix::wheel::Record::parse(text, "RECORD", envfix::wheel::RecordSource::installed);
    if (rows)
      for (auto& r : rows->entries)
        if (r.path.empty()) __builtin_trap(); // empty paths are rejected
    break;
  }
  case 6: {
    auto d = parse_dist_info_dirname(text);
    if (d && (d->name.empty() || d->version.empty())) __builtin_trap();
    break;
  }
  case 7: (void)parse_shebang_interpreter(text); break;
  case 8: {
    std::vector<GpuInfo> all(3);
    all[0].uuid = "GPU-aaaa";
    all[1].uuid = "GPU-aaab";
    all[2].uuid = "GPU-cccc";
    auto v = apply_cuda_visible_devices(all, std::string(text));
    if (v.size() > all.size()) __builtin_trap(); // never more devices than exist
    for (std::size_t i = 0; i < v.size(); ++i)
      if (v[i].index != static_cast<int>(i)) __builtin_trap();
    break;
  }
  }
  return 0;
}
