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

#include "matrices/knowledge.hpp"
#include "resolver/candidate_provider.hpp"
#include "resolver/framework_selector.hpp"
#include "specs/requirement.hpp"
#include "util/error.hpp"

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
  util::Message note;
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

// What decides whether --index-url/--find-links still plan the framework's way.
struct PathFacts {
  bool framework_asked = false; // --framework given
  bool index_url = false;       // --index-url given
  bool find_links = false;      // --find-links given
  bool gpus = false;            // the host (or the plan's --gpu) has GPUs
};

// Whether the framework's way (GPU, driver and kernel checks) plans this request: always without
// --index-url/--find-links; with them, when --framework is given, when the request is empty (the
// framework's set), or on a host with GPUs when the request names a framework package. Otherwise
// the plain, pip-like resolver runs (README.md, Index options).
[[nodiscard]] bool framework_path(const PathFacts& f, const std::vector<specs::Requirement>& request,
                                  const matrices::Framework* fw);

// The --channel and --variant the user asked for ("auto" and "": none).
struct IndexAsked {
  std::string channel = "auto";
  std::string variant;
};

// --index-url with a framework: the URL becomes the framework's index for what it serves (README.md,
// Index options). The matrices' own URL keeps its (channel, variant)s; a framework whose variants share
// one URL (jax, tensorflow: extras select them) gets every variant at this URL; else the index holds
// one variant: --variant, else the local labels of the main package's files (+cu130), else a path
// segment naming a variant (paddle's …/stable/cu130/), else unknown (variant "", its kernels checked
// after download). The channel: --channel, else a nightly/test segment, else stable. The provider
// reads `url` (the main package's page); its error names the URL, redacted.
[[nodiscard]] Expected<std::vector<FrameworkIndex>> indexes_for_url(const FrameworkSpec& spec, const matrices::Framework& fw,
                                                                    const matrices::Knowledge& knowledge, const IndexAsked& asked,
                                                                    const std::string& url, CandidateProvider& provider);

} // namespace envfix::resolver
