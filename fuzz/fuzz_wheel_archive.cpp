// libFuzzer target: wheel ZIP archives (untrusted downloads). Invariants: no crash, no unbounded
// allocation; the central-directory parser and libarchive agree or the archive is refused; every
// member read back stays within its declared size.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "wheel/staging.hpp"
#include "wheel/wheel_archive.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  envfix::wheel::ArchiveLimits limits;
  limits.max_total_size = 8u << 20;
  limits.max_entries = 4096;
  limits.max_member_read = 1u << 20;
  (void)envfix::wheel::zip_central_directory_names({data, size}, "fuzz.whl", limits.max_entries);
  auto ar = envfix::wheel::WheelArchive::open_memory({data, size}, "fuzz.whl", limits);
  if (!ar) return 0;
  for (const auto& name : ar->raw_names()) (void)envfix::wheel::check_member_name(name);
  std::size_t n = 0;
  for (const auto& e : ar->entries()) {
    if (++n > 16) break;
    if (auto m = ar->read_member(e.name); m && e.size_known && m->size() > e.size) std::abort();
  }
  (void)ar->stream([](const envfix::wheel::ArchiveEntry&) -> envfix::Expected<std::optional<envfix::wheel::DataSink>> {
    return envfix::wheel::DataSink([](std::string_view) -> envfix::Expected<void> { return {}; });
  });
  return 0;
}
