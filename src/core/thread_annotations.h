// Clang's thread-safety attributes: a member says which mutex guards it, a function which
// mutex it needs or must not hold, and clang's -Wthread-safety (on in every clang build: the
// asan tree) checks each access at compile time. Under GCC they expand to nothing; the tsan
// preset checks the same code at run time. Use them with core/mutex.h's Mutex: libstdc++'s
// std::mutex carries no annotations, so the analysis cannot see it.
#pragma once

#if defined(__clang__)
#define GS_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define GS_THREAD_ANNOTATION_(x)
#endif

#define GS_CAPABILITY(x) GS_THREAD_ANNOTATION_(capability(x))
#define GS_SCOPED_CAPABILITY GS_THREAD_ANNOTATION_(scoped_lockable)
#define GS_GUARDED_BY(x) GS_THREAD_ANNOTATION_(guarded_by(x))
#define GS_PT_GUARDED_BY(x) GS_THREAD_ANNOTATION_(pt_guarded_by(x))
#define GS_REQUIRES(...) GS_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define GS_EXCLUDES(...) GS_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define GS_ACQUIRE(...) GS_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define GS_RELEASE(...) GS_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
// For the rare function the analysis cannot follow; say why next to it.
#define GS_NO_THREAD_SAFETY_ANALYSIS GS_THREAD_ANNOTATION_(no_thread_safety_analysis)
