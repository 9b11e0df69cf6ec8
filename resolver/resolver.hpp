#pragma once
// The generic dependency resolver: requirements -> one consistent set of wheels, or an explanation of
// why none exists. It follows pip 23.2.1's resolvelib algorithm (preference order, one-step look-ahead
// on dependencies, re-pinning, back-jumping) so that for the same index it picks the same set, and the
// PEP 440/508 specs where pip 23.2.1 deviates (see tests/resolver/test_pip_compare.cpp).
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "index/candidate.hpp"
#include "resolver/candidate_provider.hpp"
#include "resolver/rejection.hpp"
#include "util/message.hpp"
#include "specs/marker.hpp"
#include "specs/requirement.hpp"
#include "specs/tag.hpp"
#include "specs/version.hpp"
#include "specs/wheel_filename.hpp"
#include "util/error.hpp"

namespace envfix::resolver {

// The interpreter the set is for (probed, or given by --python-version/--platform).
struct TargetEnvironment {
  specs::MarkerEnvironment markers;
  std::vector<specs::Tag> tags;       // supported tags, most preferred first
  specs::Version python_full_version; // Requires-Python is tested against major.minor.micro
};

enum class PrereleasePolicy {
  if_necessary, // the spec (and pip's default): finals unless a clause names a pre-release or none fit
  allow,        // --pre
};

// A veto from the caller (framework layer) on one file; nullopt keeps it.
struct Veto {
  RejectReason reason;
  util::Message detail; // with its id (util/message.hpp)
};
using CandidateFilter = std::function<std::optional<Veto>(const index::Candidate&, const specs::WheelFilename&)>;

struct ResolveOptions {
  TargetEnvironment target;
  PrereleasePolicy prereleases = PrereleasePolicy::if_necessary;
  bool allow_unhashed = false; // accept files whose index gives no sha256
  CandidateFilter filter;      // optional
  std::size_t max_rounds = 200000;
};

struct Pin {
  std::string name; // normalized
  specs::Version version;
  index::Candidate file;
  std::vector<std::string> extras;      // extras requested of it (normalized, sorted)
  std::vector<std::string> required_by; // "torch==2.7.0+cu128", or "<request>"
  // The core metadata the resolver read for this file (PEP 658, range reads, …): its dependencies were
  // taken from it, so apply holds it against the downloaded wheel's own METADATA. nullopt when never read.
  std::optional<specs::CoreMetadata> metadata;
};

struct Resolution {
  std::vector<Pin> pins;           // sorted by name
  std::vector<Rejection> rejected; // every file not usable on this target, with its reason
  std::size_t rounds = 0;
  [[nodiscard]] const Pin* find(std::string_view name) const;
  // The pins that `roots` require, directly or through another such pin (never a root itself):
  // the libraries a framework's set brings (nvidia-cublas-cu12 for torch), as opposed to what the
  // request named beside it (xformers).
  [[nodiscard]] std::set<std::string> required_through(const std::set<std::string>& roots) const;
};

class Resolver {
public:
  Resolver(CandidateProvider& provider, ResolveOptions options);
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // Unsatisfiable requests give ErrorCode::unsatisfiable with the explanation in message/causes;
  // a package absent from the index gives ErrorCode::not_found naming it and who needs it.
  [[nodiscard]] Expected<Resolution> resolve(const std::vector<specs::Requirement>& requirements);

  // Rejections gathered so far (also valid after a failed resolve, for --explain).
  [[nodiscard]] const std::vector<Rejection>& rejected() const;

private:
  struct Impl;
  Impl* m_impl;
};

// The usable wheels of one project for a target, newest first, one per version (best tag), and the
// rejections of the rest. Used by the resolver and the framework selector.
struct ProjectFile {
  specs::Version version;
  specs::WheelFilename wheel;
  index::Candidate file;
  std::size_t tag_rank = 0;
};
struct ProjectFiles {
  std::vector<ProjectFile> usable; // best first: version desc, then tag rank, then build tag
  std::vector<Rejection> rejected;
};
// The set names one version exactly (`==1.2`, `===1.2`; not `==1.*`): PEP 592 lets such a pin choose a
// yanked file.
[[nodiscard]] bool is_pinned(const specs::SpecifierSet& set);
[[nodiscard]] ProjectFiles classify_files(const std::vector<index::Candidate>& files, const ResolveOptions& options);

} // namespace envfix::resolver
