/* kernel/sanitizers.h: whether this translation unit is built with
 * AddressSanitizer or ThreadSanitizer, as 0 or 1, for GCC and clang alike.
 *
 * GCC defines __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__; clang answers
 * __has_feature(address_sanitizer) / (thread_sanitizer) instead. Code that
 * must behave differently under a sanitizer (fiber switches it must be told
 * of, memory it cannot see into, limits its shadow memory breaks) asks here:
 *
 *     #include "kernel/sanitizers.h"
 *     #if TILESIM_ASAN
 *     ... tell AddressSanitizer ...
 *     #endif
 */
#ifndef TILESIM_SANITIZERS_H
#define TILESIM_SANITIZERS_H

#if defined(__SANITIZE_ADDRESS__)
#define TILESIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TILESIM_ASAN 1
#endif
#endif
#ifndef TILESIM_ASAN
#define TILESIM_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define TILESIM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TILESIM_TSAN 1
#endif
#endif
#ifndef TILESIM_TSAN
#define TILESIM_TSAN 0
#endif

#endif
