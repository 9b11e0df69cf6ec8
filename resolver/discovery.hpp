#pragma once
// Variant discovery: what a channel's index really offers, not only what the matrices list. A
// channel of per-variant indexes ({mirror}/nightly/{variant}) usually has an aggregate index too
// ({mirror}/nightly, whose project page lists every variant's wheels: download.pytorch.org/whl/nightly/torch/).
// The local labels of the main package's files there name the variants (PEP 440 local versions:
// "2.16.0.dev20261201+cu136" → cu136); each one the spec lacks for that channel becomes an index,
// marked as discovered: its kernels are unverified until its binary is read.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/candidate_provider.hpp"
#include "resolver/framework_selector.hpp"

namespace envfix::resolver {

struct DiscoverySource {
  std::string channel;                                            // stable | test | nightly
  std::string aggregate_url;                                      // "https://download.pytorch.org/whl/nightly"
  std::function<std::string(std::string_view variant)> index_url; // the channel's per-variant index
};

// What a variant name means: its CUDA version (nullopt for cpu) and the line a plan from it carries
// ("variant cu136 is not in the matrices: CUDA 13.6 understood from its name; …"). nullopt: skip it
// (rocm, xpu, or a name that means nothing).
struct DiscoveredVariant {
  std::optional<specs::CudaVersion> cuda;
  std::string note;
};
using DescribeVariant = std::function<std::optional<DiscoveredVariant>(std::string_view channel, std::string_view variant)>;

// Adds to spec.indexes every variant an aggregate page offers that the spec lacks for that channel,
// and the variants in `try_names` (an explicit --variant) on every channel that lacks them, whether
// or not an aggregate page lists them: an absent index only adds nothing. Returns the added ones. A
// page that cannot be read, or an empty one, adds nothing.
std::vector<FrameworkIndex> discover_indexes(FrameworkSpec& spec, const std::vector<DiscoverySource>& sources,
                                             const DescribeVariant& describe,
                                             const std::function<CandidateProvider&(const std::string& url)>& provider_for,
                                             const std::vector<std::string>& try_names = {});

} // namespace envfix::resolver
