#pragma once
// PEP 425 compatibility tags and the ordered list of tags an interpreter supports
// (PEP 425, PEP 600 manylinux, PEP 656 musllinux; the platform compatibility tags spec:
// https://packaging.python.org/en/latest/specifications/platform-compatibility-tags/; the order is
// exactly packaging's `sys_tags()` as vendored in pip 23.2.1).
#include <compare>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/error.hpp"

namespace envfix::specs {

// One tag, lower-cased (tags compare case-insensitively, as packaging does).
struct Tag {
  std::string interpreter;
  std::string abi;
  std::string platform;

  // Exactly one `interpreter-abi-platform` triple; a compressed set ("py2.py3-none-any") is refused
  // here, use parse_tag_set().
  [[nodiscard]] static Expected<Tag> parse(std::string_view text);
  [[nodiscard]] std::string to_string() const;
  auto operator<=>(const Tag&) const = default;
};

// A compressed tag set: each field may be a `.`-separated list; the result is the cartesian product
// in field order (interpreter outermost), without duplicates.
[[nodiscard]] Expected<std::vector<Tag>> parse_tag_set(std::string_view text);

struct TagEnvironment {
  std::string implementation = "cp"; // "cp" gets cpython_tags(); anything else generic tags
  int major = 3;
  int minor = 0;
  // sys.abiflags-like: "t" free-threaded (3.13+), "d" Py_DEBUG, "m" pymalloc (< 3.8 only).
  std::string abiflags;
  std::string arch = "x86_64";              // from sysconfig.get_platform(); i686 for a 32-bit interpreter
  std::optional<std::pair<int, int>> glibc; // manylinux tags only when set
  std::optional<std::pair<int, int>> musl;  // musllinux tags only when set
  // packaging >= 26.3 puts linux_<arch> first (packaging issue #160); pip 23.2.1 puts it last.
  bool linux_first = false;
};

// Sets arch and glibc/musl from a platform tag (`--platform manylinux_2_28_x86_64`,
// `manylinux2014_aarch64`, `musllinux_1_2_x86_64`, `linux_x86_64`), for planning another machine.
[[nodiscard]] Expected<void> apply_platform_tag(TagEnvironment& env, std::string_view platform);
// The glibc a manylinux platform tag needs and its arch (legacy aliases included: manylinux2014_x86_64
// → 2.17); nullopt for musllinux, linux_ARCH and anything that does not parse. Same rules as above.
struct ManylinuxTag {
  std::pair<int, int> glibc;
  std::string arch;
};
[[nodiscard]] std::optional<ManylinuxTag> manylinux_glibc(std::string_view platform);

// The platforms, most preferred first (PEP 600 manylinux, PEP 656 musllinux, then linux_ARCH; the
// order of pip 23.2.1's packaging).
[[nodiscard]] std::vector<std::string> platform_tags(const TagEnvironment& env);
// The ABI tags of a CPython interpreter (packaging's `_cpython_abis`), e.g. {"cp311"} or {"cp311d", "cp311"}.
[[nodiscard]] std::vector<std::string> cpython_abis(const TagEnvironment& env);
// Every supported tag, most preferred first (packaging's `sys_tags()`: `cpython_tags()` then
// `compatible_tags()`).
[[nodiscard]] std::vector<Tag> supported_tags(const TagEnvironment& env);

// Priority lookup over a supported-tag list: rank 0 is the best tag.
class TagRanking {
public:
  explicit TagRanking(std::vector<Tag> tags);
  [[nodiscard]] std::optional<std::size_t> rank(const Tag& tag) const;
  // A wheel's priority is the best (minimum) rank among its tags (as in pip's candidate sort key);
  // nullopt if none supported.
  [[nodiscard]] std::optional<std::size_t> best_rank(const std::vector<Tag>& tags) const;
  [[nodiscard]] const std::vector<Tag>& tags() const { return m_tags; }

private:
  std::vector<Tag> m_tags;
  std::unordered_map<std::string, std::size_t> m_index; // key: Tag::to_string()
};

} // namespace envfix::specs
