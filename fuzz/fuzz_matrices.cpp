// libFuzzer target: the matrices loader over arbitrary bytes (an untrusted --matrices override file).
// Must never crash or throw; every input yields a Knowledge or an Error listing problems.
#include <cstddef>
#include <cstdint>
#include <string>

#include "matrices/knowledge.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using envfix::matrices::Knowledge;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto k = Knowledge::load_from({{"fuzz.yaml", text}});
  if (k) {
    // Exercise the queries on whatever loaded.
    for (const auto& f : k->frameworks()) {
      for (const auto& r : f.releases)
        for (const auto& v : r.versions) {
          for (const auto& b : k->variants_for(f.name, v)) (void)b.runs_on({12, 0});
          for (const auto& c : f.companions) (void)k->companion_version(f.name, v, c);
        }
      for (const auto& [ch, tmpl] : f.channel_templates) (void)f.index_url(ch, "cu128", "https://m");
    }
    for (const auto& g : k->gpus()) (void)k->gpu(g.name);
    for (const auto& t : k->toolkits()) (void)k->driver_supports("580.65.06", t.version);
  } else {
    (void)k.error().render();
  }
  return 0;
}
