#pragma once
// PRIVRACE_CLONES("arch=x86-64-v4", "default"): a hot function compiled once per CPU level and
// picked at load time by the CPU it runs on (GCC's target_clones). Integer arithmetic and the
// IEEE operations the clones use (add, min, max, conversions; no contraction) give the same
// values at every level; the tests of each caller compare the cloned path with a reference.
// Sanitizer builds compile one version: the load-time resolver of target_clones runs before the
// sanitizer runtime is initialised, and its instrumented entry crashes there.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define PRIVRACE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define PRIVRACE_SANITIZED 1
#endif
#endif
#ifdef PRIVRACE_SANITIZED
#define PRIVRACE_CLONES(...)
#else
#define PRIVRACE_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#endif
