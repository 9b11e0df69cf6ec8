// Lockfiles come from repositories users clone: any bytes must give a value or an Error, and a value
// must print and parse back to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "lockfile/lockfile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto lock = envfix::lockfile::LockFile::parse(text, "fuzz.lock");
  if (!lock) return 0;
  auto again = envfix::lockfile::LockFile::parse(lock->to_yaml(), "fuzz.lock");
  if (!again || !(*again == *lock)) {
    // strip_credentials may legitimately change URLs; compare after one normalisation round.
    if (!again) std::abort();
    auto third = envfix::lockfile::LockFile::parse(again->to_yaml(), "fuzz.lock");
    if (!third || !(*third == *again)) std::abort();
  }
  return 0;
}
