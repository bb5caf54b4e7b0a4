// gen_calls.cpp - end-to-end call conformance-vector generator for dispatch.h.
//
// Links against the real libtorch (Debian libtorch-dev 1.13.1: libtorch_cpu +
// libc10). It replays exactly the registration combinations of gen_tables.cpp
// (same ids, same registrations, same debug lines "registered at
// combo.cpp:<1000*id+index>"), and for each one makes REAL calls
//   op.typed<at::Tensor(const at::Tensor&)>().call(t)
// through c10::Dispatcher: key extraction from the tensor, thread-local
// include/exclude sets, fallthrough masks (including the per-backend masks)
// and table lookup. The calls use tensors of several backends and run under
// several TLS modes. Every kernel and every backend fallback we register
// records its registration line when it runs, so each call shows which
// registration ran (or the error, or the built-in fallback that was entered).
// An operator with no kernels at all is called first (BASECALL lines).
// Where c10 1.13.1's live table is stale (a CompositeImplicitAutograd kernel
// registered before a CompositeExplicitAutograd one) the calls are also made
// after a replay in an order c10 handles correctly, and each CALL line of the
// combination carries that answer too (recomputed=, recomputed_key=; see
// "stale live tables" below).
// The output format is documented in tests/conformance/README.md.
//
// Build and run with `make conformance-vectors` (see conformance.mk).
// Usage: gen_calls [output-file]    (default: stdout)

#include <ATen/Functions.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/DispatchKey.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/UndefinedTensorImpl.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#define CONFORMANCE_PROG "gen_calls"
#define CONFORMANCE_COMBOS
#include "common.hpp"

using c10::DispatchKey;
using c10::DispatchKeySet;
using namespace conformance;

// ------------------------------------------------------------ entry key
//
// The key set Dispatcher::call computes is
//   DispatchKeyExtractor::getDispatchKeySetUnboxed(args...)
// of the operator's OperatorEntry. OperatorHandle keeps its OperatorDef
// pointer private; an explicit template instantiation may name a private
// member (C++17 [temp.spec]/6), so this reaches the entry without
// reimplementing any of c10's logic.
const c10::impl::OperatorEntry& entry_of(const c10::OperatorHandle& h);
template <auto M>
struct EntryOf {
  friend const c10::impl::OperatorEntry& entry_of(const c10::OperatorHandle& h) {
    return (h.*M)->op;
  }
};
template struct EntryOf<&c10::OperatorHandle::operatorDef_>;

namespace {

// ------------------------------------------------------------ kernels
// The combinations and their registration: common.hpp.

// The registration line of the last of our kernels/fallbacks that ran during
// the current call (0 if none), and the key set it was called with.
int g_ran = 0;
DispatchKeySet g_ran_ks;

at::Tensor kernel_body(int line, DispatchKeySet ks, const at::Tensor& a) {
  g_ran = line;
  g_ran_ks = ks;
  return a;
}

void boxed_fallback(const c10::OperatorHandle& op, DispatchKeySet ks, torch::jit::Stack* stack) {
  g_ran = g_fallback_line;
  g_ran_ks = ks;
  // Return the input tensor, like the kernels.
  const size_t nargs = op.schema().arguments().size();
  at::Tensor a = (*stack)[stack->size() - nargs].toTensor();
  torch::jit::drop(*stack, nargs);
  for (size_t i = 0; i < op.schema().returns().size(); ++i) stack->emplace_back(a);
}

bool starts_with(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}

// ------------------------------------------------------------ inputs

struct Input {
  std::string name;
  at::Tensor t;
};

// A tensor without storage whose TensorImpl is constructed for the given
// backend key and device; the TensorImpl constructor adds the
// autograd-related keys (ADInplaceOrView, Autograd<backend>, ...) itself.
at::Tensor fake_tensor(DispatchKey k, c10::Device dev) {
  return at::Tensor(c10::make_intrusive<c10::TensorImpl, c10::UndefinedTensorImpl>(
      DispatchKeySet(k), caffe2::TypeMeta::Make<float>(), dev));
}

// How each input is built; printed as a '#' line of the output.
struct InputSpec {
  const char* name;
  const char* how;
};

std::vector<Input> make_inputs() {
  std::vector<Input> in;
  // Real tensors where libtorch_cpu can build them.
  in.push_back({"cpu", at::empty({1})});
  // Backends without a usable device in this build: a storage-less
  // TensorImpl constructed with the backend key and device.
  in.push_back({"cuda", fake_tensor(DispatchKey::CUDA, c10::Device(c10::DeviceType::CUDA, 0))});
  in.push_back({"meta", at::empty({1}, at::TensorOptions().device(c10::DeviceType::Meta))});
  in.push_back({"fpga", fake_tensor(DispatchKey::FPGA, c10::Device(c10::DeviceType::FPGA))});
  in.push_back({"xla", fake_tensor(DispatchKey::XLA, c10::Device(c10::DeviceType::XLA, 0))});
  in.push_back({"hip", fake_tensor(DispatchKey::HIP, c10::Device(c10::DeviceType::HIP, 0))});
  in.push_back({"privateuse1",
                fake_tensor(DispatchKey::PrivateUse1, c10::Device(c10::DeviceType::PrivateUse1, 0))});
  in.push_back({"sparsecpu", at::empty({1}, at::TensorOptions().layout(c10::kSparse))});
  in.push_back({"quantizedcpu", at::quantize_per_tensor(at::ones({1}), 0.1, 0, c10::kQInt8)});
  // A real nested tensor (NestedTensorImpl adds AutogradNestedTensor, which a
  // plain TensorImpl constructed with NestedTensorCPU would not have).
  in.push_back({"nestedcpu", at::_nested_tensor_from_tensor_list({at::ones({1}), at::ones({2})})});
  in.push_back({"undefined", at::Tensor()});
  return in;
}

const InputSpec kInputSpecs[] = {
    {"cpu", "at::empty({1})"},
    {"cuda", "TensorImpl(DispatchKeySet(CUDA), float, Device(CUDA, 0)) (no CUDA in this build)"},
    {"meta", "at::empty({1}, device Meta)"},
    {"fpga", "TensorImpl(DispatchKeySet(FPGA), float, Device(FPGA)) (no FPGA backend)"},
    {"xla", "TensorImpl(DispatchKeySet(XLA), float, Device(XLA, 0)) (no XLA backend)"},
    {"hip", "TensorImpl(DispatchKeySet(HIP), float, Device(HIP, 0)) (no HIP in this build)"},
    {"privateuse1",
     "TensorImpl(DispatchKeySet(PrivateUse1), float, Device(PrivateUse1, 0)) (no such backend)"},
    {"sparsecpu", "at::empty({1}, layout Sparse)"},
    {"quantizedcpu", "at::quantize_per_tensor(at::ones({1}), 0.1, 0, QInt8)"},
    {"nestedcpu", "at::_nested_tensor_from_tensor_list({at::ones({1}), at::ones({2})})"},
    {"undefined", "at::Tensor() (UndefinedTensorImpl; multi_dispatch_key_set does not skip it)"},
};

// ------------------------------------------------------------ modes

const char* const kModes[] = {"plain", "below_autograd", "inference", "include_tracer"};

// Runs f() with the TLS of the given mode in place.
template <class F>
void with_mode(const std::string& mode, F&& f) {
  if (mode == "plain") {
    f();
  } else if (mode == "below_autograd") {
    at::AutoDispatchBelowAutograd guard;
    f();
  } else if (mode == "inference") {
    c10::InferenceMode guard;
    f();
  } else if (mode == "include_tracer") {
    c10::impl::IncludeDispatchKeyGuard guard(DispatchKey::Tracer);
    f();
  } else {
    std::fprintf(stderr, "gen_calls: unknown mode %s\n", mode.c_str());
    std::exit(1);
  }
}

// ------------------------------------------------------------ calls

// "error:" + the first 60 characters of the message, whitespace replaced by
// '_'. The boilerplate prefix of TORCH_INTERNAL_ASSERT messages
// ("<cond> INTERNAL ASSERT FAILED at \"<file>\":<line>, please report a bug to
// PyTorch. ") is removed first: the fallthrough-kernel and AutogradOther-
// ambiguity errors are both internal asserts and would otherwise print the
// same 60 characters.
std::string error_token(std::string what) {
  const std::string assert_tag = " INTERNAL ASSERT FAILED at ";
  const std::string bug_tag = "please report a bug to PyTorch. ";
  const size_t a = what.find(assert_tag);
  if (a != std::string::npos) {
    const size_t b = what.find(bug_tag, a);
    if (b != std::string::npos) what = what.substr(b + bug_tag.size());
  }
  std::string s = what.substr(0, 60);
  for (char& ch : s)
    if (ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r') ch = '_';
  return "error:" + s;
}

// Classification of a key's entry in dumpComputedTable(): "ours" (a
// combo.cpp registration), "fallthrough", "ambiguous", "builtin" (any other
// debug string: a libtorch built-in backend fallback) or "missing".
std::string classify_entry(const std::vector<std::string>& table, DispatchKey k) {
  const std::string head = std::string(c10::toString(k)) + ": ";
  for (const std::string& l : table) {
    if (!starts_with(l, head)) continue;
    const std::string rest = l.substr(head.size());
    if (starts_with(rest, "fallthrough ")) return "fallthrough";
    if (starts_with(rest, "ambiguous_autogradother")) return "ambiguous";
    if (starts_with(rest, std::string("registered at ") + kFile + ":")) return "ours";
    return "builtin";
  }
  return "missing";
}

struct CallResult {
  std::string outcome;  // field 8
  std::string key;      // field 9 (without "key=")
  std::string then;     // field 10 (without "then="), only for builtin outcomes
  bool skipped = false; // the call would crash the process; not made
};

// Built-in fallbacks that cannot be called here. The Tracer fallback
// (torch/csrc/autograd/TraceTypeManual.cpp, general_trace_function) only
// takes Tracer out of the TLS include set through setTracingState(nullptr)
// when a TracingState is active; with Tracer included by a guard and no
// TracingState it re-enters itself through op.callBoxed() until the stack
// overflows (SIGSEGV), whatever the operator and tensor.
bool crashes(DispatchKey entry_key) {
  return entry_key == DispatchKey::Tracer;
}

CallResult do_call(const c10::OperatorHandle& op, const std::vector<std::string>& table,
                   const at::Tensor& t) {
  CallResult r;
  // Exactly what Dispatcher::call computes before its lookup.
  const DispatchKeySet entry_ks =
      entry_of(op).dispatchKeyExtractor().getDispatchKeySetUnboxed<const at::Tensor&>(t);
  const DispatchKey entry_key = entry_ks.highestPriorityTypeId();
  r.key = c10::toString(entry_key);
  const bool builtin = classify_entry(table, entry_key) == "builtin";
  if (builtin && crashes(entry_key)) {
    r.outcome = "builtin:" + r.key;
    r.skipped = true;
    return r;
  }

  std::string result;
  g_ran = 0;
  g_ran_ks = DispatchKeySet();
  try {
    op.typed<at::Tensor(const at::Tensor&)>().call(t);
    result = g_ran ? std::to_string(g_ran) : "none";
  } catch (const c10::Error& e) {
    result = error_token(e.what_without_backtrace());
  } catch (const std::exception& e) {
    result = error_token(e.what());
  } catch (...) {
    result = "error:unknown_exception";
  }
  if (builtin) {
    r.outcome = "builtin:" + r.key;
    r.then = result;
  } else {
    r.outcome = result;
    // A direct hit must have been called with the extracted key set.
    if (g_ran && result[0] != 'e' && g_ran_ks != entry_ks) {
      std::fprintf(stderr, "gen_calls: kernel %d called with %s, extracted %s\n", g_ran,
                   hex(g_ran_ks).c_str(), hex(entry_ks).c_str());
      std::exit(1);
    }
  }
  return r;
}

// One call: the input, the mode, the TLS in force and the result.
struct CallRecord {
  std::string input, mode;
  std::string tensor_ks, included, excluded;
  CallResult r;
};

std::vector<CallRecord> make_calls(const c10::OperatorHandle& op, const std::vector<Input>& inputs) {
  const std::vector<std::string> table = split_lines(op.dumpComputedTable());
  std::vector<CallRecord> calls;
  for (const Input& in : inputs) {
    for (const char* mode : kModes) {
      with_mode(mode, [&] {
        const c10::impl::LocalDispatchKeySet tls = c10::impl::tls_local_dispatch_key_set();
        CallRecord c;
        c.input = in.name;
        c.mode = mode;
        c.tensor_ks = hex(in.t.key_set());
        c.included = hex(tls.included_);
        c.excluded = hex(tls.excluded_);
        c.r = do_call(op, table, in.t);
        calls.push_back(c);
      });
    }
  }
  return calls;
}

// Prints the calls; with `recomputed` (same length, same inputs and modes),
// appends each call's recomputed=/recomputed_key= fields.
void print_calls(const char* record, int id, const std::vector<CallRecord>& calls,
                 const std::vector<CallRecord>* recomputed = nullptr) {
  for (size_t i = 0; i < calls.size(); ++i) {
    const CallRecord& c = calls[i];
    const CallResult& r = c.r;
    if (r.skipped)
      std::fprintf(out, "# skipped (%s fallback recurses until the stack overflows): ",
                   r.key.c_str());
    std::fprintf(out, "%s %d %s %s %s %s %s %s key=%s", record, id, c.input.c_str(),
                 c.mode.c_str(), c.tensor_ks.c_str(), c.included.c_str(), c.excluded.c_str(),
                 r.outcome.c_str(), r.key.c_str());
    if (!r.then.empty()) std::fprintf(out, " then=%s", r.then.c_str());
    if (recomputed) {
      const CallResult& q = (*recomputed)[i].r;
      std::fprintf(out, " recomputed=%s recomputed_key=%s", q.outcome.c_str(), q.key.c_str());
    }
    std::fprintf(out, "\n");
  }
}

// ------------------------------------------------------------ stale live tables
//
// c10 1.13.1 keeps a live dispatch table per operator and updates only some
// slots on each registration (OperatorEntry::updateDispatchTable_): the
// runtime keys of the registered key, Undefined for the Composite* aliases,
// and the Autograd<backend> slot when the key is a backend key. An Autograd*
// (or NestedTensor*) slot filled from a CompositeImplicitAutograd kernel is
// computed with "no backend kernel" (Note [Refresh Runtime Autograd entries in
// dispatchTable_]); a later CompositeExplicitAutograd kernel gives every
// backend a kernel, but CEA is an alias key, not a backend key, so those slots
// (and their fallthrough bits) are never refreshed and keep the math kernel.
// dumpComputedTable() recomputes every slot from the registered kernels and
// shows what the table should hold. The project's rule: where the live table
// is stale, the recomputed table's answer is the truth.
//
// For such a combination the calls are made a second time after replaying the
// SAME registrations, with the SAME debug lines, in an order c10 handles
// correctly: the CompositeExplicitAutograd kernel(s) moved just before the
// first CompositeImplicitAutograd one. Only alias kernels at DIFFERENT keys
// change places; c10 keeps one kernel list per key, and "the newest kernel of
// a key wins" only compares kernels of the same key, whose relative order is
// unchanged, so the set of active kernels is the same. Then
// dumpComputedTable() is identical (checked below, byte for byte), and the
// live table equals it (checked below). tables-1.13.1.txt shows this for the
// plain pair: combos 60 (CIA then CEA, stale) and 61 (CEA then CIA, not stale)
// have identical dumpComputedTable() blocks once each kernel's line is mapped
// to its key.

bool is_cia(const Reg& r) {  // a kernel at CompositeImplicitAutograd
  return r.kind == Kind::CatchAll ||  // c10 stores a catch-all kernel under CIA
         ((r.kind == Kind::Impl || r.kind == Kind::Fallthrough) &&
          r.key == "CompositeImplicitAutograd");
}

bool is_cea(const Reg& r) {  // a kernel at CompositeExplicitAutograd
  return (r.kind == Kind::Impl || r.kind == Kind::Fallthrough) &&
         r.key == "CompositeExplicitAutograd";
}

// Does a CIA kernel precede a CEA kernel (the live table may be stale)?
bool cia_before_cea(const Combo& combo) {
  bool cia = false;
  for (const Reg& r : combo.regs) {
    if (is_cia(r)) cia = true;
    if (is_cea(r) && cia) return true;
  }
  return false;
}

// Indices of combo.regs in the order c10 handles correctly: every CEA kernel
// moved just before the first CIA kernel, everything else in order.
std::vector<size_t> correct_order(const Combo& combo) {
  std::vector<size_t> order;
  bool moved = false;
  for (size_t i = 0; i < combo.regs.size(); ++i) {
    if (is_cea(combo.regs[i])) continue;
    if (is_cia(combo.regs[i]) && !moved) {
      for (size_t j = 0; j < combo.regs.size(); ++j)
        if (is_cea(combo.regs[j])) order.push_back(j);
      moved = true;
    }
    order.push_back(i);
  }
  return order;
}

// Set when a probe of live_for() tripped c10's own consistency check.
bool g_invariant_failed = false;

// Which registration's code the slot of k in the live table runs, without key
// extraction or fallthrough masking (as gen_tables.cpp's LIVE| lines):
// "<line>", "fallthrough", "ambiguous", "missing" or "error". When a lookup
// misses, OperatorEntry::reportError() first runs checkInvariants(), which
// compares every stored slot with its recomputed value; with a stale table
// that assert fires instead of "Could not run": the slot is "missing", and
// g_invariant_failed records that c10 itself found the table inconsistent.
std::string live_for(const c10::OperatorHandle& op, DispatchKey k) {
  auto typed = op.typed<at::Tensor(const at::Tensor&)>();
  const DispatchKeySet ks = k == DispatchKey::Undefined ? DispatchKeySet() : DispatchKeySet(k);
  g_ran = 0;
  try {
    typed.redispatch(ks, at::empty({1}));
  } catch (const c10::NotImplementedError&) {
    return "missing";
  } catch (const c10::Error& e) {
    const std::string msg = e.what_without_backtrace();
    if (msg.find("expected_k._equalsBoxedAndUnboxed(dispatchTable_[idx])") != std::string::npos) {
      g_invariant_failed = true;
      return "missing";
    }
    if (msg.find("fallthrough_kernel was executed") != std::string::npos) return "fallthrough";
    if (msg.find("a backend mapped to AutogradOther") != std::string::npos) return "ambiguous";
    return "error";
  }
  return g_ran ? std::to_string(g_ran) : "none";
}

// The same classification from dumpComputedTable().
std::string computed_for(const std::vector<std::string>& table, DispatchKey k) {
  const std::string cls = classify_entry(table, k);
  if (cls != "ours") return cls;
  const std::string head = std::string(c10::toString(k)) + ": registered at " + kFile + ":";
  for (const std::string& l : table)
    if (starts_with(l, head)) return l.substr(head.size(), l.find(' ', head.size()) - head.size());
  return "?";
}

// The slots (Undefined and each runtime key of FULL, the keys
// dumpComputedTable covers) whose live content differs from the recomputed
// one, grouped by change: "<live>-><computed>: <Key> <Key> ...". Empty if the
// live table equals dumpComputedTable. Keys where libtorch has a built-in
// non-fallthrough fallback (in base_table) or where the recomputed entry is
// one are not probed: calling those fallbacks can recurse (Tracer), and no
// kernel registered here touches them. *invariant tells whether a probe
// tripped c10's checkInvariants().
std::vector<std::string> stale_slots(const c10::OperatorHandle& op,
                                     const std::vector<std::string>& base_table, bool* invariant) {
  const std::vector<std::string> table = split_lines(op.dumpComputedTable());
  std::vector<DispatchKey> keys{DispatchKey::Undefined};
  for (DispatchKey k : DispatchKeySet(DispatchKeySet::FULL)) keys.push_back(k);
  std::vector<std::string> changes, groups;
  g_invariant_failed = false;
  for (DispatchKey k : keys) {
    if (classify_entry(base_table, k) == "builtin" || classify_entry(table, k) == "builtin") continue;
    const std::string live = live_for(op, k), computed = computed_for(table, k);
    if (live == computed) continue;
    const std::string change = live + "->" + computed;
    size_t g = 0;
    while (g < changes.size() && changes[g] != change) ++g;
    if (g == changes.size()) {
      changes.push_back(change);
      groups.push_back(change + ":");
    }
    groups[g] += std::string(" ") + c10::toString(k);
  }
  *invariant = g_invariant_failed;
  return groups;
}

// ------------------------------------------------------------ combos

// Registers combo.regs in the given order (each with its own debug line
// 1000*id + index + 1) into libs; returns the tokens of the registrations
// that threw.
std::vector<std::string> replay_combo(int id, const Combo& combo, const std::vector<size_t>& order, Libraries& libs) {
  return conformance::replay<&boxed_fallback>(id, combo, order, libs, [](int line) {
    return [line](DispatchKeySet ks, const at::Tensor& a) -> at::Tensor { return kernel_body(line, ks, a); };
  });
}

[[noreturn]] void die(int id, const std::string& what) {
  std::fprintf(stderr, "gen_calls: combo %d: %s\n", id, what.c_str());
  std::exit(1);
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

void run_combo(int id, const Combo& combo, const std::vector<Input>& inputs,
               const std::vector<std::string>& base_table) {
  const std::string name = "c" + std::to_string(id) + "::op";

  // The combination as listed: c10's live table, real calls.
  Libraries libs;
  const std::vector<std::string> errors = replay_combo(id, combo, in_order(combo), libs);
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), "");
  const std::string table = op.dumpComputedTable();
  bool invariant = false;
  const std::vector<std::string> stale = stale_slots(op, base_table, &invariant);
  const std::vector<CallRecord> calls = make_calls(op, inputs);
  deregister(id, libs);

  const bool check = cia_before_cea(combo);
  if ((!stale.empty() || invariant) && !check)
    die(id, "live slots differ from dumpComputedTable but no CompositeImplicitAutograd kernel precedes a "
            "CompositeExplicitAutograd one; extend cia_before_cea(): " + join(stale, "; "));

  // The same registrations in an order c10 handles correctly (see above).
  std::vector<CallRecord> recomputed;
  std::vector<std::string> order_tokens;
  if (check) {
    const std::vector<size_t> order = correct_order(combo);
    const std::vector<std::string> tokens = reg_tokens(id, combo);
    for (size_t i : order) order_tokens.push_back(tokens[i]);
    const std::vector<std::string> errors2 = replay_combo(id, combo, order, libs);
    auto op2 = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), "");
    if (errors2 != errors) die(id, "the reordered replay's failed registrations differ");
    if (op2.dumpComputedTable() != table) die(id, "the reordered replay's dumpComputedTable differs");
    bool invariant2 = false;
    const std::vector<std::string> stale2 = stale_slots(op2, base_table, &invariant2);
    if (!stale2.empty() || invariant2)
      die(id, "the reordered replay's live table is stale too: " + join(stale2, "; "));
    recomputed = make_calls(op2, inputs);
    deregister(id, libs);
    for (size_t i = 0; i < calls.size(); ++i) {
      const CallRecord &a = calls[i], &b = recomputed[i];
      if (a.input != b.input || a.mode != b.mode || a.tensor_ks != b.tensor_ks || a.included != b.included ||
          a.excluded != b.excluded || a.r.skipped != b.r.skipped)
        die(id, "the reordered replay's calls do not line up with the original ones");
      // The format has no recomputed then= field.
      if (!b.r.then.empty()) die(id, "a recomputed call entered a built-in fallback");
    }
  }

  print_combo(id, combo);
  for (const std::string& e : errors)
    std::fprintf(out, "# registration %s threw (see tables-1.13.1.txt)\n", e.c_str());
  if (check) {
    int differ = 0, made = 0;
    for (size_t i = 0; i < calls.size(); ++i) {
      if (calls[i].r.skipped) continue;
      ++made;
      if (calls[i].r.outcome != recomputed[i].r.outcome || calls[i].r.key != recomputed[i].r.key) ++differ;
    }
    std::fprintf(out,
                 "# stale: combo %d registers CompositeImplicitAutograd before CompositeExplicitAutograd, and "
                 "c10 1.13.1 did not recompute the Autograd*/NestedTensor* slots (nor their fallthrough bits) "
                 "when the CEA kernel arrived. Live slot -> dumpComputedTable: %s.%s recomputed= and "
                 "recomputed_key= are each call's outcome and key after replaying the same registrations with "
                 "the same lines as %s (dumpComputedTable identical to this one's, live table equal to it); they "
                 "differ from the live answer on %d of the %d calls made\n",
                 id, stale.empty() ? "none" : join(stale, "; ").c_str(),
                 invariant ? " A lookup that misses trips c10's own OperatorEntry::checkInvariants() (stored "
                             "slot != recomputed) instead of reporting \"Could not run\"." : "",
                 join(order_tokens, ",").c_str(), differ, made);
  }

  print_calls("CALL", id, calls, check ? &recomputed : nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  if (!open_output(argc, argv)) return 1;
  print_combo_header("call");

  const std::vector<Input> inputs = make_inputs();
  std::fprintf(out, "# inputs: name key_set().raw_repr() toString(key_set()) -- how it is built\n");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Input& in = inputs[i];
    if (in.name != kInputSpecs[i].name) {
      std::fprintf(stderr, "gen_calls: input table out of order at %s\n", in.name.c_str());
      return 1;
    }
    std::fprintf(out, "# input %s %s %s -- %s\n", in.name.c_str(), hex(in.t.key_set()).c_str(),
                 c10::toString(in.t.key_set()).c_str(), kInputSpecs[i].how);
  }
  std::fprintf(out,
               "# include_tracer: every call enters the built-in Tracer fallback, which\n"
               "# recurses until the stack overflows when no TracingState is active; those\n"
               "# calls are not made and appear as '# skipped' lines below.\n");

  std::vector<std::string> base_table;  // base::op's dumpComputedTable()
  {
    torch::Library def(torch::Library::DEF, "base", c10::nullopt, kFile, 1);
    def.def("op(Tensor a) -> Tensor");
    auto op = c10::Dispatcher::singleton().findSchemaOrThrow("base::op", "");
    std::fprintf(out, "# base::op: an operator with no kernels (only the built-in fallbacks)\n");
    print_calls("BASECALL", 0, make_calls(op, inputs));
    base_table = split_lines(op.dumpComputedTable());
  }

  const std::vector<Combo> combos = make_combos();
  for (size_t i = 0; i < combos.size(); ++i)
    run_combo(static_cast<int>(i) + 1, combos[i], inputs, base_table);
  return close_output(argv);
}
