// An unpacked-cache manifest (installer/unpacked_cache.hpp) is read back from a cache another run, a
// crash or a user may have written: any bytes must give a manifest or an Error naming the file, never
// an exception or an abort.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "installer/unpacked_cache.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto m = envfix::installer::parse_manifest(text, "fuzz/manifest.json");
  if (!m && m.error().message.find("fuzz/manifest.json") == std::string::npos) std::abort();
  return 0;
}
