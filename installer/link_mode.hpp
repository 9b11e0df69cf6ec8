#pragma once
// How files come from the unpacked cache into an environment (installer/unpacked_cache.hpp).
#include <string_view>

#include "util/error.hpp"

namespace envfix::installer {

// automatic: clone where the filesystem can (copy-on-write: as safe as a copy, as fast as a
// link), else hardlink, else copy.
enum class LinkMode { automatic, clone, hardlink, copy };
[[nodiscard]] const char* to_string(LinkMode mode);
[[nodiscard]] Expected<LinkMode> parse_link_mode(std::string_view text);

} // namespace envfix::installer
