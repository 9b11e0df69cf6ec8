// libFuzzer target: interpreter-probe cache entries read back from <cache>/interpreters
// (probe/python_probe.cpp). Invariants: no crash and no exception escaping; an entry that parses is
// then judged for consistency with an interpreter (inconsistent_probe), which must not crash either.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/python_probe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto info = envfix::probe::parse_python_probe(text)) {
    (void)envfix::probe::inconsistent_probe(*info, "/nonexistent/venv/bin/python");
    (void)envfix::probe::site_directories(*info);
  }
  return 0;
}
