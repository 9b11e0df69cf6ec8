#pragma once
// Memory bounds in tests: reset the peak resident set to the current one, then read VmRSS/VmHWM.
#include <cstddef>
#include <cstring>
#include <fstream>
#include <string>

namespace envfix::testing {

// A field of /proc/self/status in KiB ("VmRSS:", "VmHWM:"); 0 when absent.
inline std::size_t status_kib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return static_cast<std::size_t>(std::stoull(line.substr(std::strlen(key))));
  return 0;
}

// Memory bounds scale by this under ASan: its redzones and its quarantine of freed blocks.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr std::size_t sanitizer_memory_factor = 4;
#else
inline constexpr std::size_t sanitizer_memory_factor = 1;
#endif

// Sets VmHWM back to the current VmRSS (proc(5), clear_refs "5").
inline void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

} // namespace envfix::testing
