// libFuzzer target: wheel file names and tag sets from untrusted index pages.
// Invariants: no crash; a parsed name prints to a string that parses back equal.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "specs/tag.hpp"
#include "specs/wheel_filename.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto w = envfix::specs::WheelFilename::parse(text)) {
    (void)w->tags();
    (void)w->normalized_name();
    auto again = envfix::specs::WheelFilename::parse(w->to_string());
    if (!again || !(*again == *w)) std::abort();
  }
  if (auto t = envfix::specs::Tag::parse(text)) {
    auto again = envfix::specs::Tag::parse(t->to_string());
    if (!again || !(*again == *t)) std::abort();
  }
  (void)envfix::specs::parse_tag_set(text);
  envfix::specs::TagEnvironment env;
  (void)envfix::specs::apply_platform_tag(env, text);
  return 0;
}
