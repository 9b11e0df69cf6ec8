#pragma once
// The generated tables (build/.../i18n/<lang>_catalog.cpp, from i18n/<lang>.po by i18n/po2cpp.py).
#include <cstddef>

#include "i18n/i18n.hpp"

namespace envfix::i18n::detail {

extern const Entry kZhCN[];
extern const std::size_t kZhCNSize;

} // namespace envfix::i18n::detail
