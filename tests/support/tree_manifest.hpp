#pragma once
// A directory tree as a value, to check that a failed or refused command left an environment exactly
// as it was: relative path → "file <mode> <sha256>", "dir <mode>", "link <target>" (envfix's own
// top-level state, .envfix/, left out by default). One copy for every test that needs it.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace envfix::testing {

using Manifest = std::map<std::string, std::string>;

[[nodiscard]] Manifest tree_manifest(const std::filesystem::path& root, const std::vector<std::string>& skip = {".envfix"});
// How two manifests differ (the first few paths), for failure messages.
[[nodiscard]] std::string manifest_diff(const Manifest& before, const Manifest& after);

} // namespace envfix::testing
