#include "resolver/rejection.hpp"

namespace envfix::resolver {

std::string_view to_string(RejectReason r) {
  switch (r) {
  case RejectReason::python_tag: return "python-tag";
  case RejectReason::platform: return "platform";
  case RejectReason::requires_python: return "requires-python";
  case RejectReason::driver_too_old: return "driver-too-old";
  case RejectReason::no_driver: return "no-driver";
  case RejectReason::arch_not_covered: return "arch-not-covered";
  case RejectReason::arch_unverified: return "arch-unverified";
  case RejectReason::pin: return "pin";
  case RejectReason::yanked: return "yanked";
  case RejectReason::companion_missing: return "companion-missing";
  case RejectReason::nightly_date_mismatch: return "nightly-date-mismatch";
  case RejectReason::mixed_variant: return "mixed-variant";
  case RejectReason::hash_missing: return "hash-missing";
  case RejectReason::invalid: return "invalid";
  case RejectReason::conflict: return "conflict";
  case RejectReason::ptx_jit_only: return "ptx-jit-only";
  case RejectReason::arch_partly_covered: return "arch-partly-covered";
  case RejectReason::ptx_needs_newer_driver: return "ptx-needs-newer-driver";
  case RejectReason::constraint: return "constraint";
  case RejectReason::hash_not_listed: return "hash-not-listed";
  }
  return "invalid";
}

} // namespace envfix::resolver
