// gen_texts.cpp - message-text conformance-vector generator for dispatch.h.
//
// Links against the real libtorch (Debian libtorch-dev 1.13.1: libtorch_cpu +
// libc10) and records the words c10 uses where dispatch.h prints a text of
// its own: key names of keysets that have no real key, keysets with bits no
// key owns, the errors of parseDispatchKey, findSchemaOrThrow and of
// torch::Library blocks used the wrong way, dumpState's alias-analysis
// line for every AliasAnalysisKind, the internal asserts of an executed
// fallthrough and of the AutogradOther ambiguity, the override warning,
// FULL_AFTER of keys without a functionality and the schema parser's
// complex defaults. tests/test_names.c compares dispatch.h's texts with
// these lines. Format: tests/conformance/README.md.
//
// Build and run with `make conformance-vectors` (see conformance.mk).
// Usage: gen_texts [output-file]    (default: stdout)

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DispatchKey.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/util/Exception.h>
#include <torch/csrc/jit/frontend/function_schema_parser.h>
#include <torch/library.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#define CONFORMANCE_PROG "gen_texts"
#include "common.hpp"

using c10::DispatchKey;
using c10::DispatchKeySet;
using namespace conformance;

namespace {

// One line per text: newlines become "\n", backslashes "\\".
std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '\n') r += "\\n";
    else if (c == '\\') r += "\\\\";
    else r += c;
  }
  return r;
}

void record(const char* tag, const std::string& what, const std::string& text) {
  std::fprintf(out, "%s %s %s\n", tag, what.c_str(), escape(text).c_str());
}

// The message fn throws (c10::Error without backtrace), or "(no error)".
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  } catch (const std::exception& e) {
    return std::string("(std::exception) ") + e.what();
  }
  return "(no error)";
}

// toString of a keyset made in a child process: c10 may read out of bounds
// or loop on bits no key owns, so a crash or a hang is recorded, not suffered.
std::string keyset_text_guarded(uint64_t repr) {
  int fds[2];
  if (pipe(fds) != 0) return "(pipe failed)";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(5);
    std::string s = c10::toString(DispatchKeySet(DispatchKeySet::RAW, repr));
    if (write(fds[1], s.data(), s.size()) < 0) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "(killed by signal " + std::to_string(WTERMSIG(status)) + ")";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "(failed)";
  return text;
}

at::Tensor identity(const at::Tensor& a) { return a; }

void fallback_body(const c10::OperatorHandle&, torch::jit::Stack*) {}

// HIGHEST: the key a keyset with functionality bits but no backend bit names.
void record_highest() {
  const int nb = c10::num_backends;
  for (uint8_t f = 1; f < static_cast<uint8_t>(DispatchKey::EndOfFunctionalityKeys); f++) {
    DispatchKey k = static_cast<DispatchKey>(f);
    if (!c10::isPerBackendFunctionalityKey(k)) continue;
    DispatchKeySet ks(DispatchKeySet::RAW, uint64_t(1) << (nb + f - 1));
    record("HIGHEST", hex(ks), c10::toString(ks.highestPriorityTypeId()));
  }
}

// KEYSET: keysets with a bit above the last functionality key's.
void record_keysets() {
  const int first_unused = c10::num_backends + c10::num_functionality_keys - 1;
  uint64_t reprs[] = {uint64_t(1) << first_unused, (uint64_t(1) << first_unused) | 1,
                      uint64_t(1) << (first_unused + 1), uint64_t(1) << 63};
  for (uint64_t r : reprs) record("KEYSET", hex(r), keyset_text_guarded(r));
}

// ERROR: texts of failures dispatch.h reports in c10's words.
void record_errors() {
  record("ERROR", "parse_unknown", error_of([] { c10::parseDispatchKey("NotAKey"); }));
  record("ERROR", "parse_empty", error_of([] { c10::parseDispatchKey(""); }));
  auto& d = c10::Dispatcher::singleton();
  record("ERROR", "find_schema", error_of([&] { d.findSchemaOrThrow("tx::nope", ""); }));
  record("ERROR", "find_schema_overload", error_of([&] { d.findSchemaOrThrow("tx::nope", "ov"); }));
  {
    torch::Library impls(torch::Library::IMPL, "tx", DispatchKey::CPU, "io.cpp", 7);
    impls.impl("implonly", identity);
    record("ERROR", "find_schema_impl_only", error_of([&] { d.findSchemaOrThrow("tx::implonly", ""); }));
  }
  record("ERROR", "def_in_impl_block", error_of([] {
           torch::Library m(torch::Library::IMPL, "tx", DispatchKey::CPU, "x.cpp", 80);
           m.def("f(Tensor a) -> Tensor");
         }));
  record("ERROR", "fallback_in_def_block", error_of([] {
           torch::Library m(torch::Library::DEF, "ty", c10::nullopt, "y.cpp", 20);
           m.fallback(torch::CppFunction::makeFallthrough());
         }));
  record("ERROR", "fallback_in_fragment_block", error_of([] {
           torch::Library m(torch::Library::FRAGMENT, "tx", c10::nullopt, "z.cpp", 30);
           m.fallback(torch::CppFunction::makeFallthrough());
         }));
  record("ERROR", "fallback_namespaced", error_of([] {
           torch::Library m(torch::Library::IMPL, "tx", DispatchKey::TESTING_ONLY_GenericWrapper, "fb.cpp", 10);
           m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback_body>());
         }));
  record("ERROR", "impl_key_mismatch", error_of([] {
           torch::Library m(torch::Library::IMPL, "tx", DispatchKey::CPU, "k.cpp", 40);
           m.impl("f", torch::dispatch(DispatchKey::CUDA, identity));
         }));
  record("ERROR", "def_namespace_mismatch", error_of([] {
           torch::Library m(torch::Library::FRAGMENT, "tx", c10::nullopt, "n.cpp", 50);
           m.def("other::f(Tensor a) -> Tensor");
         }));
  record("ERROR", "impl_namespace_mismatch", error_of([] {
           torch::Library m(torch::Library::IMPL, "tx", DispatchKey::CPU, "n.cpp", 60);
           m.impl("other::f", identity);
         }));
  record("ERROR", "fragment_wildcard", error_of([] {
           torch::Library m(torch::Library::FRAGMENT, "_", c10::nullopt, "w.cpp", 70);
         }));
}

// The "alias analysis kind:" line of dumpState.
std::string alias_line(const std::string& state) {
  for (const std::string& l : split_lines(state))
    if (l.rfind("alias analysis kind:", 0) == 0) return l;
  return "(no alias analysis line)";
}

// STATE: dumpState's alias-analysis line for each way of defining.
void record_states() {
  struct Case { const char* name; c10::AliasAnalysisKind kind; } cases[] = {
      {"CONSERVATIVE", c10::AliasAnalysisKind::CONSERVATIVE},
      {"FROM_SCHEMA", c10::AliasAnalysisKind::FROM_SCHEMA},
      {"PURE_FUNCTION", c10::AliasAnalysisKind::PURE_FUNCTION},
      {"INTERNAL_SPECIAL_CASE", c10::AliasAnalysisKind::INTERNAL_SPECIAL_CASE},
  };
  auto& d = c10::Dispatcher::singleton();
  int i = 0;
  for (const Case& c : cases) {
    std::string ns = "ta" + std::to_string(i++);
    torch::Library m(torch::Library::DEF, ns, c10::nullopt, "aa.cpp", 1);
    m.def(torch::schema("f(Tensor a) -> Tensor", c.kind));
    record("STATE", c.name, alias_line(d.findSchemaOrThrow((ns + "::f").c_str(), "").dumpState()));
  }
  {
    torch::Library m(torch::Library::DEF, "tplain", c10::nullopt, "aa.cpp", 2);
    m.def("f(Tensor a) -> Tensor");
    record("STATE", "def_string", alias_line(d.findSchemaOrThrow("tplain::f", "").dumpState()));
  }
  {
    torch::Library m(torch::Library::DEF, "tunset", c10::nullopt, "aa.cpp", 3);
    m.def(torch::jit::parseSchema("tunset::f(Tensor a) -> Tensor"));
    record("STATE", "def_unset", alias_line(d.findSchemaOrThrow("tunset::f", "").dumpState()));
  }
  {  // 1.13.1 already keeps tags on a def; does dumpState show them?
    torch::Library m(torch::Library::DEF, "ttags", c10::nullopt, "aa.cpp", 4);
    m.def("f(Tensor a) -> Tensor", {at::Tag::inplace_view, at::Tag::generated});
    record("STATE", "def_tags", d.findSchemaOrThrow("ttags::f", "").dumpState());
  }
}

// ASSERT: what an executed fallthrough kernel and the ambiguous-AutogradOther
// sentinel raise (redispatched to their slot directly).
void record_asserts() {
  torch::Library def(torch::Library::DEF, "tq", c10::nullopt, "tq.cpp", 1);
  def.def("amb(Tensor a) -> Tensor");
  def.def("ft(Tensor a) -> Tensor");
  torch::Library sparse(torch::Library::IMPL, "tq", DispatchKey::SparseCPU, "tq.cpp", 2);
  sparse.impl("amb", torch::CppFunction::makeFromBoxedFunction<&fallback_body>());
  torch::Library cia(torch::Library::IMPL, "tq", DispatchKey::CompositeImplicitAutograd, "tq.cpp", 3);
  cia.impl("amb", torch::CppFunction::makeFromBoxedFunction<&fallback_body>());
  torch::Library cpu(torch::Library::IMPL, "tq", DispatchKey::CPU, "tq.cpp", 4);
  cpu.impl("ft", torch::CppFunction::makeFallthrough());
  auto& d = c10::Dispatcher::singleton();
  record("ASSERT", "ambiguous_autogradother", error_of([&] {
           torch::jit::Stack s;
           d.findSchemaOrThrow("tq::amb", "").redispatchBoxed(DispatchKeySet(DispatchKey::AutogradOther), &s);
         }));
  record("ASSERT", "fallthrough_executed", error_of([&] {
           torch::jit::Stack s;
           d.findSchemaOrThrow("tq::ft", "").redispatchBoxed(DispatchKeySet(DispatchKey::CPU), &s);
         }));
}

// WARN: the override warning's text, and how many of three overrides warn.
struct CaptureWarnings : c10::WarningHandler {
  std::string last;
  int count = 0;
  void process(const c10::SourceLocation&, const std::string& msg, const bool) override {
    last = msg;
    count++;
  }
};
void record_warnings() {
  CaptureWarnings w;
  c10::Warning::WarningHandlerGuard guard(&w);
  torch::Library def(torch::Library::DEF, "tw", c10::nullopt, "tw.cpp", 1);
  def.def("f(Tensor a) -> Tensor");
  def.def("g(Tensor a) -> Tensor");
  torch::Library a(torch::Library::IMPL, "tw", DispatchKey::CPU, "tw.cpp", 2);
  a.impl("f", identity);
  a.impl("g", identity);
  torch::Library b(torch::Library::IMPL, "tw", DispatchKey::CPU, "tw.cpp", 3);
  b.impl("f", identity);
  b.impl("g", identity);
  torch::Library c(torch::Library::IMPL, "tw", DispatchKey::Meta, "tw.cpp", 4);
  c.impl("f", identity);
  c.impl("f", identity);
  record("WARN", "override", w.last);
  record("WARN", "override_count", std::to_string(w.count));
}

// FULLAFTER: DispatchKeySet(FULL_AFTER, k) of keys without a functionality.
void record_full_after() {
  const DispatchKey keys[] = {DispatchKey::Undefined, DispatchKey::CompositeImplicitAutograd,
                              DispatchKey::StartOfDenseBackends, DispatchKey::AutogradCPU};
  for (DispatchKey k : keys)
    record("FULLAFTER", c10::toString(k) + std::string("/") + std::to_string(static_cast<int>(k)),
           hex(DispatchKeySet(DispatchKeySet::FULL_AFTER, k)));
}

// SCHEMA: how the parser reads complex defaults (the text printed, or the error).
void record_schemas() {
  const char* const schemas[] = {"tc::f(complex x=2.5) -> ()", "tc::f(complex x=1j) -> ()",
                                 "tc::f(complex x=-2.5) -> ()", "tc::f(complex[] x=[1j, 2.5]) -> ()",
                                 "tc::f(Scalar x=1j) -> ()"};
  int i = 0;
  for (const char* text : schemas) {
    std::string printed;
    std::string err = error_of([&] { printed = c10::toString(torch::jit::parseSchema(text)); });
    record("SCHEMA", "complex" + std::to_string(i++), printed.empty() ? err : printed);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!open_output(argc, argv)) return 1;
  print_header("message-text", "libtorch_cpu + c10",
               "# regenerate with `make conformance-vectors`. Format: tests/conformance/README.md\n"
               "# One text per line: newline written as \\n, backslash as \\\\.\n");
  record_highest();
  record_keysets();
  record_errors();
  record_states();
  record_asserts();
  record_warnings();
  record_full_after();
  record_schemas();
  return close_output(argv);
}
