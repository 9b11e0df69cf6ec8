// libFuzzer target: wheel ZIP archives (untrusted downloads). Invariants: no crash, no unbounded
// allocation; the central-directory parser and libarchive agree or the archive is refused; every
// member read back stays within its declared size; a pass in groups gives the bytes of one pass.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <span>
#include <string>
#include <vector>

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
  // read_member serves the first regular file of a name (staging refuses duplicate names later),
  // so only a name's first file is held to its own size.
  std::size_t n = 0;
  std::set<std::string_view> seen;
  for (const auto& e : ar->entries()) {
    if (++n > 16) break;
    if (e.type != envfix::wheel::ArchiveEntry::Type::file || !seen.insert(e.name).second) continue;
    if (auto m = ar->read_member(e.name); m && e.size_known && m->size() > e.size) std::abort();
  }
  // One pass, then the same members in three groups: when both succeed they give the same bytes
  // (each group's reader serves only its members' byte range).
  auto pass = [&](std::size_t begin, std::size_t end, std::vector<std::string>& out) {
    return ar->stream(
        [&](const envfix::wheel::ArchiveEntry& e) -> envfix::Expected<std::optional<envfix::wheel::DataSink>> {
          if (e.index < begin || e.index >= end || e.index >= out.size()) std::abort();
          auto* slot = &out[e.index];
          return envfix::wheel::DataSink([slot, &e](std::string_view chunk) -> envfix::Expected<void> {
            slot->append(chunk);
            if (e.size_known && slot->size() > e.size) std::abort();
            return {};
          });
        },
        begin, end);
  };
  const std::size_t count = ar->entries().size();
  std::vector<std::string> whole(count), grouped(count);
  bool whole_ok = pass(0, count, whole).has_value();
  bool groups_ok = true;
  for (std::size_t g = 0; g < 3; ++g) groups_ok = pass(count * g / 3, count * (g + 1) / 3, grouped).has_value() && groups_ok;
  if (whole_ok && groups_ok && whole != grouped) std::abort();
  return 0;
}
