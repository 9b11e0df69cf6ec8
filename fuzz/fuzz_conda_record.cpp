// libFuzzer target: one conda-meta/*.json record (probe/host_facts.hpp, parse_conda_record), a file
// in the environment a hostile package or user may have planted: a value or an Error, never an
// exception; no file it yields leaves the prefix.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/host_facts.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::filesystem::path prefix = "/prefix";
  auto r = envfix::probe::parse_conda_record(text, prefix / "conda-meta" / "fuzz.json", prefix);
  if (!r) return 0;
  for (const auto& o : r->record.prefix_objects)
    if (!o.string().starts_with("/prefix/lib/")) __builtin_trap();
  return 0;
}
