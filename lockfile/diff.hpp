#pragma once
// What changed between two locks, package by package (`envfix lock --check`: the lock on disk
// against the one the request resolves to now).
#include <string>
#include <vector>

#include "lockfile/lockfile.hpp"

namespace envfix::lockfile {

// One line per difference: the request or framework, a target new or gone, a package added
// (`+ name==v`), removed (`- name==v`) or changed (`name a -> b`, "(file changed)" when the sha256
// did), a target's index, channel, variant or host. Empty: the locks agree.
[[nodiscard]] std::vector<std::string> diff(const LockFile& a, const LockFile& b);

} // namespace envfix::lockfile
