#pragma once
// `plan`: probe → resolve → diff (docs/architecture.md, Pipeline), shared by plan, apply and lock.
// Changes nothing.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/host.hpp"
#include "api/options.hpp"
#include "index/index_client.hpp"
#include "matrices/knowledge.hpp"
#include "project/requirements_file.hpp"
#include "resolver/direct.hpp"
#include "resolver/framework_selector.hpp"
#include "resolver/plan.hpp"
#include "resolver/user_limits.hpp"
#include "util/error.hpp"

namespace envfix::api {

// The request a failed plan came nearest to, resolved before it is offered (api/plan.cpp): the
// covering release without the companion its index lacks. doctor shows it as its fix.
struct NearestFix {
  std::string command; // `envfix apply …` with every option of the run
  util::Message why;   // "torchaudio has no build for torch 2.17.0.dev…: it is removed"
};

// -r and -c files (requirements files, or a pyproject.toml with `extras`/`all_extras`): build_plan
// reads them; their requirements join the request, their index options count where the options name
// none, and their constraints and --hash values limit the files chosen (README.md, the pip/uv table).
using RequestFiles = project::RequestFiles; // -r, -c, --extra, --all-extras, --require-hashes

struct PlanRequest {
  std::vector<std::string> requirements; // PEP 508; empty = the framework packages installed
  RequestFiles files;
  bool pre = false;
  bool allow_unhashed = false;
  // Installed distributions stay when they satisfy every requirement on them, the requested ones too
  // (resolver/installed.hpp). Off for `lock`: a lock describes a set for any machine.
  bool prefer_installed = true;
  // README.md, the pip/uv table: --upgrade (-U) takes the newest allowed version of each requested
  // package even when the installed one satisfies it; --reinstall installs every planned package
  // again, from the index, even at the version installed.
  bool upgrade = false;
  bool reinstall = false;
  bool allow_breaking = false;        // check_installed: broken requirements become warnings
  bool allow_conda_overwrite = false; // check_installed: conda's packages may be replaced
  NearestFix* nearest_out = nullptr;  // a failed framework plan: the nearest request that resolves, when one does
};

struct PlanContext {
  std::unique_ptr<matrices::Knowledge> knowledge; // null when the matrices failed to load (plain mode only)
  Host host;
  std::unique_ptr<index::IndexClient> client;
  std::unique_ptr<resolver::FrameworkSpec> spec; // framework mode only (refers to *knowledge)
  std::optional<resolver::FrameworkIndex> framework_index;
  std::vector<std::string> extra_indexes;     // --extra-index-url, redacted, in search order
  std::string index_from;                     // the configuration the plain index was read from; "" when given
  resolver::UserLimits limits;                // the files' constraints and hashes
  std::vector<std::string> file_requirements; // the requirements the -r files gave, as written
  std::vector<specs::Requirement> request;
  std::vector<resolver::DirectFile> direct; // wheel files the request names: the user's chosen builds
  resolver::Resolution resolution;
  resolver::Plan plan;
  std::size_t resolved = 0;
  double seconds = 0;
  [[nodiscard]] bool framework_mode() const { return spec != nullptr; }
};

// Probe, resolve and diff: everything `envfix plan` shows. On a failed resolution, *rejected (when
// given) receives every rejected candidate (--explain).
[[nodiscard]] Expected<PlanContext> build_plan(const Options& o, const PlanRequest& r,
                                               std::vector<resolver::Rejection>* rejected = nullptr);

// `envfix plan`: build_plan, then check_installed with the request's allow_* flags.
[[nodiscard]] Expected<PlanContext> plan(const Options& o, const PlanRequest& r,
                                         std::vector<resolver::Rejection>* rejected = nullptr);

// resolver::check_conda, then resolver::check_breaking (pip check of the after-state) on ctx's plan.
[[nodiscard]] Expected<std::vector<std::string>> check_installed(PlanContext& ctx, bool allow_breaking,
                                                                 bool allow_conda_overwrite = false);

// The requirement list a lockfile records for this plan: the request as given, else the framework
// packages the resolution holds.
[[nodiscard]] std::vector<std::string> recorded_request(const PlanContext& ctx, const std::vector<std::string>& requirements);

} // namespace envfix::api
