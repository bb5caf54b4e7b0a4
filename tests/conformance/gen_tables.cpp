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

#if __has_include(<torch/csrc/api/include/torch/version.h>)
#include <torch/csrc/api/include/torch/version.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

using c10::DispatchKey;
using c10::DispatchKeySet;

namespace {

FILE* out = stdout;

const char* const kFile = "combo.cpp";

// ------------------------------------------------------------ registrations

enum class Kind { Impl, CatchAll, Fallthrough, Fallback, FallthroughFallback };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Impl: return "impl";
    case Kind::CatchAll: return "catchall";
    case Kind::Fallthrough: return "fallthrough";
    case Kind::Fallback: return "fallback";
    case Kind::FallthroughFallback: return "fallthrough_fallback";
  }
  return "?";
}

struct Reg {
  Kind kind;
  std::string key;  // DispatchKey name; empty for CatchAll
};

struct Combo {
  std::string note;  // printed as a '#' line before the COMBO record
  std::vector<Reg> regs;
};

// Which registration's code ran during the last live call (its line), 0 if
// none of ours.
int g_ran = 0;
// Line of the (at most one) backend fallback of the current combination. The
// fallback is a plain boxed function, so it cannot carry its own state.
int g_fallback_line = 0;

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

// By toString() name: c10::parseDispatchKey does not know every runtime key
// in 1.13.1 (e.g. AutogradHIP, NestedTensorCPU).
DispatchKey parse_key(const std::string& name) {
  for (int v = 0; v <= static_cast<int>(DispatchKey::EndOfAliasKeys); ++v) {
    const DispatchKey k = static_cast<DispatchKey>(v);
    if (name == c10::toString(k)) return k;
  }
  std::fprintf(stderr, "gen_tables: unknown dispatch key name %s\n", name.c_str());
  std::exit(1);
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> r;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    r.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return r;
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

// ------------------------------------------------------------ combos

std::vector<Combo> make_combos() {
  std::vector<Combo> c;
  auto impl = [](const char* k) { return Reg{Kind::Impl, k}; };
  auto catchall = []() { return Reg{Kind::CatchAll, ""}; };
  auto ft = [](const char* k) { return Reg{Kind::Fallthrough, k}; };
  auto fb = [](const char* k) { return Reg{Kind::Fallback, k}; };
  auto ftfb = [](const char* k) { return Reg{Kind::FallthroughFallback, k}; };
  const char* CIA = "CompositeImplicitAutograd";
  const char* CEA = "CompositeExplicitAutograd";
  const char* CEANF = "CompositeExplicitAutogradNonFunctional";
  const char* CIANT = "CompositeImplicitAutogradNestedTensor";

  // 1-32: every subset of {CPU, AutogradCPU, Autograd, CIA, CEA}; bit i of
  // the subset number selects element i; registered in list order.
  const char* base5[] = {"CPU", "AutogradCPU", "Autograd", CIA, CEA};
  for (int mask = 0; mask < 32; ++mask) {
    Combo x;
    x.note = "subset " + std::to_string(mask) + " of {CPU, AutogradCPU, Autograd, CIA, CEA}";
    for (int i = 0; i < 5; ++i)
      if (mask & (1 << i)) x.regs.push_back(impl(base5[i]));
    c.push_back(x);
  }
  c.push_back({"CEANF alone", {impl(CEANF)}});
  c.push_back({"CEANF + CPU", {impl(CEANF), impl("CPU")}});
  c.push_back({"CEANF + CEA", {impl(CEANF), impl(CEA)}});
  c.push_back({"catch-all alone (stored under CIA)", {catchall()}});
  c.push_back({"catch-all + CPU", {catchall(), impl("CPU")}});
  c.push_back({"CIANestedTensor alone", {impl(CIANT)}});
  c.push_back({"CIANestedTensor + CIA", {impl(CIANT), impl(CIA)}});
  c.push_back({"fallthrough kernel at CPU", {ft("CPU")}});
  c.push_back({"fallthrough kernel at CPU + CIA", {ft("CPU"), impl(CIA)}});
  c.push_back({"fallthrough kernel at AutogradCPU + CPU", {ft("AutogradCPU"), impl("CPU")}});
  c.push_back({"boxed fallback at CPU", {fb("CPU")}});
  c.push_back({"boxed fallback at XLA + CIA", {fb("XLA"), impl(CIA)}});
  c.push_back({"boxed fallback at alias Autograd + CPU: AutogradOther already has a "
               "built-in fallback, so registration fails at the first key",
               {fb("Autograd"), impl("CPU")}});
  c.push_back({"fallthrough fallback at AutogradCPU + CPU: fails, AutogradCPU has a "
               "built-in fallback",
               {ftfb("AutogradCPU"), impl("CPU")}});
  c.push_back({"fallthrough fallback at Tracer + CPU + CIA: fails, Tracer has a "
               "built-in fallback",
               {ftfb("Tracer"), impl("CPU"), impl(CIA)}});
  c.push_back({"boxed fallback at FPGA + CEA", {fb("FPGA"), impl(CEA)}});
  c.push_back({"SparseCPU + CIA (AutogradOther ambiguity)", {impl("SparseCPU"), impl(CIA)}});
  c.push_back({"QuantizedCPU + CIA", {impl("QuantizedCPU"), impl(CIA)}});
  c.push_back({"SparseCPU + CIA + Autograd", {impl("SparseCPU"), impl(CIA), impl("Autograd")}});
  c.push_back({"FPGA + CIA", {impl("FPGA"), impl(CIA)}});
  c.push_back({"SparseCPU alone", {impl("SparseCPU")}});
  c.push_back({"NestedTensorCPU + CIA", {impl("NestedTensorCPU"), impl(CIA)}});
  c.push_back({"CPU twice: the second overrides, the first is inactive",
               {impl("CPU"), impl("CPU")}});
  c.push_back({"Meta + CIA", {impl("Meta"), impl(CIA)}});
  c.push_back({"AutogradMeta + Meta", {impl("AutogradMeta"), impl("Meta")}});
  c.push_back({"PrivateUse1 + AutogradPrivateUse1", {impl("PrivateUse1"), impl("AutogradPrivateUse1")}});
  c.push_back({"HIP + CIA", {impl("HIP"), impl(CIA)}});
  c.push_back({"CIA registered before CEA (live Autograd* slots keep the math kernel)",
               {impl(CIA), impl(CEA)}});
  c.push_back({"CEA registered before CIA", {impl(CEA), impl(CIA)}});
  // Additional rules.
  c.push_back({"CEANF + CIA (CEANF does not set has_backend_kernel)", {impl(CEANF), impl(CIA)}});
  c.push_back({"Autograd alias + AutogradCPU direct", {impl("Autograd"), impl("AutogradCPU")}});
  c.push_back({"catch-all + CIA: both land in the CIA list, the CIA kernel overrides",
               {catchall(), impl(CIA)}});
  c.push_back({"fallthrough fallback at AutogradPrivateUse1 (no built-in one) + PrivateUse1",
               {ftfb("AutogradPrivateUse1"), impl("PrivateUse1")}});
  c.push_back({"boxed fallback at AutogradMeta (no built-in one) + Meta",
               {fb("AutogradMeta"), impl("Meta")}});
  c.push_back({"fallthrough fallback at AutocastXPU (no built-in one) + CPU + CIA",
               {ftfb("AutocastXPU"), impl("CPU"), impl(CIA)}});
  c.push_back({"boxed fallback at alias CIA + CPU: registers its keys in iteration order "
               "and fails at AutogradOther (built-in), keeping the keys before it",
               {fb(CIA), impl("CPU")}});
  c.push_back({"boxed fallback at alias CEA (one fallback per runtime key) + CPU",
               {fb(CEA), impl("CPU")}});
  c.push_back({"boxed fallback at alias CIANestedTensor + CPU", {fb(CIANT), impl("CPU")}});
  c.push_back({"fallthrough kernel at alias CIA", {ft(CIA)}});
  c.push_back({"fallthrough kernel at alias Autograd + CPU", {ft("Autograd"), impl("CPU")}});
  c.push_back({"CPU + CEA", {impl("CPU"), impl(CEA)}});
  c.push_back({"SparseCPU + CEA + CIA (ambiguity is checked before has_backend_kernel)",
               {impl("SparseCPU"), impl(CEA), impl(CIA)}});
  c.push_back({"CIANestedTensor + CEA", {impl(CIANT), impl(CEA)}});
  c.push_back({"AutogradCPU + CIA, no backend kernel", {impl("AutogradCPU"), impl(CIA)}});
  return c;
}

// ------------------------------------------------------------ output

void header() {
  std::fprintf(out,
               "# dispatch-table conformance vectors for dispatch.h -- GENERATED, DO NOT EDIT.\n"
               "# Generated by tests/conformance/gen_tables.cpp from libtorch 1.13.1 "
               "(libtorch_cpu + c10);\n"
               "# regenerate with `make conformance-vectors` (or `make -f "
               "tests/conformance/conformance.mk conformance-vectors`).\n"
               "# Format: tests/conformance/README.md\n");
#ifdef TORCH_VERSION
  std::fprintf(out, "# TORCH_VERSION macro: %s\n", TORCH_VERSION);
#endif
#ifdef LIBTORCH_DEB_VERSION
  std::fprintf(out, "# Debian package libtorch-dev: %s\n", LIBTORCH_DEB_VERSION);
#endif
}

std::string base_table(const char* ns) {
  torch::Library def(torch::Library::DEF, ns, c10::nullopt, kFile, 1);
  def.def("op(Tensor a) -> Tensor");
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow((std::string(ns) + "::op").c_str(), "");
  return op.dumpComputedTable();
}

bool op_exists(const std::string& name) {
  return c10::Dispatcher::singleton().findSchema(c10::OperatorName(name, "")).has_value();
}

void run_combo(int id, const Combo& combo) {
  const std::string ns = "c" + std::to_string(id);
  const std::string name = ns + "::op";
  std::vector<std::unique_ptr<torch::Library>> libs;
  std::string tokens = "def:-@" + std::to_string(1000 * id);
  std::vector<std::string> errors;

  libs.emplace_back(new torch::Library(torch::Library::DEF, ns, c10::nullopt, kFile, 1000 * id));
  libs.back()->def("op(Tensor a) -> Tensor");

  for (size_t i = 0; i < combo.regs.size(); ++i) {
    const Reg& r = combo.regs[i];
    const int line = 1000 * id + static_cast<int>(i) + 1;
    const std::string token = std::string(kind_name(r.kind)) + ":" +
        (r.key.empty() ? std::string("-") : r.key) + "@" + std::to_string(line);
    tokens += "," + token;
    try {
      switch (r.kind) {
        case Kind::Impl:
        case Kind::CatchAll: {
          c10::optional<DispatchKey> k;
          if (r.kind == Kind::Impl) k = parse_key(r.key);
          libs.emplace_back(new torch::Library(torch::Library::IMPL, ns, k, kFile, line));
          libs.back()->impl("op", [line](const at::Tensor& a) -> at::Tensor {
            return kernel_body(line, a);
          });
          break;
        }
        case Kind::Fallthrough:
          libs.emplace_back(new torch::Library(torch::Library::IMPL, ns, parse_key(r.key), kFile, line));
          libs.back()->impl("op", torch::CppFunction::makeFallthrough());
          break;
        case Kind::Fallback:
        case Kind::FallthroughFallback:
          g_fallback_line = line;
          libs.emplace_back(new torch::Library(torch::Library::IMPL, "_", parse_key(r.key), kFile, line));
          if (r.kind == Kind::Fallback)
            libs.back()->fallback(torch::CppFunction::makeFromBoxedFunction<&boxed_fallback>());
          else
            libs.back()->fallback(torch::CppFunction::makeFallthrough());
          break;
      }
    } catch (const c10::Error& e) {
      errors.push_back(token);
      errors.push_back(e.what_without_backtrace());
    }
  }

  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), "");
  const std::string table = op.dumpComputedTable();
  const std::vector<std::string> table_lines = split_lines(table);

  std::fprintf(out, "# %s\n", combo.note.c_str());
  std::fprintf(out, "COMBO %d %s\n", id, tokens.c_str());
  for (size_t i = 0; i < errors.size(); i += 2) {
    std::fprintf(out, "ERROR %s\n", errors[i].c_str());
    print_prefixed("E| ", errors[i + 1]);
  }
  print_prefixed("| ", table);
  print_prefixed("S| ", op.dumpState());
  for (const char* kname : kLiveKeys) {
    const DispatchKey k = parse_key(kname);
    std::fprintf(out, "LIVE| %s %s %s\n", kname, live_for(op, k).c_str(),
                 computed_for(table_lines, kname).c_str());
  }
  std::fprintf(out, "END\n");

  // Deregister in reverse registration order.
  while (!libs.empty()) libs.pop_back();
  g_fallback_line = 0;
  if (op_exists(name)) {
    std::fprintf(stderr, "gen_tables: %s still registered after combo %d\n", name.c_str(), id);
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    out = std::fopen(argv[1], "w");
    if (!out) {
      std::perror(argv[1]);
      return 1;
    }
  }
  header();

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
  if (out != stdout && std::fclose(out) != 0) {
    std::perror(argv[1]);
    return 1;
  }
  return 0;
}
