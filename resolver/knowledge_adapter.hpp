#pragma once
// FrameworkSpec from the matrices: the (channel, variant) indexes a framework publishes, the kernel
// archs of each build and the companion coupling.
#include <string_view>

#include "matrices/knowledge.hpp"
#include "resolver/framework_selector.hpp"

namespace envfix::resolver {

// `knowledge` must outlive the returned spec (its callbacks refer to it). `platform` as in the
// matrices ("linux_x86_64"); `mirror` replaces the official base URL when not empty.
[[nodiscard]] Expected<FrameworkSpec> framework_spec_from(const matrices::Knowledge& knowledge, std::string_view framework,
                                                          std::string_view mirror = {},
                                                          std::string_view platform = "linux_x86_64");

} // namespace envfix::resolver
