#pragma once
// Why a candidate file was not chosen (docs/architecture.md, Choosing the framework set, step 7;
// docs/json.md "plan"). The codes are stable (JSON, --explain).
#include <string>
#include <string_view>

#include "util/message.hpp"

namespace envfix::resolver {

enum class RejectReason {
  python_tag,             // no wheel tag the interpreter supports (interpreter/abi part)
  platform,               // no wheel tag for this platform (manylinux level, arch)
  requires_python,        // Requires-Python excludes the target interpreter
  driver_too_old,         // the variant's CUDA needs a newer driver
  no_driver,              // GPUs planned for, but no driver found or given (--driver) to run any CUDA
  arch_not_covered,       // the build has no kernels that run on one of the GPUs
  arch_unverified,        // no arch data for this build: accepted, checked after download
  pin,                    // excluded by the request's specifier or --variant
  yanked,                 // PEP 592 yanked, not pinned exactly
  companion_missing,      // a companion of the coupled version is not on the same index
  nightly_date_mismatch,  // nightly companion of another build date
  mixed_variant,          // another variant (+cpu / +cuXYZ) than the set's
  hash_missing,           // the index gives no sha256 (refused unless --allow-unhashed)
  invalid,                // unparseable filename/version, not a wheel
  conflict,               // a dependency conflict excluded it during resolution
  ptx_jit_only,           // runs only by PTX JIT; ranked below a build with native SASS that was chosen
  arch_partly_covered,    // its binaries cover the GPUs only partly; ranked below a fully covered build
  ptx_needs_newer_driver, // runs only by PTX JIT, and the driver runs its CUDA only by minor-version
                          // compatibility, which cannot JIT PTX of a newer ISA
  constraint,             // outside a constraint of a -c file
  hash_not_listed,        // hash-checking mode: its sha256 is not among the requirement's --hash values
};

[[nodiscard]] std::string_view to_string(RejectReason r);

struct Rejection {
  std::string name;    // normalized project
  std::string version; // as in the filename ("" when unparseable)
  std::string index;   // index URL / find-links dir it came from
  RejectReason reason = RejectReason::invalid;
  std::string detail; // human text: "cp312 wheel; interpreter is cp310"
  std::string filename;
  util::Message said = {};     // the detail with its id (util/message.hpp), where it was made with one
  std::string requires_python; // the file's Requires-Python, for reason requires_python: what excluded the target

  void because(util::Message m) {
    detail = m.text;
    said = std::move(m);
  }
  // The detail as a message: with its id, or as it is.
  [[nodiscard]] util::Message why() const { return said.empty() ? util::plain(detail) : said; }
};

} // namespace envfix::resolver
