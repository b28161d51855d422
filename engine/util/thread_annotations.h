// File: engine/util/thread_annotations.h
//
// Macros for clang's thread-safety analysis (-Wthread-safety).  Under clang
// they expand to the capability attributes, so the compiler checks at build
// time that a member marked GATEDB_GUARDED_BY(mu_) is only touched with mu_
// held, that a function marked GATEDB_REQUIRES(mu_) is only called with it
// held, and so on.  Under any other compiler they expand to nothing.
//
// The attributes only see locks taken through annotated types: use the
// wrappers of engine/util/mutex.h (Mutex, SharedMutex, MutexLock, ...), not
// std::mutex and std::lock_guard, which libstdc++ does not annotate.
//
// The checked build (clang only; see GATEDB_THREAD_SAFETY in CMakeLists.txt):
//
//   CC=clang CXX=clang++ cmake -S . -B build-tsa -G Ninja -DGATEDB_THREAD_SAFETY=ON -DGATEDB_BUILD_BENCH=OFF -DGATEDB_BUILD_TESTS=OFF
//   ninja -C build-tsa
//
// The names carry a GATEDB_ prefix so that they can never clash with another
// library's macros of the same meaning (Abseil, LevelDB and others define
// GUARDED_BY, REQUIRES, ... under their own rules).
//
// Reference: https://clang.llvm.org/docs/ThreadSafetyAnalysis.html
#ifndef GATEDB_ENGINE_UTIL_THREAD_ANNOTATIONS_H_
#define GATEDB_ENGINE_UTIL_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define GATEDB_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define GATEDB_THREAD_ANNOTATION_(x)
#endif

// ---- On types.

// The class is a capability (a lock); `name` appears in the warnings
// ("mutex 'mu_'").
#define GATEDB_CAPABILITY(name) GATEDB_THREAD_ANNOTATION_(capability(name))
// The class is an RAII guard: its constructor acquires the capabilities it
// names and its destructor releases them.
#define GATEDB_SCOPED_CAPABILITY GATEDB_THREAD_ANNOTATION_(scoped_lockable)

// ---- On data members.

// The member may only be read with `x` held (shared or exclusive) and only
// written with `x` held exclusively.
#define GATEDB_GUARDED_BY(x) GATEDB_THREAD_ANNOTATION_(guarded_by(x))
// The same for the data the member (a pointer) points to.
#define GATEDB_PT_GUARDED_BY(x) GATEDB_THREAD_ANNOTATION_(pt_guarded_by(x))

// ---- On functions.

// The caller must hold the capabilities exclusively.
#define GATEDB_REQUIRES(...) GATEDB_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
// The caller must hold the capabilities, at least shared.
#define GATEDB_REQUIRES_SHARED(...) GATEDB_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
// The function acquires the capabilities (exclusively / shared) and returns
// with them held.  With no argument on a member function: `this`.
#define GATEDB_ACQUIRE(...) GATEDB_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define GATEDB_ACQUIRE_SHARED(...) GATEDB_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
// The function releases the capabilities (held exclusively / shared).
// A scoped guard's destructor uses GATEDB_RELEASE() whatever mode it holds.
#define GATEDB_RELEASE(...) GATEDB_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define GATEDB_RELEASE_SHARED(...) GATEDB_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
// The function tries to acquire the capabilities; the first argument is the
// return value that means success (GATEDB_TRY_ACQUIRE(true)).
#define GATEDB_TRY_ACQUIRE(...) GATEDB_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#define GATEDB_TRY_ACQUIRE_SHARED(...) GATEDB_THREAD_ANNOTATION_(try_acquire_shared_capability(__VA_ARGS__))
// The caller must NOT hold the capabilities (the function takes them itself;
// calling it with one held would deadlock).  Checked only against locks the
// analysis knows to be held at the call.
#define GATEDB_EXCLUDES(...) GATEDB_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
// The function checks at run time that the calling thread holds the
// capability; after the call the analysis assumes it is held.
#define GATEDB_ASSERT_CAPABILITY(x) GATEDB_THREAD_ANNOTATION_(assert_capability(x))
#define GATEDB_ASSERT_SHARED_CAPABILITY(x) GATEDB_THREAD_ANNOTATION_(assert_shared_capability(x))
// The function returns a reference or pointer to the capability `x`.
#define GATEDB_RETURN_CAPABILITY(x) GATEDB_THREAD_ANNOTATION_(lock_returned(x))
// Turns the analysis off for one function.  For code that is correct for a
// reason the analysis cannot follow; say that reason next to it.
#define GATEDB_NO_THREAD_SAFETY_ANALYSIS GATEDB_THREAD_ANNOTATION_(no_thread_safety_analysis)

#endif  // GATEDB_ENGINE_UTIL_THREAD_ANNOTATIONS_H_
