// gen_schemas.cpp - schema conformance-vector generator for dispatch.h.
//
// Links against the real libtorch (Debian libtorch-dev 1.13.1: libtorch_cpu +
// libc10). Loading libtorch_cpu runs its static registrations; every operator
// the c10 dispatcher then knows that has a schema is printed, one per line:
//
//     <toString(FunctionSchema)> TAB <dispatch-argument bitset, 16 hex digits>
//
// The bitset is the one c10's DispatchKeyExtractor computes for the schema
// (bit i set = the i-th value from the top of the stack is a dispatch
// argument). It is private, so it is read back from dumpState(), whose text
// starts with 64 '0'/'1' characters, character i = bit i. Lines are sorted
// (byte order) so that the file is deterministic. Operators registered
// without a schema (impl only) are counted in a trailing comment.
//
// Build and run with `make schema-vectors` (see tests/schema.mk).
// Usage: gen_schemas [output-file]    (default: stdout)

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/dispatch/DispatchKeyExtractor.h>
#include <ATen/core/function_schema.h>
#include <c10/util/Exception.h>

#if __has_include(<torch/csrc/api/include/torch/version.h>)
#include <torch/csrc/api/include/torch/version.h>
#endif

#define CONFORMANCE_PROG "gen_schemas"
#include "common.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

// Parses the leading '0'/'1' run of DispatchKeyExtractor::dumpState().
bool bitset_of(const c10::FunctionSchema& schema, uint64_t* bits) {
  std::string state = c10::DispatchKeyExtractor::make(schema).dumpState();
  if (state.size() < 64) return false;
  uint64_t b = 0;
  for (int i = 0; i < 64; ++i) {
    if (state[i] == '1') b |= uint64_t(1) << i;
    else if (state[i] != '0') return false;
  }
  *bits = b;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace conformance;
  if (!open_output(argc, argv)) return 1;
  std::vector<std::string> lines;
  size_t no_schema = 0;
  for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
    c10::optional<c10::OperatorHandle> op = c10::Dispatcher::singleton().findSchema(name);
    if (!op) { ++no_schema; continue; }
    uint64_t bits = 0;
    if (!bitset_of(op->schema(), &bits)) {
      std::fprintf(stderr, "gen_schemas: cannot read the bitset of %s\n", toString(op->schema()).c_str());
      return 1;
    }
    char bitset[24];
    std::snprintf(bitset, sizeof bitset, "\t%016" PRIx64, bits);
    lines.push_back(toString(op->schema()) + bitset);
  }
  std::sort(lines.begin(), lines.end());
  print_header("Operator schema", "c10 Dispatcher::getAllOpNames, findSchema",
               "# Regenerate with `make schema-vectors`.\n");
  std::fprintf(out, "# Format: toString(FunctionSchema) TAB dispatch-argument bitset (hex, bit i = i-th value from the stack top)\n");
  for (const std::string& l : lines) std::fprintf(out, "%s\n", l.c_str());
  std::fprintf(out, "# %zu schemas; %zu operator names without a schema were skipped\n", lines.size(), no_schema);
  return close_output(argv);
}
