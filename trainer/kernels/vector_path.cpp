// Choosing the vector path at run time (vector_path.h). This file is compiled for the
// build's baseline CPU: it only reads the CPU's features and hands out a table.
#include "trainer/kernels/vector_path.h"

#include <atomic>
#include <cstdlib>

#include "common/base/error.h"

namespace tpuperf::kernels {

// The tables of trainer/kernels/vector/path_table.cpp, one per compiled instruction set.
namespace avx2 {
const VectorPath& path_table();
}
namespace avx512 {
const VectorPath& path_table();
}

namespace {

constexpr const char* kEnvironment = "TPUPERF_VECTOR_ISA";

bool cpu_runs(VectorIsa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case VectorIsa::kNone: return true;
    // x86-64-v3 and -v4 as GCC defines them (what the paths are compiled with); the CPU
    // check includes the operating system's support for the wider registers.
    case VectorIsa::kAvx2: return __builtin_cpu_supports("x86-64-v3");
    case VectorIsa::kAvx512: return __builtin_cpu_supports("x86-64-v4");
  }
  return false;
}

const VectorPath* table_of(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::kAvx2: return &avx2::path_table();
    case VectorIsa::kAvx512: return &avx512::path_table();
    case VectorIsa::kNone: return nullptr;
  }
  return nullptr;
}

// Why the path in use is the one it is, for describe_vector_path.
enum class Choice { kBest, kEnvironment, kCall };

struct Selection {
  VectorIsa isa;
  Choice choice;
};

void require_cpu_runs(VectorIsa isa, const std::string& key) {
  if (!cpu_runs(isa))
    throw Error("this CPU cannot run the " + vector_isa_name(isa) + " vector path (it has " +
                    vector_isa_name(best_vector_isa()) + ")",
                "", key);
}

Selection initial_selection() {
  const char* forced = std::getenv(kEnvironment);
  if (!forced || !*forced || std::string(forced) == "auto") return {best_vector_isa(), Choice::kBest};
  VectorIsa isa;
  try {
    isa = parse_vector_isa(forced);
  } catch (Error& e) {
    throw e.with_key(kEnvironment);
  }
  require_cpu_runs(isa, kEnvironment);
  return {isa, Choice::kEnvironment};
}

// The selection, made on first use; use_vector_isa replaces it.
std::atomic<Selection>& selection() {
  static std::atomic<Selection> current{initial_selection()};
  return current;
}

}  // namespace

VectorIsa best_vector_isa() {
  if (cpu_runs(VectorIsa::kAvx512)) return VectorIsa::kAvx512;
  if (cpu_runs(VectorIsa::kAvx2)) return VectorIsa::kAvx2;
  return VectorIsa::kNone;
}

const VectorPath* vector_path() { return table_of(selection().load(std::memory_order_relaxed).isa); }

void use_vector_isa(VectorIsa isa) {
  require_cpu_runs(isa, "vector path");
  selection().store({isa, Choice::kCall});
}

std::string vector_isa_name(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::kAvx512: return "avx512";
    case VectorIsa::kAvx2: return "avx2";
    case VectorIsa::kNone: return "none";
  }
  return "none";
}

VectorIsa parse_vector_isa(const std::string& name) {
  for (VectorIsa isa : {VectorIsa::kAvx512, VectorIsa::kAvx2, VectorIsa::kNone})
    if (name == vector_isa_name(isa)) return isa;
  throw Error("unknown vector path '" + name + "' (expected auto, avx512, avx2 or none)");
}

std::string describe_vector_path() {
  const Selection s = selection().load();
  const std::string name = vector_isa_name(s.isa);
  const std::string best = vector_isa_name(best_vector_isa());
  switch (s.choice) {
    case Choice::kBest:
      return name + (s.isa == VectorIsa::kNone ? " (the CPU has no AVX2: LibTorch ops)" : " (best on this CPU)");
    case Choice::kEnvironment:
      return name + " (forced by " + kEnvironment + "; best on this CPU: " + best + ")";
    case Choice::kCall:
      return name + " (forced; best on this CPU: " + best + ")";
  }
  return name;
}

}  // namespace tpuperf::kernels
