// gen_keyspace.cpp - conformance-vector generator for dispatch.h.
//
// Links against the real libtorch/c10 (Debian libtorch-dev 1.13.1) and prints
// a line-oriented description of the DispatchKey / BackendComponent /
// DispatchKeySet key space: enum values and names, key set bit layout,
// table indices, set algebra, alias expansion, helper mappings, named
// constants and the thread-local include/exclude defaults and guards.
// The output format is documented in tests/conformance/README.md.
//
// Build and run with `make conformance-vectors` (see conformance.mk).
// Usage: gen_keyspace [output-file]    (default: stdout)

#include <c10/core/DispatchKey.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>
#include <ATen/core/LegacyTypeDispatch.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#define CONFORMANCE_PROG "gen_keyspace"
#include "common.hpp"

using c10::BackendComponent;
using c10::DispatchKey;
using c10::DispatchKeySet;
using namespace conformance;

namespace {

// ---------------------------------------------------------------- helpers

int kv(DispatchKey k) { return static_cast<int>(k); }
int bv(BackendComponent b) { return static_cast<int>(b); }
DispatchKey key(int v) { return static_cast<DispatchKey>(v); }
BackendComponent bc(int v) { return static_cast<BackendComponent>(v); }

const int kEndFunc = kv(DispatchKey::EndOfFunctionalityKeys);
const int kEndRuntime = kv(DispatchKey::EndOfRuntimeBackendKeys);
const int kStartAlias = kv(DispatchKey::StartOfAliasKeys);
const int kEndAlias = kv(DispatchKey::EndOfAliasKeys);
const int kEndBackend = bv(BackendComponent::EndOfBackendKeys);

uint64_t repr(DispatchKeySet ks) { return ks.raw_repr(); }

bool is_start_marker(int v) {
  return v == kv(DispatchKey::StartOfDenseBackends) ||
      v == kv(DispatchKey::StartOfQuantizedBackends) ||
      v == kv(DispatchKey::StartOfSparseBackends) ||
      v == kv(DispatchKey::StartOfNestedTensorBackends) ||
      v == kv(DispatchKey::StartOfAutogradFunctionalityBackends);
}
bool is_marker(int v) { return v == kEndFunc || is_start_marker(v); }

// Runtime per-backend keys (CPU, QuantizedCUDA, AutogradLazy, ...).
std::vector<int> runtime_per_backend_keys() {
  std::vector<int> r;
  for (int v = kEndFunc + 1; v <= kEndRuntime; ++v)
    if (!is_start_marker(v)) r.push_back(v);
  return r;
}

// Plain keys usable with has()/add()/remove(): non-alias, non-marker,
// not Undefined.
std::vector<int> plain_keys() {
  std::vector<int> r;
  for (int v = 1; v <= kEndRuntime; ++v)
    if (!is_marker(v)) r.push_back(v);
  return r;
}

std::string list(const std::vector<int>& v) {
  if (v.empty()) return "-";
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}

std::vector<int> iter_keys(DispatchKeySet ks) {
  std::vector<int> r;
  for (auto k : ks) r.push_back(kv(k));
  return r;
}

// ---------------------------------------------------------------- PRNG

struct SplitMix64 {
  uint64_t s;
  explicit SplitMix64(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // uniform-enough integer in [0, n)
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
};

const uint64_t kSeed = 0x00c10d15ba7c4e5eULL;

struct KeysetGen {
  SplitMix64 rng;
  std::vector<int> rt_keys = runtime_per_backend_keys();
  explicit KeysetGen(uint64_t seed) : rng(seed) {}
  DispatchKeySet pick() {
    switch (rng.below(3)) {
      case 0:
        return DispatchKeySet(key(rt_keys[rng.below((int)rt_keys.size())]));
      case 1:
        return DispatchKeySet(key(1 + rng.below(kEndFunc - 1)));
      default:
        return DispatchKeySet(bc(1 + rng.below(kEndBackend)));
    }
  }
  DispatchKeySet keyset() {
    int n = 1 + rng.below(6);
    DispatchKeySet ks;
    for (int i = 0; i < n; ++i) ks = ks | pick();
    return ks;
  }
};

// ---------------------------------------------------------------- sections

void header() {
  print_header("keyspace", "c10",
               "# regenerate with `make conformance-vectors`. Format: tests/conformance/README.md\n");
  std::fprintf(out,
      "# PRNG: splitmix64, seed %s; numbers decimal, keyset reprs lowercase hex;\n"
      "# lists are comma-separated key values, '-' = empty list / not computed.\n",
      hex(kSeed).c_str());
}

void section_N() {
  std::fprintf(out, "N %d %d %d %s %d %d %d %d\n", (int)c10::num_backends,
      (int)c10::num_functionality_keys, (int)c10::num_runtime_entries,
      hex(DispatchKeySet(DispatchKeySet::FULL)).c_str(), kEndFunc, kEndRuntime,
      kStartAlias, kEndAlias);
}

void section_B() {
  for (int b = 0; b <= kEndBackend; ++b)
    std::fprintf(out, "B %d %s\n", b, c10::toString(bc(b)));
}

void section_K() {
  std::fprintf(out,
      "# K: tableindex '-' for EndOfFunctionalityKeys: its functionality bit lies above\n"
      "#    FULL and getDispatchTableIndexForDispatchKey would read offsetsAndMasks()[%d]\n"
      "#    out of bounds (array size %d). Alias keys: DispatchKeySet(alias) is the empty\n"
      "#    set (no assert), so their repr is 0 and tableindex is that of the empty set.\n",
      kEndFunc, (int)c10::num_functionality_keys);
  for (int v = 0; v <= kEndAlias; ++v) {
    DispatchKey k = key(v);
    const char* name = c10::toString(k);
    bool alias = c10::isAliasDispatchKey(k);
    std::string tidx = v == kEndFunc
        ? "-"
        : std::to_string(c10::getDispatchTableIndexForDispatchKey(k));
    std::string rep;
    try {
      rep = hex(DispatchKeySet(k));
    } catch (const c10::Error&) {
      rep = "-";
    }
    int parsed;
    try {
      parsed = kv(c10::parseDispatchKey(name));
    } catch (const c10::Error&) {
      parsed = -1;
    }
    int isbackend = (!alias && k != DispatchKey::Undefined)
        ? (int)c10::isBackendDispatchKey(k)
        : 0;
    std::fprintf(out, "K %d %s %d %d %d %d %s %s %d %d\n", v, name, (int)alias,
        (int)c10::isPerBackendFunctionalityKey(k), kv(c10::toFunctionalityKey(k)),
        bv(c10::toBackendComponent(k)), tidx.c_str(), rep.c_str(), parsed,
        isbackend);
  }
}

std::vector<DispatchKeySet> section_S(int n_random) {
  std::vector<DispatchKeySet> sets;
  sets.push_back(DispatchKeySet());
  sets.push_back(DispatchKeySet(DispatchKeySet::FULL));
  for (int v = 1; v <= kEndRuntime; ++v)
    if (!is_marker(v)) sets.push_back(DispatchKeySet(key(v)));
  // Random keysets: distinct from each other and from the fixed ones above.
  std::unordered_set<uint64_t> seen;
  for (auto ks : sets) seen.insert(repr(ks));
  KeysetGen gen(kSeed);
  for (int i = 0; i < n_random;) {
    DispatchKeySet ks = gen.keyset();
    if (seen.insert(repr(ks)).second) {
      sets.push_back(ks);
      ++i;
    }
  }

  for (auto ks : sets) {
    std::fprintf(out, "S %s %d %d %d %d %d %s %d\n", hex(ks).c_str(),
        kv(ks.highestPriorityTypeId()), ks.getDispatchTableIndexForDispatchKeySet(),
        kv(ks.highestFunctionalityKey()), bv(ks.highestBackendKey()),
        (int)ks.getBackendIndex(), list(iter_keys(ks)).c_str(),
        kv(c10::highestPriorityBackendTypeId(ks)));
  }
  return sets;
}

void section_P(const std::vector<DispatchKeySet>& sets, size_t n) {
  for (size_t i = 0; i < n && i < sets.size(); ++i)
    std::fprintf(out, "P %s %s\n", hex(sets[i]).c_str(),
        c10::toString(sets[i]).c_str());
}

// Mirrors the TORCH_INTERNAL_ASSERT_DEBUG_ONLY precondition of has_any().
bool has_any_allowed(DispatchKeySet b) {
  const DispatchKeySet per_backend({DispatchKey::Dense, DispatchKey::Quantized,
      DispatchKey::Sparse, DispatchKey::AutogradFunctionality});
  return (repr(b) & c10::full_backend_mask) == 0 || repr(b & per_backend) == 0;
}

void section_O(int n) {
  std::fprintf(out,
      "# O: has_any is '-' when b has backend bits AND one of the functionality bits\n"
      "#    Dense/Quantized/Sparse/AutogradFunctionality (c10 debug-asserts there;\n"
      "#    NestedTensor is not part of that check in 1.13.1).\n");
  KeysetGen gen(kSeed ^ 0x4f4f4f4fULL);
  for (int i = 0; i < n; ++i) {
    DispatchKeySet a = gen.keyset(), b = gen.keyset();
    std::string any = has_any_allowed(b) ? std::to_string((int)a.has_any(b)) : "-";
    std::fprintf(out, "O %s %s %s %s %s %d %s\n", hex(a).c_str(), hex(b).c_str(),
        hex(a - b).c_str(), hex(a | b).c_str(), hex(a & b).c_str(),
        (int)a.has_all(b), any.c_str());
  }
}

void section_R(int n, int n_backend) {
  KeysetGen gen(kSeed ^ 0x52525252ULL);
  std::vector<int> keys = plain_keys();
  for (int i = 0; i < n; ++i) {
    DispatchKeySet a = gen.keyset();
    DispatchKey k = key(keys[gen.rng.below((int)keys.size())]);
    std::fprintf(out, "R %s %d %s %s %d\n", hex(a).c_str(), kv(k),
        hex(a.remove(k)).c_str(), hex(a.add(k)).c_str(), (int)a.has(k));
  }
  for (int i = 0; i < n_backend; ++i) {
    DispatchKeySet a = gen.keyset();
    BackendComponent b = bc(gen.rng.below(kEndBackend + 1));
    std::fprintf(out, "RB %s %d %s\n", hex(a).c_str(), bv(b),
        hex(a.remove_backend(b)).c_str());
  }
}

void section_A() {
  for (int al = kStartAlias; al <= kEndAlias; ++al) {
    std::vector<int> inc, has;
    for (int v = 0; v <= kEndRuntime; ++v) {
      if (c10::isIncludedInAlias(key(v), key(al))) inc.push_back(v);
      if (c10::runtimeDispatchKeySetHas(key(al), key(v))) has.push_back(v);
    }
    std::fprintf(out, "A %d %s %s\n", al,
        hex(c10::getRuntimeDispatchKeySet(key(al))).c_str(), list(inc).c_str());
    std::fprintf(out, "AH %d %s\n", al, list(has).c_str());
  }
}

void section_H(int n_legacy) {
  for (int b = 0; b <= kEndBackend; ++b) {
    std::string ag, ac, agk;
    try {
      ag = hex(c10::getAutogradRelatedKeySetFromBackend(bc(b)));
      ac = hex(c10::getAutocastRelatedKeySetFromBackend(bc(b)));
      agk = std::to_string(kv(c10::getAutogradKeyFromBackend(bc(b))));
    } catch (const c10::Error&) {
      std::fprintf(out, "# HB %d skipped: c10::Error\n", b);
      continue;
    }
    std::fprintf(out, "HB %d %s %s %s\n", b, ag.c_str(), ac.c_str(), agk.c_str());
  }
  for (int v = 0; v <= kEndRuntime; ++v) {
    try {
      std::fprintf(out, "HA %d %s\n", v,
          hex(c10::getBackendKeySetFromAutograd(key(v))).c_str());
    } catch (const c10::Error&) {
      std::fprintf(out, "# HA %d skipped: c10::Error\n", v);
    }
  }
  KeysetGen gen(kSeed ^ 0x484c484cULL);
  for (int i = 0; i < n_legacy; ++i) {
    DispatchKeySet a = gen.keyset();
    std::fprintf(out, "HL %s %d\n", hex(a).c_str(), kv(c10::legacyExtractDispatchKey(a)));
  }
}

void section_C() {
  struct Named {
    const char* name;
    DispatchKeySet ks;
  };
  const Named named[] = {
#define NAMED(x) {#x, c10::x}
      NAMED(autograd_dispatch_keyset),
      NAMED(autocast_dispatch_keyset),
      NAMED(default_included_set),
      NAMED(default_excluded_set),
      NAMED(autograd_dispatch_keyset_with_ADInplaceOrView),
      NAMED(python_ks),
      NAMED(sparse_ks),
      NAMED(sparse_csr_ks),
      NAMED(mkldnn_ks),
      NAMED(autogradother_backends),
      NAMED(after_autograd_keyset),
      NAMED(after_ADInplaceOrView_keyset),
      NAMED(after_func_keyset),
      NAMED(backend_bitset_mask),
      NAMED(inplace_or_view_ks),
      NAMED(autograd_cpu_ks),
      NAMED(autograd_ipu_ks),
      NAMED(autograd_xpu_ks),
      NAMED(autograd_cuda_ks),
      NAMED(autograd_xla_ks),
      NAMED(autograd_lazy_ks),
      NAMED(autograd_meta_ks),
      NAMED(autograd_mps_ks),
      NAMED(autograd_hpu_ks),
      NAMED(autograd_privateuse1_ks),
      NAMED(autograd_privateuse2_ks),
      NAMED(autograd_privateuse3_ks),
      NAMED(autograd_other_ks),
      NAMED(autograd_nested),
      NAMED(functorch_transforms_ks),
      NAMED(backend_functionality_keys),
#undef NAMED
  };
  for (const auto& n : named)
    std::fprintf(out, "C %s %s\n", n.name, hex(n.ks).c_str());

  std::fprintf(out,
      "# C: the DispatchKeySet.cpp constants are file-static (not exported); derived via\n"
      "#    getRuntimeDispatchKeySet(alias) and named after the alias:\n"
      "#    CompositeExplicitAutograd = backend_dispatch_keyset,\n"
      "#    CompositeExplicitAutogradNonFunctional = non_functional_backend_dispatch_keyset,\n"
      "#    CompositeImplicitAutograd = math_dispatch_keyset,\n"
      "#    CompositeImplicitAutogradNestedTensor = nested_dispatch_keyset,\n"
      "#    Autograd = autograd_dispatch_keyset | all backend bits.\n");
  const DispatchKey aliases[] = {DispatchKey::CompositeExplicitAutograd,
      DispatchKey::CompositeExplicitAutogradNonFunctional,
      DispatchKey::CompositeImplicitAutograd,
      DispatchKey::CompositeImplicitAutogradNestedTensor, DispatchKey::Autograd};
  for (auto a : aliases)
    std::fprintf(out, "C %s %s\n", c10::toString(a),
        hex(c10::getRuntimeDispatchKeySet(a)).c_str());
}

void print_tg(const char* name) {
  c10::impl::LocalDispatchKeySet s = c10::impl::tls_local_dispatch_key_set();
  std::fprintf(out, "TG %s %s %s\n", name, hex(s.included_).c_str(),
      hex(s.excluded_).c_str());
}

void section_T() {
  // Run on a fresh thread so the TLS is in its zero-initialised state.
  std::thread t([] {
    const c10::impl::PODLocalDispatchKeySet raw = c10::impl::raw_local_dispatch_key_set;
    c10::impl::LocalDispatchKeySet s = c10::impl::tls_local_dispatch_key_set();
    std::fprintf(out, "T %s %s %s %s\n", hex(raw.included_).c_str(),
        hex(raw.excluded_).c_str(), hex(s.included_).c_str(), hex(s.excluded_).c_str());
    {
      at::AutoDispatchBelowAutograd g;
      print_tg("at::AutoDispatchBelowAutograd");
    }
    {
      at::AutoDispatchBelowADInplaceOrView g;
      print_tg("at::AutoDispatchBelowADInplaceOrView");
    }
    {
      c10::InferenceMode g;
      print_tg("c10::InferenceMode");
    }
    {
      c10::InferenceMode g(false);
      print_tg("c10::InferenceMode(false)");
    }
    {
      at::AutoDispatchSkipFunctionalize g;
      print_tg("at::AutoDispatchSkipFunctionalize");
    }
    {
      c10::impl::IncludeDispatchKeyGuard g(DispatchKey::Tracer);
      print_tg("c10::impl::IncludeDispatchKeyGuard(Tracer)");
    }
    {
      c10::impl::ExcludeDispatchKeyGuard g(c10::autocast_dispatch_keyset);
      print_tg("c10::impl::ExcludeDispatchKeyGuard(autocast_dispatch_keyset)");
    }
    {
      // Nesting: inner guard re-includes an already included key; on exit
      // it must remove only what it added (nothing), the outer one Tracer.
      c10::impl::IncludeDispatchKeyGuard g1(DispatchKey::Tracer);
      {
        c10::impl::IncludeDispatchKeyGuard g2(
            DispatchKeySet({DispatchKey::Tracer, DispatchKey::BackendSelect}));
        print_tg("nested:Include(Tracer)+Include(Tracer,BackendSelect)");
      }
      print_tg("nested:after-inner-exit");
    }
    {
      c10::impl::ExcludeDispatchKeyGuard g(DispatchKey::AutocastCPU);
      print_tg("c10::impl::ExcludeDispatchKeyGuard(AutocastCPU)");
    }
    print_tg("restored");
  });
  t.join();
}

} // namespace

int main(int argc, char** argv) {
  if (!open_output(argc, argv)) return 1;
  header();
  section_N();
  section_B();
  section_K();
  std::vector<DispatchKeySet> sets = section_S(20000);
  section_P(sets, 300);
  section_O(3000);
  section_R(3000, 500);
  section_A();
  section_H(500);
  section_C();
  section_T();
  return close_output(argv);
}
