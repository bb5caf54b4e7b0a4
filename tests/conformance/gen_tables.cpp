// gen_tables.cpp - dispatch-table conformance-vector generator for dispatch.h.
//
// Links against the real libtorch (Debian libtorch-dev 1.13.1: libtorch_cpu +
// libc10). For a list of registration combinations it defines a fresh
// operator `cN::op(Tensor a) -> Tensor`, registers the combination's kernels
// and backend fallbacks through torch::Library objects (one Library per
// registration, so every registration gets its own debug string
// "registered at combo.cpp:<line>"), and prints
//   - the operator's dumpComputedTable() (what the table rules compute now),
//   - its dumpState() (the registered kernels),
//   - for a fixed list of runtime keys, which kernel the *live* dispatch table
//     actually runs (OperatorHandle::redispatch looks the given key set up in
//     the stored table without key extraction), next to what the computed
//     table says, so stale slots show up.
// Everything registered for a combination is destroyed before the next one,
// including the global backend fallbacks. The output format is documented in
// tests/conformance/README.md.
//
// Build and run with `make conformance-vectors` (see conformance.mk).
// Usage: gen_tables [output-file]    (default: stdout)

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/DispatchKey.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CONFORMANCE_PROG "gen_tables"
#define CONFORMANCE_COMBOS
#include "common.hpp"

using c10::DispatchKey;
using c10::DispatchKeySet;
using namespace conformance;

namespace {

// ------------------------------------------------------------ kernels

// Which registration's code ran during the last live call (its line), 0 if
// none of ours.
int g_ran = 0;

at::Tensor kernel_body(int line, const at::Tensor& a) {
  g_ran = line;
  return a;
}

void boxed_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  g_ran = g_fallback_line;
  torch::jit::drop(*stack, op.schema().arguments().size());
  for (size_t i = 0; i < op.schema().returns().size(); ++i)
    stack->emplace_back(at::Tensor());
}

void print_prefixed(const char* prefix, const std::string& text) {
  for (const std::string& l : split_lines(text))
    std::fprintf(out, "%s%s\n", prefix, l.c_str());
}

// ------------------------------------------------------------ live table

// Keys whose live slot is probed. None of them has a real (non-fallthrough)
// built-in backend fallback in 1.13.1, so calling them only ever runs our own
// code, a fallthrough/ambiguity sentinel (which throws) or reports "missing".
const char* const kLiveKeys[] = {
    "Undefined",   "CPU",           "CUDA",          "HIP",
    "XLA",         "Meta",          "PrivateUse1",   "FPGA",
    "QuantizedCPU", "SparseCPU",    "NestedTensorCPU", "AutogradOther",
    "AutogradCPU", "AutogradCUDA",  "AutogradHIP",   "AutogradMeta",
    "AutogradPrivateUse1", "AutogradNestedTensor",
};

bool contains(const std::string& s, const char* needle) {
  return s.find(needle) != std::string::npos;
}

std::string classify_debug(const std::string& rest) {
  // rest = "<debug> [<reason>]" or "fallthrough <debug> [<reason>]"
  if (rest.compare(0, 12, "fallthrough ") == 0) return "fallthrough";
  if (rest.compare(0, 23, "ambiguous_autogradother") == 0) return "ambiguous";
  const std::string tag = std::string("registered at ") + kFile + ":";
  if (rest.compare(0, tag.size(), tag) == 0) {
    size_t end = rest.find(' ', tag.size());
    return rest.substr(tag.size(), end - tag.size());
  }
  return "other";
}

std::string computed_for(const std::vector<std::string>& table, const std::string& key) {
  const std::string head = key + ": ";
  for (const std::string& l : table)
    if (l.compare(0, head.size(), head) == 0) return classify_debug(l.substr(head.size()));
  return "missing";
}

std::string live_for(const c10::OperatorHandle& op, DispatchKey k) {
  auto typed = op.typed<at::Tensor(const at::Tensor&)>();
  DispatchKeySet ks = k == DispatchKey::Undefined ? DispatchKeySet() : DispatchKeySet(k);
  g_ran = 0;
  try {
    typed.redispatch(ks, at::Tensor());
  } catch (const c10::NotImplementedError&) {
    return "missing";
  } catch (const c10::Error& e) {
    std::string msg = e.what_without_backtrace();
    if (contains(msg, "fallthrough_kernel was executed")) return "fallthrough";
    if (contains(msg, "a backend mapped to AutogradOther")) return "ambiguous";
    return "error";
  }
  return g_ran ? std::to_string(g_ran) : "other";
}

// ------------------------------------------------------------ output

std::string base_table(const char* ns) {
  torch::Library def(torch::Library::DEF, ns, c10::nullopt, kFile, 1);
  def.def("op(Tensor a) -> Tensor");
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow((std::string(ns) + "::op").c_str(), "");
  return op.dumpComputedTable();
}

void run_combo(int id, const Combo& combo) {
  const std::string name = "c" + std::to_string(id) + "::op";
  Libraries libs;
  std::vector<std::string> messages;
  const std::vector<std::string> errors = replay<&boxed_fallback>(
      id, combo, in_order(combo), libs,
      [](int line) {
        return [line](const at::Tensor& a) -> at::Tensor { return kernel_body(line, a); };
      },
      &messages);

  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), "");
  const std::string table = op.dumpComputedTable();
  const std::vector<std::string> table_lines = split_lines(table);

  print_combo(id, combo);
  for (size_t i = 0; i < errors.size(); ++i) {
    std::fprintf(out, "ERROR %s\n", errors[i].c_str());
    print_prefixed("E| ", messages[i]);
  }
  print_prefixed("| ", table);
  print_prefixed("S| ", op.dumpState());
  for (const char* kname : kLiveKeys) {
    const DispatchKey k = parse_key(kname);
    std::fprintf(out, "LIVE| %s %s %s\n", kname, live_for(op, k).c_str(),
                 computed_for(table_lines, kname).c_str());
  }
  std::fprintf(out, "END\n");

  deregister(id, libs);
}

}  // namespace

int main(int argc, char** argv) {
  if (!open_output(argc, argv)) return 1;
  print_combo_header("dispatch-table");

  const std::string base = base_table("base");
  std::fprintf(out, "# built-in backend fallbacks: computed table of an operator with no kernels\n");
  print_prefixed("BASE| ", base);

  const std::vector<Combo> combos = make_combos();
  for (size_t i = 0; i < combos.size(); ++i) run_combo(static_cast<int>(i) + 1, combos[i]);

  // Every combination must have cleaned up after itself.
  if (base_table("base_end") != base) {
    std::fprintf(stderr, "gen_tables: built-in fallbacks changed after the combinations\n");
    return 1;
  }
  return close_output(argv);
}
